"""The command-line interface: simulate → learn round trip, metrics output, help, and errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpbnsl.cli import main


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    assert (
        main(["simulate", "--d", "5", "--n", "400", "--participants", "4", "--seed", "3", "--out", str(out)])
        == 0
    )
    return out


def test_simulate_writes_participants_and_truth(sim_dir):
    files = sorted(p.name for p in sim_dir.iterdir())
    assert files == [f"participant_{k}.csv" for k in range(4)] + ["true_graph.csv", "true_weights.csv"]
    X0 = pd.read_csv(sim_dir / "participant_0.csv")
    assert X0.shape == (100, 5) and list(X0.columns) == [f"X{i}" for i in range(5)]
    G = pd.read_csv(sim_dir / "true_graph.csv", index_col=0)
    assert G.shape == (5, 5) and int(G.to_numpy().sum()) == 5


@pytest.mark.parametrize(
    "method", ["fed-bnsl", "notears", "notears-voting", "notears-average", "notears-best", "fed-sparse-bnsl"]
)
def test_learn_writes_weights_and_prints_metrics(sim_dir, tmp_path, capsys, method):
    parts = [str(sim_dir / f"participant_{k}.csv") for k in range(4)]
    out = tmp_path / "W.csv"
    rc = main(
        [
            "learn",
            "--method",
            method,
            "--data",
            *parts,
            "--truth",
            str(sim_dir / "true_graph.csv"),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "shd=" in text and "tpr=" in text and "fdr=" in text
    W = pd.read_csv(out, index_col=0)
    assert W.shape == (5, 5) and list(W.columns) == [f"X{i}" for i in range(5)]
    shd = int(text.split("shd=")[1].split()[0])
    truth = pd.read_csv(sim_dir / "true_graph.csv", index_col=0).to_numpy()
    from dpbnsl import count_accuracy

    assert shd == count_accuracy(truth, W.to_numpy()).shd


def test_learn_splits_one_file(sim_dir, tmp_path, capsys):
    X = pd.concat([pd.read_csv(sim_dir / f"participant_{k}.csv") for k in range(4)])
    one = tmp_path / "all.csv"
    X.to_csv(one, index=False)
    assert main(["learn", "--data", str(one), "--participants", "4", "--max-rounds", "3"]) == 0
    assert "fed-bnsl: 4 participant(s), d = 5" in capsys.readouterr().out


def _error(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dpbnsl: error: ")
    return err


def test_errors_are_one_line_with_status_2(sim_dir, tmp_path, capsys):
    p0 = str(sim_dir / "participant_0.csv")
    assert "does not exist" in _error(["learn", "--data", str(tmp_path / "nope.csv")], capsys)
    assert "--lambda1 must be >= 0; got -1.0" in _error(["learn", "--data", p0, "--lambda1", "-1"], capsys)
    assert "--threshold must be >= 0" in _error(["learn", "--data", p0, "--threshold", "-2"], capsys)
    assert "needs --truth" in _error(["learn", "--method", "notears-best", "--data", p0], capsys)
    p1 = str(sim_dir / "participant_1.csv")
    assert "exactly one --data" in _error(["learn", "--data", p0, p1, "--participants", "2"], capsys)
    assert "twice" in _error(["learn", "--data", p0, p0], capsys)

    bad = tmp_path / "nan.csv"
    pd.DataFrame({"a": [1.0, np.nan, 2.0], "b": [1.0, 2.0, 3.0]}).to_csv(bad, index=False)
    assert (
        f"--data file {str(bad)!r} (participant 0): missing value at data row 1 (0-based, "
        "header excluded), column 'a'"
    ) in _error(["learn", "--data", str(bad)], capsys)

    text = tmp_path / "text.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}).to_csv(text, index=False)
    assert "column 'b' is not numeric" in _error(["learn", "--data", str(text)], capsys)

    other = tmp_path / "other.csv"
    pd.read_csv(p0).rename(columns={"X4": "Z"}).to_csv(other, index=False)
    assert "every participant needs the same variables in the same order" in _error(
        ["learn", "--data", p0, str(other)], capsys
    )

    rect = tmp_path / "rect.csv"
    pd.DataFrame(np.zeros((5, 4))).to_csv(rect)
    assert "must be a square matrix; got shape (5, 4)" in _error(
        ["learn", "--data", p0, "--truth", str(rect)], capsys
    )

    strings = tmp_path / "strings.csv"
    pd.DataFrame([["a"] * 2] * 2, columns=["u", "v"], index=["u", "v"]).to_csv(strings)
    assert "column 'u' is not numeric" in _error(["learn", "--data", p0, "--truth", str(strings)], capsys)

    tiny = tmp_path / "tiny.csv"
    pd.read_csv(p0).head(3).to_csv(tiny, index=False)
    assert "cannot split n = 3 rows into --participants 2 parts" in _error(
        ["learn", "--data", str(tiny), "--participants", "2"], capsys
    )


def test_unknown_method_is_rejected_by_argparse(capsys):
    assert main(["learn", "--method", "magic", "--data", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "dpbnsl: error: argument --method: invalid choice: 'magic'"
    )
    assert main(["learn"]) == 2
    assert capsys.readouterr().err.startswith("dpbnsl: error: the following arguments are required: --data")


def test_help_shows_defaults():
    out = subprocess.run(
        [sys.executable, "-m", "dpbnsl", "learn", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "(default: fed-bnsl)" in out and "(default: 0.3)" in out
    out = subprocess.run(
        [sys.executable, "-m", "dpbnsl", "simulate", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "(default: 1000)" in out


def test_learn_private_method_prints_epsilon_and_megabytes(sim_dir, capsys):
    parts = [str(sim_dir / f"participant_{k}.csv") for k in range(4)]
    rc = main(
        [
            "learn",
            "--method",
            "dp-fed-sparse-bnsl",
            "--data",
            *parts,
            "--epsilon",
            "3",
            "--feature-bound",
            "40",
            "--rounds",
            "3",
            "--local-iters",
            "4",
            "--truth",
            str(sim_dir / "true_graph.csv"),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "communication:" in out and " MB" in out and "shd=" in out
    line = next(li for li in out.splitlines() if li.startswith("privacy: "))
    assert line == ("privacy: (ε, δ) = (3, 1e-05)-DP per participant, replace-one; accountant: rdp (tight)")
    looser = out.split(line)[1].splitlines()[1]
    assert looser.startswith("  looser upper bounds on the same run (not extra spend): ε = ")
    assert float(looser.split("ε = ")[1].split()[0]) > 3.0 and looser.endswith("(zcdp)")


def test_learn_private_method_errors(sim_dir, capsys):
    p0 = str(sim_dir / "participant_0.csv")
    assert "needs --epsilon" in _error(["learn", "--method", "dp-fed-sparse-bnsl", "--data", p0], capsys)
    assert "needs --feature-bound B, a public bound on every x_ia²" in _error(
        ["learn", "--method", "dp-fed-sparse-bnsl", "--data", p0, "--epsilon", "1"], capsys
    )
    assert "--epsilon must be > 0; got -1.0" in _error(
        ["learn", "--method", "dp-fed-sparse-bnsl", "--data", p0, "--epsilon", "-1", "--feature-bound", "4"],
        capsys,
    )


def test_privacy_options_are_never_silently_ignored(sim_dir, capsys):
    """--epsilon with a non-private method must not run without privacy; options a method does not
    read are refused."""
    p0 = str(sim_dir / "participant_0.csv")
    assert "--epsilon does not apply to --method fed-bnsl" in _error(
        ["learn", "--method", "fed-bnsl", "--data", p0, "--epsilon", "1"], capsys
    )
    assert "--feature-bound does not apply to --method dp-fed-bnsl" in _error(
        ["learn", "--method", "dp-fed-bnsl", "--data", p0, "--epsilon", "1", "--feature-bound", "4"], capsys
    )
    assert "--clip-norm does not apply to --method dp-fed-sparse-bnsl" in _error(
        [
            "learn",
            "--method",
            "dp-fed-sparse-bnsl",
            "--data",
            p0,
            "--epsilon",
            "1",
            "--feature-bound",
            "4",
            "--clip-norm",
            "2",
        ],
        capsys,
    )
    assert "--rounds does not apply to --method notears" in _error(
        ["learn", "--method", "notears", "--data", p0, "--rounds", "5"], capsys
    )
