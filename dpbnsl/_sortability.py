"""Sortability of a data set against its DAG: how well a per-variable score orders the variables
along the causal order (Reisach, Seiler & Weichwald, NeurIPS 2021; Reisach, Tami, Seiler,
Weichwald, Grosse-Wentrup, NeurIPS 2023). Re-exported by :mod:`dpbnsl.metrics`; the R² scores are
shared with the R²-SortnRegress learner.
"""

from __future__ import annotations

import numpy as np

from ._validation import ArrayLike, as_float_matrix, as_square_matrix, check_real
from .graphs import topological_order

__all__ = ["sortability", "varsortability", "r2_sortability", "r2_scores"]


def r2_scores(S: ArrayLike) -> np.ndarray:
    """R² of each variable regressed (least squares, with intercept) on all the others, from a
    covariance matrix ``S`` of shape (d, d): ``R²_j = 1 − RSS_j / S_jj``. Scale-invariant, so the
    same for a covariance and its correlation; 0 for a constant variable.

    Examples
    --------
    >>> r2_scores([[1.0, 0.5], [0.5, 1.0]]).round(3).tolist()
    [0.25, 0.25]
    """
    S = as_square_matrix(S, "S")
    if not np.isfinite(S).all():
        raise ValueError("`S` must be finite")
    d = S.shape[0]
    out = np.zeros(d)
    for j in range(d):
        if S[j, j] <= 0:
            continue
        rest = np.delete(np.arange(d), j)
        if rest.size:
            beta = np.linalg.lstsq(S[np.ix_(rest, rest)], S[rest, j], rcond=None)[0]
            explained = float(S[j, rest] @ beta)
            out[j] = min(max(explained / S[j, j], 0.0), 1.0)
    return out


def sortability(scores: ArrayLike, B: ArrayLike, *, tol: float = 1e-9) -> float:
    """The share of causally ordered pairs that ``scores`` orders correctly.

    For every length k = 1, …, d − 1 and every pair (i, j) joined by a directed path of length k
    in ``B`` (a pair counts once per such length, as in Reisach et al.'s definition), the pair
    scores 1 if ``scores[j] > scores[i]`` by more than the relative tolerance ``tol``, ½ if the two
    are within it, 0 otherwise; the result is the mean. 1: sorting by the score recovers the causal
    order; 0.5: no better than chance; 0: it recovers the reverse order.

    Parameters
    ----------
    scores : array of shape (d,), finite
    B : array of shape (d, d), a DAG: ``B[i, j] != 0`` for the edge ``i -> j``; at least one edge
    tol : float >= 0

    Examples
    --------
    >>> sortability([1.0, 3.0, 2.0], [[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 2 of 3 pairs
    0.6666666666666666
    """
    E = as_square_matrix(B, "B") != 0
    s = np.asarray(scores, dtype=float)
    if s.shape != (E.shape[0],) or not np.isfinite(s).all():
        raise ValueError(f"`scores` must be {E.shape[0]} finite numbers; got shape {s.shape}")
    tol = check_real(tol, "tol", low=0.0)
    if not E.any():
        raise ValueError("`B` has no edge: sortability is undefined")
    topological_order(E.astype(int))  # a cycle or a self-loop: ValueError naming it
    diff = s[None, :] - s[:, None]  # [i, j] = s_j − s_i
    margin = tol * np.abs(s)[:, None]
    credit = np.where(diff > margin, 1.0, np.where(np.abs(diff) <= margin, 0.5, 0.0))
    Ek = E.copy()
    pairs = correct = 0.0
    for _ in range(E.shape[0] - 1):
        if not Ek.any():
            break
        pairs += Ek.sum()
        correct += credit[Ek].sum()
        Ek = (Ek.astype(np.int64) @ E.astype(np.int64)) > 0
    return float(correct / pairs)


def _data(X: ArrayLike) -> np.ndarray:
    X = as_float_matrix(X, "X")
    if X.shape[0] < 2:
        raise ValueError(f"`X` needs at least 2 rows; got {X.shape[0]}")
    if not np.isfinite(X).all():
        raise ValueError("`X` must be finite")
    return X


def varsortability(X: ArrayLike, B: ArrayLike, *, tol: float = 1e-9) -> float:
    """:func:`sortability` of the marginal variances of the columns of ``X`` (n, d) against the
    DAG ``B`` (Reisach, Seiler & Weichwald 2021). Close to 1 on many simulated linear SEMs, where
    a learner can find the causal order by sorting on variance; about 0.5 on standardised data.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal(1000)
    >>> X = np.column_stack([x, 2 * x + rng.standard_normal(1000)])  # var 1 -> var 5
    >>> varsortability(X, [[0, 1], [0, 0]])
    1.0
    """
    X = _data(X)
    return sortability(X.var(axis=0), B, tol=tol)


def r2_sortability(X: ArrayLike, B: ArrayLike, *, tol: float = 1e-9) -> float:
    """:func:`sortability` of each column's R² when regressed on all the others (Reisach et al.
    2023): scale-invariant, so unchanged by standardisation. High values mean that sorting by R²
    (R²-SortnRegress) finds much of the causal order.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal(1000)
    >>> X = np.column_stack([x, 2 * x + rng.standard_normal(1000)])
    >>> r2_sortability(X, [[0, 1], [0, 0]])  # two variables share one R²: a tie
    0.5
    """
    X = _data(X)
    return sortability(r2_scores(np.cov(X, rowvar=False)), B, tol=tol)
