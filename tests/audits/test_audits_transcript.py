"""The privacy loss of a DP-PGCD run's releases (dpbnsl.audits.transcript) and the
``dp-pgcd-transcript`` game built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.audits import audit, clopper_pearson_bound, run_game
from dpbnsl.audits.parallel import play
from dpbnsl.audits.transcript import transcript_loss
from dpbnsl.learners.linear.pgcd import PGCDNoise, new_state, run_iterations


def _mean_within(x, target, k=4.0):
    """|mean − target| ≤ k standard errors of the mean (sd/√n from the sample: the trials are
    independent, and n ≥ 2,000 makes the mean close to normal)."""
    return abs(x.mean() - target) <= k * x.std(ddof=1) / math.sqrt(x.size)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_the_loss_is_a_likelihood_ratio(epsilon):
    """ℓ = ln p′/p of the releases: E_D[e^ℓ] = 1 and E_D′[e^−ℓ] = 1 exactly, whatever the pair (a
    wrong σ, or a shadow that does not follow the run, breaks it; the term-by-term check below
    covers what this pair cannot see); and E_D[ℓ] = −KL(D‖D′) ≤ 0 ≤ KL(D′‖D) = E_D′[ℓ]."""
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


def test_bad_score():
    with pytest.raises(ValueError, match="score"):
        run_game("dp-pgcd", epsilon=1.0, delta=1e-5, trials=10, score="oracle")


def test_the_released_gradients_are_handed_over():
    """run_iterations(trace=[...]) appends each released noisy gradient: with λ₁ = 0 the update
    moves B_ab by exactly −g̃/M_a (to rounding), and without the list nothing changes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    M = (X * X).mean(axis=0) + 1.0
    z = np.zeros((4, 4))
    noise = PGCDNoise(1.0, 2.0)
    runs = []
    for released in ([], None):
        state = new_state(X, z.copy(), z, z, M=M, lambda1=0.0, rho2=1.0, noise=noise)
        sel = run_iterations(
            state, 1, noise=noise, rng=np.random.default_rng(1), ledger=PrivacyLedger(), trace=released
        )
        runs.append((state.B.copy(), sel, released))
    (B, sel, out), (B2, sel2, _) = runs
    a, b = divmod(int(sel[0]), 4)
    assert len(out) == 1 and B[a, b] == pytest.approx(-out[0] / M[a], rel=1e-12)
    assert np.array_equal(B, B2) and np.array_equal(sel, sel2)


SMALL = dict(d=4, n=50, rounds=2, local_iters=2)


def test_the_whole_protocol_loss_is_a_likelihood_ratio():
    """DP-Fed-Sparse-BNSL, participant 0 shadowed over the rounds (small design, ε = 4, 2,000 runs
    per world): E_D[e^ℓ] = 1 and E_D′[e^−ℓ] = 1 within 4 standard errors, and KL signs."""
    g = run_game("dp-fed-sparse-bnsl-transcript", epsilon=4.0, delta=1e-5, trials=2000, rng=1, **SMALL)
    assert _mean_within(np.exp(g.scores0), 1.0)
    assert _mean_within(np.exp(-g.scores1), 1.0)
    assert g.scores0.mean() < 0 < g.scores1.mean()
    assert g.mechanism == "dp-fed-sparse-bnsl-transcript"


@pytest.mark.parametrize("broken", [None, "raw-smoothness"])
def test_whole_protocol_correct_passes_and_broken_is_flagged(broken):
    a = audit("dp-fed-sparse-bnsl-transcript", epsilon=1.0, trials=300, rng=0, broken=broken, **SMALL)
    assert a.expected, (broken, a.bound.epsilon_lb, a.claimed_epsilon)


def test_the_transcript_needs_the_run_without_warm_start():
    with pytest.raises(ValueError, match="warm_start=False"):
        run_game("dp-fed-sparse-bnsl-transcript", epsilon=1.0, delta=1e-5, trials=2, warm_start=True)


@pytest.mark.parametrize("variant", ["correct", "raw-smoothness", "no-clipping"])
def test_the_loss_equals_an_independent_computation(variant):
    """Replays the run with the same draws and recomputes ℓ term by term: the exponential
    mechanism's log-probabilities (scipy's logsumexp of s/λ, λ = m·Δ_s from
    clip_score_sensitivity with each world's own constants) and the Gaussian log-densities
    (scipy.stats.norm, σ = m·2C_a/n with each world's own C_a), on fresh states of both worlds that
    apply the releases; λ₁ > 0, and the variants where M or the clipping differ between the
    worlds. transcript_loss must agree to 1e-9 (a missing selection term, or a term computed from
    the wrong world's state or constants, is off by 17% or more here)."""
    from scipy import stats
    from scipy.special import logsumexp

    from dpbnsl.audits._pgcd_games import UnclippedState
    from dpbnsl.mechanisms import clip_bounds, clip_score_sensitivity

    rng = np.random.default_rng(3)
    n, d, lam, C, mult, K = 40, 4, 0.05, 1.0, 1.5, 6
    X = [rng.normal(size=(n, d))]
    X.append(X[0].copy())
    X[1][0] = [30.0, -25.0, 40.0, 10.0]
    Ms = [(X[0] ** 2).mean(axis=0) + 1.0]
    Ms.append((X[1] ** 2).mean(axis=0) + 1.0 if variant == "raw-smoothness" else Ms[0])
    noise = PGCDNoise(C, mult)

    def make(w):
        z = np.zeros((d, d))
        if variant == "no-clipping":
            return UnclippedState(X[w], z.copy(), z, z, Ms[w], lam, 1.0, clip_bounds(Ms[w], C))
        return new_state(X[w], z.copy(), z, z, M=Ms[w], lambda1=lam, rho2=1.0, noise=noise)

    for world in (0, 1):
        ell = transcript_loss(
            make(world), make(1 - world), world=world, iters=K, noise=noise,
            rng=np.random.default_rng(9), ledger=PrivacyLedger(),
        )  # fmt: skip
        states, draws, ref = [make(0), make(1)], np.random.default_rng(9), 0.0
        for _ in range(K):
            before = [(s.S.copy(), s.G.copy()) for s in states]
            out = []
            (flat,) = run_iterations(
                states[world], 1, noise=noise, rng=draws, ledger=PrivacyLedger(), trace=out
            )
            a, b = divmod(int(flat), d)
            states[1 - world].update(a, b, out[0])
            for w, sign in ((1, 1.0), (0, -1.0)):
                S, G = before[w]
                logits = S.ravel() / (mult * clip_score_sensitivity(Ms[w], C, n))
                ref += sign * (logits[flat] - logsumexp(logits))
                sd = mult * 2.0 * clip_bounds(Ms[w], C)[a] / n
                ref += sign * stats.norm.logpdf(out[0], loc=G[a, b], scale=sd)
        assert ell == pytest.approx(ref, rel=1e-9, abs=1e-9), (variant, world)


def test_a_zero_multiplier_is_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    z = np.zeros((3, 3))
    states = [
        new_state(X, z.copy(), z, z, M=np.ones(3), lambda1=0.0, rho2=1.0, noise=PGCDNoise(1.0, 1.0))
        for _ in range(2)
    ]
    with pytest.raises(ValueError, match="positive noise multiplier"):
        transcript_loss(*states, world=0, iters=1, noise=PGCDNoise(1.0, 0.0), rng=rng, ledger=PrivacyLedger())


def test_bad_score_for_the_whole_protocol_game():
    with pytest.raises(ValueError, match="`score` must be 'server' or 'transcript'"):
        run_game("dp-fed-sparse-bnsl", epsilon=1.0, delta=1e-5, trials=2, score="oracle")
