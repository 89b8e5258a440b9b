"""Files in and out of the CLI: data CSVs read and checked up front, outputs checked before any
work and written all-or-nothing.

Reading: ``-`` reads a CSV from standard input (spooled to a temporary file once, so it can be
read twice); a file ending in ``.parquet`` or ``.pq`` is read as Parquet (needs pyarrow). A
``--data`` or ``--truth`` file is refused, with the file named, when it is missing, a
directory, unreadable, empty, header-only, has duplicate or empty column names (a pandas index
written by ``to_csv()`` shows up as an unnamed first column), a non-numeric column, or a missing
or non-finite value (named by data row and column).

Writing: every output path is checked before the command does any work (not a directory, not a
special file such as ``/dev/full``, its nearest existing ancestor a writable directory, and not an
existing file unless ``--force``); files are written to a temporary sibling and renamed into place
only when everything was written, so a failure leaves no partial or half-written output behind.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .common import CLIError

_UMASK = os.umask(0)
os.umask(_UMASK)

__all__ = [
    "read_csv",
    "check_output_file",
    "check_output_dir",
    "write_files",
    "same_columns",
    "distinct_files",
]


_STDIN: list[tuple[object, Path]] = []  # (standard input object, its spooled copy)


def _stdin_copy() -> Path:
    """Standard input, copied once to a temporary file removed at exit."""
    import atexit
    import sys

    for stream, copy in _STDIN:
        if stream is sys.stdin:
            return copy
    fd, name = tempfile.mkstemp(prefix="dpbnsl-stdin-", suffix=".csv")
    with os.fdopen(fd, "wb") as fh:
        fh.write(sys.stdin.buffer.read())
    _STDIN.append((sys.stdin, Path(name)))
    atexit.register(Path(name).unlink, missing_ok=True)
    return Path(name)


def _read_parquet(path: Path, label: str) -> pd.DataFrame:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise CLIError(f"{label}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors have no common base class
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"cannot read {label}: {first}") from None
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names) or any(not n.strip() for n in names):
        raise CLIError(f"{label}: column names must be unique and non-empty; got {names}")
    frame.columns = names
    return frame.reset_index(drop=True)


def _check_input(path: Path, what: str) -> None:
    if not path.exists():
        raise CLIError(f"{what} file {str(path)!r} does not exist")
    if path.is_dir():
        raise CLIError(f"{what} {str(path)!r} is a directory, not a CSV file")
    if not path.is_file():
        raise CLIError(f"{what} {str(path)!r} is not a regular file")
    if not os.access(path, os.R_OK):
        raise CLIError(f"{what} file {str(path)!r} is not readable (permission denied)")


def _header(path: Path, what: str, shown: str | None = None) -> list[str]:
    shown = shown or str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            row = next(csv.reader(fh), None)
    except UnicodeDecodeError:
        raise CLIError(f"cannot read {what} file {shown!r}: it is not UTF-8 text") from None
    except (OSError, csv.Error) as exc:
        raise CLIError(f"cannot read {what} file {shown!r}: {exc}") from None
    if row is None or not any(cell.strip() for cell in row):
        raise CLIError(
            f"{what} file {shown!r} is empty (a header row of variable names and "
            f"at least one data row are needed)"
        )
    return row


def read_csv(
    path: Path, what: str, *, index: bool | str = False, participant: int | None = None
) -> pd.DataFrame:
    """Read one CSV of numbers with a header row; refuse, naming ``what`` and the file, anything
    a learner could not use as it is. ``index=True`` takes the first column as row labels
    (``--truth`` matrices may carry them); ``"auto"`` does when the first header cell is empty
    (as pandas writes an index) or the first column is not numeric. ``-`` is standard input;
    ``.parquet`` / ``.pq`` files are Parquet."""
    label = f"{what} file {str(path)!r}" + (
        f" (participant {participant})" if participant is not None else ""
    )
    shown = str(path)
    if shown == "-":
        shown = "<stdin>"
        label = f"{what} file '<stdin>'" + (
            f" (participant {participant})" if participant is not None else ""
        )
        path = _stdin_copy()
    else:
        _check_input(path, what)
    if path.suffix.lower() in (".parquet", ".pq"):
        return _check_frame(_read_parquet(path, label), label, index=False)
    header = _header(path, what, shown)
    if index == "auto":
        index = _labelled(path, header)
    names = header[1:] if index else header
    if any(not n.strip() for n in names):
        pos = next(i for i, n in enumerate(names) if not n.strip()) + (1 if index else 0)
        raise CLIError(
            f"{label}: column {pos + 1} has no name in the header (a row index written "
            f"by pandas' to_csv? write the file with index=False)"
        )
    seen: set[str] = set()
    dup = [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]
    if dup:
        raise CLIError(f"{label}: duplicate column name(s) {sorted(set(dup))} in the header")
    try:
        frame = pd.read_csv(path, index_col=0 if index else None)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"cannot read {label}: {first}") from None
    if not index and not frame.index.equals(pd.RangeIndex(len(frame))):
        raise CLIError(f"{label}: some data rows have more fields than the header has names")
    return _check_frame(frame, label, index=bool(index))


def _check_frame(frame: pd.DataFrame, label: str, *, index: bool) -> pd.DataFrame:
    """Refuse an empty frame, a non-numeric column, or a missing or non-finite value."""
    if len(frame) == 0 or frame.shape[1] == 0:
        raise CLIError(
            f"{label} has a header but no data rows" if len(frame) == 0 else f"{label} has no columns"
        )
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            bad = frame[col][pd.to_numeric(frame[col], errors="coerce").isna() & frame[col].notna()]
            example = f" (e.g. {bad.iloc[0]!r} at data row {bad.index[0]})" if len(bad) else ""
            raise CLIError(f"{label}: column {col!r} is not numeric{example}")
    values = frame.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        kind = "missing" if np.isnan(values[i, j]) else f"non-finite ({float(values[i, j])!r})"
        raise CLIError(
            f"{label}: {kind} value at data row {i} (0-based, header excluded), "
            f"column {frame.columns[j]!r}; remove or impute it first"
        )
    return frame


def _labelled(path: Path, header: list[str]) -> bool:
    if not header[0].strip():
        return True
    try:
        peek = pd.read_csv(path, nrows=5)
    except Exception:
        return False
    return len(peek) > 0 and not pd.api.types.is_numeric_dtype(peek.iloc[:, 0])


def distinct_files(paths: Sequence[Path], flag: str) -> None:
    """Refuse the same file given twice: one participant's records would count twice, and each
    record's privacy loss would be that of two releases, not the one the guarantee states."""
    seen: dict[str, Path] = {}
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            raise CLIError(
                f"{flag} names {str(p)!r} twice (as {str(seen[key])!r}): every "
                f"participant's data must be given once"
            )
        seen[key] = p


def same_columns(frames: Sequence[pd.DataFrame], paths: Sequence[Path], what: str) -> None:
    """Refuse participants whose column names differ (by name and order)."""
    first = list(frames[0].columns)
    for frame, path in zip(frames[1:], paths[1:]):
        if list(frame.columns) != first:
            raise CLIError(
                f"{what} file {str(path)!r} has columns {list(frame.columns)} but "
                f"{str(paths[0])!r} has {first}: every participant needs the same "
                f"variables in the same order"
            )


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_file(path: Path, flag: str, *, force: bool) -> Path:
    """Refuse an output file path before any work: a directory, a special file, an existing file
    without ``force``, or a location that cannot be created or written."""
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise CLIError(f"{flag} {str(path)!r} is a directory; give a file name")
        if not path.is_file():
            raise CLIError(f"{flag} {str(path)!r} is not a regular file")
        if not force:
            raise CLIError(f"{flag} {str(path)!r} already exists; pass --force to overwrite it")
    _check_parent(path, flag)
    return path


def _check_parent(path: Path, flag: str) -> None:
    base = _nearest_existing(path.parent)
    if not base.is_dir():
        raise CLIError(f"{flag} {str(path)!r}: {str(base)!r} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise CLIError(f"{flag} {str(path)!r}: directory {str(base)!r} is not writable")


def check_output_dir(path: Path, flag: str, names: Sequence[str], *, force: bool) -> Path:
    """Refuse an output directory before any work: not a directory, or holding any of ``names``
    without ``force``, or not creatable or writable."""
    if path.exists():
        if not path.is_dir():
            raise CLIError(f"{flag} {str(path)!r} exists and is not a directory")
        taken = [n for n in names if (path / n).exists()]
        if taken and not force:
            raise CLIError(
                f"{flag} {str(path)!r} already holds {', '.join(taken)}; pass --force "
                f"to overwrite, or choose another directory"
            )
        special = [n for n in taken if not (path / n).is_file()]
        if special:
            raise CLIError(f"{flag} {str(path)!r}: {special[0]} exists and is not a regular file")
        if not os.access(path, os.W_OK | os.X_OK):
            raise CLIError(f"{flag} {str(path)!r} is not writable")
    else:
        _check_parent(path / "x", flag)
    return path


def write_files(writers: Sequence[tuple[Path, Callable[[Path], object]]]) -> None:
    """Write every file with its ``writer(temporary_path)``, then move them all into place.

    All or nothing: if a write fails, every temporary file is removed and nothing is replaced; if
    moving one into place fails, the files already replaced are restored. A replaced file keeps
    its permissions; a new one gets those a plain ``open()`` would give it. Directories created
    for the outputs are removed again on failure.
    """
    made: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    # (output, where the earlier file was moved aside, whether the output path is now ours)
    placed: list[tuple[Path, Path | None, bool]] = []
    try:
        for path, writer in writers:
            missing = []
            p = path.parent
            while not p.exists():
                missing.append(p)
                p = p.parent
            path.parent.mkdir(parents=True, exist_ok=True)
            made.extend(reversed(missing))
            fd, tmp_name = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
            )  # same suffix: writers may go by it
            os.close(fd)
            staged.append((Path(tmp_name), path))
            mode = (os.stat(path).st_mode & 0o7777) if path.is_file() else 0o666 & ~_UMASK
            os.chmod(tmp_name, mode)
            writer(Path(tmp_name))
        for tmp, path in staged:
            keep = None
            if path.exists():
                fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent)
                os.close(fd)
                keep = Path(name)
                placed.append((path, keep, False))
                os.replace(path, keep)
            else:
                placed.append((path, None, False))
            placed[-1] = (path, keep, True)  # the earlier file (if any) is aside; path is ours
            os.replace(tmp, path)
    except BaseException:
        for path, keep, ours in reversed(placed):  # undo: restore replaced files, drop new ones
            if keep is not None and ours:
                os.replace(keep, path)
            elif keep is None and ours:
                path.unlink(missing_ok=True)
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    finally:
        for _, keep, _ in placed:
            if keep is not None:
                keep.unlink(missing_ok=True)
