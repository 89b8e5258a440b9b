"""Real data sets with a ground-truth graph.

Nothing here downloads anything: files come from a path the caller gives or from the resources of an
installed package, read as plain files.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["SachsNotFoundError", "load_sachs"]

SACHS_DATA_FILE = "cyto_full_data.csv"
SACHS_TARGET_FILE = "cyto_full_target.csv"
_PIP_HINT = 'install the Causal Discovery Toolbox with `pip install "dpbnsl[sachs]"`'
_PATH_HINT = f"pass `path=` a directory holding {SACHS_DATA_FILE} and {SACHS_TARGET_FILE}"


class SachsNotFoundError(FileNotFoundError):
    """The Sachs files are neither at the given path nor in an installed ``cdt`` package."""


def _has_sachs(directory: Path) -> bool:
    return (directory / SACHS_DATA_FILE).is_file() and (directory / SACHS_TARGET_FILE).is_file()


def _cdt_resource_dir() -> Path | None:
    """Directory of the Sachs CSVs inside an installed ``cdt``, found without importing ``cdt``.

    ``find_spec`` of a top-level package locates it without executing its ``__init__``. The files
    are looked up at ``cdt/data/resources/`` (their place in cdt 0.6), then anywhere under ``cdt``.
    """
    try:
        spec = importlib.util.find_spec("cdt")
    except (ImportError, ValueError):  # ValueError: a half-initialised module in sys.modules
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in map(Path, spec.submodule_search_locations):
        if _has_sachs(root / "data" / "resources"):
            return root / "data" / "resources"
        for found in sorted(root.rglob(SACHS_DATA_FILE)):
            if _has_sachs(found.parent):
                return found.parent
    return None


def _read_sachs(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    data_file, target_file = directory / SACHS_DATA_FILE, directory / SACHS_TARGET_FILE
    data = pd.read_csv(data_file)
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{data_file} holds no data (shape {data.shape})")
    non_numeric = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])]
    if non_numeric:
        raise ValueError(f"{data_file} has non-numeric columns {non_numeric}")
    data = data.astype(float)
    edges = pd.read_csv(target_file)
    if list(edges.columns) != ["Cause", "Effect"]:
        raise ValueError(f"{target_file} must have the header Cause,Effect; got {list(edges.columns)}")
    names = [str(c) for c in data.columns]
    cause, effect = edges["Cause"].astype(str), edges["Effect"].astype(str)
    unknown = sorted((set(cause) | set(effect)) - set(names))
    if unknown:
        raise ValueError(f"{target_file} names variables {unknown} that are not columns of {names}")
    truth = pd.DataFrame(np.zeros((len(names), len(names)), dtype=int), index=names, columns=names)
    for a, b in zip(cause, effect):
        truth.loc[a, b] = 1
    data.columns = names
    return data, truth


def load_sachs(path: str | os.PathLike | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load the Sachs et al. (2005) protein-signalling data and its reference graph.

    These are the 7466 × 11 flow-cytometry measurements and the 18-edge reference graph shipped
    with the Causal Discovery Toolbox (``cdt``, MIT licence). This reference graph is **not a
    DAG**: it contains the cycle ``plcg -> PIP2 -> PIP3 -> plcg`` (the 17-edge consensus DAG used
    in the NOTEARS papers differs from it).

    Parameters
    ----------
    path : str or path-like, optional
        A directory holding ``cyto_full_data.csv`` (a header row of protein names, then one row per
        cell) and ``cyto_full_target.csv`` (an edge list with header ``Cause,Effect``). When
        omitted, the two files are read from the resources of an installed ``cdt`` package, which
        is located but never imported (``pip install "dpbnsl[sachs]"``).

    Returns
    -------
    data : DataFrame of shape (n, d)
        Float measurements, one column per protein (``n = 7466``, ``d = 11`` for the cdt files).
    truth : DataFrame of shape (d, d)
        0/1 integers with index and columns the protein names; ``truth.loc[cause, effect] == 1``
        for each listed edge, so ``truth.to_numpy()`` follows the ``W[i, j]: i -> j`` convention.

    Raises
    ------
    SachsNotFoundError
        A ``FileNotFoundError``: ``path`` lacks one of the files, or no ``path`` was given and no
        installed ``cdt`` ships them.
    ValueError
        The files are malformed, or an edge names a variable that is not a data column.

    Examples
    --------
    >>> data, truth = load_sachs()  # doctest: +SKIP
    >>> data.shape, int(truth.to_numpy().sum())  # doctest: +SKIP
    ((7466, 11), 18)
    """
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a str or path-like; got {type(path).__name__}")
        directory = Path(path)
        if not _has_sachs(directory):
            files = (SACHS_DATA_FILE, SACHS_TARGET_FILE)
            missing = [f for f in files if not (directory / f).is_file()]
            raise SachsNotFoundError(
                f"`path` = {str(path)!r} must be a directory holding {SACHS_DATA_FILE} and "
                f"{SACHS_TARGET_FILE}; missing {missing}. Or omit `path` and {_PIP_HINT}"
            )
    else:
        found = _cdt_resource_dir()
        if found is None:
            raise SachsNotFoundError(
                f"The Sachs data were not found (no installed `cdt` ships them): {_PIP_HINT}, or {_PATH_HINT}"
            )
        directory = found
    return _read_sachs(directory)
