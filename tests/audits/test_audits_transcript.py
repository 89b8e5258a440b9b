"""The privacy loss of a DP-PGCD run's releases (dpbnsl.audits.transcript) and the
``dp-pgcd-transcript`` game built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbnsl.audits import audit, clopper_pearson_bound, run_game
from dpbnsl.audits.parallel import play
from dpbnsl.audits.transcript import transcript_loss
from dpbnsl.learners.linear.pgcd import PGCDNoise, new_state


def _mean_within(x, target, k=4.0):
    """|mean − target| ≤ k standard errors of the mean (sd/√n from the sample: the trials are
    independent, and n ≥ 2,000 makes the mean close to normal)."""
    return abs(x.mean() - target) <= k * x.std(ddof=1) / math.sqrt(x.size)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_the_loss_is_a_likelihood_ratio(epsilon):
    """ℓ = ln p′/p of the releases: E_D[e^ℓ] = 1 and E_D′[e^−ℓ] = 1 exactly, whatever the pair,
    a check of every term (a wrong σ, a selection probability of the wrong state, or a shadow that
    does not follow the run breaks it); and E_D[ℓ] = −KL(D‖D′) ≤ 0 ≤ KL(D′‖D) = E_D′[ℓ]."""
    g = run_game("dp-pgcd-transcript", epsilon=epsilon, delta=1e-5, trials=4000, rng=1)
    assert _mean_within(np.exp(g.scores0), 1.0)
    assert _mean_within(np.exp(-g.scores1), 1.0)
    assert g.scores0.mean() < 0 < g.scores1.mean()


def test_one_iteration_matches_the_gaussian_shift():
    """K = 1 on the game's design: the canary coordinate is selected with probability ≈ 1 in both
    worlds and its clipped gradient moves by exactly Δ_g = 2C_a/n, so ℓ ≈ N(∓μ²/2, μ²) with
    μ = Δ_g/σ = 1/m, the noise multiplier: the sample mean and variance of 4,000 runs per world
    within 4 standard errors (variance: sd of the sample variance ≈ μ²√(2/n))."""
    g = run_game("dp-pgcd-transcript", epsilon=2.0, delta=1e-5, trials=4000, local_iters=1, rng=2)
    mu = 1.0 / g.details["multiplier"]
    for scores, sign in ((g.scores0, -1), (g.scores1, 1)):
        assert _mean_within(scores, sign * mu**2 / 2)
        assert abs(scores.var(ddof=1) - mu**2) <= 4 * mu**2 * math.sqrt(2 / scores.size)


def test_the_transcript_sees_more_than_the_server():
    """The same pair, the same number of runs: the privacy loss of all releases bounds ε well above
    the server's one-number score (≈ 0.99 against 0.45 at ε = 4 with 5,000 runs per world),
    and both stay below the claim."""
    kw = dict(epsilon=4.0, delta=1e-5, trials=5000, rng=0)
    server, full = run_game("dp-pgcd", **kw), run_game("dp-pgcd-transcript", **kw)
    lb_server = clopper_pearson_bound(server.scores0, server.scores1, delta=1e-5).epsilon_lb
    lb_full = clopper_pearson_bound(full.scores0, full.scores1, delta=1e-5).epsilon_lb
    assert lb_full > 1.5 * lb_server and lb_full <= full.claimed_epsilon == server.claimed_epsilon
    assert full.mechanism == "dp-pgcd-transcript" and "releases" in full.details["score"]


@pytest.mark.parametrize("broken", [None, "no-clipping", "raw-smoothness"])
def test_correct_passes_and_broken_variants_are_flagged(broken):
    a = audit("dp-pgcd-transcript", epsilon=1.0, trials=2000, rng=0, broken=broken)
    assert a.expected, (broken, a.bound.epsilon_lb, a.claimed_epsilon)


def test_blocks_are_chunking_independent():
    """Seeded blocks like the other whole-protocol games: the same scores in one task or many."""
    one = play("dp-pgcd-transcript", epsilon=1.0, delta=1e-5, trials=450, rng=7)
    many = play("dp-pgcd-transcript", epsilon=1.0, delta=1e-5, trials=450, rng=7, chunk=2)
    assert np.array_equal(one.scores0, many.scores0) and np.array_equal(one.scores1, many.scores1)


def test_bad_score_and_lambda():
    with pytest.raises(ValueError, match="score"):
        run_game("dp-pgcd", epsilon=1.0, delta=1e-5, trials=10, score="oracle")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    M = (X * X).mean(axis=0) + 1.0
    z = np.zeros((3, 3))
    noise = PGCDNoise(1.0, 2.0)
    states = [new_state(X, z.copy(), z, z, M=M, lambda1=0.1, rho2=1.0, noise=noise) for _ in range(2)]
    with pytest.raises(ValueError, match="lambda1 = 0"):
        transcript_loss(*states, world=0, iters=1, noise=noise, rng=rng, ledger=None)
