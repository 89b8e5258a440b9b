"""NOTEARS (Zheng et al. 2018): centralised linear structure learning by continuous optimisation.

    min_W  ½ tr((I − W)ᵀ S (I − W)) + λ‖W‖₁   s.t.  h(W) = tr(exp(W∘W)) − d = 0

solved by the augmented Lagrangian ``ℓ + λ‖W‖₁ + ρ/2 h² + α h``; each subproblem by L-BFGS-B on the
split ``W = W⁺ − W⁻ ≥ 0`` with the diagonal fixed at 0. ``S = XᵀX / n`` of the centred data is computed
once, so each evaluation costs O(d³) (one matrix exponential) whatever n is.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import scipy.optimize

from ..._validation import ArrayLike, as_float_matrix, check_bool, check_data_scale, check_int, check_real
from ...blas import one_blas_thread
from ...graphs import acyclicity, threshold_to_dag
from ...graphs import threshold as threshold_weights
from ...scores import centre as centre_data
from ...scores import gram, least_squares
from ..result import LearnResult

__all__ = ["notears", "notears_from_gram"]


def _columns(X: ArrayLike) -> tuple[str, ...] | None:
    return tuple(str(c) for c in X.columns) if isinstance(X, pd.DataFrame) else None


def notears_from_gram(
    S: np.ndarray,
    *,
    lambda1: float = 0.1,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Run the NOTEARS augmented Lagrangian on a Gram matrix ``S``; return (raw W, history)."""
    d = S.shape[0]
    upper = np.tile(np.where(np.eye(d, dtype=bool).ravel(), 0.0, np.inf), 2)
    bounds = scipy.optimize.Bounds(np.zeros(2 * d * d), upper)  # W⁺, W⁻ ≥ 0, zero diagonal

    def fun(x: np.ndarray, rho: float, alpha: float) -> tuple[float, np.ndarray]:
        W = (x[: d * d] - x[d * d :]).reshape(d, d)
        loss, g_loss = least_squares(W, S)
        h, g_h = acyclicity(W)
        f = loss + 0.5 * rho * h * h + alpha * h + lambda1 * float(x.sum())
        g = (g_loss + (rho * h + alpha) * g_h).ravel()
        return f, np.concatenate([g + lambda1, -g + lambda1])

    x = np.zeros(2 * d * d)
    rho, alpha, h = 1.0, 0.0, np.inf
    rows = []
    for it in range(max_iter):
        while True:  # raise rho until h has shrunk to a quarter (or rho is at its cap)
            sol = scipy.optimize.minimize(
                fun, x, args=(rho, alpha), jac=True, method="L-BFGS-B", bounds=bounds
            )
            W_new = (sol.x[: d * d] - sol.x[d * d :]).reshape(d, d)
            h_new = acyclicity(W_new)[0]
            if h_new <= 0.25 * h or rho >= rho_max:
                break
            rho *= 10.0
        x, h = sol.x, h_new
        alpha += rho * h
        loss = least_squares(W_new, S)[0]
        rows.append({"iteration": it, "h": h, "rho": rho, "alpha": alpha, "loss": loss})
        if h <= h_tol or rho >= rho_max:
            break
    return (x[: d * d] - x[d * d :]).reshape(d, d), pd.DataFrame(rows)


@one_blas_thread
def notears(
    X: ArrayLike,
    *,
    lambda1: float = 0.1,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
    threshold: float = 0.3,
    centre: bool = True,
) -> LearnResult:
    """Learn a DAG from one dataset with linear NOTEARS (least-squares loss).

    Parameters
    ----------
    X : array or DataFrame of shape (n, d)
        Samples in rows; DataFrame column names flow through to the result.
    lambda1 : float, default 0.1
        ℓ1 penalty weight (the reference implementation's example value).
    max_iter : int, default 100
        Maximum number of dual (α) updates.
    h_tol : float, default 1e-8
        Stop once ``h(W) <= h_tol``.
    rho_max : float, default 1e16
        Stop once the penalty ρ reaches this value.
    threshold : float, default 0.3
        Weights with ``|w| <= threshold`` are removed, then the weakest edges until acyclic.
    centre : bool, default True
        Subtract column means first (the model has no intercept).

    Returns
    -------
    LearnResult
        ``history`` has one row per dual update (h, ρ, α, loss).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(10, 1000, participants=1, rng=0)
    >>> result = notears(data.X, lambda1=0.1)
    >>> result.W.shape
    (10, 10)
    """
    columns = _columns(X)
    X = check_data_scale(as_float_matrix(X, "X", min_cols=1), "X")
    if X.shape[0] < 2:
        raise ValueError(f"`X` has {X.shape[0]} rows; at least 2 are required")
    params: dict[str, Any] = dict(
        lambda1=check_real(lambda1, "lambda1", low=0.0),
        max_iter=check_int(max_iter, "max_iter", low=1),
        h_tol=check_real(h_tol, "h_tol", low=0.0),
        rho_max=check_real(rho_max, "rho_max", low=0.0, low_open=True, allow_inf=True),
        threshold=check_real(threshold, "threshold", low=0.0),
        centre=check_bool(centre, "centre"),
    )
    start = time.perf_counter()
    S = gram(centre_data(X) if centre else X)
    W_raw, history = notears_from_gram(
        S,
        lambda1=params["lambda1"],
        max_iter=params["max_iter"],
        h_tol=params["h_tol"],
        rho_max=params["rho_max"],
    )
    W = threshold_to_dag(threshold_weights(W_raw, threshold=params["threshold"]))
    return LearnResult(
        method="notears",
        W=W,
        W_raw=W_raw,
        history=history,
        columns=columns,
        params=params,
        info={"seconds": time.perf_counter() - start},
    )
