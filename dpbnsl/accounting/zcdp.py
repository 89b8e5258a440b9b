"""Closed forms of zero-concentrated DP (zCDP) and Rényi DP used by the private learners.

Pure functions, no random numbers. Conventions: ρ-zCDP means D_α(M(D) ‖ M(D')) ≤ ρα for every α > 1
(Bun & Steinke 2016); an (α, τ)-RDP curve is a function α ↦ τ(α). Conversions to (ε, δ)-DP:

- Bun–Steinke (2016, Prop. 1.3):         ε = ρ + 2√(ρ ln(1/δ))          (Fed-Sparse-BNSL Thm A.2)
- Canonne–Kamath–Steinke (2020, Prop. 12): ε = inf_{α>1} αρ + [ln(1/δ) + (α−1) ln(1 − 1/α) − ln α]/(α−1)

Every function that rounds rounds towards *more* privacy loss (larger ε, smaller admissible ρ).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import scipy.optimize

from .._validation import ArrayLike, check_choice, check_real

__all__ = [
    "gaussian_rho",
    "gumbel_max_epsilon0",
    "bounded_range_rho",
    "gumbel_max_rho",
    "pure_dp_rho",
    "rho_to_epsilon",
    "epsilon_to_rho",
    "cks_epsilon_from_rdp",
]

Conversion = Literal["bun-steinke", "cks"]
_CONVERSIONS = ("bun-steinke", "cks")
SAFETY = 1e-12  # relative margin added to numerically optimised privacy losses


def _delta(delta: float) -> float:
    return check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)


def gaussian_rho(*, sensitivity: float, sigma: float) -> float:
    """ρ = Δ²/(2σ²) of the Gaussian mechanism with ℓ2-sensitivity Δ and noise N(0, σ²) (Bun &
    Steinke 2016, Prop. 1.6; Fed-Sparse-BNSL Thm A.3). σ = 0 with Δ > 0 gives ρ = ∞; Δ = 0
    gives 0."""
    s = check_real(sensitivity, "sensitivity", low=0.0)
    g = check_real(sigma, "sigma", low=0.0)
    if s == 0.0:
        return 0.0
    return math.inf if g == 0.0 else s * s / (2.0 * g * g)


def gumbel_max_epsilon0(*, sensitivity: float, scale: float) -> float:
    """ε₀ = 2Δ/λ: Gumbel-max with scale λ on scores of sensitivity Δ samples P(j) ∝ exp(s_j/λ), the
    exponential mechanism with ε₀/(2Δ) = 1/λ, which is ε₀-bounded-range (Durfee & Rogers 2019)."""
    s = check_real(sensitivity, "sensitivity", low=0.0)
    lam = check_real(scale, "scale", low=0.0)
    if s == 0.0:
        return 0.0
    return math.inf if lam == 0.0 else 2.0 * s / lam


def bounded_range_rho(epsilon0: float) -> float:
    """ρ = ε₀²/8: an ε₀-bounded-range mechanism is ε₀²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2)."""
    e = check_real(epsilon0, "epsilon0", low=0.0, allow_inf=True)
    return e * e / 8.0


def gumbel_max_rho(*, sensitivity: float, scale: float) -> float:
    """ρ = (2Δ/λ)²/8 = Δ²/(2λ²) of Gumbel-max selection (Fed-Sparse-BNSL Thm A.4)."""
    return bounded_range_rho(gumbel_max_epsilon0(sensitivity=sensitivity, scale=scale))


def pure_dp_rho(epsilon: float) -> float:
    """ρ = ε²/2: pure ε-DP implies ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    e = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    return e * e / 2.0


def _cks_at(alpha: float, rho: float, log_inv_delta: float) -> float:
    return alpha * rho + (log_inv_delta + (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)) / (
        alpha - 1.0
    )


def rho_to_epsilon(rho: float, delta: float, *, conversion: Conversion = "cks") -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    ``"bun-steinke"``: ρ + 2√(ρ ln(1/δ)). ``"cks"``: the Canonne–Kamath–Steinke bound, minimised
    continuously over the Rényi order α (Brent's method on ln(α − 1)); never larger than
    Bun–Steinke's. The result is rounded up by a relative 1e-12.

    Examples
    --------
    >>> round(rho_to_epsilon(1 / 32, 1e-3), 9)
    0.688002455
    """
    r = check_real(rho, "rho", low=0.0, allow_inf=True)
    d = _delta(delta)
    check_choice(conversion, "conversion", _CONVERSIONS)
    if r == 0.0:
        return 0.0
    if math.isinf(r):
        return math.inf
    L = -math.log(d)  # not log(1/δ): 1/δ overflows for subnormal δ
    rL = r * L
    bs = r + 2.0 * (math.sqrt(rL) if math.isfinite(rL) else math.sqrt(r) * math.sqrt(L))
    if conversion == "bun-steinke" or not math.isfinite(bs):
        return bs
    f = lambda x: _cks_at(1.0 + math.exp(x), r, L)
    # the optimal α is about 1 + √(L/ρ): search ln(α − 1) around it
    centre = 0.5 * (math.log(max(L, 1e-300)) - math.log(r))
    try:
        sol = scipy.optimize.minimize_scalar(
            f, bounds=(centre - 20, centre + 20), method="bounded", options={"xatol": 1e-12}
        )
        cks = float(sol.fun)
    except (OverflowError, ValueError):  # α·ρ or α itself out of range: keep Bun–Steinke
        return bs
    if not math.isfinite(cks):
        return bs
    return min(bs, max(cks, 0.0) * (1.0 + SAFETY))


def epsilon_to_rho(epsilon: float, delta: float, *, conversion: Conversion = "cks") -> float:
    """The largest ρ whose conversion gives at most ``epsilon`` (the inverse of
    :func:`rho_to_epsilon`). Bun–Steinke in closed form: (√(ε + ln(1/δ)) − √(ln(1/δ)))² (the ρ*
    of Fed-Sparse-BNSL's Theorem 5.1); CKS by root finding, then stepped down until
    ``rho_to_epsilon(ρ) <= epsilon`` holds.

    Examples
    --------
    >>> round(epsilon_to_rho(1.0, 1e-5, conversion="bun-steinke"), 6)
    0.02082
    """
    e = check_real(epsilon, "epsilon", low=0.0, low_open=True, allow_inf=True)
    d = _delta(delta)
    check_choice(conversion, "conversion", _CONVERSIONS)
    if math.isinf(e):
        return math.inf
    L = -math.log(d)  # not log(1/δ): 1/δ overflows for subnormal δ
    # (√(ε + L) − √L)² without the cancellation of the difference at small ε
    rho = (e / (math.sqrt(e + L) + math.sqrt(L))) ** 2
    if conversion == "cks" and rho > 0.0:
        g = lambda r: rho_to_epsilon(r, d, conversion="cks") - e
        hi = rho
        while g(hi) < 0 and hi < 1e300:
            hi *= 2.0
        if g(rho) < 0 <= g(hi):
            rho = scipy.optimize.brentq(g, rho, hi, xtol=1e-300, rtol=1e-13)
    return _step_down(rho, lambda r: rho_to_epsilon(r, d, conversion=conversion) <= e)


def _step_down(rho: float, ok: Callable[[float], bool]) -> float:
    """The largest ρ' ≤ ρ found by relative steps that double until ``ok(ρ')``: a closed form
    or a root finder can land a few ulps (or, after cancellation, more) above the target."""
    step = 1e-15
    while rho > 0.0 and not ok(rho):
        rho *= 1.0 - step
        step = min(2.0 * step, 0.5)
    return max(rho, 0.0)


def cks_epsilon_from_rdp(orders: ArrayLike, rdp: ArrayLike, delta: float) -> float:
    """ε(δ) from an RDP curve sampled at ``orders`` with the CKS conversion, minimised over the
    given orders (delegates to dp-accounting's ``compute_epsilon``)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    eps, _ = compute_epsilon(np.asarray(orders, float), np.asarray(rdp, float), _delta(delta))
    return float(eps)
