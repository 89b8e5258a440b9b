"""Reading a participant's data table: a CSV of numbers with one header row, or a Parquet file.

Used by the command line (``--data``, ``--truth``) and by a Flower participant reading its own file
(node config ``data-path``). Anything a learner could not use as it is is refused with a
:class:`DataFileError` naming the file: a missing, unreadable or empty file, a directory, a header
without data, a first row of numbers only (a file without a header row: its first data row would
silently become the column names), duplicate or empty column names (a pandas index written by
``to_csv()`` shows up as an unnamed first column), a non-numeric column, or a missing or
non-finite value (named by data row and column).

The messages quote the offending cell, which is helpful to the data owner and a leak anywhere
else: a participant of a federated study keeps them on its own side (see
:mod:`dpbnsl.federation.guard`).
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DataFileError", "read_table", "looks_numeric", "check_input"]

#: file suffixes read as Parquet (needs pyarrow); anything else is read as CSV
PARQUET_SUFFIXES = (".parquet", ".pq")


class DataFileError(ValueError):
    """A data file cannot be used as it is; the message names the file and says why."""


def looks_numeric(cell: str) -> bool:
    """Whether a header cell reads as a number (``"1.5"``, ``"-3"``, ``"nan"``, ``"1e308"``)."""
    try:
        float(cell.strip())
    except ValueError:
        return False
    return True


def check_input(path: Path, what: str) -> None:
    """Refuse a missing, non-regular or unreadable input file, naming ``what`` (cheap: nothing
    heavy is imported until a file is read)."""
    if not path.exists():
        raise DataFileError(f"{what} file {str(path)!r} does not exist")
    if path.is_dir():
        raise DataFileError(f"{what} {str(path)!r} is a directory, not a CSV or Parquet file")
    if not path.is_file():
        raise DataFileError(f"{what} {str(path)!r} is not a regular file")
    if not os.access(path, os.R_OK):
        raise DataFileError(f"{what} file {str(path)!r} is not readable (permission denied)")


def _read_parquet(path: Path, label: str) -> pd.DataFrame:
    import pandas as pd

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise DataFileError(f"{label}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors have no common base class
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFileError(f"cannot read {label}: {first}") from None
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names) or any(not n.strip() for n in names):
        raise DataFileError(f"{label}: column names must be unique and non-empty; got {names}")
    frame.columns = names
    return frame.reset_index(drop=True)


def _header(path: Path, what: str, shown: str) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            row = next(csv.reader(fh), None)
    except UnicodeDecodeError:
        raise DataFileError(f"cannot read {what} file {shown!r}: it is not UTF-8 text") from None
    except (OSError, csv.Error) as exc:
        raise DataFileError(f"cannot read {what} file {shown!r}: {exc}") from None
    if row is None or not any(cell.strip() for cell in row):
        raise DataFileError(
            f"{what} file {shown!r} is empty (a header row of variable names and "
            f"at least one data row are needed)"
        )
    return row


def read_table(
    path: str | os.PathLike[str],
    what: str = "data",
    *,
    index: bool | str = False,
    participant: int | None = None,
    shown: str | None = None,
) -> pd.DataFrame:
    """Read one data table of numbers with a header row; refuse (:class:`DataFileError`, naming
    ``what`` and the file) anything a learner could not use as it is.

    ``index=True`` takes the first column as row labels (a ``--truth`` matrix may carry them);
    ``"auto"`` does when the first header cell is empty (as pandas writes an index) or the first
    column is not numeric. Files ending in ``.parquet`` / ``.pq`` are Parquet (needs pyarrow).
    ``shown`` is the name used in messages (default: the path).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "site.csv"
    ...     _ = f.write_text("1.5,2\\n3,4\\n")
    ...     read_table(f)
    Traceback (most recent call last):
    ...
    dpbnsl.io.tables.DataFileError: data file '...site.csv': its first row holds only numbers (1.5, 2): ...
    """
    import pandas as pd

    path = Path(path)
    shown = str(path) if shown is None else shown
    label = f"{what} file {shown!r}" + (f" (participant {participant})" if participant is not None else "")
    if shown == str(path):
        check_input(path, what)
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return _check_frame(_read_parquet(path, label), label)
    header = _header(path, what, shown)
    if index == "auto":
        index = _labelled(path, header)
    names = header[1:] if index else header
    if names and all(looks_numeric(n) for n in names) and not _generated(names):
        shown_cells = ", ".join(n.strip() for n in names[:3]) + (", ..." if len(names) > 3 else "")
        raise DataFileError(
            f"{label}: its first row holds only numbers ({shown_cells}): a file without a header "
            f"row? Its first data row would be taken as the variable names and lost; add a header "
            f"row of variable names"
        )
    if any(not n.strip() for n in names):
        pos = next(i for i, n in enumerate(names) if not n.strip()) + (1 if index else 0)
        raise DataFileError(
            f"{label}: column {pos + 1} has no name in the header (a row index written "
            f"by pandas' to_csv? write the file with index=False)"
        )
    seen: set[str] = set()
    dup = [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]
    if dup:
        raise DataFileError(f"{label}: duplicate column name(s) {sorted(set(dup))} in the header")
    try:
        frame = pd.read_csv(path, index_col=0 if index else None)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFileError(f"cannot read {label}: {first}") from None
    if not index and not frame.index.equals(pd.RangeIndex(len(frame))):
        raise DataFileError(f"{label}: some data rows have more fields than the header has names")
    return _check_frame(frame, label)


def _generated(names: list[str]) -> bool:
    """Whether the names are the integers 0, …, d − 1 or 1, …, d in order (the names pandas gives
    a frame's columns by default, as ``pd.DataFrame(X).to_csv(index=False)`` writes them)."""
    cells = [n.strip() for n in names]
    return any(cells == [str(i + start) for i in range(len(cells))] for start in (0, 1))


def _check_frame(frame: pd.DataFrame, label: str) -> pd.DataFrame:
    """Refuse an empty frame, a non-numeric column, or a missing or non-finite value."""
    import numpy as np
    import pandas as pd

    if len(frame) == 0 or frame.shape[1] == 0:
        raise DataFileError(
            f"{label} has a header but no data rows" if len(frame) == 0 else f"{label} has no columns"
        )
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            bad = frame[col][pd.to_numeric(frame[col], errors="coerce").isna() & frame[col].notna()]
            example = f" (e.g. {bad.iloc[0]!r} at data row {bad.index[0]})" if len(bad) else ""
            raise DataFileError(f"{label}: column {col!r} is not numeric{example}")
    values = frame.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        v = float(values[i, j])
        kind = "missing" if math.isnan(v) else f"non-finite ({v!r})"
        raise DataFileError(
            f"{label}: {kind} value at data row {i} (0-based, header excluded), "
            f"column {frame.columns[j]!r}; remove or impute it first"
        )
    return frame


def _labelled(path: Path, header: list[str]) -> bool:
    import pandas as pd

    if not header[0].strip():
        return True
    try:
        peek = pd.read_csv(path, nrows=5)
    except Exception:
        return False
    return len(peek) > 0 and not pd.api.types.is_numeric_dtype(peek.iloc[:, 0])
