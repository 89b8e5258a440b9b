"""What a private participant enforces on its own, whoever runs the server.

A participant of a hosted private protocol computes its plan (its releases and their noise) from the
public settings and its own row count, and holds a budget of its own. Three things protect it from
a server that asks for more than the study agreed:

- :func:`own_budget` settles the budget it will defend: the one its operator gave it, or — only
  when the operator opted out explicitly (``budget="study"``) — the study's own (ε, δ), refused
  when ε is infinite or δ above :func:`delta_ceiling`;
- :class:`RequestGuard` admits only the requests its plan has, in order: the setup exchange once,
  then each planned phase's rounds 0, 1, 2, … up to the plan's count. An extra round, a repeated
  round, a round number going backwards, a phase the plan does not have or one going backwards
  is a :class:`Refusal`, raised before anything is computed or released;
- :class:`SettingsLock` refuses a request whose public settings differ from those the participant
  planned with (the server could otherwise re-plan it mid-run, e.g. with more rounds).

Behind these the participant's ledger is a privacy filter with the same budget: a release that
would take it over is refused before it is made (:class:`~dpbnsl.accounting.PrivacyLedger`).

What leaves a participant on failure is :func:`public_failure`: a :class:`ProtocolError` (whose
messages concern the protocol and the plan, never data) as it is, anything else as one fixed
sentence naming the participant and the phase and round (not even the exception's type, which can
depend on the data); the detail (which may quote a cell of the data) is logged on the
participant's side only. Messages the server sends are checked before they reach the data
(:func:`check_inbox`). A participant's spend across runs is recorded on its own machine
(:mod:`dpbnsl.federation.spend`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_real
from .messages import SETUP_ROUND, Dense, Payload, Sparse
from .protocol import ProtocolError

if TYPE_CHECKING:
    from ..accounting import LedgerEntry

#: ``reserve(entries, budget)``: charge a run's whole planned spend before its first release
Reserve = Callable[[Sequence["LedgerEntry"], tuple[float, float]], Any]

__all__ = [
    "Refusal",
    "ParticipantFailure",
    "RequestGuard",
    "check_study",
    "check_inbox",
    "Reserve",
    "study_of",
    "ledger_budget",
    "defence_state",
    "restore_defence",
    "SettingsLock",
    "DELTA_CEILING",
    "EPSILON_CEILING",
    "delta_ceiling",
    "own_budget",
    "public_failure",
    "LOGGER",
]

#: The largest δ a participant accepts from a study when its operator gave no budget of its own
#: (``budget="study"``); it is also capped at 1/n_k (:func:`delta_ceiling`).
DELTA_CEILING = 1e-3
#: The largest ε a participant accepts from a study when its operator gave no budget of its own:
#: beyond it the server can invert the releases nearly exactly (at ε = 100 a DP-Fed-BNSL
#: participant's clipped covariance was recovered to 0.4 %).
EPSILON_CEILING = 10.0

#: The participant-side log: the detail of a failure goes here, never to the server.
LOGGER = logging.getLogger("dpbnsl.participant")


class ParticipantFailure(ProtocolError):
    """What a participant sends the server when it cannot answer: a data-free message only (see
    :func:`public_failure`)."""


class Refusal(ProtocolError):
    """A participant refuses a request beyond its plan or its budget; nothing was released. The
    message names the request, the plan and the budget (public, or the participant's own policy),
    never anything of the data."""


def delta_ceiling(n_rows: int) -> float:
    """The largest δ a participant accepts from a study without a budget of its own:
    min(:data:`DELTA_CEILING`, 1/n_k). A δ of 1/n_k or more admits mechanisms that publish a
    record in the clear with probability δ (e.g. one row in n_k, outright)."""
    return min(DELTA_CEILING, 1.0 / max(int(n_rows), 1))


def own_budget(
    budget: Any, *, participant: int, n_rows: int, study: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The (ε, δ) budget participant ``participant`` defends.

    ``budget`` is its operator's ``(epsilon, delta)`` (ε may be ``inf`` when the operator says so:
    no filter), or the string ``"study"`` — an explicit opt-out: accept the ``study``'s (ε, δ),
    refused (:class:`Refusal`) when its ε exceeds :data:`EPSILON_CEILING` (or is infinite) or its
    δ exceeds :func:`delta_ceiling` (``n_rows``). ``None`` is refused: a private participant does
    not run without a budget."""
    if isinstance(budget, str):
        if budget != "study":
            raise ValueError(f'`budget` must be a pair (epsilon, delta) or "study"; got {budget!r}')
        if study is None:
            raise ValueError('`budget="study"` needs the study\'s (epsilon, delta)')
        eps, delta = float(study[0]), float(study[1])
        ceiling = delta_ceiling(n_rows)
        if not math.isfinite(eps):
            raise Refusal(
                f"participant {participant}: the study asks for ε = {eps!r} (no privacy) and this "
                f"participant has no budget of its own to allow it; nothing was released"
            )
        if not eps <= EPSILON_CEILING:
            raise Refusal(
                f"participant {participant}: the study asks for ε = {eps:g}, above the ceiling "
                f"{EPSILON_CEILING:g} a participant accepts without a budget of its own; nothing "
                f"was released"
            )
        if not delta <= ceiling:
            raise Refusal(
                f"participant {participant}: the study asks for δ = {delta:g}, above the ceiling "
                f"{ceiling:g} = min({DELTA_CEILING:g}, 1/n_k) a participant accepts without a budget "
                f"of its own; nothing was released"
            )
        return eps, delta
    if budget is None:
        raise Refusal(
            f"participant {participant} has no privacy budget of its own: its operator must give "
            f'one (epsilon, delta), or accept the study\'s with budget="study"; nothing was released'
        )
    if not (isinstance(budget, Sequence) and len(budget) == 2):
        raise TypeError(f"`budget` must be a pair (epsilon, delta); got {budget!r}")
    eps = check_real(budget[0], "budget epsilon", low=0.0, low_open=True, allow_inf=True)
    delta = check_real(budget[1], "budget delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return eps, delta


def check_inbox(inbox: Payload | None, d: int, *, participant: int, phase: str, t: int) -> None:
    """Refuse a server message a round cannot use: anything but a (d, d) matrix of finite values
    (the server's W). Checked before any computation, so a malformed message never reaches the
    data (where an overflow or an exception could depend on it)."""
    if inbox is None:
        return
    if not isinstance(inbox, (Dense, Sparse)):
        raise Refusal(f"participant {participant}: {phase} round {t}: the server's message is not a matrix")
    W = inbox.to_dense()
    if W.shape != (d, d) or not np.isfinite(W).all():
        got = f"shape {W.shape}" if W.shape != (d, d) else "non-finite entries"
        raise Refusal(
            f"participant {participant}: {phase} round {t}: the server's message must be a finite "
            f"{d} × {d} matrix; got {got}"
        )


def check_study(study: tuple[float, float], budget: tuple[float, float], *, participant: int) -> None:
    """Refuse a study whose (ε, δ) exceeds the participant's budget."""
    (e, dl), (eb, db) = study, budget
    if e > eb or dl > db:
        raise Refusal(
            f"participant {participant}: the study asks for (ε, δ) = ({e:g}, {dl:g}), beyond this "
            f"participant's budget ({eb:g}, {db:g}); nothing was released"
        )


class RequestGuard:
    """The requests a participant's plan admits, in order.

    ``phases`` lists the planned phases after the setup exchange as ``(name, most rounds)``, in
    the order they run (a phase may end early, when the server's stopping rule says so, but none is
    skipped). A request is admitted when it is the setup exchange and nothing came before, or
    round 0 of the next phase, or round t + 1 of the phase whose round t was the last admitted,
    below that phase's planned count. Everything else is a :class:`Refusal`.

    Examples
    --------
    >>> guard = RequestGuard(0, [("rounds", 2)])
    >>> for t in (-1, 0, 1):
    ...     guard.admit("rounds", t)
    >>> guard.admit("rounds", 2)
    Traceback (most recent call last):
    ...
    dpbnsl.federation.guard.Refusal: participant 0: refuses rounds round 2: its plan ends phase ...
    """

    def __init__(
        self,
        participant: int,
        phases: Sequence[tuple[str, int]],
    ) -> None:
        self.k = participant
        self.phases = [(str(p), int(n)) for p, n in phases]
        self.last: tuple[str, int] | None = None

    def admit(self, phase: str, t: int) -> None:
        """Admit the request ``(phase, t)`` or raise a :class:`Refusal` naming it and the plan."""
        asked = _where(phase, t)
        if t == SETUP_ROUND:
            if self.last is not None:
                raise Refusal(f"participant {self.k}: refuses {asked} again (it was done); nothing released")
            self.last = (phase, t)
            return
        if self.last is None:
            raise Refusal(f"participant {self.k}: refuses {asked} before the setup exchange")
        names = [p for p, _ in self.phases]
        if phase not in names:
            raise Refusal(
                f"participant {self.k}: refuses {asked}: its plan has no phase {phase!r} "
                f"(planned: {self._plan()}); nothing released"
            )
        i = names.index(phase)
        limit = self.phases[i][1]
        last_phase, last_t = self.last
        j = -1 if last_t == SETUP_ROUND else names.index(last_phase)
        if i == j:
            ok, why = t == last_t + 1, f"it answered round {last_t} last"
        elif i > j:
            skipped = names[j + 1 : i]
            ok = t == 0 and not skipped
            why = f"the plan's phase {skipped[0]!r} comes first" if skipped else "a phase starts at round 0"
        else:
            ok, why = False, f"its phase {last_phase!r} came after {phase!r}"
        if ok and t >= limit:
            ok, why = False, f"its plan ends phase {phase!r} after {limit} round(s)"
        if not ok:
            raise Refusal(
                f"participant {self.k}: refuses {asked}: {why} (planned: {self._plan()}); nothing released"
            )
        self.last = (phase, t)

    def _plan(self) -> str:
        return "; ".join(f"phase {p!r}: up to {n} round(s)" for p, n in self.phases) or "nothing yet"

    def state(self) -> str:
        """The plan's phases and the last admitted request, for a participant's saved state."""
        return json.dumps({"phases": self.phases, "last": self.last})

    def restore(self, saved: str | None) -> None:
        """Restore what :meth:`state` returned (None: nothing admitted yet)."""
        if saved is None:
            return
        doc = json.loads(saved)
        self.phases = [(str(p), int(n)) for p, n in doc["phases"]]
        last = doc["last"]
        self.last = None if last is None else (str(last[0]), int(last[1]))


class SettingsLock:
    """The public settings a participant planned with, as canonical JSON; a request carrying other
    settings is refused (:meth:`check`)."""

    def __init__(self, participant: int, settings: Mapping[str, Any]) -> None:
        self.k = participant
        self.text = canonical(settings)

    def check(self, saved: str | None) -> None:
        """Refuse when ``saved`` (the settings of the plan already made) differs from these."""
        if saved is not None and saved != self.text:
            raise Refusal(
                f"participant {self.k}: the request's settings differ from those it planned the "
                f"study with; it keeps its plan and refuses (nothing released)"
            )


def study_of(settings: Mapping[str, Any]) -> tuple[Any, Any]:
    """The (ε, δ) a study's settings ask for (NaN where absent: a plan refuses them)."""
    return settings.get("epsilon", math.nan), settings.get("delta", math.nan)


def ledger_budget(budget: tuple[float, float]) -> tuple[float, float] | None:
    """The budget a participant's ledger filters with: its own, or none when it is infinite (an
    operator's explicit "no privacy": nothing to filter)."""
    return budget if math.isfinite(budget[0]) else None


def defence_state(lock: SettingsLock, guard: RequestGuard) -> dict[str, str]:
    """The settings lock's and the request guard's part of a participant's saved state."""
    return {"settings": lock.text, "guard": guard.state()}


def restore_defence(state: Mapping[str, Any], lock: SettingsLock, guard: RequestGuard) -> None:
    """Restore :func:`defence_state` (refusing settings that differ from those saved)."""
    lock.check(state.get("settings"))
    guard.restore(state.get("guard"))


def canonical(settings: Mapping[str, Any]) -> str:
    """Settings as canonical JSON (sorted keys; arrays as lists), for comparison."""

    def plain(v: Any) -> Any:
        if hasattr(v, "tolist"):
            return v.tolist()
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        return v

    return json.dumps(plain(dict(settings)), sort_keys=True, default=repr)


def _where(phase: str, t: int) -> str:
    return "the setup exchange" if t == SETUP_ROUND else f"{phase} round {t}"


def public_failure(exc: BaseException, *, participant: int | None, phase: str, t: int) -> str:
    """What a participant may tell the server about a failure: a :class:`ProtocolError`'s own
    message (it concerns the protocol and the plan, never the data), or else one fixed sentence
    with the participant and the phase and round. The full detail is logged on the participant's
    side (:data:`LOGGER`)."""
    where = _where(phase, t)
    LOGGER.error(
        "participant %s failed in %s (detail kept on this machine)", participant, where, exc_info=exc
    )
    if isinstance(exc, ProtocolError):
        return str(exc)
    who = "a participant" if participant is None else f"participant {participant}"
    # one fixed sentence: not even the exception's type, which can depend on the data
    return f"{who} failed in {where}; the detail stays in the participant's own log"
