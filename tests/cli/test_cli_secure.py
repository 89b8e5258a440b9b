"""The command line under secure aggregation: `dpbnsl noise --aggregation secure` agrees with the
library's plan and reports what declared dropouts cost; `dpbnsl learn` runs both covariance
learners under either trust model and refuses bad values of the trust model's options."""

from __future__ import annotations

import json
import math

import pytest

from dpbnsl.cli import main
from dpbnsl.learners.covariance_release import release_settings, secure_plan

SECURE = [
    *("noise", "--method", "dp-fed-bnsl", "--epsilon", "1", "--clip-norm", "10"),
    *("--aggregation", "secure", "--d", "20", "--n-k", "1000", "--participants", "10"),
]


def _json(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_secure_plan_is_the_library_plan(capsys):
    out = _json(SECURE, capsys)
    settings = release_settings(epsilon=1.0, delta=1e-5, clip_norm=10.0, participants=10, n_total=10_000)
    plan = secure_plan(settings, d=20)
    assert out["covariance_sd"] == pytest.approx(plan.covariance_sd, rel=1e-12)
    assert out["spent"]["rdp"] <= 1.0 and out["norm_bound"] == plan.norm_bound
    # √P = 3.16 less noise, less the RDP accounting and the grid's room: between 2.5 and 3.2
    assert 2.5 < out["local_covariance_sd"] / out["covariance_sd"] < math.sqrt(10)


def test_declared_dropouts_cost_the_noise_the_analysis_says(capsys):
    """With t declared, each share is sized for P − t honest shares: the honest noise is what it
    was with t = 0, and all P shares carry P/(P − t) times its variance."""
    base = _json(SECURE, capsys)
    for t in (3, 9):
        out = _json([*SECURE, "--dropouts", str(t)], capsys)
        assert out["honest_covariance_sd"] == pytest.approx(base["covariance_sd"], rel=1e-3)
        assert out["covariance_sd"] == pytest.approx(
            base["covariance_sd"] * math.sqrt(10 / (10 - t)), rel=1e-3
        )


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        ([*SECURE, "--dropouts", "10"], "--dropouts must be <= 9"),
        ([*SECURE[:-2]], "needs --participants"),
        ([*SECURE[:-4], "--participants", "10"], "needs --n-k"),
        ([*SECURE, "--calibration", "classic"], "--calibration and --centre do not apply"),
        (
            ["noise", "--method", "dp-fed-bnsl", "--epsilon", "1", "--clip-norm", "10", "--d", "20"],
            "--d applies",
        ),
        (["noise", "--epsilon", "1", "--aggregation", "secure"], "--aggregation does not apply"),
    ],
)
def test_bad_secure_plans_exit_2_with_one_line(argv, text, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err, err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("secure") / "sim"
    assert (
        main(["simulate", "--d", "5", "--n", "3000", "--participants", "3", "--seed", "1", "--out", str(out)])
        == 0
    )
    return [str(out / f"participant_{k}.csv") for k in range(3)]


@pytest.mark.parametrize("method", ["dp-fed-bnsl", "dp-cov-pc"])
@pytest.mark.parametrize("aggregation", ["local", "secure"])
def test_learn_runs_under_either_trust_model(method, aggregation, data, capsys):
    argv = ["learn", "--method", method, "--data", *data, "--epsilon", "2", "--clip-norm", "10"]
    assert main([*argv, "--aggregation", aggregation, "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert ("trust: secure aggregation" in out) == (aggregation == "secure")


@pytest.mark.parametrize("method", ["dp-fed-bnsl", "dp-cov-pc"])
@pytest.mark.parametrize(
    ("extra", "text"),
    [
        (["--aggregation", "secure", "--dropouts", "-1"], "--dropouts must be >= 0; got -1"),
        (["--aggregation", "secure", "--dropouts", "3"], "--dropouts must be <= 2; got 3"),
        (["--dropouts", "1"], "--dropouts applies to --aggregation secure only"),
        (["--aggregation", "shared"], "argument --aggregation: invalid choice"),
    ],
)
def test_learn_refuses_bad_trust_settings(method, extra, text, data, capsys):
    argv = ["learn", "--method", method, "--data", *data, "--epsilon", "2", "--clip-norm", "10", *extra]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's own refusal
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err, err


def test_attack_secagg_reads_the_sum_the_coalition_and_the_difference(capsys):
    """Without noise the coalition and the differencing server read each participant's uploaded
    statistic exactly (to the grid: the error is the rounding of 20 rows, under 1e-3 relative),
    and membership on those views is perfect; the server alone reads only the pooled covariance."""
    argv = ["attack", "--method", "fed-bnsl", "--secagg", "--seed", "1", "--participants", "4"]
    out = _json(argv, capsys)
    rows = out["table"]
    assert out["aggregation"] == "secure" and out["contributors"] == [0, 1, 2, 3]
    assert all(r["coalition_error"] < 1e-3 and r["difference_error"] < 1e-3 for r in rows)
    assert all(r["server_error"] > 0.1 and r["coalition_auc"] == 1.0 for r in rows)


def test_attack_secagg_with_distributed_noise_names_the_coalitions_epsilon(capsys):
    argv = [
        *("attack", "--method", "dp-fed-bnsl", "--secagg", "--epsilon", "1", "--seed", "1"),
        *("--participants", "4", "--n-per-participant", "200"),
    ]
    out = _json(argv, capsys)
    assert out["privacy"]["epsilon"] <= 1.0 < out["epsilon_against_coalition"]
    # noise only: every view is far from the statistic (relative error above 0.5 at n_k = 200)
    assert all(r["coalition_error"] > 0.5 for r in out["table"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--method", "fed-bnsl", "--clip-norm", "5"], "--clip-norm applies to fed-bnsl with --secagg only"),
        (["--method", "fed-bnsl", "--secagg", "--dropouts", "1"], "--dropouts"),
        (["--method", "fed-sparse-bnsl", "--secagg"], "--secagg"),
    ],
)
def test_attack_secagg_refuses_options_it_does_not_read(argv, message, capsys):
    assert main(["attack", *argv]) == 2
    assert message in capsys.readouterr().err
