"""The covariance release of DP-Fed-BNSL and of DP-Fed-Sparse-BNSL's warm start.

Rows clipped to ‖x_i‖₂ ≤ R, then one Gaussian release of the upper triangle of XᵀX/n (the
replace-one ℓ2 sensitivity √2·R²/n is derived in :func:`~dpbnsl.learners.dp_fed_bnsl`'s Privacy
section and checked on neighbouring datasets by the tests and the sensitivity audits).
"""

from __future__ import annotations

import math

import numpy as np

from .releases import Release, clip_rows, gaussian_mechanism

__all__ = ["covariance_sensitivity", "release_covariance"]


def covariance_sensitivity(n: int, *, clip_norm: float) -> float:
    """ℓ2 replace-one sensitivity √2·R²/n of the upper triangle of XᵀX/n for rows with ‖x‖₂ ≤ R
    (derivation: :func:`~dpbnsl.learners.dp_fed_bnsl`, Privacy)."""
    return math.sqrt(2.0) * clip_norm**2 / n


def release_covariance(
    X: np.ndarray, *, clip_norm: float, multiplier: float, psd_floor: float | None, rng: np.random.Generator
) -> tuple[np.ndarray, Release]:
    """Release ``S̃ = clip(X)ᵀclip(X)/n + E`` by one Gaussian release of its d(d+1)/2 upper-triangle
    entries (σ = multiplier · :func:`covariance_sensitivity`), mirrored into the lower triangle, then
    (post-processing) eigenvalues raised to ``psd_floor`` unless it is None. Returns (S̃, Release)."""
    n, d = X.shape
    Xc = clip_rows(X, norm=clip_norm)
    iu = np.triu_indices(d)
    release = gaussian_mechanism(
        (Xc.T @ Xc / n)[iu],
        multiplier=multiplier,
        rng=rng,
        sensitivity=covariance_sensitivity(n, clip_norm=clip_norm),
    )
    S = np.empty((d, d))
    S[iu] = release.value
    S.T[iu] = release.value
    if psd_floor is not None:
        evals, Q = np.linalg.eigh(S)
        S = (Q * np.maximum(evals, psd_floor)) @ Q.T
        S = (S + S.T) / 2.0  # exactly symmetric
    return S, release
