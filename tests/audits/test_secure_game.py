"""The audit of the jointly noised covariance under secure aggregation: the game runs the
protocol's own steps (its scores have the protocol's distribution, their mean and variance the
plan's), the correct mechanism is never flagged and a missing noise share is."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbnsl.audits import audit, run_game
from dpbnsl.federation.protocol import run_protocol
from dpbnsl.learners.covariance_release import SecureCovarianceParticipant, SecureCovarianceServer

DELTA = 1e-5


@pytest.fixture(scope="module")
def game():
    return run_game("secure-covariance", epsilon=1.0, delta=DELTA, trials=20_000, rng=3)


def test_scores_have_the_plans_mean_shift_and_variance(game):
    """World 0's scores are centred at 0 and both worlds' variances are the plan's noise variance
    (the P shares' total; the rounding of 40 rows adds < 10 to a variance of about 10¹⁵):
    20,000 draws give a mean with sd √(var/20000) and a variance within 1 % (sd √(2/20000)), so
    4 sd bounds both. The shift is the canary's (γR)²·√2 — the sensitivity √2·B scaled by
    ((√B − √d)/√B)², as the grid leaves room for the rounding."""
    var = game.details["variance"]
    for scores in (game.scores0, game.scores1):
        assert scores.var() == pytest.approx(var, rel=4 * math.sqrt(2 / 20_000))
    assert abs(game.scores0.mean()) < 4 * math.sqrt(var / 20_000)
    B, d = game.details["norm_bound"], 3
    expected = game.details["sensitivity"] * ((math.sqrt(B) - math.sqrt(d)) / math.sqrt(B)) ** 2
    assert game.details["shift"] == pytest.approx(expected, rel=1e-3)
    assert (game.scores1.mean() - game.scores0.mean()) == pytest.approx(
        game.details["shift"], abs=4 * math.sqrt(2 * var / 20_000)
    )


def test_the_game_draws_what_the_protocol_releases(game):
    """1,000 runs of the real protocol (participants' shares, the server's decoding) on world 0's
    data give the projection the game scores: a two-sample Kolmogorov–Smirnov test at 0.1 %."""
    rows = game.details["rows"]
    settings = dict(epsilon=1.0, delta=DELTA, clip_norm=1.0, participants=2, n_total=40)
    plan_scale = None
    projections = []
    root = np.random.default_rng(11)
    for _ in range(1000):
        parts = [
            SecureCovarianceParticipant(X, settings=settings, participant=k, rng=g, budget=(1.0, DELTA))
            for k, (X, g) in enumerate(zip(rows[0], root.spawn(2)))
        ]
        server = SecureCovarianceServer(settings=settings, n_participants=2, fit=lambda release: release)
        run_protocol(server, parts)
        release = server.learned()
        plan_scale = server.plan.scale**2 * release.n  # S = integer sum / (γ²N)
        iu = np.triu_indices(3)
        decoded = release.S[iu] * plan_scale - game.details["mean0"]
        projections.append(decoded @ game.details["direction"])
    assert stats.ks_2samp(projections, game.scores0[:1000]).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_the_correct_mechanism_passes_and_a_missing_share_is_flagged(epsilon):
    """10⁵ trials per world. The correct release: neither bound above the claim (CP bounds fail
    with probability α = 5 %; the seed is fixed). One of two noise shares missing: twice less noise
    variance, a Gaussian-profile ε about 1.4 times the claim's, which the μ-GDP bound finds
    (measured 1.16 at ε = 1 and 4.59 at ε = 4)."""
    ok = audit("secure-covariance", epsilon=epsilon, trials=100_000, rng=1)
    assert not ok.flagged and ok.gdp_flagged is False
    assert ok.gdp.epsilon_lb > 0.6 * epsilon  # the audit is not vacuous
    bad = audit("secure-covariance", epsilon=epsilon, trials=100_000, broken="missing-share", rng=1)
    assert bad.gdp_flagged is True


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="`dropouts`"):
        run_game("secure-covariance", epsilon=1.0, delta=DELTA, trials=10, dropouts=2)
    with pytest.raises(ValueError, match="`broken`"):
        run_game("secure-covariance", epsilon=1.0, delta=DELTA, trials=10, broken="noise-halved")
    with pytest.raises(ValueError, match="`participants`"):
        run_game("secure-covariance", epsilon=1.0, delta=DELTA, trials=10, participants=1)


def test_with_declared_dropouts_the_game_plays_the_colluders_worst_case():
    """P = 3, t = 1: the colluder's noise is subtracted by the server, so the two honest shares
    alone protect the canary — the claim's own worst case, which passes; one more share missing
    (beyond the declared t) is flagged by the μ-GDP bound at 10⁵ trials (measured 0.83 and 1.26
    against a claim of 1)."""
    kw = dict(epsilon=1.0, trials=100_000, rng=1, participants=3, dropouts=1)
    ok = audit("secure-covariance", **kw)
    assert not ok.flagged and ok.gdp_flagged is False and ok.gdp.epsilon_lb > 0.6
    assert audit("secure-covariance", broken="missing-share", **kw).gdp_flagged is True
