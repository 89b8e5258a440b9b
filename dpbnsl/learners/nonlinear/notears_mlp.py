"""NOTEARS-MLP (Zheng et al. 2020): nonlinear structure learning with one small network per node,
and the Fed-BNSL paper's baselines built on it (NOTEARS-MLP-Voting and the oracle NOTEARS-MLP-Best).

    min_θ  1/(2n) ‖X − f_θ(X)‖² + λ1 ‖W1‖₁ + λ2/2 ‖(W1, W2)‖²   s.t.  h(θ) = tr(exp A(θ)) − d = 0

with the model, ``A`` and ``θ`` of :mod:`dpbnsl.learners.nonlinear._mlp`. Augmented Lagrangian as in the
reference implementation: each subproblem ``… + ρ/2 h² + α h`` is solved by L-BFGS-B on the split
``W1 = W1⁺ − W1⁻`` (``W1⁺, W1⁻ ≥ 0``, self-loop weights fixed at 0, so ``‖W1‖₁ = Σ(W1⁺ + W1⁻)``),
warm-started from the previous solution; ρ grows ×10 until h has shrunk to a quarter, then
``α += ρh``. The estimate is ``W_raw = √A``, thresholded and repaired to a DAG.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import scipy.optimize

from ..._validation import (
    ArrayLike,
    as_float_matrix,
    as_generator,
    as_participants,
    as_square_matrix,
    check_bool,
    check_choice,
    check_data_scale,
    check_int,
    check_real,
)
from ...blas import one_blas_thread
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..combiners import LocalFits, notears_best, notears_voting
from ..result import LearnResult
from ._mlp import MLPLayout, acyclicity, adjacency, init_params, l2_penalty, squared_loss

__all__ = ["notears_mlp", "notears_mlp_local", "notears_mlp_voting", "notears_mlp_best"]


_LBFGSB_OPTIONS = ("maxcor", "ftol", "gtol", "maxiter", "maxfun", "maxls")


def check_solver_options(options: Mapping[str, Any] | None) -> dict:
    """Validate L-BFGS-B options (None → scipy's defaults, as the reference implementations)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"`solver_options` must be a mapping or None; got {type(options).__name__}")
    out = {}
    for key, value in options.items():
        check_choice(key, "solver_options key", _LBFGSB_OPTIONS)
        if key in ("ftol", "gtol"):
            out[key] = check_real(value, f"solver_options[{key!r}]", low=0.0)
        else:
            out[key] = check_int(value, f"solver_options[{key!r}]", low=1)
    return out


def check_mlp_params(
    *,
    hidden: int,
    lambda1: float,
    lambda2: float,
    threshold: float,
    centre: bool,
    solver_options: Mapping[str, Any] | None,
) -> dict:
    """Validate the hyperparameters NOTEARS-MLP and NOTEARS-MLP-ADMM share."""
    out: dict[str, Any] = dict(
        hidden=check_int(hidden, "hidden", low=1),
        lambda1=check_real(lambda1, "lambda1", low=0.0),
        lambda2=check_real(lambda2, "lambda2", low=0.0),
        threshold=check_real(threshold, "threshold", low=0.0),
    )
    out["centre"] = check_bool(centre, "centre")
    out["solver_options"] = check_solver_options(solver_options)
    return out


def al_objective(
    x: np.ndarray,
    X: np.ndarray,
    layout: MLPLayout,
    *,
    rho: float,
    alpha: float,
    lambda1: float,
    lambda2: float,
) -> tuple[float, np.ndarray]:
    """The augmented-Lagrangian subproblem in the split form ``x = [W1⁺, W1⁻, rest]``:

    ``ℓ(θ) + λ2/2 ‖(W1, W2)‖² + ρ/2 h² + α h + λ1 Σ(W1⁺ + W1⁻)`` and its gradient in ``x``.
    A trial point at which exp(A) overflows gives +inf. L-BFGS-B never accepts it: scipy's solver
    ends the subproblem at the last finite iterate, and the next subproblem resumes from there.
    """
    a = layout.n_w1
    theta = layout.from_split(x)
    loss, g = squared_loss(theta, X, layout)
    with np.errstate(over="ignore", invalid="ignore"):
        h, gh = acyclicity(theta, layout)
        l2, g_l2 = l2_penalty(theta, layout)
        f = loss + lambda2 * l2 + 0.5 * rho * h * h + alpha * h + lambda1 * float(x[: 2 * a].sum())
        g += lambda2 * g_l2
        g[:a] += (rho * h + alpha) * gh
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return np.inf, np.zeros_like(x)
    return f, layout.grad_to_split(g, lambda1)


def fit_theta(
    X: np.ndarray,
    layout: MLPLayout,
    theta0: np.ndarray,
    *,
    lambda1: float,
    lambda2: float,
    max_iter: int,
    h_tol: float,
    rho_max: float,
    solver_options: dict | None = None,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Run the augmented Lagrangian from ``theta0``; return the final θ and one row per α update."""
    bounds = layout.split_bounds()

    def fun(x: np.ndarray, rho: float, alpha: float) -> tuple[float, np.ndarray]:
        return al_objective(x, X, layout, rho=rho, alpha=alpha, lambda1=lambda1, lambda2=lambda2)

    x = layout.to_split(theta0)
    rho, alpha, h = 1.0, 0.0, np.inf
    rows = []
    for it in range(max_iter):
        while True:  # raise ρ until h has shrunk to a quarter (or ρ is at its cap)
            sol = scipy.optimize.minimize(
                fun, x, args=(rho, alpha), jac=True, method="L-BFGS-B", bounds=bounds, options=solver_options
            )
            x = sol.x  # warm start from the last solution, as the reference's in-place model
            h_new = acyclicity(layout.from_split(x), layout)[0]
            if h_new <= 0.25 * h or rho >= rho_max:
                break
            rho *= 10.0
        h = h_new
        alpha += rho * h
        rows.append(
            {
                "iteration": it,
                "h": h,
                "rho": rho,
                "alpha": alpha,
                "loss": squared_loss(layout.from_split(x), X, layout)[0],
            }
        )
        if h <= h_tol or rho >= rho_max:
            break
    return layout.from_split(x), pd.DataFrame(rows)


@one_blas_thread
def notears_mlp(
    X: ArrayLike,
    *,
    hidden: int = 10,
    lambda1: float = 0.01,
    lambda2: float = 0.01,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
    threshold: float = 0.3,
    centre: bool = False,
    solver_options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | int | None = None,
) -> LearnResult:
    """Learn a DAG from one dataset with NOTEARS-MLP.

    Parameters
    ----------
    X : array or DataFrame of shape (n, d)
        Samples in rows (at least 2); DataFrame column names flow through to the result.
    hidden : int, default 10
        Sigmoid units per node network (model ``[d, hidden, 1]``).
    lambda1, lambda2 : float, default 0.01
        ℓ1 weight on the first layer and ℓ2 weight on all weights (reference demo values).
    max_iter, h_tol, rho_max : as in :func:`dpbnsl.learners.linear.notears`
    threshold : float, default 0.3
        Entries of ``√A`` at or below it are removed, then the weakest edges until acyclic.
    centre : bool, default False
        Subtract column means first. The networks have biases, so this changes only the
        optimisation path, not the model.
    solver_options : mapping, optional
        L-BFGS-B options (``ftol``, ``gtol``, ``maxiter``, ``maxcor``, ``maxfun``, ``maxls``) for
        every subproblem; default scipy's (as the reference code). A looser ``ftol`` (e.g. 1e-6)
        cuts the run time several-fold.
    rng : None, int or numpy Generator
        Draws the starting point (PyTorch's default scales: W1, b1 ~ U(±1/√d), W2, b2 ~ U(±1/√m)).

    Returns
    -------
    LearnResult
        ``W_raw = √A``; ``history`` has one row per α update (h, ρ, α, loss);
        ``info["theta"]`` is the fitted parameter vector (layout in :mod:`dpbnsl.learners.nonlinear._mlp`).

    Examples
    --------
    >>> from dpbnsl.simulation.nonlinear import simulate_nonlinear
    >>> sim = simulate_nonlinear(5, 200, rng=0)
    >>> result = notears_mlp(sim.X, solver_options={"ftol": 1e-6}, rng=0)
    >>> result.W.shape, result.is_dag
    ((5, 5), True)
    """
    columns = tuple(str(c) for c in X.columns) if isinstance(X, pd.DataFrame) else None
    X = check_data_scale(as_float_matrix(X, "X", min_cols=1), "X")
    if X.shape[0] < 2:
        raise ValueError(f"`X` has {X.shape[0]} rows; at least 2 are required")
    params = check_mlp_params(
        hidden=hidden,
        lambda1=lambda1,
        lambda2=lambda2,
        threshold=threshold,
        centre=centre,
        solver_options=solver_options,
    )
    params.update(
        max_iter=check_int(max_iter, "max_iter", low=1),
        h_tol=check_real(h_tol, "h_tol", low=0.0),
        rho_max=check_real(rho_max, "rho_max", low=0.0, low_open=True, allow_inf=True),
    )
    rng = as_generator(rng)
    start = time.perf_counter()
    if params["centre"]:
        X = X - X.mean(axis=0)
    layout = MLPLayout(X.shape[1], params["hidden"])
    theta, history = fit_theta(
        X,
        layout,
        init_params(layout, rng),
        lambda1=params["lambda1"],
        lambda2=params["lambda2"],
        max_iter=params["max_iter"],
        h_tol=params["h_tol"],
        rho_max=params["rho_max"],
        solver_options=params["solver_options"],
    )
    W_raw = np.sqrt(adjacency(theta, layout))
    W = threshold_to_dag(threshold_weights(W_raw, threshold=params["threshold"]))
    return LearnResult(
        method="notears-mlp",
        W=W,
        W_raw=W_raw,
        history=history,
        columns=columns,
        params=params,
        info={"seconds": time.perf_counter() - start, "theta": theta},
    )


@one_blas_thread
def notears_mlp_local(
    participants: Any, *, rng: np.random.Generator | int | None = None, **kwargs: Any
) -> LocalFits:
    """Fit NOTEARS-MLP separately on each participant's data (keywords as in :func:`notears_mlp`).

    Participant k's starting point comes from ``rng.spawn(P)[k]``. The fits can be passed as
    ``local=`` to :func:`notears_mlp_voting` and :func:`notears_mlp_best` (and to the linear
    combiners of :mod:`dpbnsl.learners.combiners`).
    """
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    streams = as_generator(rng).spawn(len(arrays))
    start = time.perf_counter()
    results = tuple(notears_mlp(X, rng=s, **kwargs) for X, s in zip(arrays, streams))
    return LocalFits(results, columns, time.perf_counter() - start)


def _local(
    participants: Any,
    local: LocalFits | None,
    kwargs: dict,
    precheck: Callable[[int, int], None] | None = None,
) -> LocalFits:
    """The fits to combine: ``local`` after checks, or fresh NOTEARS-MLP fits of ``participants``.

    ``precheck(P, d)`` validates the combiner's own arguments before anything is fitted.
    """
    if local is None:
        if participants is None:
            raise ValueError("pass `participants` (data) or `local` (fits from notears_mlp_local)")
        if precheck is not None:
            arrays, _ = as_participants(participants)
            precheck(len(arrays), arrays[0].shape[1])
        return notears_mlp_local(participants, **kwargs)
    if participants is not None or kwargs:
        given = (["participants"] if participants is not None else []) + sorted(kwargs)
        raise ValueError(
            f"`local` fits were given, so {given} would be ignored: pass either the "
            f"data (and NOTEARS-MLP arguments) or `local`"
        )
    if not isinstance(local, LocalFits):
        raise TypeError(f"`local` must be a LocalFits from notears_mlp_local; got {type(local).__name__}")
    methods = sorted({r.method for r in local.results})
    if methods != ["notears-mlp"]:
        raise ValueError(
            f"`local` must hold NOTEARS-MLP fits (from notears_mlp_local); got fits of {methods}"
        )
    if precheck is not None:
        precheck(len(local), local.results[0].W.shape[0])
    return local


@one_blas_thread
def notears_mlp_voting(
    participants: Any = None,
    *,
    local: LocalFits | None = None,
    min_votes: int | None = None,
    acyclic: bool = False,
    **kwargs: Any,
) -> LearnResult:
    """NOTEARS-MLP-Voting: keep each directed edge found by more than half of the participants.

    Combination exactly as :func:`dpbnsl.learners.notears_voting` (``W`` = mean ``√A`` weight of
    the voters, ``info["votes"]``; may be cyclic unless ``acyclic=True``) over NOTEARS-MLP fits
    (``kwargs`` and ``rng`` go to :func:`notears_mlp_local`, or pass the fits as ``local``).

    Examples
    --------
    >>> from dpbnsl.simulation.nonlinear import simulate_nonlinear
    >>> sim = simulate_nonlinear(4, 120, participants=3, rng=0)
    >>> vote = notears_mlp_voting(sim.participants, solver_options={"ftol": 1e-6}, rng=0)
    >>> bool(vote.info["votes"].max() <= 3)
    True
    """

    def precheck(P: int, d: int) -> None:
        if min_votes is not None:
            check_int(min_votes, "min_votes", low=1, high=P)
        check_bool(acyclic, "acyclic")

    fits = _local(participants, local, kwargs, precheck)
    out = notears_voting(local=fits, min_votes=min_votes, acyclic=acyclic)
    return dataclasses.replace(
        out, method="notears-mlp-voting", params={**fits.results[0].params, **out.params}
    )


@one_blas_thread
def notears_mlp_best(
    participants: Any = None, *, B_true: ArrayLike, local: LocalFits | None = None, **kwargs: Any
) -> LearnResult:
    """NOTEARS-MLP-Best (**oracle**): the participant graph with the lowest SHD against ``B_true``.

    Reads the true graph to choose, so nobody could run it; ``info["oracle"]`` is True and
    ``info["chosen"]`` the chosen participant (ties: lowest index). See :func:`notears_mlp_voting`
    for ``local`` and ``kwargs``.
    """
    truth = as_square_matrix(B_true, "B_true")

    def precheck(P: int, d: int) -> None:  # fail before fitting anything
        if truth.shape[0] != d:
            raise ValueError(f"`B_true` must be {d}×{d} like the data; got shape {truth.shape}")

    fits = _local(participants, local, kwargs, precheck)
    out = notears_best(B_true=truth, local=fits)
    return dataclasses.replace(out, method="notears-mlp-best (oracle)", params=dict(fits.results[0].params))
