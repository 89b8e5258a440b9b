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

from scipy.special import log_ndtr

from .._validation import check_int, check_real

__all__ = ["certified", "composed_mu", "gaussian_delta", "gaussian_epsilon"]

_U = 2.0**-52  # unit roundoff of float64 (one ulp of 1)


def _delta_and_error(mu: float, epsilon: float) -> tuple[float, float]:
    """δ(ε) of μ-GDP and a bound on its relative floating-point error.

    Computed as Φ(a)·(1 − e^{ε + ln Φ(b) − ln Φ(a)}) with a = μ/2 − ε/μ and b = −μ/2 − ε/μ, in log
    space (e^ε overflows long before δ underflows). The absolute error of the exponent is a few
    ulps of its largest term; dividing by the exponent gives the relative error of 1 − e^x.
    """
    if mu == 0.0:
        return 0.0, 0.0
    a, b = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    x = epsilon + lb - la  # ≤ 0 in exact arithmetic
    if x >= 0.0:
        return 0.0, 0.0
    delta = -math.exp(la) * math.expm1(x)
    x_err = 16.0 * _U * (abs(epsilon) + abs(la) + abs(lb) + abs(a) ** 2 + abs(b) ** 2 + 1.0)
    return delta, 16.0 * _U + x_err / abs(x)


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
    return _delta_and_error(m, e)[0]


def certified(mu: float, epsilon: float, delta: float) -> bool:
    """δ(ε) is at most ``delta`` even when inflated by its rounding-error bound."""
    d, rel = _delta_and_error(mu, epsilon)
    return d * (1.0 + rel) <= delta


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
    total = 0.0
    for z, c in zip(zs, cs):
        if c == 0 or math.isinf(z):
            continue
        if z == 0.0:
            return math.inf
        total += c * ((1.0 / z) / z)  # 1/z², overflowing to ∞ rather than underflowing z²
    if total == 0.0:
        return 0.0
    # a sum of n positive terms is exact to n·u relative; the square root halves it
    return math.sqrt(total) * (1.0 + (len(zs) + 4) * _U)
