"""DYNOTEARS (Pamfil et al. 2020): centralised structure learning of a structural VAR(p).

    min_{W, A}  1/(2n) ‖X_t − X_t W − Z A‖²_F + λ_W ‖W‖₁ + λ_A ‖A‖₁   s.t.  h(W) = 0

(FedDBN eq. 2), with ``X_t`` (n × d) the current slice, ``Z = [X_{t−1} | … | X_{t−p}]`` (n × p·d),
``W`` (d × d) the intra-slice DAG, ``A = [A_1; …; A_p]`` (p·d × d) the lag weights and
``h(W) = tr(exp(W∘W)) − d``. Solved like NOTEARS by the augmented Lagrangian
``ℓ + λ‖·‖₁ + ρ/2 h² + α h`` (ρ ×10 until h has shrunk to a quarter, then α += ρh), each
subproblem by L-BFGS-B on the split ``W = W⁺ − W⁻``, ``A = A⁺ − A⁻`` (all ≥ 0, ℓ1 = λ·Σ(⁺ + ⁻))
with diag(W) fixed at 0; self-lags (diagonal of each A_i) are free. The data enter only through
the Gram matrix ``G = ẐᵀẐ / n`` of ``Ẑ = [X_t | Z]``, computed once (see ``_temporal``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.optimize

from ..._validation import ArrayLike, check_bool, check_int, check_real, readonly_copy
from ...blas import one_blas_thread
from ...graphs import acyclicity, threshold_to_dag
from ...graphs import threshold as threshold_weights
from ..result import LearnResult
from ._temporal import as_temporal_series, design_gram, lag_index, lag_threshold, stacked_loss

__all__ = ["dynotears", "dynotears_from_gram", "lag_frame"]


def _smooth(Theta: np.ndarray, G: np.ndarray, rho: float, alpha: float) -> tuple[float, np.ndarray]:
    """``ℓ(Θ) + ρ/2 h(W)² + α h(W)`` and its gradient with respect to ``Θ = [W; A]``.

    A trial point so far out that exp(W∘W) overflows is reported as +inf, as in the consensus-ADMM
    server step: L-BFGS-B never accepts it and ends the solve at the last finite iterate.
    """
    d = Theta.shape[1]
    W = Theta[:d]
    with np.errstate(over="ignore", invalid="ignore"):
        E = scipy.linalg.expm(W * W)
        h = float(np.trace(E)) - d
        GT = G @ Theta
        g = GT - G[:, :d]
        f = (
            0.5 * float(np.trace(G[:d, :d]))
            + float(np.sum(Theta * (0.5 * GT - G[:, :d])))
            + 0.5 * rho * h * h
            + alpha * h
        )
        g[:d] += (rho * h + alpha) * 2.0 * W * E.T
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return np.inf, np.zeros_like(Theta)
    return f, g


def _split_objective(
    x: np.ndarray, G: np.ndarray, d: int, rho: float, alpha: float, lam: np.ndarray
) -> tuple[float, np.ndarray]:
    """The L-BFGS-B objective on ``x = [Θ⁺, Θ⁻]`` (flattened): smooth part + ``Σ lam·(Θ⁺ + Θ⁻)``."""
    m = x.size // 2
    f, g = _smooth((x[:m] - x[m:]).reshape(-1, d), G, rho, alpha)
    g = g.ravel()
    out = np.empty(2 * m)
    np.add(g, lam, out=out[:m])
    np.subtract(lam, g, out=out[m:])
    return f + float(lam @ (x[:m] + x[m:])), out


def dynotears_from_gram(
    G: np.ndarray,
    d: int,
    *,
    lambda_w: float = 0.1,
    lambda_a: float = 0.1,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Run the DYNOTEARS augmented Lagrangian on ``G = ẐᵀẐ / n``; return (raw W, raw A, history)."""
    q = G.shape[0]
    m = q * d
    lam = np.concatenate([np.full(d * d, lambda_w), np.full(m - d * d, lambda_a)])
    fixed = np.zeros((q, d), dtype=bool)
    fixed[np.arange(d), np.arange(d)] = True  # diag(W) = 0
    upper = np.tile(np.where(fixed.ravel(), 0.0, np.inf), 2)
    bounds = scipy.optimize.Bounds(np.zeros(2 * m), upper)
    x = np.zeros(2 * m)
    rho, alpha, h = 1.0, 0.0, np.inf
    rows = []
    for it in range(max_iter):
        while True:  # raise rho until h has shrunk to a quarter (or rho is at its cap)
            sol = scipy.optimize.minimize(
                _split_objective, x, args=(G, d, rho, alpha, lam), jac=True, method="L-BFGS-B", bounds=bounds
            )
            Theta = (sol.x[:m] - sol.x[m:]).reshape(q, d)
            h_new = acyclicity(Theta[:d])[0]
            if h_new <= 0.25 * h or rho >= rho_max:
                break
            rho *= 10.0
        x, h = sol.x, h_new
        alpha += rho * h
        rows.append({"iteration": it, "h": h, "rho": rho, "alpha": alpha, "loss": stacked_loss(Theta, G)[0]})
        if h <= h_tol or rho >= rho_max:
            break
    Theta = (x[:m] - x[m:]).reshape(q, d)
    return Theta[:d], Theta[d:], pd.DataFrame(rows)


@one_blas_thread
def dynotears(
    series: ArrayLike,
    *,
    lag: int = 1,
    lambda_w: float = 0.1,
    lambda_a: float = 0.1,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
    threshold_w: float = 0.3,
    threshold_a: float = 0.3,
    centre: bool = True,
    acyclic: bool = True,
) -> LearnResult:
    """Learn a dynamic Bayesian network (intra-slice DAG W and lag weights A) with DYNOTEARS.

    Parameters
    ----------
    series : array or DataFrame of shape (T, d), or a list of them (realisations)
        Rows in time order. Each realisation contributes ``T_m − lag`` rows (its first ``lag`` rows
        only serve as lags; realisations are never joined). DataFrame column names flow through.
    lag : int >= 1
        The autoregressive order p.
    lambda_w, lambda_a : float >= 0, default 0.1
        ℓ1 weights on W and on A (CausalNex's ``from_numpy_dynamic`` defaults).
    max_iter : int, default 100
        Maximum number of dual (α) updates.
    h_tol, rho_max : float, default 1e-8, 1e16
        Stop once ``h(W) <= h_tol`` or the penalty reaches ``rho_max``.
    threshold_w, threshold_a : float >= 0, default 0.3
        Entries with ``|w| <= threshold`` are removed from W and from A.
    centre : bool, default True
        Subtract the column means (over all realisations) first; the model has no intercept.
    acyclic : bool, default True
        After thresholding, remove the weakest edges of W until it is a DAG (a no-op once
        ``h(W) <= h_tol``).

    Returns
    -------
    LearnResult
        ``W``/``W_raw``: the intra-slice graph (d × d). ``info["A"]`` and ``info["A_raw"]``:
        thresholded and raw lag weights of shape (lag·d, d), lag 1 in the top d rows (read-only);
        ``info["A_index"]``: their row labels ``"<name>(t-i)"``; ``info["lag"]``,
        ``info["n_samples"]`` (design rows). ``history``: one row per dual update (h, ρ, α, loss).

    Examples
    --------
    >>> from dpbnsl.simulation.temporal import simulate_temporal
    >>> data = simulate_temporal(5, 500, rng=0)
    >>> result = dynotears(data.series[0], lag=1)
    >>> result.W.shape, result.info["A"].shape
    ((5, 5), (5, 5))
    """
    lag = check_int(lag, "lag", low=1)
    arrays, columns = as_temporal_series(series, lag)
    params: dict[str, Any] = dict(
        lag=lag,
        lambda_w=check_real(lambda_w, "lambda_w", low=0.0),
        lambda_a=check_real(lambda_a, "lambda_a", low=0.0),
        max_iter=check_int(max_iter, "max_iter", low=1),
        h_tol=check_real(h_tol, "h_tol", low=0.0),
        rho_max=check_real(rho_max, "rho_max", low=0.0, low_open=True, allow_inf=True),
        threshold_w=check_real(threshold_w, "threshold_w", low=0.0),
        threshold_a=check_real(threshold_a, "threshold_a", low=0.0),
        centre=check_bool(centre, "centre"),
        acyclic=check_bool(acyclic, "acyclic"),
    )
    start = time.perf_counter()
    d = arrays[0].shape[1]
    G, n = design_gram(arrays, lag, centre=params["centre"])
    W_raw, A_raw, history = dynotears_from_gram(
        G,
        d,
        lambda_w=params["lambda_w"],
        lambda_a=params["lambda_a"],
        max_iter=params["max_iter"],
        h_tol=params["h_tol"],
        rho_max=params["rho_max"],
    )
    W = threshold_weights(W_raw, threshold=params["threshold_w"])
    if params["acyclic"]:
        W = threshold_to_dag(W)
    return LearnResult(
        method="dynotears",
        W=W,
        W_raw=W_raw,
        history=history,
        columns=columns,
        params=params,
        info={
            "A": readonly_copy(lag_threshold(A_raw, params["threshold_a"])),
            "A_raw": readonly_copy(A_raw),
            "A_index": lag_index(columns, d, lag),
            "lag": lag,
            "n_samples": n,
            "seconds": time.perf_counter() - start,
        },
    )


def lag_frame(result: LearnResult, *, raw: bool = False) -> pd.DataFrame:
    """The (thresholded or raw) lag weights of a DYNOTEARS/FedDBN result as a labelled DataFrame.

    Rows are ``"<name>(t-i)"`` for lag i = 1..p (``result.info["A_index"]``), columns the variables;
    entry (``"a(t-1)"``, ``"b"``) is the weight of the edge a(t−1) → b(t).
    """
    if "A" not in result.info:
        raise ValueError(f"`result` of method {result.method!r} has no lag weights (info['A'])")
    d = result.W.shape[0]
    names = list(result.columns) if result.columns else [f"X{j}" for j in range(d)]
    A = result.info["A_raw" if raw else "A"]
    return pd.DataFrame(np.array(A), index=list(result.info["A_index"]), columns=names)
