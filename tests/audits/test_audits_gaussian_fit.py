"""Andrew et al.'s Gaussian-fit ε estimate (dpbnsl.audits.gaussian_fit)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbnsl.accounting.gaussian import gaussian_epsilon
from dpbnsl.audits.gaussian_fit import gaussian_fit_epsilon, normal_pair_delta, normal_pair_epsilon


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0, 8.0])
def test_equal_variances_give_the_gaussian_mechanisms_epsilon(mu):
    """With s₁ = s₀ the pair is μ-GDP with μ = |m₁ − m₀|/s, in either order and at any scale."""
    for m1, m0, s in ((mu, 0.0, 1.0), (0.0, 2 * mu, 2.0), (10.0 + 0.3 * mu, 10.0, 0.3)):
        assert normal_pair_epsilon(m1, s, m0, s, 1e-5) == pytest.approx(gaussian_epsilon(mu, 1e-5), rel=1e-8)


@pytest.mark.parametrize(
    "m1, s1, m0, s0, eps",
    [
        (1.0, 1.3, 0.0, 0.9, 2.0),
        (0.5, 0.8, 0.0, 1.0, 0.3),
        (0.0, 1.0, 0.0, 3.0, 1.0),
        (2.0, 0.5, -1.0, 0.7, 4.0),
    ],
)
def test_unequal_variances_match_a_numerical_integral(m1, s1, m0, s0, eps):
    """δ(ε) is the larger hockey-stick divergence of the two directions: a Riemann sum of
    max(p − e^ε q, 0) on a 10⁻⁵ grid over ±20 agrees to 1e-6."""
    x = np.linspace(-20, 20, 4_000_001)
    p, q = stats.norm.pdf(x, m1, s1), stats.norm.pdf(x, m0, s0)
    dx = x[1] - x[0]
    ref = max(np.sum(np.maximum(p - np.exp(eps) * q, 0)), np.sum(np.maximum(q - np.exp(eps) * p, 0))) * dx
    assert normal_pair_delta(m1, s1, m0, s0, eps) == pytest.approx(ref, abs=1e-6)


def test_epsilon_is_the_least_with_delta_below_the_target():
    e = normal_pair_epsilon(1.0, 1.2, 0.0, 1.0, 1e-5)
    assert (
        normal_pair_delta(1.0, 1.2, 0.0, 1.0, e)
        <= 1e-5
        < normal_pair_delta(1.0, 1.2, 0.0, 1.0, e * (1 - 1e-6))
    )
    assert normal_pair_epsilon(0.0, 1.0, 0.0, 1.0, 1e-5) == 0.0
    assert normal_pair_epsilon(0.0, 1.0, 1e6, 1.0, 1e-5) == math.inf
    assert normal_pair_epsilon(-1e308, 1.0, 1e308, 1.0, 1e-5) == math.inf
    # scale and translation do not change ε, down to extreme magnitudes
    ref = normal_pair_epsilon(1.0, 1.2, 0.0, 1.0, 1e-5)
    assert normal_pair_epsilon(1e-200, 1.2e-200, 0.0, 1e-200, 1e-5) == pytest.approx(ref, rel=1e-8)
    assert normal_pair_epsilon(1e200 + 1e190, 1.2e190, 1e200, 1e190, 1e-5) == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError, match="1e100"):
        normal_pair_epsilon(0.0, 1e-300, 0.0, 1e300, 1e-5)


def test_the_estimate_recovers_mu_from_large_samples():
    """10⁵ draws a side of N(1, 1) and N(0, 1): the fitted means and s.d.s are within 0.02 (five
    standard errors of 0.0032 and 0.0022), and the estimate is within the ε(δ) of μ = 1 ± 0.05."""
    rng = np.random.default_rng(0)
    est = gaussian_fit_epsilon(rng.normal(1, 1, 100_000), rng.normal(0, 1, 100_000), delta=1e-5)
    assert est.mean_in == pytest.approx(1.0, abs=0.02) and est.sd_out == pytest.approx(1.0, abs=0.02)
    assert gaussian_epsilon(0.95, 1e-5) < est.epsilon < gaussian_epsilon(1.05, 1e-5)
    assert est.mu == pytest.approx(1.0, abs=0.03)  # s.e. √(2/10⁵ + 1/(4·10⁵)) ≈ 0.005
    assert est.epsilon_shift == pytest.approx(gaussian_epsilon(est.mu, 1e-5), rel=1e-8)
    assert est.n_in == est.n_out == 100_000


def test_the_shift_reading_is_steadier_than_the_two_normals():
    """Scores of a pure shift (μ = 0.925, 1,200 a side, 200 repetitions): the two-normal ε(δ)
    is pushed up by the s.d.s' sampling noise, the shift reading is not. Its mean over the
    repetitions is within 0.1 of ε(δ) at μ = 0.925 (4.0; the spread of μ̂ is about 0.04, of
    ε about 0.2, so the mean's s.e. is about 0.015), while the two-normal mean is above it."""
    rng = np.random.default_rng(1)
    ests = [
        gaussian_fit_epsilon(rng.normal(0.925, 1, 1200), rng.normal(0, 1, 1200), delta=1e-5)
        for _ in range(200)
    ]
    target = gaussian_epsilon(0.925, 1e-5)
    assert abs(np.mean([e.epsilon_shift for e in ests]) - target) < 0.1
    assert np.mean([e.epsilon for e in ests]) > target + 0.2


@pytest.mark.parametrize(
    "scores_in, scores_out, err",
    [
        ([1.0], [0.0, 1.0], "scores_in"),
        ([1.0, 2.0], [0.0, math.nan], "scores_out"),
        ([[1.0, 2.0]], [0.0, 1.0], "scores_in"),
        ([1.0, 1.0], [0.0, 1.0], "constant"),
    ],
)
def test_bad_scores_are_refused(scores_in, scores_out, err):
    with pytest.raises(ValueError, match=err):
        gaussian_fit_epsilon(scores_in, scores_out, delta=1e-5)


@pytest.mark.parametrize(
    "kwargs, err",
    [(dict(s1=0.0), "s1"), (dict(m0=math.inf), "m0"), (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta")],
)
def test_bad_pairs_are_refused(kwargs, err):
    args = dict(m1=1.0, s1=1.0, m0=0.0, s0=1.0, delta=1e-5) | kwargs
    with pytest.raises(ValueError, match=err):
        normal_pair_epsilon(**args)


def test_tiny_deltas_keep_the_narrow_normals_mass():
    """At δ = 10⁻²⁰⁰ the narrow normal's mass on the region is far below the smallest float while
    e^ε times it is not: the divergence is computed in logs. δ(ε̂) matches a 60-digit mpmath
    evaluation of the same region's masses to 1e-6 (the region's end points are exact
    quadratic roots, recomputed here)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    m1, s1, m0, s0, target = 0.0, 1.0, 0.0, 1.5, 1e-200
    e = normal_pair_epsilon(m1, s1, m0, s0, target)
    assert 569.0 < e < 570.5  # the mass dropped to 0 would give 570.70

    def divergence(ma, sa, mb, sb):  # P = N(ma, sa²), Q = N(mb, sb²), zero means: |x| beyond a root
        a = mpmath.mpf(1) / (2 * sb**2) - mpmath.mpf(1) / (2 * sa**2)
        c = mpmath.log(mpmath.mpf(sb) / sa) - e
        if a <= 0 and c <= 0:
            return mpmath.mpf(0)
        if a > 0:  # the tails |x| > r
            r = mpmath.sqrt(-c / a) if c < 0 else mpmath.mpf(0)
            p, q = 2 * mpmath.ncdf(-r / sa), 2 * mpmath.ncdf(-r / sb)
        else:  # the centre |x| < r
            r = mpmath.sqrt(-c / a)
            p, q = 1 - 2 * mpmath.ncdf(-r / sa), 1 - 2 * mpmath.ncdf(-r / sb)
        return max(mpmath.mpf(0), p - mpmath.exp(e) * q)

    ref = max(divergence(m1, s1, m0, s0), divergence(m0, s0, m1, s1))
    assert float(ref / mpmath.mpf(target)) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize(
    "args, err",
    [
        ((0.0, 0.0, 0.0, 1.0, 1.0), "s1"),
        ((0.0, 1.0, 0.0, -1.0, 1.0), "s0"),
        ((0.0, 1.0, 0.0, 1.0, -1.0), "epsilon"),
        ((math.nan, 1.0, 0.0, 1.0, 1.0), "m1"),
        ((0.0, 1.0, 0.0, 1.0, math.nan), "epsilon"),
    ],
)
def test_the_divergence_refuses_bad_arguments(args, err):
    with pytest.raises(ValueError, match=err):
        normal_pair_delta(*args)
