"""Time series as regression data: realisations, the lagged SVAR design and contiguous splits.

Used by the temporal learners (DYNOTEARS, FedDBN) and by :mod:`dpbnsl.simulation.temporal`. A series
holds samples in rows in time order; "realisations" are independent series of the same variables,
which are stacked but never joined across a boundary.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._validation import ArrayLike, as_float_matrix, check_data_scale, check_int

__all__ = ["as_realisations", "lagged_design", "split_series"]


def as_realisations(
    series: ArrayLike, name: str = "series", *, where: str = ""
) -> tuple[list[np.ndarray], tuple[str, ...] | None]:
    """Normalise one series or several realisations into new float arrays of shape (T_m, d).

    ``series`` is a 2-D array or DataFrame (one realisation, rows in time order), a 3-D array
    (realisations along the first axis), or a list/tuple of 2-D arrays or DataFrames (realisations,
    lengths may differ). Returns the arrays and the column names (None without DataFrames).
    """
    if (
        isinstance(series, (list, tuple))
        and series
        and all(isinstance(s, (np.ndarray, pd.DataFrame, list, tuple)) and np.ndim(s) == 2 for s in series)
    ):
        items = list(series)
    elif isinstance(series, np.ndarray) and series.ndim == 3:
        items = list(series)
    elif isinstance(series, (list, tuple)) and len(series) == 0:
        raise ValueError(f"`{name}`{where} must hold at least one realisation; got an empty sequence")
    else:
        items = [series]
    arrays: list[np.ndarray]
    arrays, columns = [], None
    for m, s in enumerate(items):
        label = where + (f" (realisation {m})" if len(items) > 1 else "")
        arr = check_data_scale(as_float_matrix(s, name, where=label), name, where=label)
        if isinstance(s, pd.DataFrame):
            cols = tuple(str(c) for c in s.columns)
            if columns is not None and cols != columns:
                raise ValueError(
                    f"`{name}`{label} has columns {list(cols)} but an earlier realisation has {list(columns)}"
                )
            columns = cols
        if arrays and arr.shape[1] != arrays[0].shape[1]:
            raise ValueError(
                f"`{name}`{label} has {arr.shape[1]} columns but realisation 0 has {arrays[0].shape[1]}"
            )
        arrays.append(arr)
    return arrays, columns


def _check_length(X: np.ndarray, lag: int, name: str, label: str) -> None:
    if X.shape[0] <= lag:
        raise ValueError(
            f"`{name}`{label} has {X.shape[0]} rows, too short for lag = {lag}: a "
            f"series needs at least lag + 1 = {lag + 1} rows (the first {lag} only "
            f"serve as lags)"
        )


def lagged_design(series: ArrayLike, lag: int) -> tuple[np.ndarray, np.ndarray]:
    """The SVAR regression design: current slice ``X_t`` and lags ``Z = [X_{t−1} | … | X_{t−p}]``.

    For each realisation of length T_m, rows ``t = p, …, T_m − 1`` are kept (the first p rows have
    incomplete lags and only serve as lags); realisations are stacked, never joined across a
    boundary.

    Parameters
    ----------
    series : array or DataFrame of shape (T, d), 3-D array, or list of them (realisations)
    lag : int >= 1, the order p

    Returns
    -------
    X_t : array of shape (Σ_m (T_m − p), d)
    Z : array of shape (Σ_m (T_m − p), p·d); block i (columns ``i·d:(i+1)·d``) is lag i + 1

    Examples
    --------
    >>> X_t, Z = lagged_design(np.arange(10.0).reshape(5, 2), 2)
    >>> X_t[0].tolist(), Z[0].tolist()
    ([4.0, 5.0], [2.0, 3.0, 0.0, 1.0])
    """
    lag = check_int(lag, "lag", low=1)
    arrays, _ = as_realisations(series)
    xs, zs = [], []
    for m, X in enumerate(arrays):
        _check_length(X, lag, "series", f" (realisation {m})" if len(arrays) > 1 else "")
        T = X.shape[0]
        xs.append(X[lag:])
        zs.append(np.hstack([X[lag - i : T - i] for i in range(1, lag + 1)]))
    return np.vstack(xs), np.vstack(zs)


def even_sizes(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` sizes differing by at most one (remainder to the first)."""
    base, rest = divmod(total, parts)
    return [base + (k < rest) for k in range(parts)]


def split_series(X: ArrayLike, participants: int, *, lag: int = 1) -> list[np.ndarray]:
    """Cut one series into ``participants`` contiguous, non-overlapping segments.

    The ``T − P·lag`` design rows are shared as evenly as possible (remainder to the first
    segments); segment k holds ``n_k + lag`` rows, its first ``lag`` rows serving only as lags.

    Returns
    -------
    list of P new arrays (or DataFrames) of shape (n_k + lag, d)
    """
    is_frame = isinstance(X, pd.DataFrame)
    arr = as_float_matrix(X, "X")
    P = check_int(participants, "participants", low=1)
    lag = check_int(lag, "lag", low=1)
    rows = arr.shape[0] - P * lag
    if rows < P:
        raise ValueError(
            f"`X` has {arr.shape[0]} rows; {P} segments with lag = {lag} need at "
            f"least {P * (lag + 1)} (lag + 1 per segment)"
        )
    bounds = np.cumsum([0] + [n + lag for n in even_sizes(rows, P)])
    if is_frame:
        return [X.iloc[a:b].copy() for a, b in zip(bounds[:-1], bounds[1:])]
    return [arr[a:b].copy() for a, b in zip(bounds[:-1], bounds[1:])]
