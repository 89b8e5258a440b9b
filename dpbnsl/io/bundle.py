"""Run bundles: one directory per run, written all at once, that reads back exactly.

A bundle holds ``bundle.json`` (what the run was: its kind — ``"learn"``, ``"attack"`` or
``"audit"`` —, the creation time, the package and dependency versions, the command line when there
was one, a JSON summary, and for a learning run the whole :class:`~dpbnsl.learners.LearnResult`),
``arrays.npz`` (every array, bit for bit), and human-readable copies: ``W.csv`` and ``W_raw.csv``
labelled by variable name, ``history.csv``, ``transcript.csv`` (one row per message: round,
sender, receiver, kind, size), ``privacy.json`` (the privacy statement and one ledger
per participant), ``truth.csv`` when the truth was given, and one CSV per table of an attack or
audit. Only ``bundle.json`` and ``arrays.npz`` are read back; the rest is for people and other
tools.

The directory is written under a temporary name beside it and renamed at the end, so a failure
leaves nothing behind; an existing non-empty directory is refused unless ``overwrite=True``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: a :class:`~dpbnsl.learners.LearnResult` (not imported here: ``LearnResult.save`` imports this
#: module, and the package's import graph has no cycle)
LearnResult = Any

__all__ = ["Bundle", "BundleError", "read_bundle", "versions", "write_bundle"]

FORMAT = "dpbnsl-bundle"
FORMAT_VERSION = 1
KINDS = ("learn", "attack", "audit")
MANIFEST = "bundle.json"
ARRAYS = "arrays.npz"
#: the packages whose versions a bundle records
PACKAGES = ("dpbnsl", "numpy", "scipy", "pandas", "dp-accounting")


class BundleError(ValueError):
    """A path that is not a bundle, or a bundle that cannot be written or read."""


@dataclass(frozen=True, eq=False)
class Bundle:
    """What :func:`read_bundle` returns.

    Attributes
    ----------
    kind : str
        ``"learn"``, ``"attack"`` or ``"audit"``.
    created : str
        ISO 8601 time (UTC) the bundle was written.
    versions : mapping
        Python and package versions of the run.
    command : tuple of str or None
        The command line, for bundles written by ``dpbnsl``.
    summary : mapping
        The run's JSON summary (what ``--json`` prints).
    result : LearnResult or None
        The learned structure (``kind == "learn"``).
    truth : DataFrame or None
        The true graph, when the run was given it.
    tables : mapping of str to DataFrame
        The tables of an attack or audit.
    path : Path
        Where it was read from.
    """

    kind: str
    created: str
    versions: Mapping[str, str]
    command: tuple[str, ...] | None = None
    summary: Mapping[str, Any] = field(default_factory=dict)
    result: LearnResult | None = None
    truth: pd.DataFrame | None = None
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None


def versions() -> dict[str, str]:
    """Python's and the recorded packages' versions (``"not installed"`` when absent)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def check_bundle_dir(path: str | os.PathLike[str], *, overwrite: bool = False, what: str = "path") -> Path:
    """Validate an output directory before any work: its parent exists and is a writable
    directory, and the directory itself is absent, empty, or (with ``overwrite``) a bundle."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`{what}` must be a str or path-like; got {type(path).__name__}")
    out = Path(path)
    if str(out) in ("", "-"):
        raise BundleError(f"`{what}` must name a directory; got {str(path)!r}")
    parent = out.absolute().parent
    if not parent.is_dir():
        raise BundleError(f"`{what}` = {str(path)!r}: its parent directory does not exist")
    if not os.access(parent, os.W_OK):
        raise BundleError(f"`{what}` = {str(path)!r}: its parent directory is not writable")
    if out.exists():
        if not out.is_dir():
            raise BundleError(f"`{what}` = {str(path)!r} exists and is not a directory")
        if any(out.iterdir()):
            if not overwrite:
                raise BundleError(
                    f"`{what}` = {str(path)!r} exists and is not empty (overwrite to replace it)"
                )
            if not _is_bundle(out):
                raise BundleError(f"`{what}` = {str(path)!r} is not a bundle: refusing to replace it")
            here = Path.cwd().resolve()
            if out.resolve() == here or out.resolve() in here.parents:
                raise BundleError(
                    f"`{what}` = {str(path)!r} is the working directory or holds it: refusing to replace it"
                )
    return out


def _is_bundle(path: Path) -> bool:
    """Whether ``path`` holds a dpbnsl bundle manifest (not merely a file of that name)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def write_bundle(
    path: str | os.PathLike[str],
    kind: str,
    *,
    result: LearnResult | None = None,
    truth: Any = None,
    tables: Mapping[str, pd.DataFrame] | None = None,
    summary: Mapping[str, Any] | None = None,
    command: Sequence[str] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a bundle (see the module docstring) and return its path.

    Everything is validated and encoded before the first byte is written; the directory appears
    complete or not at all.
    """
    import numpy as np
    import pandas as pd

    from ._codec import CodecError, encode

    out = check_bundle_dir(path, overwrite=overwrite)
    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(KINDS)}; got {kind!r}")
    if (kind == "learn") != (result is not None):
        raise ValueError("a 'learn' bundle needs `result`, and only a 'learn' bundle takes one")
    tables = dict(tables or {})
    for name, table in tables.items():
        if not (isinstance(name, str) and name.isidentifier() and isinstance(table, pd.DataFrame)):
            raise ValueError(f"`tables` must map identifier names to DataFrames; got {name!r}")
    truth_frame = None if truth is None else _truth_frame(truth, result)
    arrays: dict[str, np.ndarray] = {}
    try:
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": kind,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(),
            "command": None if command is None else [str(a) for a in command],
            "summary": encode(dict(summary or {}), arrays),
            "result": None if result is None else encode(result, arrays),
            "truth": None if truth_frame is None else encode(truth_frame, arrays),
            "tables": {name: encode(t, arrays) for name, t in tables.items()},
        }
        text = json.dumps(manifest, indent=1, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")  # lone surrogates fail here, before anything is written
    except (CodecError, ValueError) as exc:
        raise BundleError(f"cannot write the bundle: {exc}") from None
    tmp = Path(tempfile.mkdtemp(prefix=".dpbnsl-bundle-", dir=out.absolute().parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would hide the bundle from the group
        (tmp / MANIFEST).write_text(text, encoding="utf-8")
        np.savez(tmp / ARRAYS, **arrays)  # type: ignore[arg-type]
        _write_readable(tmp, result, truth_frame, tables, summary)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # replace: the old bundle is moved aside, the new one renamed in, then the old one removed
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=".dpbnsl-old-", dir=out.absolute().parent))
        os.rename(out, old / "bundle")
    try:
        os.rename(tmp, out)
    except BaseException:
        if old is not None:
            os.rename(old / "bundle", out)
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out


def _truth_frame(truth: Any, result: LearnResult | None) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    if isinstance(truth, pd.DataFrame):
        frame = truth.copy()
    else:
        a = np.asarray(truth)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"`truth` must be a square matrix; got shape {a.shape}")
        names = _names(result, a.shape[0])
        frame = pd.DataFrame(a, index=names, columns=names)
    if result is not None and frame.shape != result.W.shape:
        raise ValueError(f"`truth` has shape {frame.shape}; the result has d = {result.W.shape[0]}")
    return frame


def _names(result: LearnResult | None, d: int) -> list[str]:
    if result is not None and result.columns:
        return list(result.columns)
    return [f"X{i}" for i in range(d)]


def _write_readable(
    root: Path,
    result: LearnResult | None,
    truth: pd.DataFrame | None,
    tables: Mapping[str, pd.DataFrame],
    summary: Mapping[str, Any] | None,
) -> None:
    if result is not None:
        result.to_frame().to_csv(root / "W.csv")
        result.to_frame(raw=True).to_csv(root / "W_raw.csv")
        result.history.to_csv(root / "history.csv", index=False)
        if result.transcript is not None:  # the message index (the payloads are in arrays.npz)
            result.transcript.to_frame().to_csv(root / "transcript.csv", index=False)
        if result.privacy is not None or result.ledger is not None:
            privacy = {
                "statement": None if result.privacy is None else str(result.privacy),
                "ledgers": [json.loads(g.to_json()) for g in result.ledger or ()],
            }
            (root / "privacy.json").write_text(json.dumps(privacy, indent=1), encoding="utf-8")
    if truth is not None:
        truth.to_csv(root / "truth.csv")
    for name, table in tables.items():
        table.to_csv(root / f"{name}.csv", index=False)


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    """The :class:`Bundle` at ``path`` (a directory written by :func:`write_bundle`)."""
    import numpy as np

    from ._codec import decode

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a str or path-like; got {type(path).__name__}")
    root = Path(path)
    if not (root / MANIFEST).is_file():
        raise BundleError(f"{str(root)!r} is not a bundle (no {MANIFEST})")
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{str(root / MANIFEST)!r} cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{str(root / MANIFEST)!r} is not a dpbnsl bundle manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise BundleError(
            f"{str(root)!r} has bundle format version {manifest.get('format_version')!r}; this dpbnsl "
            f"reads version {FORMAT_VERSION}"
        )
    try:
        with np.load(root / ARRAYS, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        command = manifest.get("command")
        bundle = Bundle(
            kind=str(manifest["kind"]),
            created=str(manifest["created"]),
            versions=dict(manifest["versions"]),
            command=None if command is None else tuple(str(a) for a in command),
            summary=decode(manifest.get("summary") or {}, arrays),
            result=decode(manifest.get("result"), arrays),
            truth=decode(manifest.get("truth"), arrays),
            tables={str(k): decode(v, arrays) for k, v in (manifest.get("tables") or {}).items()},
            path=root,
        )
    except Exception as exc:  # whatever a damaged or crafted file makes the decoder raise
        raise BundleError(f"{str(root)!r} is a damaged bundle: {type(exc).__name__}: {exc}") from None
    _check_contents(bundle, root)
    return bundle


def _check_contents(bundle: Bundle, root: Path) -> None:
    """The decoded parts have the types their kind promises."""
    import pandas as pd

    problem = None
    is_result = type(bundle.result).__name__ == "LearnResult"
    if bundle.kind not in KINDS:
        problem = f"unknown kind {bundle.kind!r}"
    elif (bundle.kind == "learn") != is_result or (bundle.result is not None and not is_result):
        problem = f"a {bundle.kind!r} bundle with result {type(bundle.result).__name__}"
    elif bundle.truth is not None and not isinstance(bundle.truth, pd.DataFrame):
        problem = f"truth is a {type(bundle.truth).__name__}"
    elif not all(isinstance(t, pd.DataFrame) for t in bundle.tables.values()):
        problem = "a table that is not a DataFrame"
    elif not isinstance(bundle.summary, dict):
        problem = f"summary is a {type(bundle.summary).__name__}"
    if problem is not None:
        raise BundleError(f"{str(root)!r} is a damaged bundle: {problem}")
