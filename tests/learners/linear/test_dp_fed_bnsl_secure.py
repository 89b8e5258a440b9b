"""DP-Fed-BNSL under secure aggregation: the guarantee, determinism, the noise it saves against the
local release, the options of the trust model, and the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
from dpbnsl.learners.linear.dp_fed_bnsl_secure import dp_fed_bnsl_secure
from dpbnsl.metrics import count_accuracy
from dpbnsl.simulation import simulate


@pytest.fixture(scope="module")
def data():
    return simulate(6, 6000, participants=6, rng=3)


def _run(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp_fed_bnsl(
            data.participants, epsilon=1.0, delta=1e-5, clip_norm=8.0, aggregation="secure", **kw
        )


def test_guarantee_ledgers_and_statement(data):
    r = _run(data, rng=0)
    assert r.params["aggregation"] == "secure" and r.is_dag
    assert 0.99 < r.privacy.epsilon <= 1.0
    assert len(r.ledger) == 6 and all(led.epsilon(1e-5) <= 1.0 for led in r.ledger)
    assert "secure aggregation" in r.privacy.public["trust"] and "t = 0" in r.privacy.public["trust"]
    assert r.info["plan"].honest == 6


def test_same_seed_same_result_and_fresh_noise_otherwise(data):
    a, b, c = _run(data, rng=5), _run(data, rng=5), _run(data, rng=6)
    assert np.array_equal(a.W_raw, b.W_raw)
    assert not np.array_equal(a.info["release"].S, c.info["release"].S)


def test_the_joint_release_is_closer_to_the_pooled_covariance_than_the_local_average(data):
    """The planned noise sd of the joint release is below 0.6 of the local releases' average
    (√6 = 2.45 less noise, less the RDP conversion and the grid's room), and the observed error
    against the clipped pooled covariance follows: the Frobenius norms of 21 independent entries
    have a relative sd of about 1/√42 = 15 % each, so their ratio stays within 1.5× the planned
    one (beyond 2 sd)."""
    from dpbnsl.mechanisms import clip_rows

    X = np.vstack(data.participants)
    Xc = clip_rows(X, norm=8.0)
    target = Xc.T @ Xc / len(X)
    secure = _run(data, rng=1).info["release"].S
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = dp_fed_bnsl(
            data.participants, epsilon=1.0, delta=1e-5, clip_norm=8.0, psd=False, rng=1, max_rounds=1
        )
    averaged = np.mean(local.info["covariances"], axis=0)
    planned = _run(data, rng=1).info["noise_sd"] / (local.info["sigma"][0] / np.sqrt(6))
    assert planned < 0.6
    assert np.linalg.norm(secure - target) < 1.5 * planned * np.linalg.norm(averaged - target)


def test_declared_dropouts_add_noise_when_everyone_contributes(data):
    base, t2 = _run(data, rng=2), _run(data, rng=2, dropouts=2)
    # shares sized for 4 honest of 6: the released noise variance is 6/4 of the needed one
    assert t2.info["noise_sd"] == pytest.approx(base.info["noise_sd"] * np.sqrt(6 / 4), rel=0.05)
    assert "t = 2" in t2.privacy.public["trust"]


def test_ddg_noise_runs_and_is_accounted(data):
    r = _run(data, rng=0, noise="ddg")
    assert r.privacy.epsilon <= 1.0 and r.info["plan"].noise == "ddg"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(aggregation="central"), "`aggregation` must be one of"),
        (dict(centre="private"), "does not take \\['centre'\\]"),
        (dict(calibration="zcdp"), "does not take \\['calibration'\\]"),
    ],
)
def test_settings_of_the_other_trust_model_are_refused(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        dp_fed_bnsl(
            data.participants, epsilon=1.0, delta=1e-5, clip_norm=8.0, **{"aggregation": "secure", **kwargs}
        )


def test_secure_options_are_refused_under_local_aggregation(data):
    with pytest.raises(ValueError, match='`dropouts` applies to aggregation="secure" only'):
        dp_fed_bnsl(data.participants, epsilon=1.0, delta=1e-5, clip_norm=8.0, dropouts=1)


def test_dropouts_must_leave_an_honest_share(data):
    with pytest.raises(ValueError, match="`dropouts`"):
        dp_fed_bnsl_secure(data.participants, epsilon=1.0, delta=1e-5, clip_norm=8.0, dropouts=6)


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "min_tpr", "max_shd"), [(1.0, 0.8, 8.0), (0.5, 0.6, None)])
def test_utility_at_d20_on_held_out_seeds(epsilon, min_tpr, max_shd):
    """The issue's targets at d = 20 (10 × 1000 rows, public clip 10): at ε = 1, TPR ≥ 0.8 and
    SHD ≤ 8; at ε = 0.5, TPR ≥ 0.6; on average over seeds 0-4 (the penalty rule was set on seeds
    100-104). The results page's runs (other noise seeds) gave 0.86 / 5.0 and 0.65 / 11.0; these
    noise seeds give 0.74 / 7.6 at ε = 0.5."""
    tpr, shd = [], []
    for s in range(5):
        d = simulate(20, 10_000, participants=10, rng=s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = dp_fed_bnsl_secure(d.participants, epsilon=epsilon, delta=1e-5, clip_norm=10.0, rng=1000 + s)
        a = count_accuracy(d.B_true, r.W)
        tpr.append(a.tpr)
        shd.append(a.shd)
    assert np.mean(tpr) >= min_tpr
    assert max_shd is None or np.mean(shd) <= max_shd
