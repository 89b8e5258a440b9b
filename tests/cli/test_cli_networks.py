"""`dpbnsl simulate --network` and `--standardise`, and `dpbnsl learn` with every linear learner
on the files it writes (both Gaussian networks, raw and standardised)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbnsl.cli import main
from dpbnsl.io.networks import GAUSSIAN_NETWORKS, load_network
from dpbnsl.learners.registry import LEARNERS

LINEAR = sorted(name for name, entry in LEARNERS.items() if entry.family == "linear")
#: NOTEARS and its local-fit baselines run one dual update (--max-iter 1): a full NOTEARS at d = 46
#: takes tens of CPU seconds. The magic-niab runs are in the slow suite (ecoli70's code path, twice).
NOTEARS_FAMILY = {"notears", "notears-voting", "notears-average", "notears-best"}
P = 3


@pytest.fixture(scope="module")
def network_dirs(tmp_path_factory):
    out = {}
    for network in GAUSSIAN_NETWORKS:
        for standardise in (False, True):
            path = tmp_path_factory.mktemp(f"{network}-{standardise}")
            argv = [
                "simulate",
                "--network",
                network,
                "--n",
                "900",
                "--participants",
                str(P),
                "--out",
                str(path),
            ]
            assert main(argv + (["--standardise"] if standardise else [])) == 0
            out[network, standardise] = path
    return out


def test_the_files_hold_the_network(network_dirs):
    path = network_dirs["ecoli70", True]
    frame = pd.read_csv(path / "participant_0.csv")
    net = load_network("ecoli70")
    assert list(frame.columns) == list(net.names) and len(frame) == 300
    truth = pd.read_csv(path / "true_graph.csv", index_col=0)
    assert np.array_equal(truth.to_numpy(), net.B)
    weights = pd.read_csv(path / "true_weights.csv", index_col=0).to_numpy()
    np.testing.assert_allclose(weights, net.standardised().W, rtol=1e-12)


def _learn(method, path, capsys):
    entry = LEARNERS[method]
    argv = ["learn", "--method", method, "--data", *[str(path / f"participant_{k}.csv") for k in range(P)]]
    argv += ["--truth", str(path / "true_graph.csv")]
    if method in NOTEARS_FAMILY:
        argv += ["--max-iter", "1"]
    if method in ("fed-bnsl", "dp-fed-bnsl"):
        argv += ["--max-rounds", "5"]
    if method in ("fed-sparse-bnsl", "dp-fed-sparse-bnsl"):
        argv += ["--rounds", "5"]
    if entry.private:
        argv += ["--epsilon", "5"]
        if "clip_norm" in entry.simulation:
            argv += ["--clip-norm", "20"]
        if "feature_bound" in entry.simulation:
            argv += ["--feature-bound", "60"]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith(f"{method}: ") or out.startswith(f"{method} (oracle): ")
    assert f"{P} participant(s), d = " in out and "shd=" in out


@pytest.mark.parametrize("standardise", [False, True], ids=["raw", "standardised"])
@pytest.mark.parametrize(
    "network", [pytest.param(n, marks=pytest.mark.slow) if n != "ecoli70" else n for n in GAUSSIAN_NETWORKS]
)
@pytest.mark.parametrize("method", LINEAR)
def test_each_linear_learner_runs_from_the_command_line(network_dirs, network, standardise, method, capsys):
    _learn(method, network_dirs[network, standardise], capsys)


def test_discrete_networks_and_standardised_simulations(tmp_path, capsys):
    assert main(["simulate", "--network", "alarm", "--n", "200", "--out", str(tmp_path / "a")]) == 0
    frame = pd.read_csv(tmp_path / "a" / "participant_0.csv")
    assert frame.shape == (20, 37) and frame.dtypes.map(lambda t: t.kind == "i").all()
    assert main(["simulate", "--d", "8", "--n", "2000", "--standardise", "--out", str(tmp_path / "s")]) == 0
    X = pd.concat([pd.read_csv(tmp_path / "s" / f"participant_{k}.csv") for k in range(10)]).to_numpy()
    assert np.abs(X.std(axis=0) - 1).max() < 0.1  # sd of a sample sd at n = 2000: 0.016


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--network", "ecoli70", "--d", "5"], "--network samples a packaged network: --d do(es) not apply"),
        (["--network", "ecoli70", "--lag", "1"], "--lag do(es) not apply"),
        (["--network", "child", "--standardise"], "--standardise applies to the Gaussian networks"),
        (["--lag", "1", "--standardise"], "--standardise applies to the linear SEM"),
        (["--network", "asia"], "invalid choice: 'asia'"),
    ],
)
def test_bad_network_options_are_refused_before_any_write(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main(["simulate", "--n", "100", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_max_iter_reaches_notears_and_is_refused_elsewhere(network_dirs, capsys):
    from dpbnsl.cli import build_parser

    path = network_dirs["ecoli70", False]
    data = [str(path / f"participant_{k}.csv") for k in range(P)]
    args = build_parser().parse_args(
        ["learn", "--method", "notears-voting", "--max-iter", "3", "--data", *data]
    )
    assert LEARNERS["notears-voting"].cli_kwargs(args)["max_iter"] == 3
    assert main(["learn", "--method", "fed-bnsl", "--max-iter", "3", "--data", *data]) == 2
    assert "--max-iter" in capsys.readouterr().err


# ------------------------------------------------------------------ Priv-PC and DP-FedPC --


@pytest.mark.parametrize("method", ["priv-pc", "dp-fed-pc"])
def test_priv_pc_from_the_command_line(method, tmp_path, capsys):
    """Discrete codes from a CSV; the guarantee on the console; foreign and missing options refused."""
    from dpbnsl.io.networks import sample_network

    s = sample_network("child", 6000, participants=2, rng=0)
    paths = []
    for k, X in enumerate(s.participants):
        paths.append(tmp_path / f"p{k}.csv")
        np.savetxt(paths[-1], X, delimiter=",", fmt="%d", header=",".join(s.columns), comments="")
    out = tmp_path / "W.csv"
    args = ["learn", "--method", method, "--data", *map(str, paths), "--epsilon", "5", "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr()
    assert "privacy: (ε, δ) = (" in err.out + err.err and out.exists()
    assert main(args + ["--force", "--clip-norm", "1"]) == 2
    assert "--clip-norm does not apply" in capsys.readouterr().err
    assert main(args + ["--force", "--variables", "continuous"]) == 2
    assert "needs --bounds LOW,HIGH" in capsys.readouterr().err
    assert main(args + ["--force", "--bounds", "0,nan"]) == 2
    assert "expected finite LOW < HIGH" in capsys.readouterr().err
    assert main(["learn", "--method", "pc", "--data", str(paths[0]), "--max-examinations", "3"]) == 2
    assert "--max-examinations does not apply" in capsys.readouterr().err


def test_dp_fed_pc_runs_over_secure_aggregation_from_the_command_line(tmp_path, capsys):
    """--aggregation secure reaches DP-FedPC: the statement names the trust model; Priv-PC refuses
    the option; a t the study cannot have exits 2 before any write."""
    from dpbnsl.io.networks import sample_network

    s = sample_network("child", 6000, participants=3, rng=0)
    paths = []
    for k, X in enumerate(s.participants):
        paths.append(tmp_path / f"p{k}.csv")
        np.savetxt(paths[-1], X, delimiter=",", fmt="%d", header=",".join(s.columns), comments="")
    out = tmp_path / "W.csv"
    base = ["learn", "--data", *map(str, paths), "--epsilon", "5", "--delta", "1e-3", "--out", str(out)]
    assert main([*base, "--method", "dp-fed-pc", "--aggregation", "secure"]) == 0
    text = capsys.readouterr()
    assert "trust: secure aggregation" in text.out + text.err and out.exists()
    out.unlink()
    assert main([*base, "--method", "dp-fed-pc", "--aggregation", "secure", "--dropouts", "3"]) == 2
    assert "--dropouts must be <= 2; got 3" in capsys.readouterr().err and not out.exists()
    assert main([*base, "--method", "priv-pc", "--aggregation", "secure"]) == 2
    assert "--aggregation does not apply" in capsys.readouterr().err
