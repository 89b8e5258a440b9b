"""DP-Fed-Sparse-BNSL with its warm start released jointly under secure aggregation: the plan never
overshoots, the warm phase is one secure round, the participant refuses a server that inflates P,
and the settings of the other trust model are refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import ZCDpEvent

from dpbnsl.accounting import compose_epsilon, event_rho
from dpbnsl.federation import Masked
from dpbnsl.federation.guard import Refusal
from dpbnsl.federation.protocol import SETUP_ROUND, n_samples_reply
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from dpbnsl.learners.linear.hosted_sparse import DPFedSparseParticipant
from dpbnsl.learners.linear.sparse_plan import plan
from dpbnsl.simulation import simulate


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0])
@pytest.mark.parametrize(("sizes", "dropouts"), [((1000,) * 10, 0), ((1000,) * 10, 3), ((300, 500, 800), 1)])
def test_the_secure_plan_never_overshoots_and_saves_noise(epsilon, sizes, dropouts):
    """The joint warm start spends at most the warm share's ρ (the distributed discrete Gaussian is
    pure zCDP), the whole run at most ε; against the local warm start's Gaussian release of the
    same ρ, the joint release's noise per covariance entry is smaller when no share is missing."""
    kw = dict(epsilon=epsilon, delta=1e-5, n_k=sizes, feature_bound=100.0, warm_clip_norm=10.0)
    secure = plan(20, aggregation="secure", dropouts=dropouts, **kw)
    local = plan(20, **kw)
    assert secure.has_warm and secure.m_warm is None
    warm = [e for e in secure.prior if isinstance(e.event, ZCDpEvent)]
    assert len(warm) == 1
    rho_local = event_rho(next(e.event for e in local.prior if e.label == warm[0].label))[0]
    assert event_rho(warm[0].event)[0] <= rho_local * (1 + 1e-9)
    assert compose_epsilon(secure.entries(), 1e-5, "rdp") <= epsilon
    # the local releases averaged by the rows: m·√2R²·√Σn_k² / N per entry
    N = sum(sizes)
    local_sd = local.m_warm * math.sqrt(2.0) * 100.0 * math.sqrt(len(sizes)) / N
    if len(set(sizes)) == 1 and dropouts == 0:
        assert secure.warm_joint.covariance_sd < 0.5 * local_sd


@pytest.fixture(scope="module")
def data():
    return simulate(6, 6000, participants=4, rng=2)


def _run(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp_fed_sparse_bnsl(
            data.participants, epsilon=2.0, delta=1e-5, feature_bound=50.0, warm_clip_norm=8.0, **kw
        )


def test_the_warm_phase_is_one_secure_round(data):
    r = _run(data, aggregation="secure", dropouts=1, rng=0)
    warm = r.info["warm_start"]
    assert warm["aggregation"] == "secure" and warm["plan"].honest == 3
    shares = [m for m in warm["transcript"] if isinstance(m.payload, Masked)]
    assert len(shares) == 4 and all(m.round == 0 for m in shares)
    assert [m.kind for m in warm["transcript"]].count("secure_sum") == 1
    assert r.privacy.epsilon <= 2.0 and "t = 1" in r.privacy.public["trust"]
    assert r.params["aggregation"] == "secure" and r.is_dag
    assert all(len(led.entries) >= 2 for led in r.ledger)


def test_same_seed_same_run(data):
    a, b = _run(data, aggregation="secure", rng=4), _run(data, aggregation="secure", rng=4)
    assert np.array_equal(a.W_raw, b.W_raw)


def test_a_participant_refuses_counts_other_than_the_studys(data):
    X = data.participants[0]
    settings = dict(
        epsilon=2.0,
        delta=1e-5,
        feature_bound=50.0,
        warm_clip_norm=8.0,
        aggregation="secure",
        dropouts=0,
        participants=4,
        n_total=4 * X.shape[0],
    )
    p = DPFedSparseParticipant(
        X, settings=settings, participant=0, rng=np.random.default_rng(0), budget=(2.0, 1e-5)
    )
    p.respond("rounds", SETUP_ROUND, None)
    reply = n_samples_reply((X.shape[0],) * 5, ("warm", 0))
    with pytest.raises(Refusal, match="the study declared P = 4"):
        p.respond("warm", 0, reply.for_participant(0))
    assert len(p.ledger.entries) == 0  # nothing was released
    q = DPFedSparseParticipant(
        X, settings=settings, participant=0, rng=np.random.default_rng(0), budget=(2.0, 1e-5)
    )
    q.respond("rounds", SETUP_ROUND, None)
    other = n_samples_reply((X.shape[0], X.shape[0], X.shape[0], 5 * X.shape[0]), ("warm", 0))
    with pytest.raises(Refusal, match="nothing released"):  # P right, N not the study's
        q.respond("warm", 0, other.for_participant(0))
    assert len(q.ledger.entries) == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(aggregation="secure", warm_start="none"), 'warm_start="none" has none'),
        (dict(dropouts=1), '`dropouts` applies to aggregation="secure" only'),
        (dict(aggregation="secure", dropouts=4), "`dropouts`"),
        (dict(aggregation="shared"), "`aggregation`"),
    ],
)
def test_bad_settings_are_refused(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        _run(data, **kwargs)
