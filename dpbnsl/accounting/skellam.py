"""The RDP and zCDP of distributed integer noise under secure aggregation.

- :func:`skellam_rdp`: Agarwal, Kairouz & Liu (NeurIPS 2021), Thm 3.5, with μ the variance of the
  Skellam noise: for integer α > 1, ε(α) ≤ αΔ₂²/(2μ) + min(((2α − 1)Δ₂² + 6Δ₁)/(4μ²), 3Δ₁/(2μ)).
  The theorem is stated at integer orders; a Rényi divergence never decreases with the order, so
  a fractional α takes the bound at ⌈α⌉. As zCDP (:func:`skellam_zcdp`): ρ = Δ₂²/(2μ) and
  ξ = ρ + 3Δ₁/(2μ) (the extra ρ pays for ⌈α⌉ ≤ α + 1).
- :func:`ddg_rho`: Kairouz, Liu & Steinke (ICML 2021), Thm 1: the sum of n independent discrete
  Gaussian shares N_ℤ(0, σ²) added to an integer statistic of ℓ2-sensitivity Δ₂ in D coordinates
  is ½ε²-zCDP with ε = min(√(Δ₂²/(nσ²) + ½τD), Δ₂/(√n σ) + τ√D),
  τ = 10 Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k + 1)).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int
from ..mechanisms.distributed import SkellamDpEvent

__all__ = ["skellam_rdp", "skellam_zcdp", "ddg_rho"]


def skellam_rdp(orders: np.ndarray, *, l2: float, l1: float, variance: float) -> np.ndarray:
    """The Skellam mechanism's RDP bound at ``orders`` (each taken at ⌈α⌉; see the module text)."""
    a = np.ceil(np.asarray(orders, float))
    if variance == 0:
        return np.full(a.shape, math.inf if l2 > 0 else 0.0)
    mu = float(variance)
    second = np.minimum(((2.0 * a - 1.0) * l2 * l2 + 6.0 * l1) / (4.0 * mu * mu), 3.0 * l1 / (2.0 * mu))
    return a * l2 * l2 / (2.0 * mu) + second


def skellam_zcdp(event: SkellamDpEvent) -> tuple[float, float]:
    """(ρ, ξ) of a Skellam event as (ξ, ρ)-zCDP: ρ = Δ₂²/(2μ), ξ = ρ + 3Δ₁/(2μ)."""
    if event.variance == 0:
        return (math.inf if event.l2_sensitivity > 0 else 0.0), 0.0
    rho = event.l2_sensitivity**2 / (2.0 * event.variance)
    return rho, rho + 3.0 * event.l1_sensitivity / (2.0 * event.variance)


def ddg_rho(*, l2: float, sigma: float, shares: int, dimension: int) -> float:
    """ρ of the sum of ``shares`` discrete Gaussian shares of σ each (Kairouz et al. Thm 1)."""
    n = check_int(shares, "shares", low=1)
    D = check_int(dimension, "dimension", low=1)
    tau = 10.0 * sum(math.exp(-2.0 * math.pi**2 * sigma**2 * k / (k + 1.0)) for k in range(1, n))
    eps = min(
        math.sqrt(l2 * l2 / (n * sigma * sigma) + 0.5 * tau * D),
        l2 / (math.sqrt(n) * sigma) + tau * math.sqrt(D),
    )
    return 0.5 * eps * eps
