"""Real data sets with a ground-truth graph.

The Sachs et al. (2005) protein-signalling data ship inside the package (``dpbnsl/data/sachs/``:
the Causal Discovery Toolbox's copy, MIT licence, with attribution in that directory's ``LICENSE``
and ``README.md``). Nothing is downloaded and no optional dependency is needed; each packaged file
is checked against its recorded SHA-256 whenever it is read.
"""

from __future__ import annotations

import numbers
import os
import types
from dataclasses import dataclass
from importlib import resources
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import check_choice
from ._packaged import read_verified

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = [
    "SACHS_CONDITIONS",
    "SACHS_SHA256",
    "SACHS_TRUTHS",
    "SACHS_VARIABLES",
    "SachsChecksumError",
    "SachsCondition",
    "SachsNotFoundError",
    "load_sachs",
]

SACHS_DATA_FILE = "cyto_full_data.csv"
SACHS_TARGET_FILE = "cyto_full_target.csv"
SACHS_CONSENSUS_FILE = "consensus_dag_17.csv"
_PACKAGED_DATA = SACHS_DATA_FILE + ".gz"

#: SHA-256 of the content of each packaged file, after gunzip for the ``.gz`` one (so the digest
#: does not depend on how the file was compressed). Checked on every read.
SACHS_SHA256 = types.MappingProxyType(
    {
        _PACKAGED_DATA: "fc331dcd0bc1d8765986b88cd1d23dd5a3f52e4ffc299fdf96de9d522ddf01aa",
        SACHS_TARGET_FILE: "398bc137b2669432ef12e0c57d3783fa876c1c7e2377577d3e75410f085485f6",
        SACHS_CONSENSUS_FILE: "9df002d674d6662ed8f57c8772c7b261e646bc0d83e508cc44f8c7987124c08e",
    }
)

#: The data columns, in file order. Usual protein names: praf = Raf, pmek = Mek, plcg = PLCγ,
#: p44/42 = Erk, pakts473 = Akt (phosphorylated at S473), pjnk = Jnk; the others are as named.
SACHS_VARIABLES = ("praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk")

#: The reference graphs ``load_sachs(truth=...)`` offers.
SACHS_TRUTHS = ("consensus-17", "cdt-18")


class SachsNotFoundError(FileNotFoundError):
    """``path=`` lacks one of the Sachs files, or a packaged file is missing (a damaged install)."""


class SachsChecksumError(ValueError):
    """A packaged Sachs file does not match its recorded SHA-256 (or is not a readable gzip file)."""


@dataclass(frozen=True)
class SachsCondition:
    """One experimental condition: a block of consecutive rows ``start:stop`` of the 7466-row file.

    ``name`` is the stem of the condition's file in the Science supplement (``"cd3cd28"`` ...),
    ``stimulus`` what the cells received.
    """

    index: int
    name: str
    stimulus: str
    start: int
    stop: int

    @property
    def n_rows(self) -> int:
        """Number of cells (rows) in the block."""
        return self.stop - self.start


_BLOCKS = (
    ("cd3cd28", "CD3/CD28", 853),
    ("cd3cd28icam2", "CD3/CD28 + ICAM-2", 902),
    ("cd3cd28+aktinhib", "CD3/CD28 + AKT inhibitor", 911),
    ("cd3cd28+g0076", "CD3/CD28 + G0076", 723),
    ("cd3cd28+psitect", "CD3/CD28 + psitectorigenin", 810),
    ("cd3cd28+u0126", "CD3/CD28 + U0126", 799),
    ("cd3cd28+ly", "CD3/CD28 + LY294002", 848),
    ("pma", "PMA", 913),
    ("b2camp", "β2cAMP", 707),
)
_STARTS = np.concatenate([[0], np.cumsum([n for *_, n in _BLOCKS])]).tolist()

#: The nine conditions, in the order the file concatenates them (the supplement's numbering 1–9
#: is ``index + 1``). Block 0, CD3/CD28 alone, is the observational condition.
SACHS_CONDITIONS = tuple(
    SachsCondition(k, name, stimulus, _STARTS[k], _STARTS[k + 1])
    for k, (name, stimulus, _) in enumerate(_BLOCKS)
)
SACHS_N_ROWS = _STARTS[-1]  # 7466


def _packaged_dir() -> Traversable:
    """The directory of the packaged files (a function, so that tests can point it elsewhere)."""
    return resources.files("dpbnsl") / "data" / "sachs"


def _read_packaged(name: str) -> bytes:
    """The verified content of one packaged file (gunzipped if it ends in ``.gz``)."""
    return read_verified(
        _packaged_dir(),
        name,
        SACHS_SHA256[name],
        label="Sachs",
        missing=SachsNotFoundError,
        damaged=SachsChecksumError,
        remedy="reinstall dpbnsl, or pass `path=` a directory holding your own copy",
    )


def _csv(source: Path | bytes, label: str, needs: str) -> pd.DataFrame:
    """``pd.read_csv`` whose failures name the file and say what it should hold."""
    try:
        return pd.read_csv(BytesIO(source) if isinstance(source, bytes) else source)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{label} is empty: it should hold {needs}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{label} cannot be read as CSV ({first}): it should hold {needs}") from None


def _read_data(source: Path | bytes, label: str) -> pd.DataFrame:
    data = _csv(source, label, "a header row of variable names, then one row of numbers per cell")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{label} holds no data (shape {data.shape})")
    non_numeric = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])]
    if non_numeric:
        raise ValueError(f"{label} has non-numeric columns {non_numeric}")
    data = data.astype(float)
    data.columns = [str(c) for c in data.columns]
    return data


def _read_adjacency(source: Path | bytes, label: str, names: list[str]) -> pd.DataFrame:
    """The edge list (header ``Cause,Effect``) as a 0/1 matrix over ``names``."""
    edges = _csv(source, label, "an edge list with the header Cause,Effect")
    if list(edges.columns) != ["Cause", "Effect"]:
        raise ValueError(f"{label} must have the header Cause,Effect; got {list(edges.columns)}")
    cause, effect = edges["Cause"].astype(str), edges["Effect"].astype(str)
    unknown = sorted((set(cause) | set(effect)) - set(names))
    if unknown:
        raise ValueError(f"{label} names variables {unknown} that are not columns of {names}")
    truth = pd.DataFrame(np.zeros((len(names), len(names)), dtype=int), index=names, columns=names)
    for a, b in zip(cause, effect):
        truth.loc[a, b] = 1
    return truth


def _check_condition(condition: Any) -> SachsCondition | None:
    """The block ``condition`` selects (None for ``"all"``)."""
    names = [c.name for c in SACHS_CONDITIONS]
    allowed = (
        f"'observational', 'all', a block index 0..{len(SACHS_CONDITIONS) - 1} or a block name "
        f"({', '.join(map(repr, names))})"
    )
    if isinstance(condition, str):
        if condition == "all":
            return None
        if condition == "observational":
            return SACHS_CONDITIONS[0]
        if condition in names:
            return SACHS_CONDITIONS[names.index(condition)]
        raise ValueError(f"`condition` must be {allowed}; got {condition!r}")
    if isinstance(condition, numbers.Integral) and not isinstance(condition, (bool, np.bool_)):
        if 0 <= int(condition) < len(SACHS_CONDITIONS):
            return SACHS_CONDITIONS[int(condition)]
        raise ValueError(f"`condition` must be {allowed}; got {condition!r}")
    raise TypeError(f"`condition` must be a str or an int; got {type(condition).__name__} {condition!r}")


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a str or path-like; got {type(path).__name__}")
    directory = Path(path)
    missing = [f for f in (SACHS_DATA_FILE, SACHS_TARGET_FILE) if not (directory / f).is_file()]
    if missing:
        raise SachsNotFoundError(
            f"`path` = {str(path)!r} must be a directory holding {SACHS_DATA_FILE} and "
            f"{SACHS_TARGET_FILE}; missing {missing}. Or omit `path` to read the copy shipped with dpbnsl"
        )
    return directory


def load_sachs(
    path: str | os.PathLike[str] | None = None,
    *,
    condition: str | int = "observational",
    truth: str = "consensus-17",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load the Sachs et al. (2005) protein-signalling data and a reference graph.

    The data are flow-cytometry measurements of 11 phosphorylated proteins and phospholipids in
    single human T cells under nine experimental conditions, 7466 cells in all, as shipped in the
    Causal Discovery Toolbox (``cdt``, MIT licence); a copy is packaged with dpbnsl and checked
    against :data:`SACHS_SHA256` on every read. The values are **raw fluorescence intensities**
    (1 to about 9000, heavily right-skewed); see the preprocessing example below.

    **Default: the observational condition.** The file concatenates the conditions in the order of
    :data:`SACHS_CONDITIONS` (853, 902, 911, 723, 810, 799, 848, 913 and 707 rows). The default
    ``condition="observational"`` keeps only the first block, the 853 cells stimulated with
    CD3/CD28 alone, with no intervention on the measured molecules: the setting of Fed-BNSL (Ng &
    Zhang 2022, n = 853) and GraN-DAG. The other eight blocks add a second general stimulus
    (ICAM-2, block 1) or a drug that inhibits or activates one molecule of the pathway (blocks 2–8);
    ``condition="all"`` returns all 7466 rows, pooled.

    **Reference graphs.** ``truth="consensus-17"`` (default) is the 17-edge DAG distributed with
    GraN-DAG's Sachs data (Lachapelle et al. 2020), the same arcs as the "validated" Sachs network
    of Scutari & Denis's bnlearn book. Fed-BNSL scores against a 17-edge ground truth it does not
    list; this is the best-documented such DAG, not one checked against that paper.
    ``truth="cdt-18"`` is cdt's edge list, which is **not a DAG**: it has the cycle
    ``plcg -> PIP2 -> PIP3 -> plcg``. The two share 13 edges with the same orientation; beyond
    those,

    - reversed: cdt has ``PIP2 -> PIP3`` and ``PIP3 -> plcg``, consensus-17 ``PIP3 -> PIP2`` and
      ``plcg -> PIP3``;
    - only in cdt-18: ``plcg -> PKC``, ``PIP2 -> PKC``, ``PIP3 -> pakts473``;
    - only in consensus-17: ``p44/42 -> pakts473``, ``PKC -> PKA``.

    Names follow the data columns (:data:`SACHS_VARIABLES`): Raf = praf, Mek = pmek, PLCγ = plcg,
    Erk = p44/42, Akt = pakts473, Jnk = pjnk.

    Parameters
    ----------
    path : str or path-like, optional
        A directory holding your own ``cyto_full_data.csv`` (a header row of names, then one row per
        cell) and ``cyto_full_target.csv`` (an edge list with header ``Cause,Effect``), read as
        given (no checksum). When omitted, the packaged copy is read.
    condition : str or int, default "observational"
        ``"observational"`` (block 0, 853 rows), ``"all"`` (7466 rows), a block index ``0..8`` or a
        block name of :data:`SACHS_CONDITIONS` (e.g. ``"pma"``). Anything but ``"all"`` needs the
        file's 7466 rows in cdt's order (always true of the packaged copy).
    truth : {"consensus-17", "cdt-18"}, default "consensus-17"
        The reference graph. With ``path=``, ``"cdt-18"`` reads that directory's
        ``cyto_full_target.csv``; ``"consensus-17"`` is always the packaged DAG, whose names must be
        data columns.

    Returns
    -------
    data : DataFrame of shape (n, 11)
        Float measurements, one column per protein. The index is the rows' positions in the
        7466-row file (e.g. ``5846..6758`` for ``condition="pma"``), so it records which rows were
        taken.
    truth : DataFrame of shape (11, 11)
        0/1 integers with index and columns the data's column names; ``truth.loc[cause, effect]
        == 1`` for each edge, so ``truth.to_numpy()`` follows the ``W[i, j]: i -> j`` convention.

    Raises
    ------
    SachsNotFoundError
        A ``FileNotFoundError``: ``path`` lacks one of the two files, or a packaged file is missing.
    SachsChecksumError
        A ``ValueError``: a packaged file does not match its recorded SHA-256.
    ValueError
        A bad ``condition`` or ``truth``; malformed files; an edge naming a variable that is not a
        data column; or a block requested from a file that does not have 7466 rows.
    TypeError
        ``path`` or ``condition`` of the wrong type.

    Examples
    --------
    >>> data, truth = load_sachs()  # 853 observational cells, the 17-edge DAG
    >>> data.shape, int(truth.to_numpy().sum())
    ((853, 11), 17)
    >>> pooled, cdt = load_sachs(condition="all", truth="cdt-18")
    >>> pooled.shape, int(cdt.to_numpy().sum())
    ((7466, 11), 18)
    >>> pma, _ = load_sachs(condition="pma")
    >>> pma.shape, pma.index[0], pma.index[-1]  # rows 5846..6758 of the file
    ((913, 11), 5846, 6758)

    The usual preprocessing, log then standardise (papers differ: some use only one of the two):

    >>> X = np.log(data.to_numpy())  # every value is >= 1, so the log is finite
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> X.shape, bool(np.allclose(X.mean(axis=0), 0.0)), bool(np.allclose(X.std(axis=0), 1.0))
    ((853, 11), True, True)
    """
    block = _check_condition(condition)
    truth = check_choice(truth, "truth", SACHS_TRUTHS)
    directory = None if path is None else _check_path(path)
    if directory is None:
        data = _read_data(_read_packaged(_PACKAGED_DATA), f"the packaged {_PACKAGED_DATA}")
    else:
        data = _read_data(directory / SACHS_DATA_FILE, str(directory / SACHS_DATA_FILE))
    if directory is not None and truth == "consensus-17":
        missing = sorted(set(SACHS_VARIABLES) - set(data.columns))
        if missing:
            raise ValueError(
                f"{str(directory / SACHS_DATA_FILE)!r} has columns {list(data.columns)}, not the Sachs "
                f"proteins {list(SACHS_VARIABLES)} that truth='consensus-17' names (missing "
                f"{missing}): is it the Sachs data? With your own variables, pass truth='cdt-18' to "
                f"use that directory's {SACHS_TARGET_FILE}"
            )
    target: Path | bytes
    if truth == "consensus-17":
        target = _read_packaged(SACHS_CONSENSUS_FILE)
        target_label = f"the packaged {SACHS_CONSENSUS_FILE} (truth='consensus-17')"
    elif directory is None:
        target, target_label = _read_packaged(SACHS_TARGET_FILE), f"the packaged {SACHS_TARGET_FILE}"
    else:
        target, target_label = directory / SACHS_TARGET_FILE, str(directory / SACHS_TARGET_FILE)
    adjacency = _read_adjacency(target, target_label, list(data.columns))
    if block is not None:
        if data.shape[0] != SACHS_N_ROWS:
            raise ValueError(
                f"`condition` = {condition!r} selects rows {block.start}..{block.stop - 1} of the "
                f"{SACHS_N_ROWS}-row Sachs file, but this {SACHS_DATA_FILE} has {data.shape[0]} rows; "
                "pass condition='all'"
            )
        data = data.iloc[block.start : block.stop].copy()
    return data, adjacency
