"""Baselines of Fed-BNSL: run NOTEARS on each participant alone, then combine the local graphs.

- NOTEARS-Voting (Na & Yang 2010): keep an edge found by more than half of the participants. The
  result may be cyclic; the paper applies no cycle repair (``acyclic=True`` offers one).
- NOTEARS-Best: the participant graph with the lowest SHD against the *true* graph. It needs the
  truth, so it is an **oracle**, not a method anybody can run; its result says so.
- NOTEARS-Avg: average the participants' raw weight matrices, then threshold and repair to a DAG.

The local fits are independent of the combination rule; fit them once with :func:`notears_local`
and pass them as ``local=`` to compare several rules on the same fits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import (
    ArrayLike,
    as_participants,
    as_square_matrix,
    check_bool,
    check_data_scale,
    check_int,
    check_real,
)
from ..blas import one_blas_thread
from ..graphs import threshold as threshold_weights
from ..graphs import threshold_to_dag
from ..metrics import count_accuracy
from .linear.notears import notears
from .result import LearnResult

__all__ = ["LocalFits", "notears_local", "notears_voting", "notears_best", "notears_average"]


@dataclass(frozen=True)
class LocalFits:
    """One NOTEARS result per participant, fitted on that participant's data alone."""

    results: tuple[LearnResult, ...]
    columns: tuple[str, ...] | None
    seconds: float

    def __len__(self) -> int:
        return len(self.results)


@one_blas_thread
def notears_local(
    participants: Any,
    *,
    lambda1: float = 0.01,
    threshold: float = 0.3,
    max_iter: int = 100,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
    centre: bool = True,
) -> LocalFits:
    """Fit NOTEARS separately on each participant's data (arguments as in :func:`notears`).

    ``lambda1`` defaults to 0.01, the value Fed-BNSL uses, so that baselines and Fed-BNSL solve
    the same penalised problem.
    """
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    start = time.perf_counter()
    results = tuple(
        notears(
            X,
            lambda1=lambda1,
            threshold=threshold,
            max_iter=max_iter,
            h_tol=h_tol,
            rho_max=rho_max,
            centre=centre,
        )
        for X in arrays
    )
    return LocalFits(results, columns, time.perf_counter() - start)


def _fits(participants: Any, local: LocalFits | None, kwargs: dict) -> LocalFits:
    if local is not None and (participants is not None or kwargs):
        given = (["participants"] if participants is not None else []) + sorted(kwargs)
        raise ValueError(
            f"`local` fits were given, so {given} would be ignored: pass either the "
            f"data (and NOTEARS arguments) or `local`"
        )
    if local is None:
        if participants is None:
            raise ValueError("pass `participants` (data) or `local` (fits from notears_local)")
        return notears_local(participants, **kwargs)
    if not isinstance(local, LocalFits):
        raise TypeError(f"`local` must be a LocalFits from notears_local; got {type(local).__name__}")
    return local


def _result(
    method: str, W: np.ndarray, W_raw: np.ndarray, fits: LocalFits, params: dict, **info: Any
) -> LearnResult:
    return LearnResult(
        method=method,
        W=W,
        W_raw=W_raw,
        history=pd.DataFrame(),
        columns=fits.columns,
        params=params,
        info={"local": fits.results, "seconds": fits.seconds, **info},
    )


@one_blas_thread
def notears_voting(
    participants: Any = None,
    *,
    local: LocalFits | None = None,
    min_votes: int | None = None,
    acyclic: bool = False,
    **notears_kwargs: Any,
) -> LearnResult:
    """NOTEARS-Voting: keep each directed edge found by more than half of the participants.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d), optional
        Not needed when ``local`` is given.
    local : LocalFits, optional
        Precomputed local fits (:func:`notears_local`).
    min_votes : int, optional
        Votes an edge needs; default ``P // 2 + 1`` (strictly more than half).
    acyclic : bool, default False
        Remove the weakest edges (by |mean weight|) until acyclic. Off by default, as in Ng & Zhang,
        so the result may contain cycles.
    **notears_kwargs
        Passed to :func:`notears_local` when fitting.

    Returns
    -------
    LearnResult
        ``W[i, j]`` is the mean weight among the participants that voted for ``i → j``;
        ``info["votes"]`` is the d×d vote count.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 300, participants=3, rng=0)
    >>> bool(notears_voting(data.participants).votes.max() <= 3)
    True
    """
    acyclic = check_bool(acyclic, "acyclic")
    fits = _fits(participants, local, notears_kwargs)
    P = len(fits)
    need = P // 2 + 1 if min_votes is None else check_int(min_votes, "min_votes", low=1, high=P)
    Ws = np.stack([r.W for r in fits.results])
    votes = (Ws != 0).sum(axis=0)
    mean_w = np.divide(Ws.sum(axis=0), votes, out=np.zeros(votes.shape), where=votes > 0)
    W = np.where(votes >= need, mean_w, 0.0)
    if acyclic:
        W = threshold_to_dag(W)
    return _result(
        "notears-voting",
        W,
        mean_w,
        fits,
        {"min_votes": need, "acyclic": acyclic, **notears_kwargs},
        votes=votes,
    )


@one_blas_thread
def notears_best(
    participants: Any = None, *, B_true: ArrayLike, local: LocalFits | None = None, **notears_kwargs: Any
) -> LearnResult:
    """NOTEARS-Best (**oracle**): the participant graph with the lowest SHD against ``B_true``.

    It reads the true graph to choose, so no real participant could run it; it bounds what picking
    one local graph could achieve. ``info["oracle"]`` is True and ``info["chosen"]`` is the index of
    the chosen participant (ties: the lowest index).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 300, participants=3, rng=0)
    >>> notears_best(data.participants, B_true=data.B_true).info["oracle"]
    True
    """
    truth = as_square_matrix(B_true, "B_true")
    fits = _fits(participants, local, notears_kwargs)
    shds = [count_accuracy(truth, r.W).shd for r in fits.results]
    k = int(np.argmin(shds))
    chosen = fits.results[k]
    return _result(
        "notears-best (oracle)",
        chosen.W,
        chosen.W_raw,
        fits,
        dict(notears_kwargs),
        oracle=True,
        chosen=k,
        shd_per_participant=tuple(shds),
    )


@one_blas_thread
def notears_average(
    participants: Any = None,
    *,
    local: LocalFits | None = None,
    threshold: float = 0.3,
    **notears_kwargs: Any,
) -> LearnResult:
    """NOTEARS-Avg: average the participants' raw weights, threshold, remove cycles.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 300, participants=3, rng=0)
    >>> notears_average(data.participants).is_dag
    True
    """
    t = check_real(threshold, "threshold", low=0.0)
    fits = _fits(participants, local, notears_kwargs)
    W_raw = np.mean([r.W_raw for r in fits.results], axis=0)
    W = threshold_to_dag(threshold_weights(W_raw, threshold=t))
    return _result("notears-average", W, W_raw, fits, {"threshold": t, **notears_kwargs})
