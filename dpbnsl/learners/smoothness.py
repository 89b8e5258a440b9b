"""Smoothness constants and centring for the private learners, without touching raw statistics.

DP-PGCD's clip thresholds and step sizes depend on m_a = (1/n_k) Σ_i x_ia². In a private run they
must not be computed from the raw data. Three paths:

- :func:`public_smoothness`: the caller declares public bounds x_ia² ≤ X_a; m_a := X_a (an upper
  bound on the mean, so steps are conservative). No privacy cost.
- :func:`private_smoothness`: seed 001 Theorem D.1: clip x_ia² to [0, X_a], release the d means
  with Gaussian noise (sensitivity X_a/n_k each under replace-one), floor at a small positive value.
- an array of constants the caller declares public (passed straight to the learner).

:func:`private_mean` releases the column means (clipped to |x_ia| ≤ c_a) for private centring.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from ..mechanisms import clip, gaussian_mechanism

__all__ = ["public_smoothness", "private_smoothness", "private_mean", "as_bounds"]


def as_bounds(bound, d: int, name: str) -> np.ndarray:
    """A positive scalar or length-d vector of public bounds, as a float array of shape (d,)."""
    b = np.asarray(bound, dtype=float)
    if b.ndim == 0:
        b = np.full(d, float(b))
    if b.shape != (d,):
        raise ValueError(f"`{name}` must be a scalar or have shape ({d},); got shape {b.shape}")
    if not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError(f"`{name}` must be positive and finite; got {bound!r}")
    return b


def public_smoothness(bound, d: int) -> np.ndarray:
    """m_a := X_a from declared public bounds x_ia² ≤ X_a (no privacy cost)."""
    return as_bounds(bound, d, "feature_bound")


def private_smoothness(X: np.ndarray, *, bound, multiplier: float, rng: np.random.Generator,
                       ledger, floor: float = 1e-3, label: str = "smoothness") -> np.ndarray:
    """Privately estimate m_a = (1/n_k) Σ_i x_ia² for every a (seed 001 Theorem D.1).

    Privacy
    -------
    Replace-one neighbours. Each x_ia² is clipped to [0, X_a], so the mean m_a has sensitivity
    X_a/n_k; m̃_a = mean + N(0, (multiplier·X_a/n_k)²). d Gaussian releases, each
    ρ = 1/(2·multiplier²) (the ledger records ``GaussianDpEvent(multiplier)`` d times). The floor
    is post-processing.
    """
    n, d = X.shape
    b = as_bounds(bound, d, "feature_bound")
    floor = check_real(floor, "floor", low=0.0, low_open=True)
    stats = np.clip(X * X, 0.0, b).mean(axis=0)
    out = np.empty(d)
    for a in range(d):  # one release per constant, as in the theorem
        release = gaussian_mechanism(stats[a], sensitivity=b[a] / n, multiplier=multiplier, rng=rng)
        ledger.record(label, release.event)
        out[a] = release.value
    return np.maximum(out, floor)


def private_mean(X: np.ndarray, *, bound, multiplier: float, rng: np.random.Generator,
                 ledger, label: str = "centring") -> np.ndarray:
    """Privately release the column means for centring.

    Privacy
    -------
    Replace-one neighbours. Entries are clipped to |x_ia| ≤ c_a with c_a = √X_a (the square root of
    the public bound on x_ia²), so the mean vector moves by at most 2‖c‖₂/n_k in ℓ2; one Gaussian
    release with σ = multiplier·2‖c‖₂/n_k, ρ = 1/(2·multiplier²).
    """
    n, d = X.shape
    c = np.sqrt(as_bounds(bound, d, "feature_bound"))
    means = clip(X, c).mean(axis=0)
    release = gaussian_mechanism(means, sensitivity=2.0 * float(np.linalg.norm(c)) / n,
                                 multiplier=multiplier, rng=rng)
    ledger.record(label, release.event)
    return np.asarray(release.value)
