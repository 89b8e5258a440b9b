"""Files in and out of the CLI: data CSVs read and checked up front, outputs checked before any
work and written all-or-nothing.

Reading: ``-`` reads a CSV from standard input (spooled to a temporary file once, so it can be
read twice); everything else is :func:`dpbnsl.io.tables.read_table`, whose refusals (a missing or
empty file, no header row, a non-numeric column, a missing value, …) become CLI errors.

Writing: every output path is checked before the command does any work (not a directory, not a
special file such as ``/dev/full``, its nearest existing ancestor a writable directory, and not an
existing file unless ``--force``); files are written to a temporary sibling and renamed into place
only when everything was written, so a failure leaves no partial or half-written output behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .common import CLIError

if TYPE_CHECKING:
    import pandas as pd

_UMASK = os.umask(0)
os.umask(_UMASK)

__all__ = [
    "read_csv",
    "check_output_file",
    "check_output_dir",
    "write_files",
    "same_columns",
    "distinct_files",
    "check_input_files",
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


def read_csv(
    path: Path, what: str, *, index: bool | str = False, participant: int | None = None
) -> pd.DataFrame:
    """Read one data table (see :func:`dpbnsl.io.tables.read_table`; ``-`` is standard input),
    refusing as a :class:`CLIError` anything a learner could not use as it is."""
    from ..io.tables import DataFileError, read_table  # pandas: only when a file is read

    shown = None
    if str(path) == "-":
        shown, path = "<stdin>", _stdin_copy()
    try:
        return read_table(path, what, index=index, participant=participant, shown=shown)
    except DataFileError as exc:
        raise CLIError(str(exc)) from None


def check_input_files(paths: Sequence[Path], flag: str) -> None:
    """Refuse a missing, unreadable or non-regular input file (``-``, standard input, passes)
    before anything heavy is loaded: a typo answers at once."""
    from ..io.tables import DataFileError, check_input

    for p in paths:
        if str(p) != "-":
            try:
                check_input(p, flag)
            except DataFileError as exc:
                raise CLIError(str(exc)) from None


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
