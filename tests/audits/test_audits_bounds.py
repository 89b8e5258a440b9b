"""Tests for dpbnsl.audits.bounds: closed forms, coverage, the tightness targets, validation.

Oracles:

- the Clopper–Pearson bound with 0 successes, 1 − a^(1/n), and otherwise the root in p of
  P[Binomial(n, p) ≤ k] = a found with brentq on scipy's binomial cdf (not the beta quantile);
- the Laplace mechanism, whose every upper-tail test has likelihood ratio exactly e^ε (δ = 0), so
  any missing multiplicity correction shows up as over-coverage of the claim;
- the analytic Gaussian mechanism: σ from ``calibrate_gaussian`` is exactly μ-GDP with μ = 1/σ;
- the one-run tail bound of Steinke, Nasr & Jagielski (2023, Thm 3.1/3.3) re-derived with
  ``math.comb`` sums.

Counts of claim violations over repeated seeds are compared with the 0.999 quantile of
Binomial(R, α): a sound bound exceeds it with probability ≤ 0.001.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.optimize
import scipy.special
import scipy.stats

from dpbnsl.accounting.calibrate import calibrate_gaussian
from dpbnsl.audits.bounds import (
    GDP_LABEL,
    EpsilonEstimate,
    EpsilonLowerBound,
    OneRunBound,
    clopper_pearson_bound,
    gdp_epsilon,
    gdp_estimate,
    one_run_bound,
)

DELTA = 1e-5


def cp_upper_oracle(k: int, n: int, a: float) -> float:
    """Upper Clopper–Pearson bound from the binomial cdf: P[Bin(n, p) ≤ k] = a."""
    if k == 0:
        return 1.0 - a ** (1.0 / n)
    return scipy.optimize.brentq(lambda p: scipy.stats.binom.cdf(k, n, p) - a, k / n, 1.0, xtol=1e-15)


def gaussian_worlds(epsilon: float, n: int, seed: int, noise_factor: float = 1.0):
    """Scores of the Gaussian mechanism (sensitivity 1) calibrated for (ε, 1e-5)."""
    sigma = noise_factor * calibrate_gaussian(epsilon, DELTA)
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, sigma, n), rng.normal(1.0, sigma, n)


def max_violations(reps: int, alpha: float) -> int:
    return int(scipy.stats.binom.ppf(0.999, reps, alpha))


# ---------------------------------------------------------------- Clopper–Pearson: closed forms


@pytest.mark.parametrize("n", [10, 1000])
def test_perfect_separation_fixed_threshold_closed_form(n):
    res = clopper_pearson_bound(np.zeros(n), np.ones(n), delta=DELTA, rule="fixed", threshold=0.5)
    u = 1.0 - 0.025 ** (1.0 / n)  # FPR = FNR = 0, one-sided bounds at α/2 = 0.025
    assert res.fpr == res.fnr == 0.0
    assert res.fpr_ub == pytest.approx(u, rel=1e-12) and res.fnr_ub == pytest.approx(u, rel=1e-12)
    assert res.epsilon_lb == pytest.approx(math.log((1 - DELTA - u) / u), rel=1e-12)
    assert (res.threshold_rule, res.n_tests, res.direction) == ("fixed", 1, "greater")


def test_perfect_separation_bonferroni_closed_form():
    n = 1000
    res = clopper_pearson_bound(np.zeros(n), np.ones(n), delta=DELTA)
    assert res.threshold_rule == "bonferroni" and res.n_tests == 30  # default: 30 ranks, ">"
    u = 1.0 - (0.05 / (2 * 30)) ** (1.0 / n)  # rank 0 (the maximum of world 0), level α/60
    assert res.epsilon_lb == pytest.approx(math.log((1 - DELTA - u) / u), rel=1e-12)


def test_constructed_counts_match_hand_computation():
    # 100 of 1000 false positives and 100 of 1000 false negatives at the threshold 0.5
    s0 = np.r_[np.zeros(900), np.ones(100)]
    s1 = np.r_[np.zeros(100), np.ones(900)]
    res = clopper_pearson_bound(s0, s1, delta=DELTA, rule="fixed", threshold=0.5)
    u = cp_upper_oracle(100, 1000, 0.025)
    assert (res.fpr, res.fnr) == (0.1, 0.1)
    assert res.fpr_ub == pytest.approx(u, rel=1e-9)
    assert res.epsilon_lb == pytest.approx(math.log((1 - DELTA - u) / u), rel=1e-9)
    assert res.epsilon_lb < math.log(0.9 / 0.1)  # below the plug-in value


def test_both_directions_share_alpha():
    s0 = np.r_[np.zeros(900), np.ones(100)]
    s1 = np.r_[np.zeros(100), np.ones(900)]
    res = clopper_pearson_bound(s0, s1, delta=DELTA, rule="fixed", threshold=0.5, direction="both")
    assert res.n_tests == 2 and res.direction == "greater"
    assert res.fpr_ub == pytest.approx(cp_upper_oracle(100, 1000, 0.05 / 4), rel=1e-9)


def test_monotone_in_trials():
    bounds = []
    for n in (100, 1000, 10_000):  # the same 10 % error rates with more trials
        s0 = np.r_[np.zeros(9 * n // 10), np.ones(n // 10)]
        bounds.append(
            clopper_pearson_bound(s0, 1.0 - s0, delta=DELTA, rule="fixed", threshold=0.5).epsilon_lb
        )
    assert bounds[0] < bounds[1] < bounds[2] < math.log(9.0)


def test_reversed_scores_need_direction_less():
    s0, s1 = gaussian_worlds(1.0, 20_000, seed=3, noise_factor=0.25)
    up = clopper_pearson_bound(s0, s1, delta=DELTA)
    down = clopper_pearson_bound(-s0, -s1, delta=DELTA, direction="less")
    assert down.direction == "less" and down.epsilon_lb == pytest.approx(up.epsilon_lb, rel=1e-12)
    assert clopper_pearson_bound(-s0, -s1, delta=DELTA).epsilon_lb == 0.0
    both = clopper_pearson_bound(-s0, -s1, delta=DELTA, direction="both")
    assert both.n_tests == 60 and 0.0 < both.epsilon_lb < down.epsilon_lb


def test_split_rule_is_reproducible_and_reports_held_out_trials():
    s0, s1 = gaussian_worlds(1.0, 10_000, seed=4, noise_factor=0.25)
    a = clopper_pearson_bound(s0, s1, delta=DELTA, rule="split", rng=7)
    b = clopper_pearson_bound(s0, s1, delta=DELTA, rule="split", rng=7)
    assert a == b and a.n_tests == 1 and a.threshold_rule == "split"
    assert a.trials == (10_000, 10_000) and a.evaluation_trials == (8000, 8000)  # split = 0.2
    assert 1.0 < a.epsilon_lb  # noise / 4: true ε(1e-5) ≈ 5.9


def test_inputs_untouched_and_result_frozen():
    s0, s1 = gaussian_worlds(1.0, 1000, seed=5)
    c0, c1 = s0.copy(), s1.copy()
    res = clopper_pearson_bound(s0, s1, delta=DELTA, rule="split", rng=0)
    assert np.array_equal(s0, c0) and np.array_equal(s1, c1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.epsilon_lb = 9.0  # type: ignore[misc]


# ---------------------------------------------------------------- soundness and tightness


@pytest.mark.parametrize("rule", ["bonferroni", "split", "fixed"])
def test_laplace_coverage_and_uncorrected_negative_control(rule):
    # Laplace(0, 1) vs Laplace(1, 1) is exactly 1-DP (δ = 0) and every test "score > t" with
    # t ≥ 1 has likelihood ratio exactly e, so the plug-in bound sits on the claim. A large α
    # makes violations frequent enough to count: a sound rule exceeds ε = 1 in at most a
    # fraction α of runs, and more than the Binomial(R, α) 0.999 quantile with prob. ≤ 0.001.
    reps, n, alpha = 200, 4000, 0.3
    limit = max_violations(reps, alpha)  # 81
    kw = {"threshold": 2.0} if rule == "fixed" else {}
    bad = uncorrected = 0
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        s0, s1 = rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)
        res = clopper_pearson_bound(s0, s1, delta=0.0, alpha=alpha, rule=rule, rng=seed, **kw)
        bad += res.violates(1.0)
        if rule == "bonferroni":  # negative control: the max over 30 uncorrected fixed tests
            srt = np.sort(s0)
            ts = srt[n - np.unique(np.geomspace(1, n / 2, 30).astype(int))]
            uncorrected += (
                max(
                    clopper_pearson_bound(
                        s0, s1, delta=0.0, alpha=alpha, rule="fixed", threshold=t
                    ).epsilon_lb
                    for t in ts
                )
                > 1.0
            )
    assert bad <= limit
    if rule == "bonferroni":
        assert uncorrected > limit  # measured 110 of 200: the check has power


def test_gaussian_never_above_claim_over_seeds():
    # 20 seeds × 10⁴ trials of the (1, 1e-5)-calibrated Gaussian: violations ≤ Binomial(20, 0.05)
    # 0.999 quantile (= 4); with σ exact the bound is far below 1 (≈ 0.3), so expect none.
    for rule in ("bonferroni", "split"):
        bad = sum(
            clopper_pearson_bound(
                *gaussian_worlds(1.0, 10_000, seed), delta=DELTA, rule=rule, rng=seed
            ).violates(1.0)
            for seed in range(20)
        )
        assert bad <= max_violations(20, 0.05)


def test_tightness_gaussian_epsilon_1_million_trials():
    # μ = 1/σ = 0.268. With known optimal threshold and expected counts the bound at α/2 per side
    # is 0.768 (the ceiling); the Bonferroni level α/60 costs ≈ 0.07 in expectation but the max
    # over 30 thresholds gains it back: over 20 seeds mean 0.733, min 0.702 (seed 0: 0.790).
    res = clopper_pearson_bound(*gaussian_worlds(1.0, 1_000_000, seed=0), delta=DELTA)
    assert 0.70 <= res.epsilon_lb <= 1.0 and not res.violates(1.0)


def test_tightness_gaussian_epsilon_4():
    # At 10⁵ trials the ceiling (α/2 per side, optimal threshold, expected counts) is 2.575, so
    # 2.6 is out of reach for any sound α = 0.05 Clopper–Pearson audit; Bonferroni at α/60 has
    # expected-count value 2.358 (30 seeds: mean 2.47, min 2.19). 5·10⁵ trials reach 2.6
    # (10 seeds: mean 2.90, min 2.72).
    res = clopper_pearson_bound(*gaussian_worlds(4.0, 100_000, seed=0), delta=DELTA)
    assert 2.3 <= res.epsilon_lb <= 4.0
    res = clopper_pearson_bound(*gaussian_worlds(4.0, 500_000, seed=0), delta=DELTA)
    assert 2.6 <= res.epsilon_lb <= 4.0


def test_broken_gaussian_is_flagged():
    # noise halved: the mechanism is only (≈ 2.2, 1e-5)-DP; 10⁵ trials give ε_lb ≈ 1.3 > 1
    s0, s1 = gaussian_worlds(1.0, 100_000, seed=0, noise_factor=0.5)
    assert clopper_pearson_bound(s0, s1, delta=DELTA).violates(1.0)
    assert gdp_estimate(s0, s1, delta=DELTA).violates(1.0)


# ---------------------------------------------------------------- Gaussian-DP estimate


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_gdp_epsilon_inverts_the_analytic_gaussian(epsilon):
    # calibrate_gaussian returns σ with δ(ε; σ) ≤ 1e-5 within ~1e-10 relative of equality
    assert gdp_epsilon(1.0 / calibrate_gaussian(epsilon, DELTA), DELTA) == pytest.approx(epsilon, rel=1e-6)


def test_gdp_epsilon_edge_cases():
    assert gdp_epsilon(0.0, DELTA) == 0.0 and gdp_epsilon(math.inf, DELTA) == math.inf
    assert gdp_epsilon(1e-6, DELTA) == 0.0  # δ(0) = 2Φ(μ/2) − 1 ≈ 4e-7 ≤ δ


def test_gdp_estimate_recovers_mu():
    # μ = 1, 10⁵ runs per world. At the Youden threshold (≈ μ/2) FPR ≈ FNR ≈ 0.31 and
    # sd(μ̂) ≈ √2·√(p(1 − p)/n)/φ(Φ⁻¹(p)) ≈ 0.006; allow 5 sd = 0.03.
    rng = np.random.default_rng(11)
    s0, s1 = rng.normal(0.0, 1.0, 100_000), rng.normal(1.0, 1.0, 100_000)
    est = gdp_estimate(s0, s1, delta=DELTA)
    assert isinstance(est, EpsilonEstimate) and est.label == GDP_LABEL
    assert est.threshold_rule == "youden" and est.mu == pytest.approx(1.0, abs=0.03)
    assert est.epsilon == pytest.approx(gdp_epsilon(est.mu, DELTA), rel=1e-12)
    fixed = gdp_estimate(s0, s1, delta=DELTA, threshold=0.5)
    assert fixed.threshold_rule == "fixed" and fixed.mu == pytest.approx(1.0, abs=0.03)


def test_gdp_estimate_degenerate_rates():
    est = gdp_estimate(np.zeros(10), np.ones(10), delta=DELTA)
    assert est.mu == math.inf and est.epsilon == math.inf and est.violates(100.0)
    trivial = gdp_estimate(np.zeros(10), np.ones(10), delta=DELTA, threshold=-1.0)
    assert (trivial.fpr, trivial.fnr, trivial.mu, trivial.epsilon) == (1.0, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------- one-run bound


def one_run_tail_oracle(eps: float, m: int, r: int, v: int, delta: float) -> float:
    q = math.exp(eps) / (1.0 + math.exp(eps))

    def f(u):  # P[Binomial(r, q) ≥ u]
        return sum(math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(max(u, 0), r + 1))

    return f(v) + 2 * m * delta * max((f(v - i) - f(v)) / i for i in range(1, m + 1))


def test_one_run_perfect_guesses_hand_computation():
    m = 100  # all guessed, all correct: q^m = α ⇒ ε = logit(α^(1/m))
    truths = np.where(np.arange(m) % 3 == 0, 1, -1)
    res = one_run_bound(truths.copy(), truths, alpha=0.05)
    p = 0.05 ** (1 / m)
    assert isinstance(res, OneRunBound) and (res.canaries, res.guesses, res.correct) == (m, m, m)
    assert res.epsilon_lb == pytest.approx(math.log(p / (1 - p)), abs=1e-8)
    assert res.violates(3.0) and not res.violates(4.0)  # ε_lb = 3.493


def test_one_run_with_delta_matches_oracle_and_is_smaller():
    rng = np.random.default_rng(0)
    m = 200
    truths = rng.choice([-1, 1], m)
    guesses = np.where(rng.random(m) < 0.85, truths, -truths)
    guesses[:50] = 0  # abstain on 50 canaries
    pure = one_run_bound(guesses, truths, delta=0.0)
    res = one_run_bound(guesses, truths, delta=1e-3)
    assert res.guesses == 150 and 0.0 < res.epsilon_lb < pure.epsilon_lb
    # at the returned ε the tail bound equals α (bisection to 1e-9 in ε)
    tail = one_run_tail_oracle(res.epsilon_lb, m, res.guesses, res.correct, 1e-3)
    assert tail == pytest.approx(0.05, abs=1e-6) and tail <= 0.05 + 1e-12


def test_one_run_random_guesses_give_zero():
    # guesses independent of the truths: ε_lb > 0 has probability ≤ α = 0.05 per seed
    positive = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        res = one_run_bound(rng.choice([-1, 1], 1000), rng.choice([-1, 1], 1000))
        positive += res.epsilon_lb > 0.0
        assert res.epsilon_lb < 0.3
    assert positive <= max_violations(20, 0.05)


def test_one_run_randomized_response_sound_and_tight():
    # Each canary's output is its inclusion bit flipped with prob. 1/(1 + e): exactly 1-DP per
    # canary; guessing the output is the optimal attack. Violations ≤ Binomial(40, 0.05) 0.999
    # quantile; the bound is tight-ish: m = 2000 canaries give ε_lb ≈ 1 − 0.1.
    bounds = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        truths = rng.choice([-1, 1], 2000)
        guesses = np.where(rng.random(2000) < scipy.special.expit(1.0), truths, -truths)
        bounds.append(one_run_bound(guesses, truths).epsilon_lb)
    assert sum(b > 1.0 for b in bounds) <= max_violations(40, 0.05)
    assert np.mean(bounds) > 0.8


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"delta": 1.0}, ValueError, r"`delta` must be < 1; got 1\.0"),
        ({"delta": -0.1}, ValueError, r"`delta` must be >= 0; got -0\.1"),
        ({"alpha": 0.0}, ValueError, r"`alpha` must be > 0; got 0\.0"),
        (
            {"rule": "holm"},
            ValueError,
            r"`rule` must be one of 'bonferroni', 'split', 'fixed'; "
            r"got 'holm'",
        ),
        ({"direction": "up"}, ValueError, r"`direction` must be one of .*; got 'up'"),
        ({"n_thresholds": 0}, ValueError, r"`n_thresholds` must be >= 1; got 0"),
        ({"n_thresholds": 2.5}, TypeError, r"`n_thresholds` must be an integer; got float 2\.5"),
        ({"split": 1.0}, ValueError, r"`split` must be < 1; got 1\.0"),
        ({"rule": "fixed"}, ValueError, r"`threshold` must be given exactly when `rule` is 'fixed'"),
        ({"threshold": 0.0}, ValueError, r"`threshold` must be given exactly when .*'bonferroni'"),
        ({"rule": "fixed", "threshold": math.nan}, ValueError, r"`threshold` must be finite; got nan"),
        ({"rule": "split", "rng": -1}, ValueError, r"`rng` seed must be non-negative; got -1"),
    ],
)
def test_clopper_pearson_validation(kwargs, err, match):
    kwargs = {"delta": DELTA, **kwargs}
    with pytest.raises(err, match=match):
        clopper_pearson_bound(np.zeros(5), np.ones(5), **kwargs)


@pytest.mark.parametrize(
    ("s0", "err", "match"),
    [
        ([], ValueError, r"`scores0` must be a non-empty 1-D array; got shape \(0,\)"),
        ([[1.0, 2.0]], ValueError, r"`scores0` must be a non-empty 1-D array; got shape \(1, 2\)"),
        ([0.0, np.inf], ValueError, r"`scores0` has a non-finite value inf at index 1"),
        (["a"], TypeError, r"`scores0` must be an array of real scores; got \['a'\]"),
    ],
)
def test_scores_validation(s0, err, match):
    with pytest.raises(err, match=match):
        clopper_pearson_bound(s0, [1.0], delta=DELTA)
    with pytest.raises(err, match=match):
        gdp_estimate(s0, [1.0], delta=DELTA)


def test_split_too_small_and_other_validation():
    with pytest.raises(ValueError, match=r"`split` = 0\.2 leaves an empty part with 2 and 2 runs"):
        clopper_pearson_bound([0.0, 1.0], [0.0, 1.0], delta=DELTA, rule="split")
    res = clopper_pearson_bound([0.0], [1.0], delta=DELTA)
    with pytest.raises(ValueError, match=r"`claimed_epsilon` must be >= 0; got -1"):
        res.violates(-1)
    with pytest.raises(TypeError, match=r"`claimed_epsilon` must be a real number; got str"):
        res.violates("1")
    with pytest.raises(ValueError, match=r"`delta` must be > 0; got 0"):
        gdp_estimate([0.0], [1.0], delta=0)
    with pytest.raises(ValueError, match=r"`mu` must be >= 0; got -1\.0"):
        gdp_epsilon(-1.0, DELTA)


@pytest.mark.parametrize(
    ("guesses", "truths", "kwargs", "match"),
    [
        ([], [], {}, r"`guesses` must be a non-empty 1-D array; got shape \(0,\)"),
        ([1, 0], [1], {}, r"`truths` must have the shape \(2,\) of `guesses`; got \(1,\)"),
        ([1, 2], [1, 1], {}, r"`guesses` entries must be in \{-1, 0, 1\}; got 2 at index 1"),
        ([1, 0], [1, 0], {}, r"`truths` entries must be in \{-1, 1\}; got 0 at index 1"),
        ([1], [1], {"alpha": 1.0}, r"`alpha` must be < 1; got 1\.0"),
        ([1], [1], {"delta": -1e-3}, r"`delta` must be >= 0; got -0\.001"),
    ],
)
def test_one_run_validation(guesses, truths, kwargs, match):
    with pytest.raises(ValueError, match=match):
        one_run_bound(guesses, truths, **kwargs)


def test_results_are_the_documented_types():
    res = clopper_pearson_bound([0.0, 0.1], [1.0, 1.1], delta=DELTA)
    assert isinstance(res, EpsilonLowerBound) and res.method == "clopper-pearson"
    assert res.alpha == 0.05 and res.delta == DELTA and res.trials == (2, 2)
