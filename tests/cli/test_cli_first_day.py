"""What a new user trips over, each fixed: a CSV without a header row, one communication figure,
bounds that the defaults and the simulator agree on, the audit's exit status and power, the
learners' plans on the command line, data a non-private learner's statistics would overflow on,
the simulator's time series, the demo's data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpbnsl.cli import main


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    assert main(["simulate", "--d", "6", "--n", "900", "--participants", "3", "--out", str(out)]) == 0
    return out


def _parts(sim):
    return [str(sim / f"participant_{k}.csv") for k in range(3)]


def _run(argv, capsys, status=0):
    assert main(argv) == status
    return capsys.readouterr()


def test_a_csv_without_a_header_row_is_refused(tmp_path, capsys):
    """Its first data row would silently have become the column names (and been lost)."""
    f = tmp_path / "noheader.csv"
    np.savetxt(f, np.random.default_rng(0).normal(size=(20, 3)), delimiter=",")
    err = _run(["learn", "--data", str(f)], capsys, 2).err
    assert "its first row holds only numbers" in err and "add a header row of variable names" in err
    ok = tmp_path / "pandas.csv"  # pandas' default names 0, 1, 2 are a header
    pd.DataFrame(np.random.default_rng(1).normal(size=(30, 3))).to_csv(ok, index=False)
    assert (
        "fed-bnsl: 1 participant(s), d = 3"
        in _run(["learn", "--data", str(ok), "--max-rounds", "3"], capsys).out
    )


def test_one_communication_figure_everywhere(sim, tmp_path, capsys):
    """learn's line, its JSON, show and the HTML page give the same total, every phase included."""
    run = tmp_path / "run"
    argv = ["learn", "--method", "dp-fed-sparse-bnsl", "--epsilon", "5", "--feature-bound", "30"]
    argv += ["--warm-start", "covariance", "--rounds", "3", "--data", *_parts(sim)]
    out = _run([*argv, "--out-dir", str(run)], capsys).out
    line = next(x for x in out.splitlines() if x.startswith("communication:"))
    assert "warm start" in line and "rounds" in line
    total = float(line.split()[1])
    doc = json.loads(_run([*argv, "--json"], capsys).out)
    assert set(doc["communication_phases_mb"]) == {"warm", "rounds"}
    assert doc["communication_mb"] == pytest.approx(sum(doc["communication_phases_mb"].values()))
    shown = json.loads(_run(["show", str(run), "--json"], capsys).out)
    assert round(shown["result"]["communication_mb"], 3) == total
    html = tmp_path / "r.html"
    _run(["show", str(run), "--html", str(html)], capsys)
    page = html.read_text()
    assert f"{shown['result']['communication_mb']:.3g}" in page and "Transcript: warm start" in page


def test_the_private_methods_need_their_bounds_and_the_simulated_runs_use_the_simulators(
    sim, tmp_path, capsys
):
    err = _run(["learn", "--method", "dp-fed-bnsl", "--epsilon", "1", "--data", *_parts(sim)], capsys, 2).err
    assert "needs --clip-norm R" in err
    curve = (
        "curve --methods dp-fed-bnsl --epsilons 5 --seeds 1 --d 6 --participants 2 --n-per-participant 300"
    )
    out = tmp_path / "c.csv"
    res = _run([*curve.split(), "--out", str(out)], capsys)
    assert "warning" not in res.err  # the simulator's scale: no clipping warning
    frame = pd.read_csv(out)
    assert "clip_norm" in frame["options"].iloc[0]
    res = _run([*curve.split(), "--clip-norm", "0.5", "--out", str(tmp_path / "d.csv")], capsys)
    assert "norm above --clip-norm 0.5" in res.err  # settable, and the warning speaks in flags
    err = _run(
        ["curve", "--methods", "fed-bnsl", "--feature-bound", "3", "--out", str(tmp_path / "e.csv")],
        capsys,
        2,
    ).err
    assert "--feature-bound applies to dp-fed-sparse-bnsl, which --methods does not run" in err


def test_the_audit_states_its_exit_status_and_warns_when_it_cannot_see(capsys):
    res = _run(["audit", "--mechanism", "gaussian-step", "--trials", "200", "--seed", "1"], capsys)
    assert "too few trials to test the claim" in res.err and "runs per world would catch it" in res.err
    assert "exit status 0: the expected verdict is pass" in res.out
    # a negative control too small to be flagged: the wrong outcome, status 1
    res = _run(
        [
            "audit",
            "--mechanism",
            "gaussian-step",
            "--broken",
            "noise-halved",
            "--trials",
            "100",
            "--seed",
            "1",
        ],
        capsys,
        1,
    )
    assert "exit status 1: the expected verdict is FLAGGED" in res.out
    res = _run(
        ["audit", "--mechanism", "covariance", "--broken", "no-clipping", "--trials", "2000", "--seed", "1"],
        capsys,
    )
    assert "FLAGGED" in res.out and "too few trials" not in res.err


def test_noise_prints_a_learners_whole_plan(capsys):
    from dpbnsl.learners.covariance_plan import plan as covariance_plan
    from dpbnsl.learners.linear.sparse_plan import plan as sparse_plan

    argv = ["noise", "--method", "dp-fed-sparse-bnsl", "--epsilon", "2", "--d", "10", "--n-k", "300"]
    res = _run([*argv, "--feature-bound", "50", "--json"], capsys)
    doc = json.loads(res.out)
    pl = sparse_plan(10, epsilon=2.0, delta=1e-5, n_k=300, feature_bound=50.0)
    assert [(r["release"], r["count"]) for r in doc["releases"]] == [(e.label, e.count) for e in pl.entries()]
    assert doc["spent"]["rdp"] <= 2.0 and doc["rounds"] == pl.hyper["rounds"]
    assert "smoothness" in res.err  # the table, on stderr
    doc = json.loads(
        _run(["noise", "--method", "dp-fed-bnsl", "--epsilon", "2", "--clip-norm", "4", "--json"], capsys).out
    )
    cp = covariance_plan(epsilon=2.0, delta=1e-5, clip_norm=4.0)
    assert doc["covariance_multiplier"] == cp.z_cov and doc["spent"]["pld"] <= 2.0
    assert "needs --feature-bound" in _run(argv, capsys, 2).err
    assert (
        "--clip-norm does not apply to --method dp-pgcd"
        in _run(["noise", "--epsilon", "1", "--clip-norm", "3"], capsys, 2).err
    )
    err = _run(
        ["noise", "--method", "dp-fed-bnsl", "--epsilon", "1", "--clip-norm", "3", "--calibration", "paper"],
        capsys,
        2,
    ).err
    assert "--calibration paper does not apply to --method dp-fed-bnsl" in err


def test_data_a_non_private_learner_would_overflow_on_are_refused(tmp_path, capsys):
    X = np.random.default_rng(0).uniform(-1, 1, (40, 3))
    X[5, 1] = 1e308
    f = tmp_path / "huge.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(f, index=False)
    err = _run(["learn", "--data", str(f), "--participants", "2"], capsys, 2).err
    assert "an entry of magnitude 1e+308 at data row 5, column 'b'" in err
    # the private methods clip every record: they run
    res = _run(
        [
            "learn",
            "--method",
            "dp-fed-bnsl",
            "--epsilon",
            "1",
            "--clip-norm",
            "1",
            "--data",
            str(f),
            "--participants",
            "2",
            "--max-rounds",
            "3",
        ],
        capsys,
    )
    assert "dp-fed-bnsl: 2 participant(s)" in res.out


def test_the_simulator_writes_time_series_for_fed_dbn(tmp_path, capsys):
    out = tmp_path / "series"
    _run(
        ["simulate", "--d", "4", "--n", "600", "--participants", "2", "--lag", "1", "--out", str(out)], capsys
    )
    assert (out / "true_lagged.csv").exists()
    res = _run(
        [
            "learn",
            "--method",
            "fed-dbn",
            "--lag",
            "1",
            "--max-rounds",
            "5",
            "--data",
            str(out / "participant_0.csv"),
            str(out / "participant_1.csv"),
        ],
        capsys,
    )
    assert "fed-dbn: 2 participant(s), d = 4" in res.out
    err = _run(["simulate", "--lag", "1", "--graph-type", "SF", "--out", str(tmp_path / "x")], capsys, 2).err
    assert "--graph-type, --noise and --s0 do not apply" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        ("curve --methods dp-fed-bnsl --clip-norm -1 --out c.csv", "--clip-norm must be >= 1e-100"),
        ("curve --methods dp-fed-bnsl --clip-norm 1e308 --out c.csv", "--clip-norm must be <= 1e+100"),
        ("curve --methods dp-fed-sparse-bnsl --feature-bound nan --out c.csv", "--feature-bound must lie in"),
        ("noise --method dp-fed-sparse-bnsl --epsilon 1 --d 1 --n-k 10 --feature-bound 1", "argument --d"),
        (
            "noise --method dp-fed-sparse-bnsl --epsilon 1 --d 5 --n-k 10 --feature-bound inf",
            "--feature-bound must lie",
        ),
        ("noise --method dp-fed-sparse-bnsl --epsilon 1 --d 5 --rounds 3 --feature-bound 1", "needs --n-k"),
        ("noise --method dp-fed-bnsl --epsilon 1 --clip-norm nan", "--clip-norm must be finite"),
        ("noise --method dp-fed-bnsl --epsilon 1e308 --clip-norm 1", "--epsilon must lie in"),
        ("simulate --lag 0", "argument --lag: must be between 1 and 100"),
        ("simulate --lag 1 --out /dev/null/x", "is not a directory"),
    ],
)
def test_the_new_options_refuse_bad_input_in_one_line(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = _run(argv.split(), capsys, 2).err
    assert err.count("\n") == 1 and err.startswith("dpbnsl: error: ") and message in err
    assert list(tmp_path.iterdir()) == []  # nothing written
