"""Pieces shared by the time-series learners (DYNOTEARS, FedDBN): input checks, the stacked Gram
matrix of the lagged design, thresholding of the lag weights and their accuracy.

Stacked notation (FedDBN §3 and §7.4 write the same in blocks): with ``X_t`` (n × d) the current
slice, ``Z`` (n × p·d) the lags and ``Ẑ = [X_t | Z]`` (n × (p+1)·d), the least-squares loss of
``Θ = [W; A]`` is

    ℓ(Θ) = 1/(2c) ‖X_t − ẐΘ‖²_F = ½ tr(S) − ⟨G[:, :d], Θ⟩ + ½ ⟨Θ, GΘ⟩,   ∇ℓ = GΘ − G[:, :d]

with ``G = ẐᵀẐ / c`` (``c`` = the number of rows, or the total n across participants), because
``ẐᵀX_t`` is the first d columns of ``ẐᵀẐ`` and ``S = X_tᵀX_t / c`` its top-left block. So every
evaluation costs O(((p+1)d)²·d), whatever n is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import ArrayLike
from ...metrics import LagAccuracy, lag_accuracy
from ...timeseries import as_realisations, lagged_design

__all__ = [
    "as_temporal_series",
    "as_temporal_participants",
    "design_gram",
    "stacked_loss",
    "lag_threshold",
    "lag_index",
    "LagAccuracy",
    "lag_accuracy",
]


def _check_lengths(arrays: list[np.ndarray], lag: int, name: str, where: str) -> None:
    for m, X in enumerate(arrays):
        label = where + (f" (realisation {m})" if len(arrays) > 1 else "")
        if X.shape[0] <= lag:
            raise ValueError(
                f"`{name}`{label} has {X.shape[0]} rows, too short for lag = {lag}: "
                f"a series needs at least lag + 1 = {lag + 1} rows"
            )


def as_temporal_series(
    series: ArrayLike, lag: int, name: str = "series", *, where: str = ""
) -> tuple[list[np.ndarray], tuple[str, ...] | None]:
    """One series or a list of realisations → new float arrays (each > ``lag`` rows), columns."""
    arrays, columns = as_realisations(series, name, where=where)
    _check_lengths(arrays, lag, name, where)
    return arrays, columns


def as_temporal_participants(
    participants: Any, lag: int, name: str = "participants"
) -> tuple[list[list[np.ndarray]], tuple[str, ...] | None]:
    """Validate a sequence of participants' time series.

    Each participant is one series (2-D array or DataFrame, rows in time order) or a list of
    realisations. Returns per participant a list of new float arrays, and the column names.
    """
    if isinstance(participants, (np.ndarray, pd.DataFrame)) or not isinstance(participants, Sequence):
        raise TypeError(
            f"`{name}` must be a sequence (list or tuple) with one time series (or "
            f"list of realisations) per participant; got "
            f"{type(participants).__name__}"
        )
    if len(participants) == 0:
        raise ValueError(f"`{name}` must hold at least one participant; got an empty sequence")
    parts, columns, d = [], None, None
    for k, series in enumerate(participants):
        where = f" (participant {k})"
        arrays, cols = as_temporal_series(series, lag, name, where=where)
        if cols is not None:
            if columns is not None and cols != columns:
                raise ValueError(
                    f"`{name}`{where} has columns {list(cols)} but an earlier participant has {list(columns)}"
                )
            columns = cols
        if d is not None and arrays[0].shape[1] != d:
            raise ValueError(f"`{name}`{where} has {arrays[0].shape[1]} columns but participant 0 has {d}")
        d = arrays[0].shape[1]
        parts.append(arrays)
    assert d is not None  # participants is non-empty (checked above)
    if d < 1:
        raise ValueError(f"`{name}` must have at least one column; got 0")
    return parts, columns


def design_gram(
    realisations: list[np.ndarray], lag: int, *, centre: bool, scale: float | None = None
) -> tuple[np.ndarray, int]:
    """``G = ẐᵀẐ / scale`` of one participant's lagged design (``scale`` defaults to its rows).

    With ``centre`` the participant's column means (over all its rows) are subtracted first.
    Returns ``G`` (exactly symmetric) and the number of design rows.
    """
    if centre:
        mean = np.vstack(realisations).mean(axis=0)
        realisations = [X - mean for X in realisations]
    X_t, Z = lagged_design(realisations, lag)
    Zh = np.hstack([X_t, Z])
    n = Zh.shape[0]
    G = Zh.T @ Zh / (n if scale is None else scale)
    return (G + G.T) / 2.0, n


def stacked_loss(Theta: np.ndarray, G: np.ndarray) -> tuple[float, np.ndarray]:
    """``ℓ(Θ) = ½ tr(S) − ⟨G[:, :d], Θ⟩ + ½⟨Θ, GΘ⟩`` and its gradient ``GΘ − G[:, :d]``.

    Parameters
    ----------
    Theta : array of shape ((p+1)·d, d), ``[W; A]``
    G : array of shape ((p+1)·d, (p+1)·d)
    """
    d = Theta.shape[1]
    C = G[:, :d]
    GT = G @ Theta
    f = 0.5 * float(np.trace(G[:d, :d])) - float(np.sum(C * Theta)) + 0.5 * float(np.sum(Theta * GT))
    return f, GT - C


def lag_threshold(A: np.ndarray, threshold: float) -> np.ndarray:
    """Copy of ``A`` with entries of absolute value ``<= threshold`` set to 0."""
    return np.where(np.abs(A) > threshold, A, 0.0)


def lag_index(columns: Sequence[str] | None, d: int, lag: int) -> tuple[str, ...]:
    """Row labels of the stacked ``A``: ``"<name>(t-i)"`` for lag i = 1..p."""
    names = list(columns) if columns else [f"X{j}" for j in range(d)]
    return tuple(f"{c}(t-{i})" for i in range(1, lag + 1) for c in names)
