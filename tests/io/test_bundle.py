"""Run bundles and LearnResult.save/load: exact round trips (every registered learner, and random
results drawn by hypothesis), all-or-nothing writes, clean refusals."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpbnsl.accounting import BoundedRangeDpEvent, PrivacyLedger, PrivacySummary
from dpbnsl.federation import Dense, Message, Sparse, Transcript
from dpbnsl.io.bundle import BundleError, read_bundle, write_bundle
from dpbnsl.learners import LearnResult
from dpbnsl.learners.registry import LEARNERS
from dpbnsl.simulation import simulate


def same(a, b) -> bool:
    """Deep, exact equality of the values a result carries (types included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (
            a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and same(a.item(), b.item())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (set, frozenset)):
        return a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True, check_index_type="equiv")
        except AssertionError:
            return False
        return True
    if isinstance(a, PrivacyLedger):
        return a.to_json() == b.to_json()
    if isinstance(a, Transcript):
        return len(a) == len(b) and all(same_message(x, y) for x, y in zip(a, b))
    if isinstance(a, LearnResult):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if hasattr(a, "items"):  # mappings such as MappingProxyType
        return same(dict(a), dict(b))
    return a == b


def same_message(x: Message, y: Message) -> bool:
    return (
        (x.round, x.sender, x.receiver, x.kind) == (y.round, y.sender, y.receiver, y.kind)
        and type(x.payload) is type(y.payload)
        and same(x.payload.to_dense(), y.payload.to_dense())
        and x.payload.shape == y.payload.shape
    )


def round_trip(result: LearnResult, tmp_path, name="run") -> LearnResult:
    return LearnResult.load(result.save(tmp_path / name))


@pytest.fixture(scope="module")
def data():
    return simulate(6, 300, participants=3, rng=7)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_round_trips_exactly(name, data, tmp_path):
    entry = LEARNERS[name]
    names = [f"v{i}" for i in range(6)]
    frames = [pd.DataFrame(X, columns=names) for X in data.participants]
    seed = {"rng": 3} if entry.private else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = entry.run(
            frames,
            B_true=data.B_true if entry.oracle else None,
            **{**entry.simulation_settings(6), **entry.quick, **seed},
        )
    back = round_trip(result, tmp_path)
    for f in dataclasses.fields(result):
        assert same(getattr(result, f.name), getattr(back, f.name)), f.name
    assert back.W.flags.writeable is False


def test_bundle_files_for_people_and_other_tools(data, tmp_path):
    entry = LEARNERS["dp-fed-sparse-bnsl"]
    result = entry.run(data.participants, **{**entry.simulation_settings(6), **entry.quick, "rng": 3})
    out = result.save(tmp_path / "run", truth=data.B_true)
    files = sorted(p.name for p in out.iterdir())
    assert files == [
        "W.csv",
        "W_raw.csv",
        "arrays.npz",
        "bundle.json",
        "history.csv",
        "privacy.json",
        "transcript.csv",
        "truth.csv",
    ]
    assert len(pd.read_csv(out / "transcript.csv")) == len(result.transcript)
    W = pd.read_csv(out / "W.csv", index_col=0)
    assert list(W.columns) == [f"X{i}" for i in range(6)] and np.array_equal(W.to_numpy(), result.W)
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["statement"] == str(result.privacy) and len(privacy["ledgers"]) == 3
    assert PrivacyLedger.from_json(json.dumps(privacy["ledgers"][0])).epsilon(1e-5) == result.ledger[
        0
    ].epsilon(1e-5)
    bundle = read_bundle(out)
    assert bundle.kind == "learn" and bundle.versions["dpbnsl"] and bundle.created.endswith("+00:00")
    assert np.array_equal(bundle.truth.to_numpy(), data.B_true)
    manifest = json.loads((out / "bundle.json").read_text())
    assert set(manifest["versions"]) >= {"python", "dpbnsl", "numpy", "scipy", "pandas", "dp-accounting"}


# --- random results -------------------------------------------------------------------------------

TYPED_INFO = ("A", "A_index", "cpdag", "votes")
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
any_float = st.floats(width=64)
names = st.text(min_size=1, max_size=6)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), any_float, st.text(max_size=5)
)
values = st.recursive(
    scalars
    | hnp.arrays(
        st.sampled_from([np.float64, np.int64, np.bool_, np.float32]),
        hnp.array_shapes(max_dims=2, max_side=3),
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        | st.dictionaries(st.tuples(st.integers(0, 5), st.integers(0, 5)), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def results(draw):
    d = draw(st.integers(1, 5))
    W_raw = draw(hnp.arrays(np.float64, (d, d), elements=finite))
    W = np.where(np.abs(W_raw) > 0.3, W_raw, 0.0)
    cols = draw(st.none() | st.lists(names, min_size=d, max_size=d, unique=True).map(tuple))
    n_rows = draw(st.integers(0, 4))
    history = pd.DataFrame(
        {
            "round": np.arange(n_rows, dtype=np.int64),
            "h": draw(hnp.arrays(np.float64, n_rows, elements=any_float)),
            "phase": [draw(st.text(max_size=3)) for _ in range(n_rows)],
        }
    )
    transcript = None
    if draw(st.booleans()):
        msgs = []
        for t in range(draw(st.integers(0, 3))):
            a = draw(hnp.arrays(np.float64, (d, d), elements=finite))
            msgs.append(Message(t, 0, "server", "local_B", Dense(a)))
            msgs.append(Message(t, "server", 0, "global_W", Sparse.from_dense(a)))
        transcript = Transcript(msgs)
    ledger = privacy = None
    if draw(st.booleans()):
        g = PrivacyLedger()
        g.record("select", BoundedRangeDpEvent(draw(st.floats(0.001, 5))), draw(st.integers(1, 100)))
        g.record("gradient", GaussianDpEvent(draw(st.floats(0.1, 100))), draw(st.integers(1, 100)))
        g.record("sgd", PoissonSampledDpEvent(0.01, GaussianDpEvent(1.0)))
        ledger = (g,)
        privacy = PrivacySummary(
            epsilon=draw(finite),
            delta=1e-5,
            target_epsilon=1.0,
            neighbouring="replace-one",
            accountant="rdp",
            calibration="tight",
            bounds={"rdp": 1.0, "zcdp": draw(any_float)},
            public={"n_k": (300,), "clip": draw(finite)},
        )
    return LearnResult(
        draw(st.sampled_from(["fed-bnsl", "notears", "ünïcode"])),
        W,
        W_raw,
        history,
        columns=cols,
        transcript=transcript,
        ledger=ledger,
        params=draw(st.dictionaries(st.text(max_size=5), values, max_size=4)),
        # info keys the result reads as typed fields (lagged weights, CPDAG, votes) are arrays of
        # their own shape, not random values
        info=draw(
            st.dictionaries(st.text(max_size=5).filter(lambda k: k not in TYPED_INFO), values, max_size=4)
        ),
        privacy=privacy,
        cpdag=draw(st.none() | hnp.arrays(np.int64, (d, d), elements=st.integers(0, 1))),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(result=results())
def test_random_results_round_trip_exactly(result, tmp_path_factory):
    back = round_trip(result, tmp_path_factory.mktemp("r"))
    for f in dataclasses.fields(result):
        assert same(getattr(result, f.name), getattr(back, f.name)), f.name


# --- refusals ---------------------------------------------------------------------------------------


def _small():
    return LearnResult("notears", np.eye(2) * 0, np.zeros((2, 2)), pd.DataFrame())


def test_existing_directories_are_refused_and_replaced_only_on_request(tmp_path):
    r = _small()
    out = r.save(tmp_path / "run")
    with pytest.raises(BundleError, match="exists and is not empty"):
        r.save(out)
    assert r.save(out, overwrite=True) == out
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(BundleError, match="is not a bundle: refusing to replace it"):
        r.save(other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"
    with pytest.raises(BundleError, match="parent directory does not exist"):
        r.save(tmp_path / "missing" / "run")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BundleError, match="is not a directory"):
        r.save(tmp_path / "file")


def test_unwritable_values_leave_nothing_behind(tmp_path):
    r = LearnResult("notears", np.zeros((2, 2)), np.zeros((2, 2)), pd.DataFrame(), info={"f": object()})
    with pytest.raises(BundleError, match="cannot write a value of type object"):
        r.save(tmp_path / "run")
    assert os.listdir(tmp_path) == []


def test_reading_what_is_not_a_bundle(tmp_path):
    with pytest.raises(BundleError, match="is not a bundle"):
        LearnResult.load(tmp_path)
    (tmp_path / "bundle.json").write_text("{not json")
    with pytest.raises(BundleError, match="cannot be read"):
        LearnResult.load(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": "dpbnsl-bundle", "format_version": 99}))
    with pytest.raises(BundleError, match="format version 99"):
        read_bundle(tmp_path)
    audit = write_bundle(tmp_path / "audit", "audit", tables={"scores": pd.DataFrame({"a": [1.0]})})
    with pytest.raises(BundleError, match="is a 'audit' bundle, not a learning result"):
        LearnResult.load(audit)
    assert read_bundle(audit).tables["scores"].equals(pd.DataFrame({"a": [1.0]}))


# --- crafted and mistaken paths (found by review) -------------------------------------------------


def _craft(bundle_dir, **replace):
    manifest = json.loads((bundle_dir / "bundle.json").read_text())
    manifest.update(replace)
    (bundle_dir / "bundle.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "result, match",
    [
        ({"$dataclass": {"type": "dpbnsl.__main__:x", "fields": {}}}, "not a class a result carries"),
        ({"$dataclass": {"type": "os:system", "fields": {}}}, "not a class a result carries"),
        (
            {"$dataclass": {"type": "dpbnsl.metrics:Accuracy", "fields": {"__dict__": {}}}},
            r"has no fields \['__dict__'\]",
        ),
        ({"$tuple": [1, 2]}, "with result tuple"),
        ({"$nothing": 1}, "unknown tag"),
    ],
)
def test_a_crafted_bundle_builds_nothing_but_its_own_classes(result, match, tmp_path):
    out = _small().save(tmp_path / "run")
    _craft(out, result=result)
    with pytest.raises(BundleError, match=match):
        read_bundle(out)


def test_a_crafted_kind_is_refused(tmp_path):
    out = _small().save(tmp_path / "run")
    _craft(out, kind="mystery")
    with pytest.raises(BundleError, match="unknown kind 'mystery'"):
        read_bundle(out)


def test_overwrite_replaces_only_real_bundles_and_never_the_working_directory(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "bundle.json").write_text('{"name": "my package"}')  # someone else's bundle.json
    (project / "src" / "precious.txt").write_text("keep")
    with pytest.raises(BundleError, match="is not a bundle"):
        _small().save(project, overwrite=True)
    assert (project / "src" / "precious.txt").read_text() == "keep"
    out = _small().save(tmp_path / "run")
    (out / "notes.txt").write_text("mine")
    monkeypatch.chdir(out)
    for path in (".", str(out), str(tmp_path)):
        if path == str(tmp_path):
            monkeypatch.chdir(out)
        with pytest.raises(BundleError):
            _small().save(path, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine" and (out / "bundle.json").is_file()
    monkeypatch.chdir(tmp_path)
    assert _small().save("run", overwrite=True) == Path("run")  # a bundle elsewhere: replaced
    assert not (out / "notes.txt").exists() and read_bundle(out).kind == "learn"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "run"]  # nothing left aside
