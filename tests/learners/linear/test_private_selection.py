"""Private selection of DP-Fed-Sparse-BNSL's settings: the score's sensitivity on neighbouring
datasets, the whole pipeline within the target, and a sensible choice."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpbnsl.accounting import compose_epsilon
from dpbnsl.learners.linear.private_selection import residual_loss, select_dp_fed_sparse_bnsl
from dpbnsl.simulation import simulate

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=100, deadline=None)
@given(
    record=arrays(float, 4, elements=FINITE | st.sampled_from([1e308, -1e308, 0.0])),
    i=st.integers(0, 29),
    seed=st.integers(0, 50),
)
def test_residual_loss_moves_by_at_most_its_sensitivity(record, i, seed):
    """Replacing any row by any finite record moves the clipped mean residual by at most L/n."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 4))
    W = np.where(rng.random((4, 4)) < 0.4, rng.normal(size=(4, 4)), 0.0)
    np.fill_diagonal(W, 0.0)
    X2 = X.copy()
    X2[i] = record
    L = 7.0
    a, b = residual_loss(X, W, L), residual_loss(X2, W, L)
    assert math.isfinite(b) and 0.0 <= b <= L
    assert abs(a - b) <= L / 30 * (1 + 1e-12)


@pytest.fixture(scope="module")
def run():
    data = simulate(6, 900, participants=3, rng=4)
    r = select_dp_fed_sparse_bnsl(
        data.participants,
        epsilon=5.0,
        delta=1e-5,
        candidates=[{"clip": 1e-3}, {"clip": 1.0}],
        feature_bound=30.0,
        warm_start="none",
        rng=0,
    )  # simulated data: a seed is fine
    return data, r


def test_the_whole_selection_stays_within_the_target(run):
    _, r = run
    assert r.privacy.epsilon <= 5.0 and r.privacy.accountant == "rdp"
    for lg in r.ledger:  # both runs and both scores, per participant
        labels = {e.label.split("/")[0] for e in lg.entries}
        assert labels == {"candidate 0", "candidate 1"}
        assert sum(e.count for e in lg.entries if e.label.endswith("/score")) == 2
        assert compose_epsilon(lg.entries, 1e-5, "rdp") <= 5.0
    # the bisection leaves little on the table: each run got more than half of ε/J in ε terms
    assert 5.0 / 2 / 2 < r.info["epsilon_per_run"] < 5.0


def test_the_transcript_holds_every_run_and_score(run):
    _, r = run
    scores = [m for m in r.transcript if m.kind == "selection_score"]
    assert len(scores) == 2 * 3 and {m.participant for m in scores} == {0, 1, 2}
    assert len(r.transcript) > len(scores)


def test_warm_started_runs_put_their_warm_start_in_the_transcript():
    """With the default warm start (d = 6 <= 30) every candidate run's covariance-fit messages
    are in the selection's transcript, before that run's DP-PGCD rounds, and in the ledger."""
    data = simulate(6, 600, participants=2, rng=5)
    r = select_dp_fed_sparse_bnsl(
        data.participants,
        epsilon=5.0,
        delta=1e-5,
        candidates=[
            {"clip": 0.5, "rounds": 2, "local_iters": 2},
            {"clip": 1.0, "rounds": 2, "local_iters": 2},
        ],
        feature_bound=30.0,
        rng=0,
    )
    dense = [
        m
        for m in r.transcript
        if m.kind != "selection_score" and m.direction == "up" and type(m.payload).__name__ == "Dense"
    ]
    sparse = [m for m in r.transcript if type(m.payload).__name__ == "Sparse"]
    assert dense and sparse and dense[0].round < sparse[0].round
    for lg in r.ledger:
        assert sum(e.label.endswith("warm-start/covariance") for e in lg.entries) == 2
    assert r.privacy.epsilon <= 5.0


def test_a_hopeless_candidate_is_not_chosen(run):
    """clip = 1e-3 clips every gradient to nothing (an empty graph, all variance unexplained);
    clip = 1 learns edges. Margin: the BIC difference is N·d·ln(σ̂²_empty/σ̂²_fit) ≈ 5400 here
    (N·d = 5400), while the score noise (multiplier ≈ 6 on sensitivity L/n_k = 180/300 per
    participant, pooled over 3) moves ln σ̂² by about ±0.3, i.e. ±1600 BIC units: the hopeless
    candidate wins only if the noise is ~3.5 standard deviations against the good one."""
    data, r = run
    table = r.info["selection"]
    assert table[table["chosen"]]["clip"].item() == 1.0
    assert table[table["clip"] == 1e-3]["nnz"].item() == 0
    assert r.n_edges > 0


@pytest.mark.parametrize(
    "kwargs, exc, text",
    [
        (dict(candidates=[{"clip": 1.0}]), ValueError, "at least 2 settings"),
        (dict(candidates=[{"clip": 1.0}, {"eta": 2.0}]), ValueError, "sets ['eta']"),
        (dict(candidates="clip"), TypeError, "`candidates` must be a sequence"),
        (dict(candidates=[{"clip": 1.0}, 3]), TypeError, "`candidates`[1] must be a dict"),
        (
            dict(candidates=[{"clip": 1.0}, {"clip": 2.0}], centre="private"),
            ValueError,
            "`centre` must be 'declared'",
        ),
        (
            dict(candidates=[{"clip": 1.0}, {"clip": 2.0}], clip=3.0),
            TypeError,
            "`clip` is not a common setting",
        ),
        (dict(candidates=[{"clip": 1.0}, {"clip": 2.0}], score_share=1.0), ValueError, "`score_share`"),
        (dict(candidates=[{"clip": 1.0}] * 30, epsilon=1e-6), ValueError, "cannot pay for 30 runs"),
    ],
)
def test_bad_input(kwargs, exc, text):
    data = simulate(4, 200, participants=2, rng=0)
    args = dict(epsilon=1.0, delta=1e-5, feature_bound=10.0)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        select_dp_fed_sparse_bnsl(data.participants, **args)
    assert text in str(info.value)
