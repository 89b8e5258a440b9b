"""The worst-case pair for DP-PGCD runs (the ``dp-pgcd-worst`` game)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbnsl.audits import clopper_pearson_bound, run_game
from dpbnsl.audits._pgcd_games import _RHO2, _calibration, _Design
from dpbnsl.audits._worst_pairs import WORST_LEVEL, WORST_UP, worst_step_design
from dpbnsl.learners.linear.pgcd import PGCDNoise, new_state, score_sensitivity


def _mean_within(x, target, k=4.0):
    """|mean − target| ≤ k standard errors (sd/√n from the sample; the trials are independent)."""
    return abs(x.mean() - target) <= k * x.std(ddof=1) / math.sqrt(x.size)


def _states(design, multiplier, clip=1.0):
    zero = np.zeros_like(design.beta)
    return [
        new_state(
            X,
            zero.copy(),
            zero,
            design.beta,
            M=design.m + _RHO2,
            lambda1=0.0,
            rho2=_RHO2,
            noise=PGCDNoise(clip, multiplier),
        )
        for X in design.worlds
    ]


def test_every_cross_coordinate_moves_by_the_full_sensitivity():
    """White box: on D and D′ every cross coordinate's clipped gradient differs by exactly
    Δ_g,a = 2C_a/n and its score by exactly ±Δ_s (up on the share ``WORST_UP``, down on the
    rest); every other coordinate is equal in both worlds and scores 0; D's competing scores all
    sit at L = 15λ_G."""
    m = _calibration(4.0, 1e-5, 1, 3).gumbel_multiplier
    design = _Design(*worst_step_design(d=10, n=400, clip=1.0, multiplier=m, up=WORST_UP))
    s0, s1 = _states(design, m)
    cross, n = design.cross, 400
    dg = 2.0 * s0.C_a[:, None] / n * np.ones((10, 10))
    np.testing.assert_allclose((s1.G - s0.G)[cross], dg[cross], rtol=1e-12)
    np.testing.assert_array_equal((s1.G - s0.G)[~cross], 0.0)
    ds, lam = score_sensitivity(s0), m * score_sensitivity(s0)
    moved = s1.S[cross] - s0.S[cross]
    np.testing.assert_allclose(np.abs(moved), ds, rtol=1e-9)
    assert np.sum(moved > 0) == round(WORST_UP * cross.sum())
    np.testing.assert_allclose(s0.S[cross], WORST_LEVEL * lam, rtol=1e-12)
    off = ~cross & ~np.eye(10, dtype=bool)
    np.testing.assert_allclose(s0.S[off], 0.0, atol=1e-12)


def test_the_loss_is_a_likelihood_ratio_and_carries_both_releases():
    """E_D[e^ℓ] = 1 and E_D′[e^−ℓ] = 1 (4,000 runs per world, 4 standard errors). The mean loss
    under D′ (the KL divergence) is close to the composition of K = 3 full Gaussian releases
    (μ²/2 each, μ = 1/m) and K two-point selections at the split 0.2 (KL of the up/down choice):
    0.375 was measured against 0.39 for the ideal pair (whose split stays 0.2 as coordinates are
    used up); required within 10 % of it, and twice the canary pair's 0.19."""
    g = run_game("dp-pgcd-worst", epsilon=4.0, delta=1e-5, trials=4000, rng=1)
    assert _mean_within(np.exp(g.scores0), 1.0) and _mean_within(np.exp(-g.scores1), 1.0)
    m = g.details["multiplier"]
    e0, p = 2.0 / m, WORST_UP
    p1 = p * math.exp(e0 / 2) / (p * math.exp(e0 / 2) + (1 - p) * math.exp(-e0 / 2))
    kl_sel = p1 * math.log(p1 / p) + (1 - p1) * math.log((1 - p1) / (1 - p))
    ideal = 3 * (0.5 / m**2 + kl_sel)
    assert 0.9 * ideal <= g.scores1.mean() <= ideal * 1.05
    assert (
        g.scores1.mean()
        > 1.8 * run_game("dp-pgcd-transcript", epsilon=4.0, delta=1e-5, trials=2000, rng=1).scores1.mean()
    )


def test_correct_passes_and_a_noise_deficit_and_no_clipping_are_flagged():
    """5,000 runs per world at ε = 1: the correct run stays below its claim; 30 % of the noise
    (noise_deficit=0.7: 1.36–1.41 on seeds 3 and 4) and unclipped gradients are caught by
    Clopper–Pearson. (The 20 % deficit needs about 10⁶ runs per world: the results page.)"""
    kw = dict(epsilon=1.0, delta=1e-5, trials=5000, rng=3)
    ok = run_game("dp-pgcd-worst", **kw)
    assert (
        clopper_pearson_bound(ok.scores0, ok.scores1, delta=1e-5, direction="both").epsilon_lb
        <= ok.claimed_epsilon
    )
    for extra in (dict(noise_deficit=0.7), dict(broken="no-clipping")):
        bad = run_game("dp-pgcd-worst", **kw, **extra)
        lb = clopper_pearson_bound(bad.scores0, bad.scores1, delta=1e-5, direction="both").epsilon_lb
        assert lb > bad.claimed_epsilon == ok.claimed_epsilon, extra


def test_the_worst_pair_needs_the_transcript_score():
    from dpbnsl.audits._pgcd_games import dp_pgcd_game

    with pytest.raises(ValueError, match="score='transcript'"):
        dp_pgcd_game(epsilon=1.0, delta=1e-5, trials=1, pair="worst")
    with pytest.raises(ValueError, match="`pair`"):
        dp_pgcd_game(epsilon=1.0, delta=1e-5, trials=1, pair="best")
    with pytest.raises(ValueError, match="noise_deficit"):
        run_game("dp-pgcd-worst", epsilon=1.0, delta=1e-5, trials=1, noise_deficit=1.0)
    # raw smoothness constants change nothing on the worst pairs (the canaries' squares agree):
    # refused rather than passed off as a negative control
    for game in ("dp-pgcd-worst", "dp-fed-sparse-bnsl-worst"):
        with pytest.raises(ValueError, match=f"for the '{game}' game"):
            run_game(game, epsilon=1.0, delta=1e-5, trials=1, broken="raw-smoothness")


def test_the_whole_run_pair_places_only_cross_coordinates_in_the_competition():
    """White box on the whole-run rows: at the protocol's start (B = W = β = 0, the learner's
    λ₁ = 0.1 and ρ₂) every cross coordinate's clipped gradient differs by exactly 2C_a/n between
    D and D′, the up pairs' gradients are positive and the down pairs' negative, and every other
    coordinate scores 0 while the cross coordinates score more than 15λ_G."""
    from dpbnsl.audits._pgcd_games import _learner_hyper
    from dpbnsl.audits._worst_pairs import worst_run_rows

    hyper = _learner_hyper(5, 3)
    m = _calibration(4.0, 1e-5, 5, 3).gumbel_multiplier
    X0, X1, m0 = worst_run_rows(d=8, clip=5.0, multiplier=m, lambda1=hyper["lambda1"], rho2=hyper["rho2"])
    zero = np.zeros((8, 8))
    s0, s1 = (
        new_state(
            X,
            zero.copy(),
            zero,
            zero,
            M=m0 + hyper["rho2"],
            lambda1=hyper["lambda1"],
            rho2=hyper["rho2"],
            noise=PGCDNoise(5.0, m),
        )
        for X in (X0, X1)
    )
    S = np.arange(8) < 4
    cross, n = S[:, None] != S[None, :], X0.shape[0]
    np.testing.assert_allclose(
        (s1.G - s0.G)[cross], (2 * s0.C_a[:, None] / n * np.ones((8, 8)))[cross], rtol=1e-12
    )
    assert (
        np.sum(s0.G[cross] > 0) == 8 and np.sum(s0.G[cross] < 0) == 24
    )  # a matching: 4 pairs, 2 coordinates each
    lam = m * score_sensitivity(s0)
    assert s0.S[cross].min() > 15 * lam
    off = ~cross & ~np.eye(8, dtype=bool)
    np.testing.assert_array_equal(s0.S[off], 0.0)


def test_the_whole_run_game_is_a_likelihood_ratio_with_most_of_the_loss():
    """300 whole runs per world (ε = 4, T = 5 rounds of K = 3 iterations, one participant, d = 6):
    E_D[e^ℓ] = 1 and E_D′[e^−ℓ] = 1 within 4 standard errors, and the KL divergence (mean loss
    under D′; 0.35 measured, against 0.063 on the simulated canary pair) is above 0.25 — the mean
    minus 4 standard errors of 300 runs (s.e. ≈ 0.05) clears it."""
    g = run_game("dp-fed-sparse-bnsl-worst", epsilon=4.0, delta=1e-5, trials=300, d=6, rng=0)
    assert _mean_within(np.exp(g.scores0), 1.0) and _mean_within(np.exp(-g.scores1), 1.0)
    assert g.scores1.mean() > 0.25 > 0 > g.scores0.mean()
    assert g.mechanism == "dp-fed-sparse-bnsl-worst" and g.details["pair"] == "worst"
    with pytest.raises(ValueError, match="without the warm start"):
        run_game("dp-fed-sparse-bnsl", epsilon=1.0, delta=1e-5, trials=1, pair="worst")


def test_the_whole_run_games_noise_deficit_keeps_the_claim():
    """The negative control: the DP-PGCD releases use (1 − p)·m, the claim stays that of m."""
    kw = dict(epsilon=4.0, delta=1e-5, d=6, trials=2, rng=0)
    ok = run_game("dp-fed-sparse-bnsl-worst", **kw)
    bad = run_game("dp-fed-sparse-bnsl-worst", noise_deficit=0.2, **kw)
    assert bad.details["multiplier"] == pytest.approx(0.8 * ok.details["multiplier"])
    assert bad.claimed_epsilon == ok.claimed_epsilon and bad.details["noise_deficit"] == 0.2
    with pytest.raises(ValueError, match="noise_deficit"):
        run_game("dp-fed-sparse-bnsl-worst", epsilon=1.0, delta=1e-5, trials=1, noise_deficit=-0.5)


@pytest.mark.slow
def test_the_whole_run_games_noise_deficit_raises_the_loss():
    """1,000 runs per world (d = 6): the loss is the deficient mechanism's, E_D[e^ℓ] = 1 within 4
    standard errors, and its mean under D′ (the KL divergence) rises from about 0.35 to about
    0.55 with 20 % of the noise missing (a Gaussian test's KL scales as 1/(1 − p)²). The s.e. of
    the mean at 1,000 runs is about 0.033 (sd ≈ 1.03), so 0.45 is three of them from either."""
    bad = run_game(
        "dp-fed-sparse-bnsl-worst", epsilon=4.0, delta=1e-5, trials=1000, d=6, noise_deficit=0.2, rng=0
    )
    assert _mean_within(np.exp(bad.scores0), 1.0)
    assert bad.scores1.mean() > 0.45


@pytest.mark.slow
def test_the_worst_pair_bound_at_epsilon_4():
    """2·10⁵ runs per world at claimed ε = 4 (about 2.5 CPU-minutes): Clopper–Pearson on the
    privacy loss stays below the claim and above 2.2. On simulated losses of the ideal pair the
    bound is about 2.5 at 2·10⁵ runs (2.97 on the real pair at 10⁶, the results page); 2.2 leaves
    room for the run-to-run spread of the far tail (sd ≈ 0.1 at this size)."""
    g = run_game("dp-pgcd-worst", epsilon=4.0, delta=1e-5, trials=200_000, rng=4)
    lb = clopper_pearson_bound(g.scores0, g.scores1, delta=1e-5).epsilon_lb
    assert 2.2 <= lb <= g.claimed_epsilon
