"""Baselines of FedDBN: DYNOTEARS on each participant alone (combined by averaging or by an oracle
choice), and DYNOTEARS on the pooled data.

- DYNOTEARS-Ave: average the participants' raw W and A, then threshold each. The paper applies no
  cycle repair to Ave (its W may be cyclic); ``acyclic=True`` offers one.
- DYNOTEARS-Best: the participant whose W has the lowest SHD against the *true* W. It needs the
  truth, so it is an **oracle** (as NOTEARS-Best); its result says so.
- DYNOTEARS-All: DYNOTEARS on every participant's series together (the centralised reference; each
  participant's series stay separate realisations, never joined across a boundary).

Fit the local runs once with :func:`dynotears_local` and pass them as ``local=`` to compare
several combination rules on the same fits.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import ArrayLike, as_square_matrix, check_bool, check_choice, check_real, readonly_copy
from ...blas import one_blas_thread
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...metrics import count_accuracy
from ..combiners import LocalFits
from ..result import LearnResult
from ._temporal import as_temporal_participants, lag_accuracy, lag_threshold
from .dynotears import dynotears

__all__ = ["dynotears_local", "dynotears_average", "dynotears_best", "dynotears_all"]


@one_blas_thread
def dynotears_local(participants: Any, **dynotears_kwargs: Any) -> LocalFits:
    """Fit DYNOTEARS separately on each participant's series (arguments as in :func:`dynotears`,
    e.g. ``lag``, ``lambda_w``, ``lambda_a``)."""
    lag = dynotears_kwargs.get("lag", 1)
    parts, columns = as_temporal_participants(participants, lag if isinstance(lag, int) else 1)
    start = time.perf_counter()
    if columns is not None:
        parts = [[pd.DataFrame(X, columns=list(columns)) for X in arrays] for arrays in parts]
    results = tuple(dynotears(arrays, **dynotears_kwargs) for arrays in parts)
    return LocalFits(results, columns, time.perf_counter() - start)


def _fits(participants: Any, local: LocalFits | None, kwargs: dict) -> LocalFits:
    if local is not None and (participants is not None or kwargs):
        given = (["participants"] if participants is not None else []) + sorted(kwargs)
        raise ValueError(
            f"`local` fits were given, so {given} would be ignored: pass either the "
            f"data (and DYNOTEARS arguments) or `local`"
        )
    if local is None:
        if participants is None:
            raise ValueError("pass `participants` (data) or `local` (fits from dynotears_local)")
        return dynotears_local(participants, **kwargs)
    if not isinstance(local, LocalFits) or any(r.method != "dynotears" for r in local.results):
        raise TypeError(f"`local` must be a LocalFits from dynotears_local; got {type(local).__name__}")
    return local


def _result(
    method: str,
    W: np.ndarray,
    W_raw: np.ndarray,
    A: np.ndarray,
    A_raw: np.ndarray,
    fits: LocalFits,
    params: dict,
    **info: Any,
) -> LearnResult:
    first = fits.results[0].info
    return LearnResult(
        method=method,
        W=W,
        W_raw=W_raw,
        history=pd.DataFrame(),
        columns=fits.columns,
        params=params,
        info={
            "A": readonly_copy(A),
            "A_raw": readonly_copy(A_raw),
            "A_index": first["A_index"],
            "lag": first["lag"],
            "local": fits.results,
            "seconds": fits.seconds,
            **info,
        },
    )


@one_blas_thread
def dynotears_average(
    participants: Any = None,
    *,
    local: LocalFits | None = None,
    threshold_w: float = 0.3,
    threshold_a: float = 0.3,
    average: str = "raw",
    acyclic: bool = False,
    **dynotears_kwargs: Any,
) -> LearnResult:
    """DYNOTEARS-Ave: average the participants' W and A, then threshold each (FedDBN's "Ave").

    Parameters
    ----------
    participants : sequence of series (see :func:`dpbnsl.learners.temporal.fed_dbn.fed_dbn`), optional
        Not needed when ``local`` is given.
    local : LocalFits, optional
        Precomputed fits (:func:`dynotears_local`).
    threshold_w, threshold_a : float >= 0, default 0.3
        Applied to the averaged matrices.
    average : {"raw", "thresholded"}, default "raw"
        Average the participants' raw estimates, or their thresholded ones (the paper leaves this
        open; docs/decisions.md, 'FedDBN baselines: DYNOTEARS-Ave, -Best and -All').
    acyclic : bool, default False
        Remove the weakest edges of W until it is a DAG. Off by default, as in FedDBN, so the
        result may contain cycles.
    **dynotears_kwargs
        Passed to :func:`dynotears_local` when fitting (e.g. ``lag``).
    """
    tw = check_real(threshold_w, "threshold_w", low=0.0)
    ta = check_real(threshold_a, "threshold_a", low=0.0)
    average = check_choice(average, "average", ("raw", "thresholded"))
    acyclic = check_bool(acyclic, "acyclic")
    fits = _fits(participants, local, dynotears_kwargs)
    raw = average == "raw"
    W_raw = np.mean([r.W_raw if raw else r.W for r in fits.results], axis=0)
    A_raw = np.mean([r.info["A_raw" if raw else "A"] for r in fits.results], axis=0)
    W = threshold_weights(W_raw, threshold=tw)
    if acyclic:
        W = threshold_to_dag(W)
    return _result(
        "dynotears-average",
        W,
        W_raw,
        lag_threshold(A_raw, ta),
        A_raw,
        fits,
        {"threshold_w": tw, "threshold_a": ta, "average": average, "acyclic": acyclic, **dynotears_kwargs},
    )


@one_blas_thread
def dynotears_best(
    participants: Any = None,
    *,
    B_true: ArrayLike,
    A_true: ArrayLike | None = None,
    select: str = "W",
    local: LocalFits | None = None,
    **dynotears_kwargs: Any,
) -> LearnResult:
    """DYNOTEARS-Best (**oracle**): the participant fit with the lowest SHD against the truth.

    ``select="W"`` ranks by the SHD of W against ``B_true`` (the paper's W figures); ``"W+A"`` by
    the SHD of W plus the SHD of A against ``A_true`` (required then). Ties: the lowest index.
    ``info["oracle"]`` is True, ``info["chosen"]`` the chosen participant.
    """
    truth = as_square_matrix(B_true, "B_true")
    select = check_choice(select, "select", ("W", "W+A"))
    if select == "W+A" and A_true is None:
        raise ValueError("`select` = 'W+A' needs `A_true`")
    fits = _fits(participants, local, dynotears_kwargs)
    scores = [count_accuracy(truth, r.W).shd for r in fits.results]
    if select == "W+A":
        scores = [s + lag_accuracy(A_true, r.info["A"]).shd for s, r in zip(scores, fits.results)]
    k = int(np.argmin(scores))
    chosen = fits.results[k]
    return _result(
        "dynotears-best (oracle)",
        chosen.W,
        chosen.W_raw,
        chosen.info["A"],
        chosen.info["A_raw"],
        fits,
        {"select": select, **dynotears_kwargs},
        oracle=True,
        chosen=k,
        score_per_participant=tuple(scores),
    )


@one_blas_thread
def dynotears_all(participants: Any, *, centre: bool = True, **dynotears_kwargs: Any) -> LearnResult:
    """DYNOTEARS-All: DYNOTEARS on the pooled series of every participant (centralised reference).

    With ``centre`` each participant's series are centred by its own means before pooling (as the
    federated learners do); the pooled call itself does not centre again.
    """
    centre = check_bool(centre, "centre")
    lag = dynotears_kwargs.get("lag", 1)
    parts, columns = as_temporal_participants(participants, lag if isinstance(lag, int) else 1)
    pooled: list[pd.DataFrame | np.ndarray] = []
    for arrays in parts:
        mean = np.vstack(arrays).mean(axis=0) if centre else 0.0
        pooled.extend(pd.DataFrame(X - mean, columns=list(columns)) if columns else X - mean for X in arrays)
    result = dynotears(pooled, centre=False, **dynotears_kwargs)
    return LearnResult(
        method="dynotears-all",
        W=result.W,
        W_raw=result.W_raw,
        history=result.history,
        columns=result.columns,
        params={**result.params, "centre": centre},
        info=result.info,
    )
