"""Calibration of runs made of pure-DP rounds (Priv-PC's sieve and examine).

A run reserves ``rounds`` rounds; round r spends ``shares[k]·t`` (pure DP) on its k-th release.
:func:`calibrate_pure_rounds` finds the largest per-round total ``t`` for which the composition of
every reserved release, each recorded as :func:`~dpbnsl.mechanisms.sparse_vector.pure_dp_event`,
has ε(δ) at most the target under the chosen accountant. The default, dp-accounting's RDP accountant
with its exact randomized-response curve, is the one that certifies the most for many small
rounds: its PLD accountant rounds every round's loss up to its discretisation interval (1e-4),
which dominates once a round spends less than that. The bisection keeps the end of the
bracket that satisfies the target, so the returned ``t`` never overshoots; the result is checked
once more with a ledger before it is returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import check_choice, check_epsilon, check_int, check_real
from ..mechanisms.sparse_vector import MAX_PURE_EPSILON, pure_dp_event
from .compose import ACCOUNTANTS, Accountant, LedgerEntry, UnsupportedEventError, compose_epsilon

__all__ = ["PureRoundsCalibration", "calibrate_pure_rounds"]


@dataclass(frozen=True)
class PureRoundsCalibration:
    """Per-round pure-DP budgets: ``epsilons[k]`` for the k-th release of each of ``rounds``
    rounds; ``accounted`` is ε(δ) of all of them under ``accountant`` (≤ ``epsilon``)."""

    epsilon: float
    delta: float
    rounds: int
    shares: tuple[float, ...]
    epsilons: tuple[float, ...]
    accountant: str
    accounted: float


def _entries(t: float, rounds: int, shares: Sequence[float]) -> list[LedgerEntry]:
    return [LedgerEntry(f"release {k}", pure_dp_event(s * t), rounds) for k, s in enumerate(shares)]


def calibrate_pure_rounds(
    epsilon: float,
    delta: float,
    *,
    rounds: int,
    shares: Sequence[float] = (0.5, 0.5),
    accountant: Accountant = "rdp",
    rtol: float = 1e-3,
) -> PureRoundsCalibration:
    """The largest per-round budget ``t`` with ε(δ) of ``rounds`` × (pure ``shares[k]·t`` for each
    k) at most ``epsilon`` (module docstring).

    Examples
    --------
    >>> c = calibrate_pure_rounds(1.0, 1e-5, rounds=100)
    >>> c.accounted <= 1.0, round(sum(c.epsilons), 3)  # basic composition would allow 0.01
    (True, 0.035)
    """
    e = check_epsilon(epsilon)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    rounds = check_int(rounds, "rounds", low=1, high=10**7)
    check_choice(accountant, "accountant", ACCOUNTANTS)
    rtol = check_real(rtol, "rtol", low=1e-9, high=0.5)
    if isinstance(shares, (str, bytes)) or len(shares) == 0:
        raise ValueError(f"`shares` must be a non-empty sequence of positive numbers; got {shares!r}")
    sh = [check_real(s, f"shares[{k}]", low=0.0, low_open=True) for k, s in enumerate(shares)]
    total = sum(sh)
    sh = [s / total for s in sh]

    def spent(t: float) -> float:
        try:
            return compose_epsilon(_entries(t, rounds, sh), dl, accountant)
        except UnsupportedEventError:  # e.g. dp-accounting's PLD at extreme losses: not certified
            return math.inf

    # bracket [lo, hi] with spent(lo) ≤ ε < spent(hi): from basic composition's per-round budget
    # (the composition of pure releases spends at most their sum), doubling up or halving down
    lo = hi = min(e / rounds, MAX_PURE_EPSILON)
    if spent(lo) <= e:
        while hi < MAX_PURE_EPSILON and spent(hi) <= e:
            lo, hi = hi, min(2.0 * hi, MAX_PURE_EPSILON)
        if spent(hi) <= e:  # ε(δ) of the largest per-round budget representable is within ε
            lo = hi
    else:
        while spent(lo) > e:
            hi, lo = lo, lo / 2.0
            if lo < 1e-300:  # the PLD accountant's discretisation floor, e.g.
                raise ValueError(
                    f"the {accountant!r} accountant certifies no per-round budget within ε = {e!r} "
                    f"over {rounds} rounds (use accountant='rdp')"
                )
    while hi - lo > rtol * lo:
        mid = math.sqrt(lo * hi)
        if spent(mid) <= e:
            lo = mid
        else:
            hi = mid
    accounted = spent(lo)
    if accounted > e:  # pragma: no cover - lo satisfied the target when it was kept
        raise RuntimeError(f"calibration overshoots: ε = {accounted!r} > target {e!r}")
    return PureRoundsCalibration(e, dl, rounds, tuple(sh), tuple(s * lo for s in sh), accountant, accounted)
