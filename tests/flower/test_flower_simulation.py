"""The hosted protocols on Flower's simulation engine (the ``flower`` extra): the same W and
transcript as the in-process learners with the same seeds, and a participant that fails mid-run
ends the run with an error naming it and the round. Marked ``flower`` (run with ``-m flower``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("ray")

from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.simulation import simulate

pytestmark = pytest.mark.flower


@pytest.fixture(autouse=True)
def _flower_home(tmp_path_factory, monkeypatch):
    """Flower and Ray write under FLWR_HOME and a temp dir: keep both out of the user's home."""
    home = tmp_path_factory.mktemp("flwr_home")
    monkeypatch.setenv("FLWR_HOME", str(home))
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")


def _same_transcript(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.round, x.sender, x.receiver, x.kind) == (y.round, y.sender, y.receiver, y.kind)
        assert type(x.payload) is type(y.payload)
        np.testing.assert_array_equal(x.to_dense(), y.to_dense())


def test_fed_bnsl_on_flower_equals_the_learner():
    from dpbnsl.flower import simulate_on_flower

    data = simulate(20, 8 * 32, participants=8, rng=1)
    ref = fed_bnsl(data.participants)
    run = simulate_on_flower("fed-bnsl", data.participants)
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    np.testing.assert_array_equal(run.W, ref.W)
    assert len(run.history) == len(ref.history) > 3
    _same_transcript(run.transcript, ref.transcript)
    assert run.reports == {k: {} for k in range(8)}


def test_dp_fed_sparse_bnsl_on_flower_equals_the_learner():
    from dpbnsl.flower import simulate_on_flower

    data = simulate(8, 4 * 500, participants=4, rng=1)
    settings = dict(
        epsilon=4.0, delta=1e-5, feature_bound=25.0, rounds=5, local_iters=4, warm_start="covariance"
    )
    ref = dp_fed_sparse_bnsl(data.participants, rng=11, **settings)
    run = simulate_on_flower("dp-fed-sparse-bnsl", data.participants, settings=settings, seed=11)
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    _same_transcript(run.transcript, ref.transcript)
    _same_transcript(run.transcripts["warm"], ref.info["warm_start"]["transcript"])
    for k in range(4):  # each participant reports its own ledger: the learner's
        assert run.reports[k]["epsilon"] == ref.ledger[k].epsilon(1e-5) <= 4.0


def test_a_participant_failing_mid_run_is_named_with_its_round(tmp_path):
    """Participant 1's process fails at its fourth request (round 2): the run ends with an error
    naming participant 1 and round 2 (its detail stays on its side), and no result is returned."""
    from flwr.simulation import run_simulation

    from dpbnsl.flower import make_client_app, make_server_app

    data = simulate(6, 3 * 200, participants=3, rng=0)
    calls = tmp_path / "calls"

    def load(k, _cfg):
        if k == 1:
            with open(calls, "a") as f:  # the workers are separate processes: count in a file
                f.write("x")
            if Path(calls).stat().st_size >= 4:
                raise RuntimeError("participant 1's machine went away")
        return data.participants[k]

    results = {}
    saved = os.environ.get("PYTHONPATH")
    try:
        with pytest.raises(
            Exception,
            match=r"rounds round 2: participant 1: participant 1 failed in rounds round 2; "
            r"the detail stays in the participant's own log$",
        ):
            run_simulation(
                server_app=make_server_app("fed-bnsl", {"max_rounds": 10}, 3, results=results),
                client_app=make_client_app(load),
                num_supernodes=3,
                backend_config={
                    "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                    "init_args": {"num_cpus": 2},
                },
            )
    finally:
        os.environ["PYTHONPATH"] = saved or ""
    assert results == {}


def _other_cases():
    from dpbnsl.learners.constraint.fed_pc import fed_pc
    from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
    from dpbnsl.learners.linear.fed_sparse_bnsl import fed_sparse_bnsl
    from dpbnsl.learners.nonlinear.ds_fcd import as_fcd, ds_fcd
    from dpbnsl.learners.nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
    from dpbnsl.learners.temporal.fed_dbn import fed_dbn
    from dpbnsl.simulation.temporal import simulate_temporal

    linear = simulate(5, 3 * 200, participants=3, rng=2).participants
    series = [s[0] for s in simulate_temporal(4, 3 * 150, participants=3, rng=0).series]
    return {
        "fed-sparse-bnsl": (fed_sparse_bnsl, linear, dict(rounds=5, local_iters=3), None),
        "dp-fed-bnsl": (dp_fed_bnsl, linear, dict(epsilon=2.0, delta=1e-5, clip_norm=5.0, max_rounds=10), 3),
        "fed-dbn": (fed_dbn, series, dict(lag=1, max_rounds=10), None),
        "fed-bnsl-mlp": (fed_bnsl_mlp, linear, dict(hidden=3, max_rounds=4), 5),
        "fed-pc": (fed_pc, linear, dict(alpha=0.05), None),
        "ds-fcd": (ds_fcd, linear, dict(it_in=20, it_fl=10, it_max=2, hidden=3, layers=1), 7),
        "as-fcd": (as_fcd, linear, dict(it_in=20, it_fl=10, it_max=2, hidden=3, layers=1), 7),
    }


@pytest.mark.parametrize(
    "name", ["fed-sparse-bnsl", "dp-fed-bnsl", "fed-dbn", "fed-bnsl-mlp", "fed-pc", "ds-fcd", "as-fcd"]
)
def test_every_other_hosted_protocol_on_flower_equals_its_learner(name):
    from dpbnsl.flower import simulate_on_flower

    learner, data, settings, seed = _other_cases()[name]
    ref = learner(data, **settings, **({} if seed is None else {"rng": seed}))
    run = simulate_on_flower(name, data, settings=settings, seed=seed)
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    _same_transcript(run.transcript, ref.transcript)


def test_a_participant_refuses_a_study_beyond_its_budget_and_the_run_names_it():
    from dpbnsl.flower import simulate_on_flower

    data = simulate(5, 3 * 300, participants=3, rng=3)
    settings = dict(epsilon=4.0, delta=1e-5, feature_bound=25.0, rounds=2, local_iters=2)
    with pytest.raises(
        Exception, match=r"participant 1: .*the study asks for \(ε, δ\) = \(4, 1e-05\), beyond"
    ):
        simulate_on_flower(
            "dp-fed-sparse-bnsl", data.participants, settings=settings, budgets={1: (1.0, 1e-5)}
        )
