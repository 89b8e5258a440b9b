"""Tests for dpbnsl.io.datasets.load_sachs: the packaged copy, conditions, reference graphs, checksums."""

import gzip
import hashlib
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpbnsl.io.datasets as datasets
from dpbnsl.graphs import is_dag
from dpbnsl.io.datasets import (
    SACHS_CONDITIONS,
    SACHS_SHA256,
    SACHS_VARIABLES,
    SachsChecksumError,
    SachsNotFoundError,
    load_sachs,
)
from dpbnsl.metrics import count_accuracy, shd_cpdag, skeleton_scores

PROTEINS = ["praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk"]
PACKAGED = resources.files("dpbnsl") / "data" / "sachs"
# tests/io/test_datasets.py -> <repository>/../shared/data/sachs (the repository's sibling `shared/`).
SHARED_SACHS = Path(__file__).resolve().parents[3] / "shared" / "data" / "sachs"


def edges(truth: pd.DataFrame) -> set[tuple[str, str]]:
    return {(a, b) for a in truth.index for b in truth.columns if truth.loc[a, b]}


@pytest.fixture(scope="module")
def full():
    return load_sachs(condition="all", truth="cdt-18")


@pytest.fixture(scope="module")
def consensus():
    return load_sachs()[1]


# ----------------------------------------------------------------------------- the packaged data


def test_default_is_the_observational_block_and_the_17_edge_dag():
    data, truth = load_sachs()
    assert data.shape == (853, 11)
    assert list(data.columns) == PROTEINS == list(SACHS_VARIABLES)
    assert list(data.index) == list(range(853))
    assert list(truth.index) == PROTEINS and list(truth.columns) == PROTEINS
    assert int(truth.to_numpy().sum()) == 17 and is_dag(truth.to_numpy())
    assert set(np.unique(truth.to_numpy())) == {0, 1}


def test_all_rows_and_the_cdt_graph(full):
    data, truth = full
    assert data.shape == (7466, 11)
    assert list(data.columns) == PROTEINS
    assert all(data.dtypes == float)  # noqa: E721 (dtype equality, not a type check)
    assert np.isfinite(data.to_numpy()).all()
    assert data.to_numpy().min() >= 1.0 and data.to_numpy().max() > 9000  # raw intensities
    assert int(truth.to_numpy().sum()) == 18  # the cdt edge list has 18 distinct edges
    assert truth.loc["praf", "pmek"] == 1 and truth.loc["pmek", "praf"] == 0  # cause -> effect


def test_cdt_reference_graph_has_one_documented_cycle(full):
    # The cdt ground truth is not a DAG: plcg -> PIP2 -> PIP3 -> plcg. Removing any edge of that
    # cycle leaves a DAG, so it is the only cycle.
    _, truth = full
    assert not is_dag(truth.to_numpy())
    cycle = [("plcg", "PIP2"), ("PIP2", "PIP3"), ("PIP3", "plcg")]
    assert all(truth.loc[a, b] == 1 for a, b in cycle)
    for a, b in cycle:
        B = truth.copy()
        B.loc[a, b] = 0
        assert is_dag(B.to_numpy())


def test_the_two_reference_graphs_differ_exactly_as_documented(full, consensus):
    cdt, dag = edges(full[1]), edges(consensus)
    reversed_in_cdt = {("PIP2", "PIP3"), ("PIP3", "plcg")}
    only_cdt = {("plcg", "PKC"), ("PIP2", "PKC"), ("PIP3", "pakts473")}
    only_dag = {("p44/42", "pakts473"), ("PKC", "PKA")}
    assert len(cdt & dag) == 13
    assert cdt - dag == reversed_in_cdt | only_cdt
    assert dag - cdt == {(b, a) for a, b in reversed_in_cdt} | only_dag


def test_consensus_dag_is_bnlearns_validated_sachs_network(consensus):
    # Scutari & Denis's model string, in the usual protein names
    model = (
        "[PKC][PKA|PKC][Raf|PKC:PKA][Mek|PKC:PKA:Raf][Erk|Mek:PKA][Akt|Erk:PKA][P38|PKC:PKA]"
        "[Jnk|PKC:PKA][Plcg][PIP3|Plcg][PIP2|Plcg:PIP3]"
    )
    to_column = {
        "Raf": "praf",
        "Mek": "pmek",
        "Plcg": "plcg",
        "Erk": "p44/42",
        "Akt": "pakts473",
        "Jnk": "pjnk",
    }
    arcs = set()
    for node, parents in re.findall(r"\[([^|\]]+)\|?([^\]]*)\]", model):
        for parent in filter(None, parents.split(":")):
            arcs.add((to_column.get(parent, parent), to_column.get(node, node)))
    assert arcs == edges(consensus)


def test_conditions_are_the_nine_documented_blocks(full):
    sizes = [c.n_rows for c in SACHS_CONDITIONS]
    assert sizes == [853, 902, 911, 723, 810, 799, 848, 913, 707] and sum(sizes) == 7466
    assert [c.index for c in SACHS_CONDITIONS] == list(range(9))
    assert SACHS_CONDITIONS[0].name == "cd3cd28" and SACHS_CONDITIONS[7].name == "pma"
    blocks = []
    for c in SACHS_CONDITIONS:
        for key in (c.index, c.name, np.int64(c.index)):
            data, _ = load_sachs(condition=key)
            assert data.shape == (c.n_rows, 11)
            assert (data.index[0], data.index[-1]) == (c.start, c.stop - 1)  # the rows taken
        blocks.append(data)
    pd.testing.assert_frame_equal(pd.concat(blocks), full[0])
    obs, _ = load_sachs(condition="observational")
    pd.testing.assert_frame_equal(obs, blocks[0])


def test_block_boundaries_show_in_the_data(full):
    # Change-point scan of the mean log values (standardised columns): the norm of the difference
    # between the means of the 150 rows before and after each row. Its 8 largest peaks, 300 rows
    # apart at least, fall on the documented boundaries: six exactly, 5846 two rows off, and 853
    # (ICAM-2 barely moves the means) seven rows off.
    Z = np.log(full[0].to_numpy())
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    cs, w = np.vstack([np.zeros(Z.shape[1]), np.cumsum(Z, axis=0)]), 150
    k = np.arange(w, len(Z) - w)
    stat = np.zeros(len(Z))
    stat[k] = np.linalg.norm((2 * cs[k] - cs[k - w] - cs[k + w]) / w, axis=1)
    peaks = []
    for _ in range(8):
        peaks.append(int(np.argmax(stat)))
        stat[max(peaks[-1] - 300, 0) : peaks[-1] + 300] = 0.0
    boundaries = [c.start for c in SACHS_CONDITIONS[1:]]
    assert sorted(peaks) == [860, 1755, 2666, 3389, 4199, 4998, 5848, 6759]
    assert max(abs(p - b) for p, b in zip(sorted(peaks), boundaries)) <= 7


@pytest.mark.parametrize("bad", [9, -1, "obs", "observational ", "ALL"])
def test_condition_value_errors_name_the_argument(bad):
    with pytest.raises(
        ValueError,
        match=rf"`condition` must be 'observational', 'all', a block index 0..8 .*; got {re.escape(repr(bad))}$",
    ):
        load_sachs(condition=bad)


@pytest.mark.parametrize("bad", [True, 1.0, None, [0, 1]])
def test_condition_type_errors(bad):
    with pytest.raises(TypeError, match=r"`condition` must be a str or an int; got "):
        load_sachs(condition=bad)


def test_truth_must_be_a_known_graph():
    with pytest.raises(ValueError, match=r"`truth` must be one of 'consensus-17', 'cdt-18'; got 'cdt'"):
        load_sachs(truth="cdt")


def test_loads_are_independent():
    a, ta = load_sachs()
    a.iloc[0, 0] = -1.0
    ta.iloc[0, 0] = 5
    b, tb = load_sachs()
    assert b.iloc[0, 0] == 26.4 and tb.iloc[0, 0] == 0


@pytest.mark.skipif(not SHARED_SACHS.is_dir(), reason="no ../shared/data/sachs copy")
def test_packaged_copy_equals_the_shared_copy(full):
    data, truth = load_sachs(SHARED_SACHS, condition="all", truth="cdt-18")
    pd.testing.assert_frame_equal(data, full[0])
    pd.testing.assert_frame_equal(truth, full[1])


# ----------------------------------------------------------------------------- metrics on it


def test_count_accuracy_scores_against_the_cyclic_cdt_graph(full, consensus):
    # consensus-17 as the estimate against cdt-18: 13 common edges, 2 reversed (PIP3 -> PIP2,
    # plcg -> PIP3), 2 extra (p44/42 -> pakts473, PKC -> PKA), 3 missing pairs (plcg-PKC,
    # PIP2-PKC, PIP3-pakts473); 55 pairs, 18 true edges
    acc = count_accuracy(full[1], consensus)
    assert (acc.true_positive, acc.reversed, acc.extra, acc.missing, acc.shd) == (13, 2, 2, 3, 7)
    assert (acc.nnz, acc.n_true_edges) == (17, 18)
    assert acc.tpr == 13 / 18 and acc.fdr == 4 / 17 and acc.fpr == 4 / (55 - 18)
    assert skeleton_scores(full[1], consensus).true_positive == 15


def test_shd_cpdag_on_the_cdt_graph_says_the_reference_is_cyclic(full, consensus):
    with pytest.raises(
        ValueError,
        match=r"^`B_true` \(the reference graph\) has a directed cycle plcg -> PIP2 -> PIP3 -> plcg; "
        r"shd_cpdag needs two DAGs",
    ):
        shd_cpdag(full[1], consensus)
    assert shd_cpdag(consensus, consensus) == 0


# ----------------------------------------------------------------------------- checksums


@pytest.fixture
def packaged_copy(tmp_path, monkeypatch):
    """A copy of the packaged files that load_sachs reads instead of the installed ones."""
    for name in SACHS_SHA256:
        (tmp_path / name).write_bytes((PACKAGED / name).read_bytes())
    monkeypatch.setattr(datasets, "_packaged_dir", lambda: tmp_path)
    return tmp_path


def test_packaged_files_match_their_recorded_checksums():
    for name, digest in SACHS_SHA256.items():
        raw = (PACKAGED / name).read_bytes()
        content = gzip.decompress(raw) if name.endswith(".gz") else raw
        assert hashlib.sha256(content).hexdigest() == digest, name


def test_gzip_is_deterministic():
    raw = (PACKAGED / "cyto_full_data.csv.gz").read_bytes()
    assert raw[:3] == b"\x1f\x8b\x08"  # gzip, deflate
    assert raw[3] & 0x08 == 0  # no file name stored
    assert raw[4:8] == b"\x00\x00\x00\x00"  # mtime 0


def test_unchanged_copy_loads(packaged_copy):
    assert load_sachs()[0].shape == (853, 11)


def test_edited_data_raises_naming_the_file(packaged_copy):
    content = gzip.decompress((packaged_copy / "cyto_full_data.csv.gz").read_bytes())
    edited = content.replace(b"26.4,", b"26.5,", 1)
    (packaged_copy / "cyto_full_data.csv.gz").write_bytes(gzip.compress(edited, mtime=0))
    with pytest.raises(SachsChecksumError, match=r"packaged Sachs file cyto_full_data\.csv\.gz .*SHA-256"):
        load_sachs()


def test_truncated_gzip_raises(packaged_copy):
    path = packaged_copy / "cyto_full_data.csv.gz"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(SachsChecksumError, match=r"cyto_full_data\.csv\.gz .*is not a readable gzip file"):
        load_sachs()


@pytest.mark.parametrize(
    "name, kwargs",
    [("cyto_full_target.csv", dict(truth="cdt-18")), ("consensus_dag_17.csv", {})],
)
def test_edited_edge_list_raises_naming_the_file(packaged_copy, name, kwargs):
    path = packaged_copy / name
    path.write_bytes(path.read_bytes() + b"praf,PKA\n")
    with pytest.raises(SachsChecksumError, match=rf"packaged Sachs file {re.escape(name)} "):
        load_sachs(**kwargs)
    assert isinstance(SachsChecksumError("x"), ValueError)


def test_missing_packaged_file(packaged_copy):
    (packaged_copy / "consensus_dag_17.csv").unlink()
    with pytest.raises(SachsNotFoundError, match=r"consensus_dag_17\.csv is missing .*reinstall dpbnsl"):
        load_sachs()


def test_attribution_ships_with_the_data():
    licence = (PACKAGED / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence
    assert "Copyright (c) 2018 Diviyan Kalainathan" in licence  # the Causal Discovery Toolbox
    assert "Copyright (c) 2019 Authors of Gradient-Based Neural DAG Learning" in licence
    assert "Science 308(5721):523-529, 2005" in licence
    readme = (PACKAGED / "README.md").read_text(encoding="utf-8")
    for digest in SACHS_SHA256.values():
        assert digest in readme


def test_pyproject_ships_the_data_and_has_no_sachs_extra():
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "data/sachs/*" in pyproject["tool"]["setuptools"]["package-data"]["dpbnsl"]
    assert "sachs" not in pyproject["project"]["optional-dependencies"]


# ----------------------------------------------------------------------------- path=


def _write_tiny_sachs(directory: Path, edges="Cause,Effect\nA,B\nB,C\n") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cyto_full_data.csv").write_text("A,B,C\n1,2,3\n4,5,6.5\n")
    (directory / "cyto_full_target.csv").write_text(edges)


def test_path_pointing_nowhere(tmp_path):
    with pytest.raises(SachsNotFoundError, match=r"`path` = .* must be a directory holding") as err:
        load_sachs(tmp_path / "nowhere")
    assert isinstance(err.value, FileNotFoundError)
    assert "missing ['cyto_full_data.csv', 'cyto_full_target.csv']" in str(err.value)
    assert "omit `path` to read the copy shipped with dpbnsl" in str(err.value)


def test_path_missing_one_file(tmp_path):
    _write_tiny_sachs(tmp_path)
    (tmp_path / "cyto_full_target.csv").unlink()
    with pytest.raises(SachsNotFoundError, match=r"missing \['cyto_full_target.csv'\]"):
        load_sachs(str(tmp_path))


def test_path_type_error():
    with pytest.raises(TypeError, match=r"`path` must be a str or path-like; got int"):
        load_sachs(3)


def test_path_with_a_copy_of_the_cdt_files(tmp_path, full, consensus):
    (tmp_path / "cyto_full_data.csv").write_bytes(
        gzip.decompress((PACKAGED / "cyto_full_data.csv.gz").read_bytes())
    )
    (tmp_path / "cyto_full_target.csv").write_bytes((PACKAGED / "cyto_full_target.csv").read_bytes())
    data, truth = load_sachs(tmp_path, condition="pma")
    pd.testing.assert_frame_equal(data, full[0].iloc[5846:6759])
    pd.testing.assert_frame_equal(truth, consensus)
    pd.testing.assert_frame_equal(load_sachs(tmp_path, condition="all", truth="cdt-18")[1], full[1])


def test_tiny_files_from_path(tmp_path):
    _write_tiny_sachs(tmp_path)
    data, truth = load_sachs(tmp_path, condition="all", truth="cdt-18")
    assert data.shape == (2, 3) and data.dtypes.eq(float).all()
    adjacency = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    expected = pd.DataFrame(adjacency, index=list("ABC"), columns=list("ABC"))
    pd.testing.assert_frame_equal(truth, expected)


def test_blocks_need_the_7466_row_file(tmp_path):
    _write_tiny_sachs(tmp_path)
    with pytest.raises(
        ValueError,
        match=r"`condition` = 'observational' selects rows 0..852 of the 7466-row Sachs file, but this "
        r"cyto_full_data.csv has 2 rows; pass condition='all'",
    ):
        load_sachs(tmp_path, truth="cdt-18")


def test_consensus_names_must_be_data_columns(tmp_path):
    _write_tiny_sachs(tmp_path)
    with pytest.raises(ValueError, match=r"not the Sachs proteins .* that truth='consensus-17' names"):
        load_sachs(tmp_path, condition="all")


@pytest.mark.parametrize(
    ("edges", "match"),
    [
        ("Cause,Effect\nA,Z\n", r"names variables \['Z'\] that are not columns"),
        ("from,to\nA,B\n", r"must have the header Cause,Effect; got \['from', 'to'\]"),
    ],
)
def test_malformed_target(tmp_path, edges, match):
    _write_tiny_sachs(tmp_path, edges)
    with pytest.raises(ValueError, match=match):
        load_sachs(tmp_path, condition="all", truth="cdt-18")


def test_non_numeric_data(tmp_path):
    _write_tiny_sachs(tmp_path)
    (tmp_path / "cyto_full_data.csv").write_text("A,B,C\n1,x,3\n")
    with pytest.raises(ValueError, match=r"non-numeric columns \['B'\]"):
        load_sachs(tmp_path, condition="all", truth="cdt-18")


def test_a_users_empty_or_foreign_files_are_named(tmp_path):
    """The files of ``path=`` are the user's: an empty file or one of other variables is refused
    with a message naming it and what it should hold (not pandas' EmptyDataError, nor a word about
    the packaged DAG)."""
    empty, foreign = tmp_path / "empty", tmp_path / "foreign"
    for d in (empty, foreign):
        d.mkdir()
    (empty / "cyto_full_data.csv").write_text("")
    (empty / "cyto_full_target.csv").write_text("")
    (foreign / "cyto_full_data.csv").write_text("a,b\n1,2\n")
    (foreign / "cyto_full_target.csv").write_text("x\n1\n")
    with pytest.raises(ValueError, match=r"cyto_full_data.csv is empty: it should hold a header row"):
        datasets.load_sachs(path=empty)
    with pytest.raises(
        ValueError, match=r"has columns \['a', 'b'\], not the Sachs proteins .* is it the Sachs data"
    ):
        datasets.load_sachs(path=foreign)
    with pytest.raises(ValueError, match=r"cyto_full_target.csv must have the header Cause,Effect"):
        datasets.load_sachs(path=foreign, truth="cdt-18", condition="all")
    (empty / "cyto_full_data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"cyto_full_target.csv is empty: it should hold an edge list"):
        datasets.load_sachs(path=empty, truth="cdt-18", condition="all")
