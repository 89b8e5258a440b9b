"""One-run audits with canary participants (dpbnsl.audits.canary_participants)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbnsl.accounting.gaussian import gaussian_epsilon
from dpbnsl.audits import canary_participant_audit
from dpbnsl.audits import canary_participants as module


def test_the_cosine_reads_a_canarys_own_direction():
    """A release that is exactly one canary's contribution has cosine 1 with it; ‖triu(uuᵀ)‖² is
    (1 + Σuᵢ⁴)/2 for a unit u (the identity behind μ_u = ‖t‖/(√2·z))."""
    rng = np.random.default_rng(0)
    U = module._unit_rows(5, 7, rng)
    cos, norms = module._cosines(3.0 * np.outer(U[2], U[2]), U)
    assert cos[2] == pytest.approx(1.0) and np.all(cos <= 1 + 1e-12)
    np.testing.assert_allclose(norms**2, (1 + np.sum(U**4, axis=1)) / 2)
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0)


def test_the_scores_carry_the_canaries_claimed_signal():
    """ε = 4 (z = 1.08), 40 participants × 10 canaries × 3 runs (1,200 canaries) on d = 60: the
    cosines' mean difference over their s.d. estimates the canaries' average μ_u = ‖t‖/(√2·z)
    (about 0.47). Its standard error is √(1/n_in + 1/n_out) ≈ 0.058 (interference between the
    nearly orthogonal canaries of a participant adds well under 1 % to the variance), so it is
    within 4 standard errors. The canaries' claim μ_c is the largest μ_u, about half the release's
    claimed μ (between √(1 + 1/d)/2 and 1/√2 of it, since ‖t‖² = (1 + Σuᵢ⁴)/2 with
    1/d ≤ Σuᵢ⁴ ≤ 1); nothing is flagged and no matrix was projected."""
    r = canary_participant_audit(epsilon=4.0, canaries=10, runs=3, rng=0)
    s, t = r.scores, r.truths
    assert s.size == 1200 and r.projected == 0 and r.canaries_per_participant == 10
    mu_hat = (s[t > 0].mean() - s[t < 0].mean()) / math.sqrt(
        (s[t > 0].var(ddof=1) + s[t < 0].var(ddof=1)) / 2
    )
    mu_u = float(np.mean(r.norms)) / math.sqrt(2) * r.claimed_mu
    se = math.sqrt(1 / np.sum(t > 0) + 1 / np.sum(t < 0))
    assert abs(mu_hat - mu_u) < 4 * se
    assert r.canary_mu == pytest.approx(np.max(r.norms) / math.sqrt(2) * r.claimed_mu)
    assert math.sqrt(1 + 1 / 60) / 2 <= r.canary_mu / r.claimed_mu <= 1 / math.sqrt(2)
    assert r.claimed_epsilon == pytest.approx(4.0, abs=1e-3) and r.canary_epsilon < r.claimed_epsilon
    assert not r.independent and not r.flagged and not r.mechanism_flagged


def test_a_large_deficit_refutes_the_stated_mechanism():
    """60 % of the noise missing (true μ_u ≈ 0.47/0.4 = 1.18 against μ_c ≈ 0.5): 600 canaries, one
    per participant, so independent. Read as trials (Hoeffding's slack at about 300 a side: 0.07
    in AUC, 0.2 in μ) they give μ_lb ≈ 0.9, above μ_c: the stated mechanism is refuted. The
    shift estimate's μ̂ has s.e. √(1/300 + 1/300) ≈ 0.08, so a correct release stays below ε(δ)
    of μ = 0.47 + 4 × 0.08 = 0.79 (3.3 at δ = 10⁻⁵); this one is far above it (about 5.6)."""
    r = canary_participant_audit(epsilon=4.0, d=30, participants=60, runs=10, noise_deficit=0.6, rng=1)
    assert r.scores.size == 600 and r.run_epsilon > 4.0 and r.independent
    assert r.trials is not None and r.trials.mu_lb > r.canary_mu and r.mechanism_flagged
    assert r.estimate is not None and r.estimate.epsilon_shift > gaussian_epsilon(0.79, 1e-5)


def _short_off_the_diagonal(monkeypatch, keep: float) -> None:
    """A broken DP-Fed-BNSL whose off-diagonal noise is ``keep`` times what it should be (the
    diagonal's is intact): the release is rebuilt from the correct one's noise."""
    from dpbnsl.learners.linear import hosted_fed_bnsl
    from dpbnsl.mechanisms import clip_rows
    from dpbnsl.mechanisms.covariance import release_covariance

    def broken(X, *, clip_norm, multiplier, psd_floor, rng):
        S, release = release_covariance(
            X, clip_norm=clip_norm, multiplier=multiplier, psd_floor=None, rng=rng
        )
        Xc = clip_rows(X, norm=clip_norm)
        exact = Xc.T @ Xc / X.shape[0]
        scale = np.full(S.shape, keep)
        np.fill_diagonal(scale, 1.0)
        return exact + (S - exact) * scale, release

    monkeypatch.setattr(hosted_fed_bnsl, "release_covariance", broken)


@pytest.mark.slow
def test_noise_missing_off_the_diagonal_is_seen_here_and_not_by_isolated_canaries(monkeypatch):
    """The coverage canary participants add. With 60 % of the off-diagonal noise missing (below
    1/√2 of it: the privacy claim itself fails, on an off-diagonal pair), the isolated canaries
    (diagonal entries only) score exactly as on the correct release; the canary participants'
    noise along triu(uuᵀ), 95 % of it off the diagonal, shrinks to about half its s.d., so their
    μ is about 0.97 against μ_c ≈ 0.52 (d = 30). Read as trials, 800 independent canaries
    (Hoeffding's slack at about 400 a side: 0.06 in AUC) give μ_lb ≈ 0.65 (0.647 when written)
    and refute the stated mechanism; the correct release on the same seed gives 0.29."""
    from dpbnsl.audits import covariance_one_run_audit

    kw = dict(epsilon=4.0, d=30, participants=100, runs=8, rng=0)
    ok = canary_participant_audit(**kw)
    iso_ok = covariance_one_run_audit(epsilon=4.0, d=20, participants=10, rng=0)
    _short_off_the_diagonal(monkeypatch, 0.4)
    bad = canary_participant_audit(**kw)
    iso_bad = covariance_one_run_audit(epsilon=4.0, d=20, participants=10, rng=0)
    np.testing.assert_allclose(iso_bad.scores, iso_ok.scores, rtol=0, atol=1e-8)
    assert not iso_bad.flagged and not iso_bad.trials_flagged
    assert bad.independent and not ok.mechanism_flagged
    assert bad.mechanism_flagged and bad.trials is not None and bad.trials.mu_lb > bad.canary_mu


def test_the_secure_release_is_read_from_its_decoded_sum():
    """Under secure aggregation a run's canaries share one matrix; the claim is the ledger's RDP
    ε; over 6 runs of 8 participants × 3 canaries (144 canaries) nothing is flagged."""
    r = canary_participant_audit(
        epsilon=4.0, learner="dp-fed-bnsl-secure", d=20, participants=8, canaries=3, runs=6, rng=2
    )
    assert r.scores.size == 144 and r.claimed_epsilon <= 4.0 and not r.flagged
    assert math.sqrt(1 + 1 / 20) / 2 <= r.canary_mu / r.claimed_mu <= 1 / math.sqrt(2)
    assert not r.independent and not r.mechanism_flagged


def test_every_local_release_gives_the_same_scores_on_the_same_seed():
    kw = dict(epsilon=2.0, d=12, participants=6, canaries=2, rng=5)
    ref = canary_participant_audit(**kw)
    for learner in ("dp-sortnregress", "dp-cov-pc"):
        r = canary_participant_audit(learner=learner, **kw)
        np.testing.assert_array_equal(r.truths, ref.truths)
        np.testing.assert_allclose(r.scores, ref.scores, rtol=0, atol=1e-8)


def test_the_warm_start_is_audited_against_its_share():
    """DP-Fed-Sparse-BNSL's warm start: the release's share of the run's budget is the claim, and
    the canaries' claim is below it."""
    r = canary_participant_audit(
        epsilon=4.0, learner="dp-fed-sparse-bnsl", d=8, participants=3, canaries=2, rng=0
    )
    assert r.scores.size == 6 and r.run_epsilon == 4.0 and r.projected == 0
    assert 0 < r.canary_epsilon < r.claimed_epsilon < 4.0 and not r.flagged


def test_too_few_canaries_give_no_trial_readings():
    r = canary_participant_audit(epsilon=4.0, d=4, participants=1, rng=0)
    assert r.scores.size == 1 and r.estimate is None and not r.flagged and not r.mechanism_flagged
    assert (r.trials is None) == (r.truths.size < 2)  # one canary: one side is empty


@pytest.mark.parametrize(
    "kwargs, err",
    [
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=math.nan), "epsilon"),
        (dict(epsilon=1.0, learner="fed-bnsl"), "learner"),
        (dict(epsilon=1.0, canaries=0), "canaries"),
        (dict(epsilon=1.0, participants=0), "participants"),
        (dict(epsilon=1.0, runs=0), "runs"),
        (dict(epsilon=1.0, alpha=1.0), "alpha"),
        (dict(epsilon=1.0, noise_deficit=-0.1), "noise_deficit"),
        (dict(epsilon=1.0, learner="dp-fed-bnsl-secure", noise_deficit=0.2), "local releases only"),
    ],
)
def test_bad_settings_are_refused_before_any_run(kwargs, err, monkeypatch):
    monkeypatch.setattr(module, "released", lambda *a, **k: pytest.fail("ran"))
    monkeypatch.setattr(module, "secure_release", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(ValueError, match=err):
        canary_participant_audit(**kwargs)


@pytest.mark.slow
def test_a_twenty_percent_deficit_refutes_the_stated_mechanism():
    """The issue's negative control, with independent canaries: 4,000 participants of one canary
    each at ε = 4 (d = 30: μ_c ≈ 0.52). With 20 % of the noise missing the canaries' average μ_u
    is 0.48/0.8 = 0.60, AUC Φ(0.60/√2) = 0.664; Hoeffding's slack at about 2,000 a side is
    √(ln 20/4,000) = 0.027, so μ_lb ≈ √2·Φ⁻¹(0.637) = 0.50 — at the edge of μ_c. 16,000
    canaries (slack 0.014) give μ_lb ≈ √2·Φ⁻¹(0.650) = 0.54, above μ_c by 0.02 in μ, 0.006 in AUC,
    about twice the empirical AUC's s.e. (0.0026 at 8,000 a side). The correct release on the
    same seed stays below μ_c (its μ_lb ≈ 0.41)."""
    kw = dict(epsilon=4.0, d=30, participants=200, runs=80, rng=4)
    ok = canary_participant_audit(**kw)
    assert ok.independent and ok.trials is not None and not ok.mechanism_flagged and not ok.flagged
    bad = canary_participant_audit(noise_deficit=0.2, **kw)
    assert bad.trials is not None and bad.mechanism_flagged, (bad.trials.mu_lb, bad.canary_mu)
