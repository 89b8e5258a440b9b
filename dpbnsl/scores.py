"""Covariance statistics and the linear least-squares score in covariance form.

For a linear SEM ``X = X W + N`` the least-squares loss depends on the data only through the Gram
matrix ``S = XᵀX / n``:

    ℓ(W) = 1/(2n) ‖X − X W‖_F² = ½ tr((I − W)ᵀ S (I − W)),   ∇ℓ(W) = −S (I − W).

Learners work from ``S`` (computed once) so that each evaluation costs O(d³) instead of O(n d²).
"""

from __future__ import annotations

import numpy as np

__all__ = ["centre", "gram", "least_squares"]


def centre(X: np.ndarray) -> np.ndarray:
    """Return ``X`` minus its column means (a new array)."""
    X = np.asarray(X, dtype=float)
    return X - X.mean(axis=0, keepdims=True)


def gram(X: np.ndarray, n: int | float | None = None) -> np.ndarray:
    """Return ``XᵀX / n`` (``n`` defaults to the number of rows of ``X``), exactly symmetric."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0] if n is None else n
    S = X.T @ X / n
    return (S + S.T) / 2.0


def least_squares(W: np.ndarray, S: np.ndarray) -> tuple[float, np.ndarray]:
    """Least-squares loss ``½ tr((I − W)ᵀ S (I − W))`` and its gradient ``−S (I − W)``.

    Parameters
    ----------
    W : array of shape (d, d)
    S : array of shape (d, d), the Gram matrix ``XᵀX / n``
    """
    R = np.eye(W.shape[0]) - W
    SR = S @ R
    return 0.5 * float(np.sum(R * SR)), -SR
