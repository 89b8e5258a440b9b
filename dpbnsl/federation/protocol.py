"""Hostable protocols: participant and server objects that run in one process or on separate machines.

A hosted protocol is a conversation driven by the server. Each *request* names a phase and a round
and carries what the server sent last (``None`` in the first request); every participant answers it
with one upload ``(kind, payload)``; the server reads the uploads, keyed by participant id, and
returns a :class:`Reply`: the payload to send back (one for everybody or one per participant) and
the next ``(phase, round)``, or ``None`` when the protocol is over.

Every protocol starts with the *setup exchange* (phase ``"rounds"``, round :data:`SETUP_ROUND`):
each participant uploads its data's shape (n_k, d) and the server broadcasts all the n_k, so that
what a real server learns is part of the protocol and of the transcript (n_k and d are public
under the replace-one relation). Participant ids are 0, …, P − 1, chosen by the people running the study.

A participant object is rebuilt from its own data, the public settings and its
:meth:`HostedParticipant.state_dict` (arrays, numbers and strings only, the random generator and
the privacy ledger included), so it can live in a process that is started anew for every message,
as a Flower ClientApp is. :func:`run_protocol` runs a protocol in process; ``dpbnsl.flower`` runs
the same objects on Flower.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union, cast

import numpy as np

from .messages import SERVER, SETUP_ROUND, Dense, Masked, Message, Payload, Sparse, Transcript
from .progress import round_done
from .secure_sum import (
    InProcessSum,
    SecureRound,
    SecureShare,
    SecureSum,
    is_secure_round,
    record_secure_round,
)

__all__ = [
    "SETUP_ROUND",
    "Reply",
    "HostedParticipant",
    "HostedServer",
    "ProtocolError",
    "run_protocol",
    "record_reply",
    "messages_of",
    "Upload",
    "generator_state",
    "restore_generator",
    "shape_upload",
    "read_shapes",
    "n_samples_reply",
    "read_n_vector",
]

StateValue = Union[np.ndarray, int, float, str, None]  # noqa: UP007 (a runtime alias)
#: A participant's answer: one ``(kind, payload)`` message, or a list of them (possibly empty: a
#: participant with nothing to send this round, e.g. one not selected, sends nothing).
Upload = Union[tuple[str, Payload], tuple[str, SecureShare], list[tuple[str, Payload]]]  # noqa: UP007


class ProtocolError(RuntimeError):
    """A hosted protocol cannot go on: a participant is missing, answered out of turn or refused."""


@dataclass(frozen=True)
class Reply:
    """What a server step returns: ``payload`` for everybody (or a mapping participant id →
    payload) of message ``kind``, and the ``(phase, round)`` of the next request (None: the end).
    A final reply may send nothing (``payload=None``). ``extra`` holds further messages sent with
    it, as ``(kind, payload or mapping)`` pairs, which each participant receives through
    :meth:`HostedParticipant.receive_extra` before it answers the next request."""

    kind: str
    payload: Payload | Mapping[int, Payload] | None
    next: tuple[str, int] | None
    extra: tuple[tuple[str, Payload | Mapping[int, Payload]], ...] = ()

    def __post_init__(self) -> None:
        if self.payload is None and self.next is not None:
            raise ValueError("only the final reply may send nothing")

    def for_participant(self, k: int) -> Payload | None:
        return _pick(self.payload, k)

    def extra_for(self, k: int) -> list[tuple[str, Payload]]:
        """The extra messages participant k receives, in order."""
        return [(kind, cast(Payload, _pick(p, k))) for kind, p in self.extra]


def _pick(payload: Payload | Mapping[int, Payload] | None, k: int) -> Payload | None:
    if payload is None or isinstance(payload, (Dense, Sparse, Masked)):
        return payload
    return payload[k]


def messages_of(upload: Upload) -> list[tuple[str, Any]]:
    """An answer as a list of ``(kind, payload)`` messages (a payload, or a secure share)."""
    return list(upload) if isinstance(upload, list) else [upload]


class HostedParticipant(ABC):
    """One participant's side of a hosted protocol (built from its own data and public settings)."""

    @abstractmethod
    def respond(self, phase: str, t: int, inbox: Payload | None) -> Upload:
        """Answer the request of ``(phase, t)``; ``inbox`` is what the server sent last."""

    def receive_extra(self, messages: list[tuple[str, Payload]]) -> None:
        """The extra messages of the server's last reply (see :class:`Reply`); a participant that
        expects none refuses them."""
        if messages:
            raise ProtocolError(
                f"unexpected message(s) {[kind for kind, _ in messages]} for this participant"
            )

    @abstractmethod
    def state_dict(self) -> dict[str, StateValue]:
        """Everything the participant must remember between requests (arrays, numbers, strings)."""

    @abstractmethod
    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        """Restore what :meth:`state_dict` returned (on an object built from the same data)."""

    def report(self) -> dict[str, Any]:
        """What the participant tells its operator at the end (e.g. the privacy it spent)."""
        return {}


class HostedServer(ABC):
    """The server's side of a hosted protocol (built from the public settings and P)."""

    n_participants: int

    @abstractmethod
    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        """Read the uploads of ``(phase, t)`` (keyed by participant id) and reply."""

    def receive_sum(self, phase: str, t: int, total: SecureSum) -> Reply:
        """Read the secure sum of ``(phase, t)``: the participants answered with secure shares
        (:mod:`dpbnsl.federation.secure_sum`) and the server reads only their sum."""
        raise ProtocolError(f"{type(self).__name__} takes no secure sums ({phase} round {t})")

    def secure_round(self, phase: str, t: int) -> SecureRound | None:
        """The secure round ``(phase, t)`` is, declared before it is requested (None: an ordinary
        round): a host must know to sum its uploads by secure aggregation before any is made."""
        return None

    def learned(self) -> tuple[np.ndarray, np.ndarray, Any]:
        """(thresholded DAG W, raw W, history DataFrame) at the end of a run."""
        raise NotImplementedError(f"{type(self).__name__} does not say what it learned")

    def transcript_of(self, phase: str) -> str:
        """The transcript a phase's messages go to (the setup exchange goes to ``"rounds"``)."""
        return phase

    def planned_rounds(self, phase: str) -> int | None:
        """The most rounds ``phase`` may run (for progress displays; None: not known)."""
        return None

    def check_uploads(self, phase: str, t: int, uploads: Mapping[int, Any]) -> list[Any]:
        """The uploads in participant order (a payload, or the list of ``(kind, payload)`` of a
        participant that answers with several messages); a missing or unknown participant is a
        ProtocolError."""
        expected = set(range(self.n_participants))
        missing = sorted(expected - set(uploads))
        extra = sorted(set(uploads) - expected, key=repr)
        if missing or extra:
            raise ProtocolError(
                f"{phase} round {t}: "
                + (f"no upload from participant(s) {missing}" if missing else "")
                + ("; " if missing and extra else "")
                + (f"uploads from unknown participant(s) {extra}" if extra else "")
            )
        return [uploads[k] for k in range(self.n_participants)]


def run_protocol(
    server: HostedServer,
    participants: Sequence[HostedParticipant],
    *,
    first: tuple[str, int] = ("rounds", SETUP_ROUND),
) -> dict[str, Transcript]:
    """Run a hosted protocol in process; returns one transcript per phase (see
    :meth:`HostedServer.transcript_of`). Participant k is ``participants[k]``."""
    if len(participants) != server.n_participants:
        raise ValueError(f"the server expects {server.n_participants} participants; got {len(participants)}")
    transcripts: dict[str, Transcript] = {}
    inbox: dict[int, Payload | None] = {k: None for k in range(len(participants))}
    extras: dict[int, list[tuple[str, Payload]]] = {k: [] for k in range(len(participants))}
    step: tuple[str, int] | None = first
    while step is not None:
        phase, t = step
        record = transcripts.setdefault(server.transcript_of(phase), Transcript())
        answers: dict[int, list[tuple[str, Any]]] = {}
        outs: dict[int, Any] = {}
        for k, p in enumerate(participants):
            p.receive_extra(extras[k])
            outs[k] = p.respond(phase, t, inbox[k])
            answers[k] = messages_of(outs[k])
        secure = is_secure_round(answers)
        if secure != (server.secure_round(phase, t) is not None):
            raise ProtocolError(
                f"{phase} round {t}: the server declared {'a secure' if not secure else 'an ordinary'} "
                f"round, the participants answered {'with secure shares' if secure else 'in the clear'}"
            )
        if secure:  # the server reads the sum only
            total = InProcessSum()({k: a[0][1] for k, a in answers.items()})
            record_secure_round(record, t, total, sorted(answers))
            reply = server.receive_sum(phase, t, total)
        else:
            uploads: dict[int, Any] = {}
            for k, msgs in answers.items():
                for kind, payload in msgs:
                    record.append(Message(t, k, SERVER, kind, payload))
                uploads[k] = outs[k] if isinstance(outs[k], list) else outs[k][1]
            reply = server.receive(phase, t, uploads)
        record_reply(record, t, reply, len(participants))
        if t != SETUP_ROUND:
            round_done(phase, t + 1, server.planned_rounds(phase))
        for k in range(len(participants)):
            inbox[k], extras[k] = reply.for_participant(k), reply.extra_for(k)
        step = reply.next
    return transcripts


def record_reply(record: Transcript, t: int, reply: Reply, n_participants: int) -> None:
    """Record a reply: its main message to every participant, then each extra message to every
    participant."""
    for kind, payload in [(reply.kind, reply.payload), *reply.extra]:
        for k in range(n_participants):
            sent = _pick(payload, k)
            if sent is not None:
                record.append(Message(t, SERVER, k, kind, sent))


def shape_upload(X: np.ndarray) -> tuple[str, Payload]:
    """The setup upload: the participant's row and column counts (n_k, d)."""
    return "data_shape", Dense(np.array(X.shape, dtype=float))


def _counts(v: np.ndarray, what: str) -> tuple[int, ...]:
    if not (np.isfinite(v).all() and (v == np.round(v)).all() and (v >= 1).all()):
        raise ProtocolError(f"{what}: invalid counts {v.tolist()}")
    return tuple(int(x) for x in v)


def read_shapes(uploads: Sequence[Payload]) -> tuple[tuple[int, ...], int]:
    """The setup uploads (in participant order) as (n_1, …, n_P) and d; the participants must
    agree on d."""
    shapes = []
    for k, u in enumerate(uploads):
        v = u.to_dense().ravel()
        if v.size != 2:
            raise ProtocolError(f"participant {k} sent a data shape of {v.size} numbers, not (n_k, d)")
        shapes.append(_counts(v, f"participant {k}'s data shape"))
    ds = {s[1] for s in shapes}
    if len(ds) != 1:
        detail = ", ".join(f"participant {k}: {s[1]}" for k, s in enumerate(shapes))
        raise ProtocolError(f"the participants' data have different numbers of columns ({detail})")
    return tuple(s[0] for s in shapes), ds.pop()


def n_samples_reply(n: Sequence[int], after: tuple[str, int]) -> Reply:
    """The setup reply: everybody's row count, to every participant."""
    return Reply("n_samples", Dense(np.array(n, dtype=float)), after)


def read_n_vector(payload: Payload | None, participant: int) -> tuple[int, ...]:
    """The row counts of the setup reply (everybody's n_k), validated."""
    if payload is None:
        raise ProtocolError(f"participant {participant}: a round was requested before the setup exchange")
    return _counts(payload.to_dense().ravel(), "the setup reply's row counts")


def generator_state(rng: np.random.Generator | None) -> str | None:
    """A numpy Generator's complete state as a JSON string (its 128-bit integers included)."""
    if rng is None:
        return None
    return json.dumps(rng.bit_generator.state, default=int)


def restore_generator(rng: np.random.Generator | None, state: str | None) -> None:
    """Put ``rng`` back in the state :func:`generator_state` recorded (nothing saved: unchanged)."""
    if state is None:
        return
    if rng is None:
        raise ValueError("the saved state holds a random generator's state, but the participant has none")
    rng.bit_generator.state = json.loads(state)
