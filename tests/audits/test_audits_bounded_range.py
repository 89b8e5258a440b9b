"""The lower bound on a selection's bounded-range parameter ε₀ (dpbnsl.audits.bounded_range)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.audits import audit, bounded_range_lower_bound, clopper_pearson_bound, run_game
from dpbnsl.audits.bounded_range import ASSUMPTION, range_from
from dpbnsl.audits.rates import error_counts


def _continuous(eps0, n, seed, width=None):
    """The worst case on a continuum: outputs o in [0, 1] with densities ∝ e^{−ko} (world 0) and
    e^{+ko} (world 1), k = width/2, so L(o) = width·o + const spans exactly ``width`` (= ε₀ unless
    given): an ε₀-bounded-range pair no narrower than its claim. Sampled by inverting the CDF."""
    k = (eps0 if width is None else width) / 2
    rng = np.random.default_rng(seed)
    u0, u1 = rng.random(n), rng.random(n)
    s0 = -np.log1p(-u0 * (1 - np.exp(-k))) / k
    s1 = np.log1p(u1 * np.expm1(k)) / k
    return s0, s1


def _two_point(low, high, n, seed):
    """Two outputs with privacy loss −low and +high (ε₀ = low + high): P₀(1) = q,
    P₁(1) = e^{high}q, q = (1 − e^{−low})/(e^{high} − e^{−low}); scores 1 and 0."""
    q = -np.expm1(-low) / (np.exp(high) - np.exp(-low))
    rng = np.random.default_rng(seed)
    return (rng.random(n) < q).astype(float), (rng.random(n) < np.exp(high) * q).astype(float)


@pytest.mark.parametrize("rule", ["bonferroni", "split", "fixed"])
def test_identical_scores_give_zero(rule):
    """FNR = 1 − FPR for every test on identical samples: both terms are ≤ 0 whenever the rate
    bounds hold, so the bound is 0 (a plug-in of the rates would report noise as ε₀ > 0)."""
    s = np.random.default_rng(0).exponential(size=5000)
    b = bounded_range_lower_bound(s, s.copy(), rule=rule, threshold=1.0, rng=1)
    assert b.epsilon0_lb == 0.0 and b.assumption == ASSUMPTION and b.method == "bounded-range"


def test_null_scores_rarely_give_a_positive_bound():
    """Two samples of one distribution (300 repetitions, 2,000 runs per world): a positive ε₀_lb is
    a failure of the confidence statement, rate ≤ α = 0.05; allowed 0.05 + 3·√(0.05·0.95/300)
    = 0.088 (binomial sampling error of the observed rate)."""
    positive = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        positive += bounded_range_lower_bound(rng.normal(size=2000), rng.normal(size=2000)).epsilon0_lb > 0
    assert positive / 300 <= 0.088


@pytest.mark.parametrize("rule", ["bonferroni", "split"])
def test_coverage_at_a_worst_case_bounded_range_pair(rule):
    """1,000 repetitions of the ε₀ = 1 worst case (1,000 runs per world): the rate of ε₀_lb > ε₀
    is at most α = 0.05 plus 3 binomial standard errors, √(0.05·0.95/1000) = 0.0069. The same
    harness catches an unsound bound: the plug-in of the empirical rates at the best of the
    same thresholds exceeds ε₀ in most repetitions."""
    over = plug_in_over = 0
    for seed in range(1000):
        s0, s1 = _continuous(1.0, 1000, seed)
        over += bounded_range_lower_bound(s0, s1, rule=rule, rng=seed).epsilon0_lb > 1.0
        if rule == "bonferroni":
            s0.sort(), s1.sort()
            t = np.quantile(s0, np.linspace(0.01, 0.99, 30))
            fp, fn = error_counts(s0, s1, t, True)
            plug_in_over += range_from(np.maximum(fp, 1) / 1000, np.maximum(fn, 1) / 1000).max() > 1.0
    assert over / 1000 <= 0.05 + 3 * 0.0069
    if rule == "bonferroni":
        assert plug_in_over / 1000 > 0.15  # 0.255 on these seeds, against the 0.0707 allowed


@pytest.mark.parametrize("low, high", [(0.5, 0.5), (0.1, 0.9), (3.0, 1.0)])
def test_coverage_at_two_point_pairs_with_a_fixed_test(low, high):
    """1,000 repetitions of a two-output pair of width ε₀ = low + high, at its one informative
    test (score < ½ guesses world 1 when high > 0): rate of ε₀_lb > ε₀ ≤ 0.05 + 0.0207, as above."""
    over = 0
    for seed in range(1000):
        s0, s1 = _two_point(low, high, 2000, seed)
        b = bounded_range_lower_bound(s0, s1, rule="fixed", threshold=0.5, direction="greater")
        over += b.epsilon0_lb > low + high
    assert over / 1000 <= 0.05 + 3 * 0.0069


@pytest.mark.parametrize("eps0, floor", [(1.0, 0.9), (4.0, 3.6)])
def test_close_to_the_claim_at_1e5_runs(eps0, floor):
    """The symmetric two-point worst case with 10⁵ runs per world: ε₀_lb ≥ 0.9 ε₀ (the bound's
    spread at this size is about ±0.03 at ε₀ = 1: the rates' relative standard errors, √((1 − q)/(nq))
    with q ≈ 0.38, enter both logarithms), and never above ε₀ on these seeds; the Clopper–Pearson
    ε(δ) of the same test is at most the larger of the two terms, ε₀/2 here."""
    for seed in range(3):
        s0, s1 = _two_point(eps0 / 2, eps0 / 2, 100_000, seed)
        b = bounded_range_lower_bound(s0, s1, rule="fixed", threshold=0.5, direction="greater")
        assert floor <= b.epsilon0_lb <= eps0
        cp = clopper_pearson_bound(s0, s1, delta=1e-5, rule="fixed", threshold=0.5, direction="greater")
        assert cp.epsilon_lb <= eps0 / 2 < b.epsilon0_lb


def test_a_wider_loss_is_flagged():
    """Twice the width of the claim (the selection's noise halved): flagged at 10⁴ runs."""
    s0, s1 = _continuous(1.0, 10_000, 0, width=2.0)
    assert bounded_range_lower_bound(s0, s1).violates(1.0)


def test_reversed_scores_give_the_same_bound():
    s0, s1 = _continuous(2.0, 20_000, 3)
    a = bounded_range_lower_bound(s0, s1)
    b = bounded_range_lower_bound(-s0, -s1)
    assert a.epsilon0_lb == b.epsilon0_lb > 1.5
    assert a.upper.greater and a.lower.greater and not b.upper.greater and not b.lower.greater
    assert bounded_range_lower_bound(-s0, -s1, direction="greater").epsilon0_lb == 0.0


def test_the_selection_audit_reports_the_bound_against_the_claimed_epsilon0():
    """audit("selection") bounds ε₀ with the rule of its Clopper–Pearson bound (split: few
    distinct scores) and compares with the ε₀ the accountant records; noise halved is flagged."""
    ok = audit("selection", epsilon=1.0, trials=50_000, rng=0)
    assert ok.claimed_epsilon0 == 1.0 and ok.claimed_epsilon < 1.0
    assert ok.bounded_range is not None and ok.bounded_range.threshold_rule == "split"
    assert 0.5 < ok.bounded_range.epsilon0_lb <= 1.0 and ok.bounded_range_flagged is False
    bad = audit("selection", epsilon=1.0, trials=50_000, rng=0, broken="noise-halved")
    assert bad.bounded_range_flagged is True and bad.bounded_range.epsilon0_lb > 1.5
    gauss = audit("gaussian-step", epsilon=1.0, trials=2000, rng=0)
    assert gauss.bounded_range is None and gauss.bounded_range_flagged is None


def test_selection_noise_deficit_widens_the_loss():
    g = run_game("selection", epsilon=1.0, delta=1e-5, trials=10, noise_deficit=0.5, rng=0)
    p0, p1 = (p.ravel() for p in g.details["probabilities"])
    llr = np.log(p1[p0 > 0] / p0[p0 > 0])
    assert g.details["epsilon0"] == 1.0 and g.details["noise_deficit"] == 0.5
    assert llr.max() - llr.min() == pytest.approx(2.0, rel=1e-9)  # ε₀/(1 − p)
    with pytest.raises(ValueError, match="noise_deficit"):
        run_game("selection", epsilon=1.0, delta=1e-5, trials=10, noise_deficit=1.0)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"alpha": 0.0}, ValueError, "alpha"),
        ({"rule": "holm"}, ValueError, "rule"),
        ({"rule": "fixed"}, TypeError, "threshold"),
        ({"rule": "fixed", "threshold": float("nan")}, ValueError, "threshold"),
        ({"direction": "up"}, ValueError, "direction"),
        ({"n_thresholds": 0}, ValueError, "n_thresholds"),
        ({"split": 1.0}, ValueError, "split"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        bounded_range_lower_bound(np.zeros(10), np.ones(10), **kwargs)


def test_bad_scores():
    with pytest.raises(ValueError, match="scores0"):
        bounded_range_lower_bound([], [1.0])
    with pytest.raises(ValueError, match="scores1"):
        bounded_range_lower_bound([1.0], [np.inf])
    with pytest.raises(ValueError, match="claimed_epsilon0"):
        bounded_range_lower_bound([0.0, 1.0], [1.0, 2.0]).violates(-1.0)


def test_the_fixed_rule_is_its_formula():
    """One test fixed in advance, one direction: both terms from Clopper–Pearson bounds at α/2 per
    rate (the two rates of the one test share α)."""
    from dpbnsl.audits.bounded_range import lower_term, upper_term
    from dpbnsl.audits.rates import cp_upper

    s0, s1 = _two_point(0.4, 0.8, 3000, 5)
    b = bounded_range_lower_bound(s0, s1, alpha=0.1, rule="fixed", threshold=0.5, direction="greater")
    fp, fn = int((s0 > 0.5).sum()), int((s1 <= 0.5).sum())
    fpr_ub, fnr_ub = cp_upper(fp, 3000, 0.05), cp_upper(fn, 3000, 0.05)
    want = max(float(upper_term(fpr_ub, fnr_ub)), 0.0) + max(float(lower_term(fpr_ub, fnr_ub)), 0.0)
    assert b.epsilon0_lb == pytest.approx(want, rel=1e-12) and b.n_tests == 1


@pytest.mark.parametrize("rule, share", [("bonferroni", 1.0), ("split", 0.5), ("fixed", 1.0)])
def test_alpha_per_term(monkeypatch, rule, share):
    """The two maxima share one family of simultaneous bounds (Bonferroni, fixed: α each call, the
    same event); the split rule makes two selections and two held-out evaluations (α/2 each)."""
    from dpbnsl.audits import bounded_range as module

    seen = []
    real = module.best_test

    def spy(*args, **kw):
        seen.append(kw["alpha"])
        return real(*args, **kw)

    monkeypatch.setattr(module, "best_test", spy)
    s0, s1 = _continuous(1.0, 2000, 0)
    bounded_range_lower_bound(s0, s1, alpha=0.08, rule=rule, threshold=0.5, rng=0)
    assert seen == [0.08 * share] * 2


def test_coverage_at_a_tight_pair_with_a_large_alpha():
    """Where the bound is tight (a two-point pair, its one informative test fixed) and α = 0.5 makes
    failures frequent enough to count: 1,000 repetitions, rate of ε₀_lb > ε₀ ≤ 0.5 + 3·√(0.25/1000)
    = 0.547; measured far below (the Clopper–Pearson bounds are conservative for discrete counts)."""
    over = 0
    for seed in range(1000):
        s0, s1 = _two_point(0.2, 1.3, 500, seed)
        over += (
            bounded_range_lower_bound(
                s0, s1, alpha=0.5, rule="fixed", threshold=0.5, direction="greater"
            ).epsilon0_lb
            > 1.5
        )
    assert over / 1000 <= 0.5 + 3 * np.sqrt(0.25 / 1000)
