"""What crosses the wire: message records, transcripts, byte counts, and the in-process round driver.

A federated learner is written as participant-side and server-side *step functions* exchanging
explicit payloads; :func:`run_rounds` calls them round by round and records every message in a
:class:`Transcript`. Attacks read transcripts only (the honest-but-curious server's view), and
communication cost is computed from the transcript rather than estimated separately.

Byte sizes (docs/decisions.md, 'Communication cost'): a dense payload costs 8 bytes per entry
(float64, no indices); a sparse payload costs 12 bytes per non-zero entry (8-byte value + 4-byte
flat index). 1 MB = 10⁶ bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, cast, overload

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int, readonly_copy
from .progress import round_done

__all__ = [
    "SERVER",
    "SETUP_ROUND",
    "FLOAT_BYTES",
    "INDEX_BYTES",
    "SECURE_SUM",
    "Dense",
    "Sparse",
    "Masked",
    "Message",
    "Transcript",
    "ServerReply",
    "run_rounds",
]

SERVER: Literal["server"] = "server"
#: The sender of a secure-aggregation sum: the server reads the sum of the participants' shares,
#: never a share (the transcript records the shares as :class:`Masked`).
SECURE_SUM: Literal["secure-sum"] = "secure-sum"
#: The round number of a hosted protocol's setup exchange ((n_k, d) up, the row counts down).
SETUP_ROUND = -1
FLOAT_BYTES = 8
INDEX_BYTES = 4

Party = Union[int, Literal["server", "secure-sum"]]  # noqa: UP007 (a runtime alias: `|` needs Python 3.10 types)


@dataclass(frozen=True, eq=False)
class Dense:
    """A dense float64 array payload (copied and made read-only)."""

    values: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", readonly_copy(self.values))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    @property
    def nbytes(self) -> int:
        return FLOAT_BYTES * self.values.size

    def to_dense(self) -> np.ndarray:
        return np.array(self.values)


@dataclass(frozen=True, eq=False)
class Sparse:
    """A sparse payload: the non-zero entries of an array as (flat index, value) pairs."""

    shape: tuple[int, ...]
    index: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        idx = np.array(self.index, dtype=np.int64, copy=True)
        idx.setflags(write=False)
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "values", readonly_copy(self.values))
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    @classmethod
    def from_dense(cls, a: np.ndarray) -> Sparse:
        """Keep the non-zero entries of ``a``."""
        a = np.asarray(a, dtype=float)
        flat = a.ravel()
        idx = np.flatnonzero(flat)
        return cls(a.shape, idx, flat[idx])

    @property
    def nnz(self) -> int:
        return int(self.index.size)

    @property
    def nbytes(self) -> int:
        return (FLOAT_BYTES + INDEX_BYTES) * self.nnz

    def to_dense(self) -> np.ndarray:
        out = np.zeros(int(np.prod(self.shape)))
        out[self.index] = self.values
        return out.reshape(self.shape)


@dataclass(frozen=True, eq=False)
class Masked:
    """What a server sees of one participant's share under secure aggregation: a vector of
    ``size`` residues modulo 2^``bits``, masked (uniformly distributed to the server), so only its
    size is recorded. Its bytes: ⌈bits/8⌉ per residue."""

    size: int
    bits: int

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size,)

    @property
    def nbytes(self) -> int:
        return -(-self.bits // 8) * self.size

    def to_dense(self) -> np.ndarray:
        raise ValueError("a masked share has no value the server can read (only the secure sum has)")


Payload = Union[Dense, Sparse, Masked]  # noqa: UP007


@dataclass(frozen=True)
class Message:
    """One message: ``round`` (0-based), ``sender`` and ``receiver`` (participant index or
    ``"server"``), ``kind`` (what the payload is, e.g. ``"local_B"``) and the payload."""

    round: int
    sender: Party
    receiver: Party
    kind: str
    payload: Payload

    @property
    def nbytes(self) -> int:
        return self.payload.nbytes

    @property
    def direction(self) -> Literal["up", "down"]:
        """``"up"`` for participant → server, ``"down"`` for server → participant."""
        return "down" if self.sender == SERVER else "up"

    @property
    def participant(self) -> int:
        """The participant at the other end of the message (-1 for a secure sum)."""
        other = self.receiver if self.sender == SERVER else self.sender
        return other if isinstance(other, int) else -1

    def to_dense(self) -> np.ndarray:
        return self.payload.to_dense()


class Transcript(Sequence):
    """An ordered, append-only record of messages, queryable by round, participant and direction.

    Examples
    --------
    >>> t = Transcript()
    >>> t.append(Message(0, 0, SERVER, "local_B", Dense(np.zeros((2, 2)))))
    >>> t.total_bytes, len(t.filter(direction="up"))
    (32, 1)
    """

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self._messages: list[Message] = list(messages)

    def append(self, message: Message) -> None:
        if not isinstance(message, Message):
            raise TypeError(f"`message` must be a Message; got {type(message).__name__}")
        self._messages.append(message)

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> Transcript: ...
    def __getitem__(self, i: int | slice) -> Message | Transcript:
        if isinstance(i, slice):
            return Transcript(self._messages[i])
        return self._messages[i]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __repr__(self) -> str:
        return (
            f"Transcript({len(self)} messages, {self.n_rounds} rounds, "
            f"{self.n_participants} participants, {self.total_mb:.3f} MB)"
        )

    def filter(
        self,
        *,
        round: int | None = None,
        participant: int | None = None,
        direction: Literal["up", "down"] | None = None,
        kind: str | None = None,
    ) -> Transcript:
        """Messages matching every given criterion, in their original order."""
        if direction is not None:
            check_choice(direction, "direction", ("up", "down"))
        return Transcript(
            [
                m
                for m in self._messages
                if (round is None or m.round == round)
                and (participant is None or m.participant == participant)
                and (direction is None or m.direction == direction)
                and (kind is None or m.kind == kind)
            ]
        )

    def by_round(self, t: int) -> Transcript:
        return self.filter(round=t)

    def by_participant(self, k: int) -> Transcript:
        return self.filter(participant=k)

    def setup(self) -> Transcript:
        """The setup exchange (round :data:`SETUP_ROUND`): each participant's (n_k, d) and the row
        counts the server sent back."""
        return Transcript([m for m in self._messages if m.round == SETUP_ROUND])

    def learning(self) -> Transcript:
        """Every message but the setup exchange: the learning rounds 0, 1, …"""
        return Transcript([m for m in self._messages if m.round != SETUP_ROUND])

    def n_samples(self) -> tuple[int, ...] | None:
        """The participants' row counts as sent in the setup exchange (None without one)."""
        ups = sorted((m for m in self.setup() if m.direction == "up"), key=lambda m: m.participant)
        if not ups:
            return None
        return tuple(int(m.to_dense().ravel()[0]) for m in ups)

    def uploads(self) -> Transcript:
        return self.filter(direction="up")

    def downloads(self) -> Transcript:
        return self.filter(direction="down")

    def payloads(self, **criteria: Any) -> np.ndarray:
        """Stack the dense form of the payloads of the matching messages (leading axis = message)."""
        msgs = self.filter(**criteria)
        if not msgs:
            raise ValueError(f"no message matches {criteria}")
        return np.stack([m.to_dense() for m in msgs])

    @property
    def n_rounds(self) -> int:
        """The number of learning rounds (the setup exchange is not one)."""
        return 1 + max((m.round for m in self._messages), default=-1)

    @property
    def n_participants(self) -> int:
        return 1 + max((m.participant for m in self._messages), default=-1)

    @property
    def total_bytes(self) -> int:
        return sum(m.nbytes for m in self._messages)

    @property
    def total_mb(self) -> float:
        return self.total_bytes / 1e6

    def to_frame(self) -> pd.DataFrame:
        """One row per message: round, sender, receiver, direction, kind, format, entries, bytes."""
        rows = [
            {
                "round": m.round,
                "sender": m.sender,
                "receiver": m.receiver,
                "direction": m.direction,
                "kind": m.kind,
                "format": _format(m.payload),
                "entries": m.payload.nnz if isinstance(m.payload, Sparse) else int(np.prod(m.payload.shape)),
                "bytes": m.nbytes,
            }
            for m in self._messages
        ]
        cols = ["round", "sender", "receiver", "direction", "kind", "format", "entries", "bytes"]
        return pd.DataFrame(rows, columns=cols)

    def bytes_by_round(self) -> pd.DataFrame:
        """Bytes sent up, down and in total per round."""
        df = self.to_frame()
        table = df.pivot_table(
            index="round", columns="direction", values="bytes", aggfunc="sum", fill_value=0
        )
        table = table.reindex(columns=["up", "down"], fill_value=0)
        table["total"] = table["up"] + table["down"]
        return table.reset_index().rename_axis(columns=None)


def _format(payload: Payload) -> str:
    return "sparse" if isinstance(payload, Sparse) else "masked" if isinstance(payload, Masked) else "dense"


@dataclass(frozen=True)
class ServerReply:
    """What a server step returns: the payload to broadcast (one payload for everybody) or a list of
    per-participant payloads, and whether the protocol stops after this round."""

    payload: Payload | Sequence[Payload]
    kind: str
    stop: bool = False


ParticipantStep = Callable[[int, Payload | None], tuple[str, Payload]]
ServerStep = Callable[[int, list[Payload]], ServerReply]


def run_rounds(
    participants: Sequence[ParticipantStep],
    server: ServerStep,
    *,
    rounds: int,
    transcript: Transcript | None = None,
) -> tuple[int, Transcript]:
    """Run a synchronous star protocol in process, recording every message.

    In round ``t`` each participant step ``participants[k](t, inbox)`` is called with the payload the
    server sent it at the end of round ``t − 1`` (``None`` in round 0) and returns ``(kind, payload)``;
    then ``server(t, uploads)`` receives the uploads in participant order and returns a
    :class:`ServerReply`. The loop ends after ``rounds`` rounds or when the reply sets ``stop``.

    Returns
    -------
    rounds_run : int
    transcript : Transcript
    """
    rounds = check_int(rounds, "rounds", low=0)
    if len(participants) == 0:
        raise ValueError("`participants` must hold at least one step function; got none")
    transcript = Transcript() if transcript is None else transcript
    inbox: list[Payload | None] = [None] * len(participants)
    t = 0
    while t < rounds:
        uploads = []
        for k, step in enumerate(participants):
            kind, payload = step(t, inbox[k])
            transcript.append(Message(t, k, SERVER, kind, payload))
            uploads.append(payload)
        reply = server(t, uploads)
        if isinstance(reply.payload, (Dense, Sparse, Masked)):
            inbox = [reply.payload] * len(participants)
        else:
            inbox = list(reply.payload)
            if len(inbox) != len(participants):
                raise ValueError(
                    f"server reply holds {len(inbox)} payloads for {len(participants)} participants"
                )
        for k, sent in enumerate(inbox):  # the reply's payloads (never the round-0 None)
            transcript.append(Message(t, SERVER, k, reply.kind, cast(Payload, sent)))
        t += 1
        round_done("rounds", t, rounds)
        if reply.stop:
            break
    return t, transcript
