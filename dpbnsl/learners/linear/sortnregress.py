"""SortnRegress and R²-SortnRegress: the baselines that expose a benchmark's sortability.

Reisach, Seiler & Weichwald (NeurIPS 2021) order the variables by increasing marginal variance and
regress each on its predecessors with an adaptive lasso whose penalty is chosen by BIC; Reisach,
Tami, Seiler, Weichwald & Grosse-Wentrup (NeurIPS 2023) order them by increasing R² (each variable
regressed on all others), which does not change under rescaling. Neither uses more than the data's
covariance, so both run here from a covariance matrix: the pooled sample's (:func:`sortnregress`)
or a private release's (:mod:`~dpbnsl.learners.linear.dp_sortnregress`, post-processing).

The regression step. For target t with predecessors C: the least-squares coefficients β̂ give
weights w = |β̂|; the lasso on the rescaled covariates x_C·w is solved along its whole path by
LARS on the covariance (Efron, Hastie, Johnstone & Tibshirani 2004, lasso modification), and the
path point with the smallest BIC = n·log(RSS/n) + log(n)·(non-zero coefficients) is kept;
``W[C, t] = β_lasso · w``. A learner that does well on a benchmark only where these baselines do
well is probably sorting too.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd

from ..._sortability import r2_scores
from ..._validation import (
    ArrayLike,
    as_float_matrix,
    as_square_matrix,
    check_bool,
    check_choice,
    check_data_scale,
    check_int,
    check_real,
)
from ...blas import one_blas_thread
from ...scores import centre as centre_data
from ...scores import gram
from ..result import LearnResult

__all__ = ["CRITERIA", "sortnregress", "sortnregress_from_covariance"]

#: the sorting criteria: marginal variance (SortnRegress) or R² on all others (R²-SortnRegress)
CRITERIA = ("var", "r2")
_METHOD = {"var": "sortnregress", "r2": "r2-sortnregress"}


def _lasso_path(G: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    """The knots of the lasso path of ½βᵀGβ − βᵀc + λ‖β‖₁ from λ = max|c| down to 0, by LARS
    with the lasso modification (a coefficient crossing zero leaves the active set). Every
    tolerance is relative to λ₀ = max|c|, so rescaling the data does not move the knots; variables
    tied at the boundary enter together."""
    k = c.size
    beta = np.zeros(k)
    path = [beta.copy()]
    corr = c.astype(float).copy()
    lam0 = float(np.max(np.abs(corr))) if k else 0.0
    if not lam0 > 0.0:
        return path
    tiny, tie, lam = 1e-12 * lam0, 1e-9 * lam0, lam0
    active: list[int] = []

    def join_ties() -> None:  # every inactive variable whose |correlation| has reached λ
        for j in np.flatnonzero(np.abs(corr) >= lam - tie):
            if int(j) not in active:
                active.append(int(j))

    join_ties()
    for _ in range(8 * k + 8):
        A = np.array(active)
        sign = np.sign(corr[A])
        try:
            direction = np.linalg.solve(G[np.ix_(A, A)], sign)
        except np.linalg.LinAlgError:
            break
        if not np.isfinite(direction).all():
            break
        a = G[:, A] @ direction
        step, drop = lam, None  # without an event, the path runs to λ = 0
        for j in np.setdiff1d(np.arange(k), A):  # the first inactive variable to reach ±λ
            for num, den in ((lam - corr[j], 1.0 - a[j]), (lam + corr[j], 1.0 + a[j])):
                if den > 1e-12 and tiny < num / den < step:  # nearer ones joined as ties
                    step = num / den
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = -beta[A] / direction  # where each active coefficient would reach zero
        crossing = np.flatnonzero((cross > tiny) & (cross < step))
        if crossing.size:  # the first to cross leaves (the lasso modification)
            first = crossing[np.argmin(cross[crossing])]
            step, drop = float(cross[first]), int(A[first])
        beta[A] += step * direction
        corr -= step * a
        lam -= step
        if drop is not None:
            beta[drop] = 0.0
            active.remove(drop)
        elif lam > tiny:
            join_ties()
        path.append(beta.copy())
        if lam <= tiny or not active:
            break
    return path


def _regress(S: np.ndarray, n: int, covariates: np.ndarray, target: int) -> tuple[np.ndarray, float]:
    """Adaptive lasso of ``target`` on ``covariates`` with BIC, from the covariance; returns
    (coefficients, BIC of the chosen point)."""
    S_cc = S[np.ix_(covariates, covariates)]
    s_ct = S[covariates, target]
    ols = np.linalg.lstsq(S_cc, s_ct, rcond=None)[0]
    w = np.abs(ols)
    G, c = S_cc * np.outer(w, w), s_ct * w
    best, best_bic = np.zeros(covariates.size), math.inf
    for beta in _lasso_path(G, c):
        df = int(np.count_nonzero(beta))
        if df and df >= n - 1:  # a fit with no residual degrees of freedom: BIC says nothing
            continue
        rss = max(float(S[target, target] - 2.0 * beta @ c + beta @ G @ beta), 1e-300)
        bic = n * math.log(rss) + math.log(n) * df
        if bic < best_bic - 1e-12:
            best, best_bic = beta, bic
    return best * w, best_bic


def sortnregress_from_covariance(
    S: ArrayLike, n: int, *, criterion: str = "var"
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """SortnRegress on a covariance ``S`` of ``n`` >= 2 rows (positive semi-definite; a noisy
    release is repaired before, see :mod:`~dpbnsl.learners.linear.dp_sortnregress`).

    Returns (W_raw, order, history): the weights (a DAG along ``order``, ties in index order), the
    order, and one history row per regression (target, covariates, selected, BIC). Path points
    with n − 1 or more non-zero coefficients are not selected (no residual degrees of freedom).
    """
    S = as_square_matrix(S, "S")
    if not np.isfinite(S).all():
        raise ValueError("`S` must be finite")
    n = check_int(n, "n", low=2)
    criterion = check_choice(criterion, "criterion", CRITERIA)
    scores = np.diag(S) if criterion == "var" else r2_scores(S)
    order = np.argsort(scores, kind="stable")
    d = S.shape[0]
    W = np.zeros((d, d))
    rows = []
    for pos in range(1, d):
        covariates, target = order[:pos], int(order[pos])
        coef, bic = _regress(S, n, covariates, target)
        W[covariates, target] = coef
        rows.append((target, pos, int(np.count_nonzero(coef)), bic))
    history = pd.DataFrame(rows, columns=["target", "covariates", "selected", "bic"])
    return W, order, history


@one_blas_thread
def sortnregress(
    X: ArrayLike, *, criterion: str = "var", threshold: float = 0.0, centre: bool = True
) -> LearnResult:
    """SortnRegress (``criterion="var"``) or R²-SortnRegress (``"r2"``) on pooled data (module
    docstring; not private).

    Parameters
    ----------
    X : array or DataFrame of shape (n, d), n >= 2
    criterion : {"var", "r2"}, default "var"
    threshold : float >= 0, default 0
        Weights with ``|w| <= threshold`` are removed afterwards (0: BIC alone selects).
    centre : bool, default True
        Subtract column means first.

    Returns
    -------
    LearnResult
        ``method`` "sortnregress" or "r2-sortnregress"; ``info["order"]`` the sorted order,
        ``info["regressions"]`` one row per regression (``history`` is empty: there are no
        rounds).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(8, 2000, participants=1, rng=0)
    >>> r = sortnregress(data.X)
    >>> r.method, r.is_dag
    ('sortnregress', True)
    """
    columns = tuple(str(c) for c in X.columns) if isinstance(X, pd.DataFrame) else None
    X = check_data_scale(as_float_matrix(X, "X", min_cols=1), "X")
    if X.shape[0] < 2:
        raise ValueError(f"`X` has {X.shape[0]} rows; at least 2 are required")
    params: dict[str, Any] = dict(
        criterion=check_choice(criterion, "criterion", CRITERIA),
        threshold=check_real(threshold, "threshold", low=0.0),
        centre=check_bool(centre, "centre"),
    )
    start = time.perf_counter()
    S = gram(centre_data(X) if centre else X)
    W_raw, order, history = sortnregress_from_covariance(S, X.shape[0], criterion=criterion)
    W = np.where(np.abs(W_raw) > params["threshold"], W_raw, 0.0)
    info = {"order": order, "regressions": history, "seconds": time.perf_counter() - start}
    return LearnResult(_METHOD[criterion], W, W_raw, pd.DataFrame(), columns, params=params, info=info)
