"""Tests for dpbnsl.datasets.load_sachs."""

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbnsl.datasets import SachsNotFoundError, load_sachs
from dpbnsl.graphs import is_dag

# tests/test_datasets.py -> <repository>/../shared/data/sachs (the repository's sibling `shared/`).
SHARED_SACHS = Path(__file__).resolve().parents[2] / "shared" / "data" / "sachs"
PROTEINS = ["praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk"]


@pytest.fixture(scope="module")
def sachs():
    """The real Sachs files: the shared copy if present, else an installed cdt, else skip."""
    if (SHARED_SACHS / "cyto_full_data.csv").is_file():
        return load_sachs(SHARED_SACHS)
    if importlib.util.find_spec("cdt") is not None:
        return load_sachs()
    pytest.skip("no Sachs data: neither ../shared/data/sachs nor an installed cdt")


def _write_tiny_sachs(directory: Path, edges="Cause,Effect\nA,B\nB,C\n") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cyto_full_data.csv").write_text("A,B,C\n1,2,3\n4,5,6.5\n")
    (directory / "cyto_full_target.csv").write_text(edges)


def test_sachs_shape_columns_and_truth(sachs):
    data, truth = sachs
    assert data.shape == (7466, 11)
    assert list(data.columns) == PROTEINS
    assert all(data.dtypes == float)  # noqa: E721 (dtype equality, not a type check)
    assert np.isfinite(data.to_numpy()).all()
    assert list(truth.index) == PROTEINS and list(truth.columns) == PROTEINS
    assert set(np.unique(truth.to_numpy())) == {0, 1}
    assert int(truth.to_numpy().sum()) == 18  # the cdt edge list has 18 distinct edges
    assert truth.loc["praf", "pmek"] == 1 and truth.loc["pmek", "praf"] == 0  # cause -> effect


def test_sachs_reference_graph_has_one_documented_cycle(sachs):
    # The cdt ground truth is not a DAG: plcg -> PIP2 -> PIP3 -> plcg. Removing any edge of that
    # cycle leaves a DAG, so it is the only cycle.
    _, truth = sachs
    A = truth.to_numpy()
    assert not is_dag(A)
    cycle = [("plcg", "PIP2"), ("PIP2", "PIP3"), ("PIP3", "plcg")]
    assert all(truth.loc[a, b] == 1 for a, b in cycle)
    for a, b in cycle:
        B = truth.copy()
        B.loc[a, b] = 0
        assert is_dag(B.to_numpy())


def test_path_pointing_nowhere(tmp_path):
    with pytest.raises(SachsNotFoundError, match=r"`path` = .* must be a directory holding") as err:
        load_sachs(tmp_path / "nowhere")
    assert isinstance(err.value, FileNotFoundError)
    assert "missing ['cyto_full_data.csv', 'cyto_full_target.csv']" in str(err.value)
    assert 'pip install "dpbnsl[sachs]"' in str(err.value)


def test_path_missing_one_file(tmp_path):
    _write_tiny_sachs(tmp_path)
    (tmp_path / "cyto_full_target.csv").unlink()
    with pytest.raises(SachsNotFoundError, match=r"missing \['cyto_full_target.csv'\]"):
        load_sachs(str(tmp_path))


def test_path_type_error():
    with pytest.raises(TypeError, match=r"`path` must be a str or path-like; got int"):
        load_sachs(3)


def test_nothing_available(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(SachsNotFoundError, match=r'pip install "dpbnsl\[sachs\]".*`path=`'):
        load_sachs()


def test_tiny_files_from_path(tmp_path):
    _write_tiny_sachs(tmp_path)
    data, truth = load_sachs(tmp_path)
    assert data.shape == (2, 3) and data.dtypes.eq(float).all()
    adjacency = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    expected = pd.DataFrame(adjacency, index=list("ABC"), columns=list("ABC"))
    pd.testing.assert_frame_equal(truth, expected)


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
        load_sachs(tmp_path)


def test_non_numeric_data(tmp_path):
    _write_tiny_sachs(tmp_path)
    (tmp_path / "cyto_full_data.csv").write_text("A,B,C\n1,x,3\n")
    with pytest.raises(ValueError, match=r"non-numeric columns \['B'\]"):
        load_sachs(tmp_path)


@pytest.fixture
def fake_cdt(tmp_path, monkeypatch):
    """A fake installed `cdt` whose __init__ raises, so any import of it fails the test."""
    pkg = tmp_path / "site" / "cdt"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('cdt must not be imported')\n")
    monkeypatch.delitem(sys.modules, "cdt", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    return pkg


def test_cdt_lookup_without_import(fake_cdt):
    resources = fake_cdt / "data" / "resources"
    if (SHARED_SACHS / "cyto_full_data.csv").is_file():
        resources.mkdir(parents=True)
        for name in ("cyto_full_data.csv", "cyto_full_target.csv"):
            shutil.copy(SHARED_SACHS / name, resources / name)
        expected_shape = (7466, 11)
    else:
        _write_tiny_sachs(resources)
        expected_shape = (2, 3)
    data, truth = load_sachs()
    assert data.shape == expected_shape and truth.shape == (expected_shape[1],) * 2
    assert "cdt" not in sys.modules


def test_cdt_lookup_other_layout(fake_cdt):
    _write_tiny_sachs(fake_cdt / "somewhere" / "else")
    data, _ = load_sachs()
    assert list(data.columns) == ["A", "B", "C"]
    assert "cdt" not in sys.modules


def test_cdt_without_files(fake_cdt):
    with pytest.raises(SachsNotFoundError, match=r"no installed `cdt` ships them"):
        load_sachs()
