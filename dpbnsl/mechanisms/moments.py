"""Smoothness constants and centring for the private learners, without touching raw statistics.

DP-PGCD's clip thresholds and step sizes depend on m_a = (1/n_k) Σ_i x_ia². In a private run they
must not be computed from the raw data. Three paths:

- :func:`public_smoothness`: the caller declares public bounds x_ia² ≤ X_a; m_a := X_a (an upper
  bound on the mean, so steps are conservative). No privacy cost. The bounds must be public: from
  the measurement's known range, never computed from the data.
- :func:`private_smoothness`: Fed-Sparse-BNSL Theorem D.1: clip x_ia² to [0, X_a], release the d
  means with Gaussian noise (sensitivity X_a/n_k each under replace-one), floor at a small
  positive value.
- an array of constants the caller declares public (passed straight to the learner).

:func:`private_mean` releases the column means (entries or rows clipped) for private centring.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import ArrayLike, check_real
from .releases import CLIP_RANGE, clip, clip_rows, gaussian_mechanism

__all__ = ["public_smoothness", "private_smoothness", "private_mean", "as_bounds"]


def as_bounds(bound: ArrayLike, d: int, name: str) -> np.ndarray:
    """A positive scalar or length-d vector of public bounds, as a float array of shape (d,)."""
    b = np.asarray(bound, dtype=float)
    if b.ndim == 0:
        b = np.full(d, float(b))
    if b.shape != (d,):
        raise ValueError(f"`{name}` must be a scalar or have shape ({d},); got shape {b.shape}")
    if not np.all(np.isfinite(b) & (b >= CLIP_RANGE[0]) & (b <= CLIP_RANGE[1])):
        raise ValueError(
            f"`{name}` must lie in [{CLIP_RANGE[0]:g}, {CLIP_RANGE[1]:g}] (a public "
            f"bound outside makes the sensitivities underflow or overflow); got "
            f"{bound!r}"
        )
    return b


def public_smoothness(bound: ArrayLike, d: int) -> np.ndarray:
    """m_a := X_a from declared public bounds x_ia² ≤ X_a (no privacy cost)."""
    return as_bounds(bound, d, "feature_bound")


def private_smoothness(
    X: np.ndarray,
    *,
    bound: ArrayLike,
    multiplier: float,
    rng: np.random.Generator,
    ledger: Any,  # a PrivacyLedger (not imported: the mechanisms sit below the accountant)
    floor: float = 1e-3,
    label: str = "smoothness",
) -> np.ndarray:
    """Privately estimate m_a = (1/n_k) Σ_i x_ia² for every a (Fassy El Fehri et al., Thm D.1).

    Privacy
    -------
    Replace-one neighbours. Each x_ia² is clipped to [0, X_a], so the mean m_a has sensitivity
    X_a/n_k; m̃_a = mean + N(0, (multiplier·X_a/n_k)²). d Gaussian releases, each
    ρ = 1/(2·multiplier²) (the ledger records ``GaussianDpEvent(multiplier)`` d times). The floor
    is post-processing. ``bound`` must be public; ``rng`` must not be seeded with anything that
    can be known (a known seed lets anyone regenerate the noise and subtract it).
    """
    n, d = X.shape
    b = as_bounds(bound, d, "feature_bound")
    floor = check_real(floor, "floor", low=0.0, low_open=True)
    with np.errstate(over="ignore"):  # x² of a record near 1e308 is ∞, clipped to X_a
        stats = np.clip(X * X, 0.0, b).mean(axis=0)
    out = np.empty(d)
    for a in range(d):  # one release per constant, as in the theorem
        release = gaussian_mechanism(stats[a], sensitivity=b[a] / n, multiplier=multiplier, rng=rng)
        ledger.record(label, release.event)
        out[a] = release.value
    return np.maximum(out, floor)


def private_mean(
    X: np.ndarray,
    *,
    multiplier: float,
    rng: np.random.Generator,
    ledger: Any,  # a PrivacyLedger (not imported: the mechanisms sit below the accountant)
    bound: ArrayLike | None = None,
    row_norm: float | None = None,
    label: str = "centring",
) -> np.ndarray:
    """Privately release the column means for centring (give ``bound`` or ``row_norm``).

    Privacy
    -------
    Replace-one neighbours; one Gaussian release with σ = multiplier·Δ, ρ = 1/(2·multiplier²).
    With ``bound`` (public bounds X_a on x_ia²) entries are clipped to |x_ia| ≤ c_a = √X_a, so
    Δ = 2‖c‖₂/n_k; with ``row_norm`` R rows are clipped to ‖x_i‖₂ ≤ R, so Δ = 2R/n_k. The bound
    must be public, and ``rng`` must not be seeded with anything that can be known.
    """
    n, d = X.shape
    if (bound is None) == (row_norm is None):
        raise TypeError("give exactly one of `bound` and `row_norm`")
    if row_norm is not None:
        R = check_real(row_norm, "row_norm", low=0.0, low_open=True)
        means, sensitivity = clip_rows(X, norm=R).mean(axis=0), 2.0 * R / n
    else:
        c = np.sqrt(as_bounds(bound, d, "feature_bound"))
        means, sensitivity = clip(X, c).mean(axis=0), 2.0 * float(np.linalg.norm(c)) / n
    release = gaussian_mechanism(means, sensitivity=sensitivity, multiplier=multiplier, rng=rng)
    ledger.record(label, release.event)
    return np.asarray(release.value)
