"""How much an audit of a given size can see: the power of a Clopper–Pearson audit.

An audit that bounds ε at 0 says nothing unless it could have bounded it above the claim had the
mechanism been broken. :func:`audit_power` answers that for a reference mechanism: a Gaussian
release that spends ``factor`` times the claimed ε (at the claimed δ). With ``trials`` runs per
world it computes the bound a threshold test would give at the *expected* error counts, at the
best threshold; when even that stays at or below the claim, such a violation would pass
unflagged, and :attr:`AuditPower.trials_needed` says how many runs per world would catch it.

The estimate is optimistic for the audit (expected counts, the best threshold chosen after the
fact, the Gaussian trade-off curve, which is what a ε-violating release of this package's games
looks like): an audit it calls too weak is too weak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._validation import check_epsilon, check_int, check_real
from ..accounting.gaussian import gaussian_epsilon
from .rates import cp_upper, eps_from

__all__ = ["AuditPower", "audit_power"]

#: the largest audit size searched for :attr:`AuditPower.trials_needed`
MAX_SEARCHED = 10**9


@dataclass(frozen=True)
class AuditPower:
    """What an audit of ``trials`` runs per world can detect (see :func:`audit_power`)."""

    claimed_epsilon: float
    factor: float
    trials: int
    expected_lb: float  # the expected bound on a Gaussian release spending factor × the claim
    trials_needed: int | None  # runs per world for that bound to exceed the claim (None: > 1e9)

    @property
    def sufficient(self) -> bool:
        """Whether such a violation would be flagged (in expectation)."""
        return self.expected_lb > self.claimed_epsilon


def _mu_for(epsilon: float, delta: float) -> float:
    """The μ whose Gaussian trade-off spends exactly ``epsilon`` at ``delta`` (bisection)."""
    lo, hi = 0.0, 1.0
    while gaussian_epsilon(hi, delta) < epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_epsilon(mid, delta) < epsilon else (lo, mid)
    return hi


def _expected_lb(mu: float, n: int, delta: float, alpha: float) -> float:
    t = np.linspace(-4.0, mu + 4.0, 400)
    fp = n * special.ndtr(-t)  # world 0 ~ N(0, 1) above t
    fn = n * special.ndtr(t - mu)  # world 1 ~ N(μ, 1) below t
    eps = eps_from(cp_upper(fp, n, alpha / 2.0), cp_upper(fn, n, alpha / 2.0), delta)
    return float(np.max(eps))


def audit_power(
    epsilon: float, *, delta: float, trials: int, alpha: float = 0.05, factor: float = 2.0
) -> AuditPower:
    """The power of an audit of ``trials`` runs per world at failure probability ``alpha``: the
    bound it would give (expected counts, best threshold) on a Gaussian release that spends
    ``factor`` × ``epsilon`` at ``delta``, and the audit size that would bound it above
    ``epsilon``.

    Examples
    --------
    >>> weak = audit_power(1.0, delta=1e-5, trials=200)
    >>> weak.sufficient, weak.expected_lb < 1.0, weak.trials_needed > 1000
    (False, True, True)
    >>> audit_power(1.0, delta=1e-5, trials=100_000).sufficient
    True
    """
    e = check_epsilon(epsilon)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    n = check_int(trials, "trials", low=1)
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    f = check_real(factor, "factor", low=1.0, low_open=True)
    mu = _mu_for(f * e, d)
    got = _expected_lb(mu, n, d, a)
    needed: int | None = None
    if got > e:
        needed = n
    else:  # geometric search, then bisection, on the (increasing) expected bound
        lo, hi = n, n
        while hi < MAX_SEARCHED and _expected_lb(mu, hi, d, a) <= e:
            lo, hi = hi, min(MAX_SEARCHED, math.ceil(hi * 2))
        if _expected_lb(mu, hi, d, a) > e:
            while hi - lo > max(1, lo // 100):
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _expected_lb(mu, mid, d, a) <= e else (lo, mid)
            needed = hi
    return AuditPower(e, f, n, got, needed)
