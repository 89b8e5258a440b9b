"""Error rates of threshold tests on audit scores, with their confidence bounds: the pieces the
audit bounds (:mod:`~dpbnsl.audits.bounds`, :mod:`~dpbnsl.audits.gdp`) share."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = ["as_scores", "cp_upper", "eps_from", "error_counts", "tail_ranks"]


def as_scores(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be an array of real scores; got {x!r:.60}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` has a non-finite value {float(arr[i])!r} at index {i}")
    return arr


def cp_upper(k: float | np.ndarray, n: int, level: float) -> np.ndarray:
    """Clopper–Pearson upper bound on a rate from k of n, one-sided at ``level`` (k may be real)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        ub = special.betaincinv(k + 1.0, np.maximum(n - k, 1e-300), 1.0 - level)
    return np.where(k >= n, 1.0, ub)


def eps_from(fpr_ub: np.ndarray, fnr_ub: np.ndarray, delta: float) -> np.ndarray:
    """max{ln((1 − δ − FNR)/FPR), ln((1 − δ − FPR)/FNR), 0}, vectorised."""
    with np.errstate(divide="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_ub, 0.0)) - np.log(fpr_ub)
        b = np.log(np.maximum(1.0 - delta - fpr_ub, 0.0)) - np.log(fnr_ub)
    return np.maximum(np.maximum(a, b), 0.0)


def error_counts(
    s0: np.ndarray, s1: np.ndarray, t: float | np.ndarray, greater: bool
) -> tuple[np.ndarray, np.ndarray]:
    """False-positive and false-negative counts at thresholds ``t`` (``s0``, ``s1`` sorted)."""
    if greater:
        return s0.size - np.searchsorted(s0, t, "right"), np.searchsorted(s1, t, "right")
    return np.searchsorted(s0, t, "left"), s1.size - np.searchsorted(s1, t, "left")


def tail_ranks(n: int, m: int) -> np.ndarray:
    """At most ``m`` distinct ranks in [0, n), geometrically dense towards both ends."""
    if m >= n:
        return np.arange(n)
    h = np.arange((m + 1) // 2)
    low = np.round(np.geomspace(1, max(n / 2, 1), h.size)).astype(int) - 1
    low = np.maximum.accumulate(low - h) + h  # strictly increasing: m distinct ranks if m ≪ n
    return np.unique(np.concatenate([low, n - 1 - low[: m // 2]]))
