"""The Gaussian mechanism's exact privacy profile, and the exact composition of Gaussian releases.

A Gaussian release with ℓ2-sensitivity Δ and noise N(0, σ²) is μ-GDP with μ = Δ/σ (Dong, Roth & Su
2022), and its exact privacy profile is (Balle & Wang 2018, Thm 8)

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε · Φ(−μ/2 − ε/μ).

Releases of μ₁, …, μ_k compose *exactly* into one μ-GDP release with μ² = Σ μᵢ² (Dong, Roth & Su
2022, Cor. 3.3), so any number of Gaussian releases has a closed-form ε(δ): no privacy-loss
distribution, no discretisation. This module is the package's one implementation of that profile:
the ledger's ``"pld"`` accountant, :func:`~dpbnsl.accounting.calibrate_gaussian` and the audits'
GDP bounds use it.

Rounding is towards more privacy loss: μ is rounded up, and :func:`gaussian_epsilon` returns an ε
whose δ(ε), inflated by its own floating-point error bound, is still at most the target.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy.special import log_ndtr

from .._validation import check_int, check_real

__all__ = ["certified", "composed_mu", "gaussian_delta", "gaussian_epsilon"]

_U = 2.0**-52  # unit roundoff of float64 (one ulp of 1)


def _terms(mu: float, epsilon: float) -> tuple[float, float, float, float]:
    """(ln Φ(a), its error bound, x, the error bound of x) with a = μ/2 − ε/μ, b = −μ/2 − ε/μ and
    x = ε + ln Φ(b) − ln Φ(a) ≤ 0, so that δ(ε) = Φ(a)·(1 − e^x).

    In log space (e^ε overflows long before δ underflows). a and b are differences of terms as
    large as μ/2 + ε/μ, so each is off by a few ulps of that; ln Φ has slope at most |t| + 1 at t,
    which carries the error over; log_ndtr itself is good to a few ulps."""
    a, b = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    e_ab = 4.0 * _U * (mu / 2.0 + epsilon / mu)
    e_la = (abs(a) + 1.0) * e_ab + 32.0 * _U * (abs(la) + 1.0)
    e_lb = (abs(b) + 1.0) * e_ab + 32.0 * _U * (abs(lb) + 1.0)
    x = epsilon + lb - la
    x_err = e_la + e_lb + 8.0 * _U * (epsilon + abs(la) + abs(lb))
    return la, e_la, x, x_err


def _log_delta_upper(mu: float, epsilon: float) -> float:
    """An upper bound on ln δ(ε), floating-point error included (−∞ when δ(ε) = 0).

    The true x lies within ``x_err`` of the computed one and 1 − e^x decreases in x, so
    1 − e^{x − x_err} bounds 1 − e^x from above — also where cancellation leaves the computed x
    at or above 0 (a tiny or a huge μ), where δ is then bounded, not taken as 0."""
    if mu == 0.0:
        return -math.inf
    la, e_la, x, x_err = _terms(mu, epsilon)
    low = x - x_err
    if low >= 0.0:  # x ≥ x_err > 0 cannot hold in exact arithmetic beyond the error bound
        return -math.inf
    y = -math.expm1(low)  # in (0, 1], to within one ulp
    return la + e_la + math.log(y) + 8.0 * _U


def gaussian_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP, e.g. one Gaussian release with μ = Δ/σ (Balle & Wang 2018, Thm 8).

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0), 6)
    0.126937
    >>> gaussian_delta(0.0, 1.0), gaussian_delta(float("inf"), 1.0)
    (0.0, 1.0)
    """
    m = check_real(mu, "mu", low=0.0, allow_inf=True)
    e = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    if math.isinf(e):
        return 0.0
    if math.isinf(m):
        return 1.0
    if m == 0.0:
        return 0.0
    la, _, x, _ = _terms(m, e)
    return 0.0 if x >= 0.0 else -math.exp(la) * math.expm1(x)


def certified(mu: float, epsilon: float, delta: float) -> bool:
    """δ(ε) is at most ``delta`` even when inflated by its rounding-error bound (compared in log
    space, so subnormal targets are exact too)."""
    return _log_delta_upper(mu, epsilon) <= math.log(delta)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ε (rounded up) with δ(ε) ≤ ``delta`` for μ-GDP.

    Bisection on the exact profile: the returned ε is the upper end of a bracket shrunk to a
    relative width of about 1e-15, checked with the profile's error bound, so it is never below
    the exact ε(δ). ``mu = ∞`` (no noise) gives ε = ∞ and ``mu = 0`` gives 0.

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 6)
    4.377178
    >>> round(gaussian_epsilon(composed_mu([2.0], [4]), 1e-5), 6)  # four releases of σ/Δ = 2
    4.377178
    """
    m = check_real(mu, "mu", low=0.0, allow_inf=True)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    if math.isinf(m):
        return math.inf
    if certified(m, 0.0, d):
        return 0.0
    lo, hi = 0.0, max(1.0, m * m)
    while not certified(m, hi, d):
        lo, hi = hi, 2.0 * hi
        if math.isinf(hi):  # cannot happen for finite μ: δ(ε) ≤ e^{-(ε/μ − μ/2)²/2}
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi or hi - lo <= 4.0 * _U * hi:
            break
        if certified(m, mid, d):
            hi = mid
        else:
            lo = mid
    return hi


def composed_mu(multipliers: Iterable[float], counts: Iterable[int] | None = None) -> float:
    """μ of the composition of Gaussian releases with noise multipliers σᵢ/Δᵢ, each run
    ``counts[i]`` times: μ = √(Σ cᵢ/zᵢ²), rounded up. A multiplier of 0 gives ∞ (no noise), ∞
    gives nothing.

    Examples
    --------
    >>> round(composed_mu([1.0, 1.0]), 12)  # two unit-noise releases: one of multiplier 1/√2
    1.414213562373
    """
    zs = [check_real(z, "multiplier", low=0.0, allow_inf=True) for z in multipliers]
    cs = [1] * len(zs) if counts is None else [check_int(c, "count", low=0) for c in counts]
    if len(cs) != len(zs):
        raise ValueError(f"`counts` must have one count per multiplier; got {len(cs)} for {len(zs)}")
    live = [(z, c) for z, c in zip(zs, cs) if c > 0 and not math.isinf(z)]
    if any(z == 0.0 for z, _ in live):
        return math.inf
    if not live:
        return 0.0
    # scaled by the smallest multiplier, so that 1/z² neither underflows nor overflows
    m = min(z for z, _ in live)
    total = sum(c * (m / z) * (m / z) for z, c in live)  # ≥ 1, exact to n·u relative
    # the sum, the square root and the division add a few ulps: round up by (n + 8)·u
    with np.errstate(over="ignore"):
        return float(np.sqrt(total) / m * (1.0 + (len(live) + 8) * _U))
