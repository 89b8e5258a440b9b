"""The exact Rényi-DP curve of an ε₀-bounded-range mechanism (Gumbel-max selection).

Tighter than the zCDP bound ρ = ε₀²/8 that :func:`dpbnsl.accounting.bounded_range_rho` gives; the
``"rdp"`` accountant composes DP-PGCD's selections with it. Rounds towards more privacy loss.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_real
from .zcdp import SAFETY

__all__ = ["bounded_range_rdp"]


def _br_divergence(t: np.ndarray, alpha: np.ndarray, e0: float) -> np.ndarray:
    """D_α(P‖Q) of the two-point pairs whose privacy loss ln(P/Q) takes the values t and t − ε₀,
    for 0 < t < ε₀ (broadcast over ``t`` and ``alpha``).

    With p₁ = P(loss = t), p₂ = P(loss = t − ε₀): e^{(α−1)D} = p₁e^{(α−1)t} + p₂e^{(α−1)(t−ε₀)}.
    When (α−1)ε₀ is small this is 1 + (a tiny number): it is then computed as
    log1p(p₁·expm1((α−1)t) + p₂·expm1((α−1)(t−ε₀))), free of the cancellation a direct log would
    suffer; otherwise in log space.
    """
    t, alpha = np.broadcast_arrays(np.asarray(t, float), np.asarray(alpha, float))
    am1 = alpha - 1.0
    small = am1 * e0 < 1.0
    p1 = np.expm1(t - e0) / np.expm1(-e0)
    p2 = np.expm1(-t) * np.exp(t - e0) / np.expm1(-e0)
    with np.errstate(over="ignore", invalid="ignore"):
        stable = np.log1p(p1 * np.expm1(am1 * t) + p2 * np.expm1(am1 * (t - e0))) / am1
    log_norm = np.log(-np.expm1(-e0))
    log_q = np.log(-np.expm1(t - e0)) - t - log_norm  # Q(loss = t)
    log_1mq = np.log(-np.expm1(-t)) - log_norm  # Q(loss = t − ε₀)
    direct = np.logaddexp(log_q + alpha * t, log_1mq + alpha * (t - e0)) / am1
    return np.where(small, stable, direct)


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def bounded_range_rdp(alpha: float | np.ndarray, epsilon0: float) -> float | np.ndarray:
    """Exact Rényi divergence of order α of an ε₀-bounded-range mechanism.

    The worst case over pairs whose privacy loss lies in an interval [t − ε₀, t] is a two-point
    pair (Dong, Durfee & Rogers 2020; Cesar & Rogers 2021); the RDP curve is the maximum over
    t ∈ [0, ε₀] of its divergence. Computed for all orders at once: a 129-point grid scan, then
    golden-section refinement of the bracket around the best grid point, rounded up by a relative
    1e-12 and capped by the proven bound min(αε₀²/8, ε₀). ``alpha`` may be a scalar or an array of
    orders > 1; the result has the same shape.

    Examples
    --------
    >>> float(bounded_range_rdp(2.0, 1.0)) < 2.0 * 1.0 / 8
    True
    """
    e0 = check_real(epsilon0, "epsilon0", low=0.0)
    a = np.asarray(alpha, dtype=float)
    if a.size == 0 or np.any(~(a > 1.0)):
        raise ValueError(f"`alpha` must be > 1; got {alpha!r}")
    flat = a.ravel()
    out = np.minimum(e0, flat * e0 * e0 / 8.0)  # also the exact value for α = ∞ and ε₀ = 0
    finite = np.isfinite(flat) & (e0 > 0)
    if finite.any():
        al = flat[finite][:, None]
        grid = np.linspace(0.0, e0, 131)[1:-1]
        vals = _br_divergence(grid[None, :], al, e0)
        k = np.argmax(vals, axis=1)
        lo = np.where(k > 0, grid[np.maximum(k - 1, 0)], 0.0)
        hi = np.where(k + 1 < grid.size, grid[np.minimum(k + 1, grid.size - 1)], e0)
        best = vals[np.arange(k.size), k]
        al = al[:, 0]
        for _ in range(45):  # the bracket shrinks by 0.618 per step: 45 steps reach ~4e-10 of it
            x1 = hi - _GOLDEN * (hi - lo)
            x2 = lo + _GOLDEN * (hi - lo)
            f1, f2 = _br_divergence(x1, al, e0), _br_divergence(x2, al, e0)
            best = np.maximum(best, np.maximum(f1, f2))
            left = f1 >= f2
            hi = np.where(left, x2, hi)
            lo = np.where(left, lo, x1)
        # rounding margin: the stable form's relative error is about 8·u/(α·ε₀) (u = unit
        # roundoff); 32·u/(α·ε₀) + 1e-12 covers it and the refinement
        margin = SAFETY + 32.0 * np.finfo(float).eps / (flat[finite] * e0)
        out[finite] = np.minimum(best * (1.0 + margin), out[finite])
    out = out.reshape(a.shape)
    return float(out) if out.ndim == 0 else out
