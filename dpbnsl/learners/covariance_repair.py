"""Repairing a noisy covariance release before a fit reads it (post-processing): the spectral
edge of the release's noise and the eigenvalue floor raised to it. Shared by PC on a private
covariance and the private sorting baselines."""

from __future__ import annotations

import math

import numpy as np

from .._validation import ArrayLike, as_float_matrix

__all__ = ["noise_floor", "repair_covariance"]


def noise_floor(noise_sd: float, d: int) -> float:
    """2·s·√d: the spectral edge of a d × d symmetric noise matrix with entry sd s."""
    return 2.0 * float(noise_sd) * math.sqrt(d)


def repair_covariance(S: ArrayLike, *, floor: float) -> tuple[np.ndarray, bool]:
    """S symmetrised with its eigenvalues raised to ``floor`` (> 0) where below it; returns the
    matrix and whether anything was raised. Post-processing of a release."""
    S = as_float_matrix(S, "S")
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"`S` must be square; got shape {S.shape}")
    S = (S + S.T) / 2.0
    evals, Q = np.linalg.eigh(S)
    if evals[0] >= floor:
        return S, False
    out = (Q * np.maximum(evals, floor)) @ Q.T
    return (out + out.T) / 2.0, True
