"""Tests for dpbnsl.audits.tradeoff (resumable privacy–utility sweeps) and dpbnsl.audits.plots.

One tiny sweep (d = 5, P = 2, n_k = 50, seeds 0–1, ε ∈ {1, 10}, 3 rounds × 3 local iterations) is
shared by the module; every test that writes copies its CSV first. Resumption is checked on the
file itself (bytes unchanged when nothing is left to do) and by making the worker function raise,
so a recomputed row cannot go unnoticed.
"""

from __future__ import annotations

import math
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

import dpbnsl.audits.tradeoff as tradeoff
from dpbnsl.audits.plots import BAND, band_limits, plot_tradeoff
from dpbnsl.audits.tradeoff import COLUMNS, METHODS, SweepResult, summarize, sweep

FAST = {"rounds": 3, "local_iters": 3}
GRID = dict(
    methods=["fed-sparse-bnsl", "dp-fed-sparse-bnsl"],
    epsilons=[1, 10],
    d=5,
    participants=2,
    n_per_participant=50,
    progress=False,
    method_options={"fed-sparse-bnsl": FAST, "dp-fed-sparse-bnsl": FAST},
)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    csv = tmp_path_factory.mktemp("sweep") / "base.csv"
    return sweep(seeds=[0, 1], csv=csv, **GRID)


@pytest.fixture
def csv_copy(base, tmp_path):
    path = tmp_path / "copy.csv"
    shutil.copy(base.csv, path)
    return path


def _no_work(task):
    raise AssertionError(f"task {task[:10]} was recomputed")


def test_table_shape_and_contents(base):
    f = base.frame
    assert isinstance(base, SweepResult) and (base.computed, base.skipped) == (6, 0)
    assert tuple(f.columns) == COLUMNS and len(f) == 6
    assert f["versions"].str.startswith("python ").all() and f["versions"].str.contains("; dpbnsl ").all()
    nonprivate = f[f["method"] == "fed-sparse-bnsl"]
    assert nonprivate["epsilon"].tolist() == [math.inf] * 2 and (nonprivate["delta"] == 0).all()
    private = f[f["method"] == "dp-fed-sparse-bnsl"]
    assert sorted(private["epsilon"]) == [1.0, 1.0, 10.0, 10.0] and (private["delta"] == 1e-5).all()
    assert (f[["d", "P", "n_k", "edges_per_node"]].to_numpy() == [5, 2, 50, 1]).all()
    assert (f["graph"] == "ER").all()
    # the learner's effective options, the sweep's default feature_bound included
    assert set(private["options"]) == {'{"feature_bound":30.0,"local_iters":3,"rounds":3}'}
    assert set(nonprivate["options"]) == {'{"local_iters":3,"rounds":3}'}
    assert f["tpr"].between(0, 1).all() and f["fdr"].between(0, 1).all()
    assert (f["comm_mb"] > 0).all() and (f["seconds"] > 0).all()
    assert len(base.csv.read_text().splitlines()) == 7  # header + one line per task


def test_rerun_computes_nothing_and_leaves_file(base, csv_copy, monkeypatch, capsys):
    before = csv_copy.read_bytes()
    monkeypatch.setattr(tradeoff, "_run_task", _no_work)
    again = sweep(seeds=[0, 1], csv=csv_copy, **{**GRID, "progress": True})
    assert (again.computed, again.skipped) == (0, 6)
    pd.testing.assert_frame_equal(again.frame, base.frame)
    assert csv_copy.read_bytes() == before
    assert "0 task(s) to run, 6 already in the CSV" in capsys.readouterr().err


def test_extending_seeds_runs_only_new_tasks(base, csv_copy, monkeypatch):
    run = tradeoff._run_task
    seen = []
    monkeypatch.setattr(tradeoff, "_run_task", lambda task: seen.append(task.seed) or run(task))
    more = sweep(seeds=[0, 1, 2], csv=csv_copy, **GRID)
    assert (more.computed, more.skipped) == (3, 6) and seen == [2, 2, 2]
    old = more.frame[more.frame["seed"] < 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, base.frame)
    assert len(csv_copy.read_text().splitlines()) == 10


def test_interrupted_sweep_resumes(base, csv_copy):
    lines = csv_copy.read_text().splitlines(keepends=True)
    csv_copy.write_text("".join(lines[:3]))  # header + the first two finished tasks
    resumed = sweep(seeds=[0, 1], csv=csv_copy, **GRID)
    assert (resumed.computed, resumed.skipped) == (4, 2)
    cols = [c for c in COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(resumed.frame[cols], base.frame[cols])


def test_parallel_rows_equal_serial_and_do_not_depend_on_grid(base):
    par = sweep(seeds=[1], jobs=2, **GRID)  # seed 1 only: its rows may not depend on seed 0
    cols = [c for c in COLUMNS if c != "seconds"]
    serial = base.frame[base.frame["seed"] == 1].reset_index(drop=True)
    assert (par.computed, par.csv) == (3, None)
    pd.testing.assert_frame_equal(par.frame[cols], serial[cols])


def test_any_executor_gives_the_serial_rows(base, tmp_path):
    """A caller's executor (threads here; a cluster's in deployment) gives the serial rows, the
    CSV included, and is left running for its owner."""
    from concurrent.futures import ThreadPoolExecutor

    cols = [c for c in COLUMNS if c != "seconds"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        res = sweep(seeds=[0, 1], executor=pool, csv=tmp_path / "rows.csv", **GRID)
        assert pool.submit(lambda: 1).result() == 1  # not shut down by the sweep
    assert (res.computed, res.skipped) == (6, 0)
    pd.testing.assert_frame_equal(res.frame[cols], base.frame[cols])
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "rows.csv").sort_values(list(cols)).reset_index(drop=True)[cols],
        res.frame.sort_values(list(cols)).reset_index(drop=True)[cols],
        check_dtype=False,
    )


def test_executor_is_validated_before_any_work():
    with pytest.raises(TypeError, match="`executor` must be a concurrent.futures.Executor; got int"):
        sweep(seeds=[0], executor=3, **GRID)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="give `jobs` or `executor`"):
        sweep(seeds=[0], executor=pool, jobs=2, **GRID)


@pytest.mark.parametrize(
    "header, match",
    [
        (",".join(c for c in COLUMNS if c != "comm_mb") + "\n", r"missing \['comm_mb'\]"),
        (
            "method,epsilon,delta,d,P,n_k,seed,shd,tpr,fdr,f1,nnz,comm_mb,seconds\n",
            r"missing \['graph', 'edges_per_node', 'options', 'versions'\].*before the sweep recorded its setting",
        ),
        (",".join(COLUMNS[::-1]) + "\n", "another order"),
        (",".join(COLUMNS) + ",extra\n", r"unexpected \['extra'\]"),
    ],
)
def test_mismatched_csv_is_rejected_untouched(tmp_path, monkeypatch, header, match):
    path = tmp_path / "bad.csv"
    path.write_text(header + "x\n")
    before = path.read_bytes()
    monkeypatch.setattr(tradeoff, "_run_task", _no_work)
    with pytest.raises(ValueError, match=f"bad.csv.*{match}.*left unchanged"):
        sweep(seeds=[0], csv=path, **GRID)
    assert path.read_bytes() == before


def test_setting_is_part_of_the_key(base, csv_copy, monkeypatch):
    """Other options or another graph family are new tasks in the same file; asking again for
    the first setting reuses its rows only (numpy scalars encode as the equal Python numbers)."""
    run = tradeoff._run_task
    seen = []
    monkeypatch.setattr(tradeoff, "_run_task", lambda task: seen.append(task) or run(task))
    other = {"fed-sparse-bnsl": FAST, "dp-fed-sparse-bnsl": {**FAST, "clip": 5.0}}
    res = sweep(seeds=[0], csv=csv_copy, **{**GRID, "method_options": other})
    assert res.computed == 2 and [t.method for t in seen] == ["dp-fed-sparse-bnsl"] * 2
    assert seen[0].kwargs == {"feature_bound": 30.0, "clip": 5.0, **FAST}
    assert '"clip":5.0' in res.frame["options"].iloc[-1]
    sf = sweep(seeds=[0], csv=csv_copy, **{**GRID, "graph": "SF"})
    assert sf.computed == 3 and (sf.frame["graph"] == "SF").all()
    monkeypatch.setattr(tradeoff, "_run_task", _no_work)
    numpy_fast = {k: np.int64(v) for k, v in FAST.items()}
    again = sweep(
        seeds=[0, 1],
        csv=csv_copy,
        **{**GRID, "method_options": {"fed-sparse-bnsl": numpy_fast, "dp-fed-sparse-bnsl": numpy_fast}},
    )
    assert (again.computed, again.skipped) == (0, 6)
    pd.testing.assert_frame_equal(again.frame, base.frame)
    assert len(pd.read_csv(csv_copy)) == 6 + 2 + 3


def test_incomplete_last_row_is_rejected(csv_copy):
    text = csv_copy.read_text()
    csv_copy.write_text(text[:-10])
    with pytest.raises(ValueError, match="incomplete row"):
        sweep(seeds=[0, 1], csv=csv_copy, **GRID)
    assert csv_copy.read_text() == text[:-10]


@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            {"methods": ["fed-bnsl", "magic"]},
            ValueError,
            "`methods` must be one of 'notears', 'fed-bnsl', .*'dp-fed-bnsl'.*got 'magic'",
        ),
        ({"methods": []}, ValueError, "`methods` must not be empty; allowed: notears, fed-bnsl"),
        ({"epsilons": [1, 0]}, ValueError, "`epsilons` must be > 0; got 0"),
        ({"epsilons": [-1]}, ValueError, "`epsilons` must be > 0; got -1"),
        ({"epsilons": [math.inf]}, ValueError, "`epsilons` must be finite; got inf"),
        ({"epsilons": []}, ValueError, "`epsilons` must not be empty when a private method"),
        ({"delta": 0}, ValueError, "`delta` must be > 0; got 0"),
        ({"delta": 1.0}, ValueError, "`delta` must be < 1; got 1.0"),
        ({"seeds": []}, ValueError, "`seeds` must not be empty"),
        ({"seeds": [-1]}, ValueError, "`seeds` must be >= 0; got -1"),
        ({"d": [5, 1]}, ValueError, "`d` must be >= 2; got 1"),
        ({"participants": 0}, ValueError, "`participants` must be >= 1; got 0"),
        ({"n_per_participant": 1.5}, TypeError, "`n_per_participant` must be an integer"),
        ({"jobs": 0}, ValueError, "`jobs` must be >= 1; got 0"),
        ({"graph": "tree"}, ValueError, "`graph` must be one of 'ER', 'SF'; got 'tree'"),
        (
            {"method_options": {"fed-bnsl": {"clip": 1}}},
            ValueError,
            "`method_options\\['fed-bnsl'\\]` has unknown option 'clip'; allowed: .*lambda1",
        ),
        ({"method_options": {"dp-fed-bnsl": {"epsilon": 1}}}, ValueError, "must not set 'epsilon'"),
        ({"method_options": {"nope": {}}}, ValueError, "`method_options` must be one of"),
        ({"method_options": {"notears": 3}}, TypeError, "must be a dict"),
        (
            {"method_options": {"notears": {"lambda1": object()}}},
            TypeError,
            r"`method_options\['notears'\]\['lambda1'\]` must be a number, string, bool, None or a "
            r"list of them \(it is written to the CSV\); got <object",
        ),
    ],
)
def test_validation_messages(monkeypatch, change, error, match):
    monkeypatch.setattr(tradeoff, "_run_task", _no_work)
    kwargs = {**GRID, "seeds": [0], **change}
    with pytest.raises(error, match=match):
        sweep(**kwargs)


def test_nonprivate_only_and_options_reach_the_learner():
    res = sweep(
        methods="notears-average",
        epsilons=[],
        seeds=0,
        d=3,
        participants=2,
        n_per_participant=20,
        progress=False,
        method_options={"notears-average": {"lambda1": 0.05, "max_iter": 5}},
    )
    assert res.frame[["method", "epsilon", "delta"]].iloc[0].tolist() == ["notears-average", math.inf, 0.0]
    assert math.isnan(res.frame["comm_mb"].iloc[0])  # no transcript
    assert set(METHODS) >= {"fed-bnsl", "fed-sparse-bnsl", "dp-fed-bnsl", "dp-fed-sparse-bnsl"}


def test_summarize(base):
    s = summarize(base, metrics=["shd", "tpr"])
    assert s[["method", "epsilon"]].values.tolist() == [
        ["fed-sparse-bnsl", math.inf],
        ["dp-fed-sparse-bnsl", 1.0],
        ["dp-fed-sparse-bnsl", 10.0],
    ]
    f = base.frame
    assert s["shd_mean"].iloc[1] == f[f["epsilon"] == 1.0]["shd"].mean()
    assert s["runs"].tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="`metrics` must be one of"):
        summarize(base, metrics="auc")


# --- plots ---------------------------------------------------------------------------------------


def test_plot_png_and_svg(base, tmp_path):
    pytest.importorskip("matplotlib")
    png = plot_tradeoff(base.frame, path=tmp_path / "out" / "curve.png")
    assert png == tmp_path / "out" / "curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    svg = plot_tradeoff(base, path=tmp_path / "curve.SVG", y="f1", log_x=False, title="t")
    text = svg.read_text()
    assert "<svg" in text and "dp-fed-sparse-bnsl" in text


@pytest.mark.parametrize("seed", range(20))
def test_band_limits_stay_within_the_data(seed):
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 1.0, 2.5, 7.0, np.nan], size=rng.integers(1, 9))
    median, low, high = band_limits(values)
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        assert all(math.isnan(v) for v in (median, low, high))
    else:
        assert finite.min() <= low <= median <= high <= finite.max()
        assert median == np.median(finite)
        assert (low, high) == tuple(np.quantile(finite, BAND))


def test_band_limits_validation():
    assert band_limits([4.0]) == (4.0, 4.0, 4.0)
    assert band_limits([0, 10], quantiles=(0.0, 1.0)) == (5.0, 0.0, 10.0)
    with pytest.raises(
        ValueError, match=r"`quantiles` must satisfy 0 ≤ low ≤ 0.5 ≤ high ≤ 1; got \(0.6, 0.9\)"
    ):
        band_limits([1, 2], quantiles=(0.6, 0.9))
    with pytest.raises(TypeError, match="`quantiles` must be a pair"):
        band_limits([1, 2], quantiles=0.5)


def _figure(monkeypatch, *args, **kwargs):
    """The figure plot_tradeoff draws (kept as it is saved)."""
    from matplotlib.figure import Figure

    kept = []
    save = Figure.savefig

    def keep(self, *a, **k):
        kept.append(self)
        return save(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", keep)
    plot_tradeoff(*args, **kwargs)
    return kept[0]


@pytest.mark.parametrize("x", ["epsilon", "d"])
def test_plot_bands_stay_inside_each_metric(base, tmp_path, monkeypatch, x):
    """Three seeds per point whose SHD are 0, 0, 3 and TPR 1, 1, 0: mean ± std would draw SHD
    below 0 and TPR above 1; the median and interquartile range stay at [0, 1.5] and [0.5, 1]."""
    pytest.importorskip("matplotlib")
    f = pd.concat([base.frame, base.frame[base.frame["seed"] == 0].assign(seed=2)], ignore_index=True)
    f["shd"] = f["seed"].map({0: 0, 1: 0, 2: 3})
    f["tpr"] = f["seed"].map({0: 1.0, 1: 1.0, 2: 0.0})
    fig = _figure(monkeypatch, f, path=tmp_path / "c.png", x=x, y=["shd", "tpr"])
    expected = {"SHD": (0.0, 0.0, 1.5), "TPR": (1.0, 0.5, 1.0)}
    assert "median over seeds" in fig.get_supxlabel() and "25th–75th percentile" in fig.get_supxlabel()
    for ax in fig.axes[:2]:
        median, low, high = expected[ax.get_ylabel()]
        bands = [c for c in ax.collections if len(c.get_paths())]
        lines = [line for line in ax.lines if line.get_marker() == "o"]
        assert len(bands) == len(lines) >= 1
        for band, line in zip(bands, lines):
            ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
            assert ys.min() >= low - 1e-12 and ys.max() <= high + 1e-12
            assert np.isclose(ys.min(), low) and np.isclose(ys.max(), high)
            assert np.allclose(line.get_ydata(), median)
        for span in ax.patches:  # the non-private method's band (x = "epsilon")
            assert np.isclose(span.get_y(), low) and np.isclose(span.get_y() + span.get_height(), high)
        assert len(ax.patches) == (1 if x == "epsilon" else 0)


def test_plot_against_grid_column(base, tmp_path):
    pytest.importorskip("matplotlib")
    path = plot_tradeoff(base.frame, path=tmp_path / "by_d.png", x="d", y=["shd", "comm_mb"])
    assert path.stat().st_size > 1000


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"path": "curve.pdf"}, r"`path` must end in \.png or \.svg; got 'curve.pdf'"),
        ({"path": "c.png", "x": "rounds"}, "`x` must be one of 'epsilon', 'd', 'P', 'n_k'"),
        ({"path": "c.png", "y": ["shd", "auc"]}, "`y` must be one of 'shd'"),
        ({"path": "c.png", "y": []}, "`y` must name at least one metric"),
        ({"path": "c.png", "methods": ["fed-bnsl"]}, "`methods` must be one of 'fed-sparse-bnsl'"),
        ({"path": "c.png", "methods": ["fed-sparse-bnsl"]}, "needs rows of a private method"),
    ],
)
def test_plot_validation(base, tmp_path, monkeypatch, kwargs, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=match):
        plot_tradeoff(base.frame, **kwargs)
    assert not list(tmp_path.iterdir())


def test_plot_rejects_mixed_settings(base, tmp_path):
    mixed = pd.concat([base.frame, base.frame.assign(P=3)], ignore_index=True)
    with pytest.raises(
        ValueError,
        match=r"mixes P = \[2, 3\]; filter it first .* or plot with "
        r"x='P'",
    ):
        plot_tradeoff(mixed, path=tmp_path / "c.png")


def test_plot_rejects_mixed_options_at_one_point_only(base, tmp_path):
    pytest.importorskip("matplotlib")
    private = base.frame[base.frame["method"] == "dp-fed-sparse-bnsl"]
    other = private.assign(options='{"clip":5.0}')
    with pytest.raises(
        ValueError,
        match=r"mixes options .* for dp-fed-sparse-bnsl at ε = 1; "
        r"filter it first",
    ):
        plot_tradeoff(pd.concat([base.frame, other]), path=tmp_path / "c.png")
    with pytest.raises(ValueError, match=r"for dp-fed-sparse-bnsl at ε = 1, d = 5; filter"):
        plot_tradeoff(pd.concat([base.frame, other]), path=tmp_path / "c.png", x="d")
    f = base.frame.copy()  # options that change along the curve (per-ε settings) are fine
    f.loc[f["epsilon"] == 10.0, "options"] = '{"clip":5.0}'
    assert plot_tradeoff(f, path=tmp_path / "c.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"mixes graph = \['ER', 'SF'\]"):
        plot_tradeoff(pd.concat([base.frame, base.frame.assign(graph="SF")]), path=tmp_path / "c.png")


def test_plot_without_matplotlib(base, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r'pip install "dpbnsl\[plot\]"'):
        plot_tradeoff(base.frame, path=tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()


def test_a_csv_that_is_a_directory_or_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    for bad, match in (
        (tmp_path, "is a directory; give the path of a CSV file"),
        (tmp_path / "file" / "s.csv", "is not a directory"),
    ):
        with pytest.raises(ValueError, match=match):
            sweep(
                methods="fed-sparse-bnsl",
                epsilons=[],
                seeds=[0],
                d=3,
                participants=1,
                n_per_participant=5,
                csv=bad,
                progress=False,
            )


def test_a_log_epsilon_axis_labels_every_value_of_the_grid(base, tmp_path, monkeypatch):
    """A log axis labels only its decades (10⁰, 10¹): the ε grid's own values are the ticks."""
    pytest.importorskip("matplotlib")
    fig = _figure(monkeypatch, base.frame, path=tmp_path / "c.png", x="epsilon", y="shd")
    eps = sorted(e for e in base.frame["epsilon"].unique() if np.isfinite(e))
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == eps
    assert [t.get_text() for t in ax.get_xticklabels()] == [format(e, "g") for e in eps]
