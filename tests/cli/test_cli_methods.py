"""`dpbnsl learn` with the constraint-based, nonlinear and time-series methods."""

from __future__ import annotations

import pandas as pd
import pytest

from dpbnsl import count_accuracy
from dpbnsl.cli import main
from dpbnsl.metrics import shd_cpdag


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    assert (
        main(["simulate", "--d", "6", "--n", "3000", "--participants", "3", "--seed", "2", "--out", str(out)])
        == 0
    )
    return out


def _parts(sim_dir):
    return [str(sim_dir / f"participant_{k}.csv") for k in range(3)]


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpbnsl: error: ") and err.count("\n") == 1
    return err


@pytest.mark.parametrize(
    "method", ["pc", "fed-pc", "pc-all", "pc-best", "fed-pc-simple-i", "fed-pc-simple-ii"]
)
def test_constraint_methods_print_dag_and_cpdag_metrics(sim_dir, tmp_path, capsys, method):
    out = tmp_path / "W.csv"
    assert (
        main(
            [
                "learn",
                "--method",
                method,
                "--data",
                *_parts(sim_dir),
                "--truth",
                str(sim_dir / "true_graph.csv"),
                "--out",
                str(out),
                "--alpha",
                "0.01",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    W = pd.read_csv(out, index_col=0).to_numpy()
    truth = pd.read_csv(sim_dir / "true_graph.csv", index_col=0).to_numpy()
    assert int(text.split("shd=")[1].split()[0]) == count_accuracy(truth, W).shd
    assert int(text.split("shd_cpdag=")[1].split()[0]) == shd_cpdag(truth, W)


def test_fed_pc_reports_its_communication(sim_dir, capsys):
    assert main(["learn", "--method", "fed-pc", "--data", *_parts(sim_dir)]) == 0
    assert "communication:" in capsys.readouterr().out


def test_constraint_options_are_checked_and_not_shared(sim_dir, capsys):
    p = _parts(sim_dir)
    assert "--alpha must be < 1; got 2.0" in _error(
        ["learn", "--method", "pc", "--data", *p, "--alpha", "2"], capsys
    )
    assert "--alpha does not apply to --method fed-bnsl" in _error(
        ["learn", "--method", "fed-bnsl", "--data", *p, "--alpha", "0.05"], capsys
    )
    assert "--lambda1 does not apply to --method fed-pc" in _error(
        ["learn", "--method", "fed-pc", "--data", *p, "--lambda1", "0.1"], capsys
    )
    assert "--threshold does not apply to --method pc" in _error(
        ["learn", "--method", "pc", "--data", *p, "--threshold", "0.1"], capsys
    )
    assert "needs --truth" in _error(["learn", "--method", "pc-best", "--data", *p], capsys)
    assert main(["learn", "--method", "pc", "--data", *p, "--ci-test", "kci"]) == 2
    assert "invalid choice: 'kci'" in capsys.readouterr().err


def test_ds_fcd_runs_with_a_short_schedule_and_refuses_foreign_options(sim_dir, capsys):
    p = _parts(sim_dir)
    assert (
        main(
            [
                "learn",
                "--method",
                "ds-fcd",
                "--data",
                *p,
                "--it-in",
                "20",
                "--it-fl",
                "10",
                "--participants-per-round",
                "2",
                "--seed",
                "1",
                "--truth",
                str(sim_dir / "true_graph.csv"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("ds-fcd: 3 participant(s), d = 6") and "shd=" in text
    assert "argument --it-in: must be between 1 and 1,000,000; got 0" in _error(
        ["learn", "--method", "ds-fcd", "--data", *p, "--it-in", "0"], capsys
    )
    assert "--it-fl does not apply to --method fed-bnsl" in _error(
        ["learn", "--method", "fed-bnsl", "--data", *p, "--it-fl", "5"], capsys
    )
    assert "--threshold does not apply to --method as-fcd" in _error(
        ["learn", "--method", "as-fcd", "--data", *p, "--threshold", "0.2"], capsys
    )


@pytest.fixture(scope="module")
def series_dir(tmp_path_factory):
    import numpy as np

    from dpbnsl.simulation.temporal import simulate_temporal

    out = tmp_path_factory.mktemp("ts")
    sim = simulate_temporal(5, 600, participants=3, lag=1, rng=0)
    names = [f"X{i}" for i in range(5)]
    for k, runs in enumerate(sim.series):
        pd.DataFrame(np.asarray(runs[0]), columns=names).to_csv(out / f"ts_{k}.csv", index=False)
    pd.DataFrame(sim.B_true, index=names, columns=names).to_csv(out / "truth.csv")
    return out


@pytest.mark.parametrize(
    "method", ["fed-dbn", "dynotears", "dynotears-average", "dynotears-best", "dynotears-all"]
)
def test_time_series_methods_write_intra_slice_and_lagged_weights(series_dir, tmp_path, capsys, method):
    parts = [str(series_dir / f"ts_{k}.csv") for k in range(3)]
    out = tmp_path / "W.csv"
    assert (
        main(
            [
                "learn",
                "--method",
                method,
                "--data",
                *parts,
                "--lag",
                "1",
                "--truth",
                str(series_dir / "truth.csv"),
                "--out",
                str(out),
                "--max-rounds",
                "30",
            ]
            if method == "fed-dbn"
            else [
                "learn",
                "--method",
                method,
                "--data",
                *parts,
                "--lag",
                "1",
                "--truth",
                str(series_dir / "truth.csv"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "lagged edges (lag 1):" in text and "shd=" in text
    W = pd.read_csv(out, index_col=0)
    A = pd.read_csv(tmp_path / "W.lagged.csv", index_col=0)
    assert W.shape == (5, 5) and A.shape == (5, 5)
    assert list(A.index) == [f"X{i}(t-1)" for i in range(5)]
    n_lagged = int(text.split("lagged edges (lag 1): ")[1].split()[0])
    assert n_lagged == int((A.to_numpy() != 0).sum())


def test_time_series_and_mlp_options_are_checked(series_dir, sim_dir, capsys):
    parts = [str(series_dir / f"ts_{k}.csv") for k in range(3)]
    assert "argument --lag: must be between 1 and 1,000; got 0" in _error(
        ["learn", "--method", "fed-dbn", "--data", *parts, "--lag", "0"], capsys
    )
    assert "--lag does not apply to --method fed-bnsl" in _error(
        ["learn", "--method", "fed-bnsl", "--data", *parts, "--lag", "2"], capsys
    )
    assert "--lambda-w does not apply to --method notears-mlp" in _error(
        ["learn", "--method", "notears-mlp", "--data", *parts, "--lambda-w", "0.1"], capsys
    )
    assert "needs --truth" in _error(["learn", "--method", "dynotears-best", "--data", *parts], capsys)
    assert "needs --truth" in _error(
        ["learn", "--method", "notears-mlp-best", "--data", *_parts(sim_dir)], capsys
    )
    assert "--ftol does not apply to --method fed-dbn" in _error(
        ["learn", "--method", "fed-dbn", "--data", *parts, "--ftol", "1e-6"], capsys
    )
    assert "solver_options['ftol']" in _error(
        ["learn", "--method", "notears-mlp", "--data", *_parts(sim_dir), "--ftol", "-1"], capsys
    )


def test_ftol_reaches_the_mlp_solvers(sim_dir):
    """--ftol becomes the learners' solver_options (unset: the learner's own default)."""
    from dpbnsl.cli import build_parser
    from dpbnsl.learners.registry import LEARNERS

    seen = []
    for extra in ([], ["--ftol", "1e-6"]):
        args = build_parser().parse_args(
            ["learn", "--method", "fed-bnsl-mlp", "--data", *_parts(sim_dir), *extra]
        )
        seen.append(LEARNERS["fed-bnsl-mlp"].cli_kwargs(args).get("solver_options"))
    assert seen == [None, {"ftol": 1e-6}]


def test_fed_bnsl_mlp_runs_a_few_rounds(sim_dir, capsys):
    assert (
        main(
            [
                "learn",
                "--method",
                "fed-bnsl-mlp",
                "--data",
                *_parts(sim_dir),
                "--max-rounds",
                "3",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("fed-bnsl-mlp: 3 participant(s), d = 6") and "3 rounds" in text
    assert "communication:" in text
