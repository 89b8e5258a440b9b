"""Boundary checks shared by every public function.

Each check raises ``ValueError`` or ``TypeError`` whose message names the parameter (in backticks)
and the offending value, and lists the allowed values for closed vocabularies. Checks never modify
their input: array checks return a new float64 array when conversion or copying is needed.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "as_generator",
    "check_choice",
    "check_int",
    "check_real",
    "as_float_matrix",
    "as_square_matrix",
    "as_participants",
    "check_epsilon",
    "readonly_copy",
    "EPSILON_MIN",
    "EPSILON_MAX",
]

#: The range of privacy *targets* ε that calibrations, private learners and audits accept. Below
#: 1e-6 the noise is millions of times the signal; above 100 the guarantee is vacuous (e^100 ≈
#: 3·10^43 bounds the likelihood ratio) and the noise is negligible. Inside the range every
#: calibration is exact and returns within a second or two; outside it they would overflow,
#: underflow or take minutes, so the target is refused instead.
EPSILON_MIN, EPSILON_MAX = 1e-6, 100.0


_PLAIN_REALS = (float, int, np.float64)  # fast path of check_real (no ABC instance checks)

#: What the public functions accept where they take array data: a numpy array, a DataFrame, nested
#: lists, ... (anything :func:`numpy.asarray` turns into an array). An alias of ``Any`` for the
#: annotations: the checks of this module validate the value at run time.
ArrayLike: TypeAlias = Any


def readonly_copy(a: Any, dtype: Any = float) -> np.ndarray:
    """A new array with the values of ``a`` (as ``dtype``; None keeps it) that cannot be written."""
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def as_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """Normalise ``rng`` (None, int seed, SeedSequence or Generator) into a ``Generator``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not (
        rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence))
    ):
        raise TypeError(
            f"`{name}` must be None, an int seed, a SeedSequence or a numpy Generator; "
            f"got {type(rng).__name__} {rng!r}"
        )
    if isinstance(rng, numbers.Integral) and rng < 0:
        raise ValueError(f"`{name}` seed must be non-negative; got {rng!r}")
    # numbers.Integral (np.int64 and the like) is accepted at runtime; the stubs only name int.
    return np.random.default_rng(cast("int | np.random.SeedSequence | None", rng))


def check_choice(value: Any, name: str, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``; otherwise raise naming the allowed values."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"`{name}` must be one of {options}; got {value!r}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a bool; anything but a Python or numpy bool raises ``TypeError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a bool; got {type(value).__name__} {value!r}")
    return bool(value)


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking type, finiteness and the interval bounds."""
    if type(value) not in _PLAIN_REALS and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f"`{name}` must be a real number; got {type(value).__name__} {value!r}")
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"`{name}` must be finite; got {value!r}")
    if low is not None and (v < low or (low_open and v == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"`{name}` must be {op} {low:g}; got {value!r}")
    if high is not None and (v > high or (high_open and v == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"`{name}` must be {op} {high:g}; got {value!r}")
    return v


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """A privacy target ε in [EPSILON_MIN, EPSILON_MAX] (``inf`` too when ``allow_inf``)."""
    v = check_real(value, name, low=0.0, low_open=True, allow_inf=allow_inf)
    if math.isinf(v):
        return v
    if not EPSILON_MIN <= v <= EPSILON_MAX:
        raise ValueError(
            f"`{name}` must lie in [{EPSILON_MIN:g}, {EPSILON_MAX:g}]; got {value!r} (below, the "
            f"noise swamps any signal; above, the guarantee e^ε is vacuous"
            + ("; inf runs without noise)" if allow_inf else ")")
        )
    return v


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int after checking its type and bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {type(value).__name__} {value!r}")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"`{name}` must be >= {low}; got {value!r}")
    if high is not None and v > high:
        raise ValueError(f"`{name}` must be <= {high}; got {value!r}")
    return v


def _is_frame(X: object) -> bool:
    """Whether ``X`` is a pandas DataFrame, without importing pandas (~0.25 s): no object can be
    one before pandas is loaded."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(X, pandas.DataFrame)


def _non_numeric_column(df: pd.DataFrame) -> str | None:
    import pandas as pd

    for i in range(df.shape[1]):
        col = df.iloc[:, i]
        if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)):
            return str(df.columns[i])
    return None


def as_float_matrix(
    X: Any, name: str, *, where: str = "", min_rows: int = 0, min_cols: int = 0
) -> np.ndarray:
    """Return a new finite float64 2-D array built from ``X`` (array-like or DataFrame).

    Boolean arrays (e.g. masks ``W != 0``) are accepted as 0/1. A non-finite entry is reported
    with its row and column (and the column's name for a DataFrame); a DataFrame must have unique
    column names. ``X`` must have at least ``min_rows`` rows and ``min_cols`` columns.

    ``where`` is appended to the parameter name in messages (e.g. ``" (participant 3)"``).
    """
    label = f"`{name}`{where}"
    names = None
    if _is_frame(X):
        dup = X.columns[X.columns.duplicated()]
        if len(dup):
            raise ValueError(f"{label} has duplicate column names {sorted(map(str, set(dup)))}")
        bad = _non_numeric_column(X)
        if bad is not None:
            raise TypeError(f"{label} column {bad!r} is not numeric (dtype {X[bad].dtype})")
        arr = X.to_numpy(dtype=float, copy=True)
        names = [str(c) for c in X.columns]
    else:
        try:
            raw = np.asarray(X)
        except Exception as exc:  # pragma: no cover - numpy raises many kinds here
            raise TypeError(f"{label} must be array-like; got {type(X).__name__}") from exc
        if raw.dtype == object or not (
            raw.dtype == bool
            or (np.issubdtype(raw.dtype, np.number) and not np.issubdtype(raw.dtype, np.complexfloating))
        ):
            raise TypeError(f"{label} must hold real numbers; got dtype {raw.dtype}")
        arr = np.array(raw, dtype=float, copy=True)
    if arr.ndim != 2:
        raise ValueError(f"{label} must be 2-dimensional; got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{label} must have at least {min_rows} row(s); got shape {arr.shape}")
    if arr.shape[1] < min_cols:
        raise ValueError(f"{label} must have at least {min_cols} column(s); got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        col = f"column {j}" + (f" ({names[j]!r})" if names is not None else "")
        raise ValueError(
            f"{label} has a non-finite value {float(arr[i, j])!r} at row {i}, {col} "
            "(missing values and ±inf must be removed or imputed first)"
        )
    return arr


#: The largest magnitude a non-private learner accepts in its data: the second moments it computes
#: (sums of n products) stay finite up to n = 1e8 rows. The private learners clip every record and
#: accept any finite value.
MAX_DATA_ABS = 1e150


def too_large(X: np.ndarray) -> tuple[int, int, float] | None:
    """(row, column, magnitude) of the largest entry of ``X`` when it exceeds
    :data:`MAX_DATA_ABS`, else None."""
    if not X.size:
        return None
    i, j = np.unravel_index(int(np.argmax(np.abs(X))), X.shape)
    v = abs(float(X[i, j]))
    return (int(i), int(j), v) if v > MAX_DATA_ABS else None


def check_data_scale(X: np.ndarray, name: str, *, where: str = "") -> np.ndarray:
    """Refuse data a non-private learner's statistics would overflow on (an entry beyond
    :data:`MAX_DATA_ABS` in magnitude), naming the entry; returns ``X``."""
    found = too_large(X)
    if found is not None:
        i, j, v = found
        raise ValueError(
            f"`{name}`{where} has an entry of magnitude {v:.3g} (row {i}, column {j}): "
            f"beyond {MAX_DATA_ABS:g} the covariances and losses this learner computes "
            f"overflow; rescale the data first"
        )
    return X


def as_square_matrix(W: Any, name: str) -> np.ndarray:
    """Return a new finite float64 square matrix (e.g. an adjacency or weight matrix)."""
    arr = as_float_matrix(W, name)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"`{name}` must be a square matrix; got shape {arr.shape}")
    return arr


def as_participants(
    participants: Any, name: str = "participants", *, min_rows: int = 2
) -> tuple[list[np.ndarray], tuple[str, ...] | None]:
    """Validate a sequence of participants' datasets.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames, each of shape (n_k, d)
        One dataset per participant; ``n_k`` may differ, ``d`` may not.

    Returns
    -------
    arrays : list of new float64 arrays of shape (n_k, d)
    columns : tuple of column names, or None when no participant is a DataFrame
    """
    if (
        isinstance(participants, np.ndarray)
        or _is_frame(participants)
        or not isinstance(participants, Sequence)
    ):
        raise TypeError(
            f"`{name}` must be a sequence (list or tuple) of (n_k, d) arrays or DataFrames, "
            f"one per participant; got {type(participants).__name__}"
        )
    if len(participants) == 0:
        raise ValueError(f"`{name}` must hold at least one participant; got an empty sequence")
    arrays: list[np.ndarray] = []
    columns: tuple[str, ...] | None = None
    for k, X in enumerate(participants):
        where = f" (participant {k})"
        arr = as_float_matrix(X, name, where=where, min_rows=0, min_cols=0)
        if _is_frame(X):
            cols = tuple(str(c) for c in X.columns)
            if columns is None:
                columns = cols
            elif cols != columns:
                diff = next((a, b) for a, b in zip(cols + ("",) * len(columns), columns) if a != b)
                raise ValueError(
                    f"`{name}`{where} has columns {list(cols)} but an earlier participant has "
                    f"{list(columns)} (first mismatch: {diff[0]!r} vs {diff[1]!r})"
                )
        if arrays and arr.shape[1] != arrays[0].shape[1]:
            raise ValueError(
                f"`{name}`{where} has {arr.shape[1]} columns but participant 0 has {arrays[0].shape[1]}"
            )
        if arr.shape[0] < min_rows:
            raise ValueError(f"`{name}`{where} has {arr.shape[0]} rows; at least {min_rows} are required")
        arrays.append(arr)
    if arrays[0].shape[1] < 1:
        raise ValueError(f"`{name}` must have at least one column; got 0")
    return arrays, columns
