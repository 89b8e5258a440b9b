"""Grey-box sensitivity checks and sampler checks (dpbnsl.audits.sensitivity, .samplers).

Sensitivity checks are deterministic given the seed: every real computation must stay within its
declared sensitivity (up to RTOL of rounding) and attain it on the crafted boundary pairs (so the
check is not vacuous); every broken variant must fail, on the part of the check it breaks.

Sampler checks are statistical tests with a fixed seed. A correct sampler fails a test at level α
with probability ≤ α; the calibration tests repeat a check R times at α = 0.05 and allow the 0.999
quantile of Binomial(R, α) failures, so they fail spuriously with probability ≤ 0.001 (for the χ²
test up to its small large-sample approximation error, with every pooled expected count ≥ 5).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent
from scipy import stats

from dpbnsl.audits._sensitivity_base import Spec, run_check
from dpbnsl.audits.games import BROKEN
from dpbnsl.audits.samplers import check_gaussian_sampler, check_selection_sampler, pooled_chi2, softmax
from dpbnsl.audits.sensitivity import (
    BROKEN_CHECKS,
    CHECKS,
    RTOL,
    SensitivityCheck,
    check_covariance,
    check_sensitivity,
)
from dpbnsl.mechanisms import gaussian_mechanism

SEED = 2024
PAIRS = 120


# ------------------------------------------------------------------- sensitivity: real code --


def test_registries():
    assert set(CHECKS) == {"pgcd-gradient", "pgcd-score", "smoothness", "covariance", "mean"}
    assert all(set(names) <= set(CHECKS) for names in BROKEN_CHECKS.values())
    # the games' names are reused where they apply
    assert {"no-clipping", "raw-smoothness"} <= set(BROKEN) & set(BROKEN_CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_real_computations_stay_within_and_attain_their_declared_sensitivity(name):
    r = check_sensitivity(name, pairs=PAIRS, rng=SEED)
    assert isinstance(r, SensitivityCheck) and r.computation == name and r.pairs == PAIRS
    assert r.passed and r.same_control_flow and r.details["flow_failures"] == 0
    assert r.ratio <= 1 + RTOL
    # crafted boundary rows attain the bound: the check could have seen a violation
    assert r.details["ratio_by_kind"]["boundary"] == pytest.approx(1.0, abs=1e-9)
    assert r.observed_max == pytest.approx(r.ratio * r.declared, rel=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.ratio = 0.0


@pytest.mark.parametrize("name, broken", [(n, b) for b, names in BROKEN_CHECKS.items() for n in names])
def test_broken_variants_fail(name, broken):
    r = check_sensitivity(name, pairs=PAIRS, rng=SEED, broken=broken)
    assert not r.passed and r.broken == broken
    if broken == "data-dependent-noise":  # same sensitivity, noise depends on the data
        assert r.ratio <= 1 + RTOL and not r.same_control_flow
        assert r.details["flow_failures"] > 0
    else:  # the movement exceeds the bound; draws and events are still the same
        assert r.ratio > 1.01 and r.same_control_flow


def test_given_pair_is_checked_alone_against_an_independent_oracle():
    """Rows 3·e₀ and 3·e₁ beyond R = 1: the clipped Gram moves by √2R²/n in the triangle."""
    X = np.random.default_rng(1).normal(scale=0.3, size=(20, 4))
    Y = X.copy()
    X[7], Y[7] = 3.0 * np.eye(4)[0], 3.0 * np.eye(4)[1]
    before = X.copy()
    r = check_covariance(X, Y, clip_norm=1.0, rng=0)
    iu, gram = np.triu_indices(4), []
    for Z in (X, Y):  # rows scaled to norm ≤ 1 by hand, then the Gram's upper triangle
        C = Z / np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]
        gram.append((C.T @ C / 20)[iu])
    assert r.pairs == 1 and r.passed and r.details["ratio_by_kind"].keys() == {"given"}
    assert r.observed_max == pytest.approx(np.linalg.norm(gram[1] - gram[0]), rel=1e-12)
    assert r.declared == pytest.approx(math.sqrt(2) / 20, rel=1e-15)
    np.testing.assert_array_equal(X, before)  # inputs untouched
    same = check_sensitivity("mean", X, X, rng=0)  # D′ = D is a (trivial) neighbour
    assert same.passed and same.ratio == 0.0


@pytest.mark.parametrize("bug", ["skip-draw", "scaled-noise", None])
def test_same_random_state_catches_each_kind_of_divergence(bug):
    """Each part of the control-flow comparison on its own, with the events kept equal: a release
    that skips its draw when the statistic is small ends with the generator in another state; one
    whose noise scale depends on the data (same draws) releases a difference other than the
    pre-noise one. The values respect Δ throughout."""
    event = GaussianDpEvent(1.0)

    def exact(X, _):
        return np.array([X[:, 0].clip(-1, 1).mean()])

    def noisy(X, _, g):
        u = exact(X, None)
        if bug == "skip-draw":  # values not compared: only the generator state can tell
            if abs(u[0]) >= 0.01:  # "nothing to hide" below it: no noise drawn
                g.standard_normal()
            return None, (event,)
        scale = 1.0 + (abs(u[0]) if bug == "scaled-noise" else 0.0)
        return u + scale * 0.2 * g.standard_normal(1), (event,)

    X = np.zeros((10, 2))
    Y = X.copy()
    Y[0, 0] = 5.0
    spec = Spec(exact, noisy, np.array([2 / 10]), lambda g: (np.ones(2), -np.ones(2)), False)
    r = run_check("toy", spec, X, Y, 1, None, np.random.default_rng(0))
    assert r.ratio == pytest.approx(0.5)
    assert r.same_control_flow == r.passed == (bug is None)


def test_checks_are_deterministic_per_seed():
    a = check_sensitivity("pgcd-score", pairs=30, rng=7)
    b = check_sensitivity("pgcd-score", pairs=30, rng=np.random.default_rng(7))
    assert (a.ratio, a.observed_max, a.declared) == (b.ratio, b.observed_max, b.declared)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: check_sensitivity("laplace"), r"`name` must be one of 'pgcd-gradient', "),
        (
            lambda: check_sensitivity("covariance", broken="raw-smoothness"),
            r"`broken` must be None or one of 'no-clipping', 'data-dependent-noise' for the "
            r"'covariance' check; got 'raw-smoothness'",
        ),
        (lambda: check_sensitivity("mean", pairs=0), r"`pairs` must be >= 1; got 0"),
        (lambda: check_sensitivity("mean", np.ones((1, 3))), r"`X` must have at least 2 rows"),
        (
            lambda: check_sensitivity("pgcd-gradient", np.ones((5, 1))),
            r"at least 2 rows and 2 column\(s\); got shape \(5, 1\)",
        ),
        (
            lambda: check_sensitivity("mean", np.ones((5, 3)), np.ones((4, 3))),
            r"`X_prime` must have the shape of `X` \(5, 3\); got \(4, 3\)",
        ),
        (
            lambda: check_sensitivity("mean", np.ones((5, 3)), np.zeros((5, 3))),
            r"replace-one neighbour of `X` \(differ in at most one row\); rows \[0, 1, 2, 3, 4\]",
        ),
        (lambda: check_sensitivity("covariance", clip_norm=0.0), r"`clip_norm` must be > 0; got 0"),
        (lambda: check_sensitivity("smoothness", multiplier=0), r"`multiplier` must be > 0; got 0"),
        (lambda: check_sensitivity("pgcd-gradient", local_iters=0), r"`local_iters` must be >= 1; got 0"),
        (
            lambda: check_sensitivity("smoothness", feature_bound=[1.0, 2.0]),
            r"`feature_bound` must be a scalar or have shape \(5,\)",
        ),
    ],
)
def test_sensitivity_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------- samplers --


def _tempered(factor):
    """A sampler drawing the softmax at ``factor`` times the temperature (1: exact)."""

    def sampler(scores, *, scale, draws, rng):
        p = softmax(scores, factor * scale)
        return rng.choice(p.size, size=draws, p=p)

    return sampler


@pytest.mark.parametrize(
    "sampler, scale", [("columnwise", 0.5), ("columnwise", 2.0), ("gumbel-max", 0.5), ("gumbel-max", 2.0)]
)
def test_package_selection_samplers_match_the_softmax(sampler, scale):
    r = check_selection_sampler(d=5, scale=scale, draws=10_000, sampler=sampler, rng=SEED)
    assert r.passed and r.pvalue >= r.alpha == 1e-3 and r.impossible == 0
    assert r.dof == r.cells - 1 >= 10 and r.sampler == sampler


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_mis_tempered_sampler_is_rejected(factor):
    r = check_selection_sampler(d=5, scale=1.0, draws=10_000, sampler=_tempered(factor), rng=SEED)
    assert not r.passed and r.pvalue < 1e-12 and r.max_deviation > 0.05


def test_sampler_drawing_impossible_entries_fails():
    def diagonal(scores, *, scale, draws, rng):
        return np.zeros(draws, dtype=int)  # entry (0, 0) has score −∞

    r = check_selection_sampler(d=4, draws=100, sampler=diagonal, rng=0)
    assert not r.passed and r.impossible == 100 and r.pvalue == 0.0


def test_selection_check_is_calibrated():
    """An exact sampler fails the α = 0.05 test at most at the binomial rate."""
    reps, alpha = 200, 0.05
    fails = sum(
        not check_selection_sampler(d=4, draws=400, sampler=_tempered(1.0), alpha=alpha, rng=seed).passed
        for seed in range(reps)
    )
    assert fails <= stats.binom.ppf(0.999, reps, alpha)


def test_pooled_chi2():
    counts, p = np.array([30, 50, 20]), np.array([0.3, 0.5, 0.2])
    assert pooled_chi2(counts, p)[:2] == (0.0, 2)
    c = np.array([40, 45, 15])
    stat, dof, pools = pooled_chi2(c, p)
    assert (dof, pools) == (2, 3)
    assert stat == pytest.approx(stats.chisquare(c, p * 100).statistic, rel=1e-12)
    # expected counts 0.5, 0.5, 1, 3, 95 (n = 100): the four small cells pool into one of 5
    p = np.array([0.005, 0.005, 0.01, 0.03, 0.95])
    stat, dof, pools = pooled_chi2(np.array([1, 0, 2, 2, 95]), p)
    assert (dof, pools) == (1, 2) and stat == pytest.approx(0.0)
    assert pooled_chi2(np.array([3]), np.array([1.0])) == (0.0, 0, 1)


@pytest.mark.parametrize("sigma, value", [(0.5, 0.0), (3.0, 2.0)])
def test_gaussian_mechanism_moments_match_theory(sigma, value):
    r = check_gaussian_sampler(sigma=sigma, value=value, draws=100_000, rng=SEED)
    assert r.passed and min(r.pvalues.values()) >= r.alpha / 3
    level = r.alpha / 3  # the tolerances are the exact quantiles of x̄ and s²
    assert r.mean_tolerance == pytest.approx(stats.norm.isf(level / 2) * sigma / math.sqrt(1e5))
    lo, hi = r.variance_interval
    assert lo < sigma**2 < hi and hi / sigma**2 - 1 == pytest.approx(
        stats.norm.isf(level / 2) * math.sqrt(2 / 1e5), rel=0.05
    )
    assert abs(r.mean - value) <= r.mean_tolerance and lo <= r.variance <= hi


def _laplace(values, *, sigma, rng):  # the same variance σ², excess kurtosis 3
    return values + rng.laplace(0.0, sigma / math.sqrt(2), values.shape)


def _wide(values, *, sigma, rng):  # σ 5 % too large
    return gaussian_mechanism(values, sensitivity=1.0, sigma=1.05 * sigma, rng=rng).value


def _biased(values, *, sigma, rng):  # mean off by σ/20
    return gaussian_mechanism(values + sigma / 20, sensitivity=1.0, sigma=sigma, rng=rng).value


@pytest.mark.parametrize("sampler, failing", [(_laplace, "ks"), (_wide, "variance"), (_biased, "mean")])
def test_broken_gaussian_samplers_fail(sampler, failing):
    r = check_gaussian_sampler(sigma=2.0, draws=100_000, sampler=sampler, rng=SEED)
    assert not r.passed and r.pvalues[failing] < 1e-6


def test_gaussian_check_is_calibrated():
    reps, alpha = 300, 0.05
    fails = sum(
        not check_gaussian_sampler(sigma=1.0, draws=500, alpha=alpha, rng=s).passed for s in range(reps)
    )
    assert fails <= stats.binom.ppf(0.999, reps, alpha)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: check_selection_sampler(scale=0.0), ValueError, r"`scale` must be > 0; got 0"),
        (lambda: check_selection_sampler(draws=0), ValueError, r"`draws` must be >= 1; got 0"),
        (lambda: check_selection_sampler(alpha=1.0), ValueError, r"`alpha` must be < 1; got 1"),
        (
            lambda: check_selection_sampler(sampler="softmax"),
            ValueError,
            r"`sampler` must be one of 'columnwise', 'gumbel-max'; got 'softmax'",
        ),
        (lambda: check_selection_sampler(d=1), ValueError, r"`d` must be >= 2; got 1"),
        (
            lambda: check_selection_sampler(scores=[1.0, np.nan]),
            ValueError,
            r"`scores` must be a 2-dimensional array",
        ),
        (
            lambda: check_selection_sampler(scores=np.full((2, 2), -np.inf)),
            ValueError,
            r"at least one finite entry",
        ),
        (
            lambda: check_selection_sampler(draws=5, sampler=lambda s, *, scale, draws, rng: [0]),
            ValueError,
            r"`sampler` must return 5 flat indices in \[0, 25\); got 1",
        ),
        (lambda: check_gaussian_sampler(sigma=0.0, draws=10), ValueError, r"`sigma` must be > 0; got 0"),
        (lambda: check_gaussian_sampler(sigma=1.0, draws=1), ValueError, r"`draws` must be >= 2; got 1"),
        (
            lambda: check_gaussian_sampler(sigma=1.0, draws=10, sampler="laplace"),
            ValueError,
            r"`sampler` must be one of 'gaussian-mechanism'; got 'laplace'",
        ),
        (
            lambda: check_gaussian_sampler(sigma=1.0, draws=10, value=math.inf),
            ValueError,
            r"`value` must be finite; got inf",
        ),
        (
            lambda: check_gaussian_sampler(sigma=1.0, draws=10, rng=-1),
            ValueError,
            r"`rng` seed must be non-negative; got -1",
        ),
    ],
)
def test_sampler_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_results_are_frozen():
    r = check_gaussian_sampler(sigma=1.0, draws=100, rng=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.passed = False
    with pytest.raises(TypeError):
        r.pvalues["mean"] = 1.0
    s = check_selection_sampler(d=3, draws=100, rng=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.pvalue = 1.0
