"""Mechanisms and (DP-)PGCD: sampler distributions, sensitivities on neighbouring datasets,
incremental vs naive recomputation, noise-off equivalence, sparsity of the messages, ledger events."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent
from scipy import stats

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.learners.linear._pgcd_naive import naive_dp_pgcd
from dpbnsl.learners.linear.pgcd import (
    CLIP_SCHEMES,
    PGCDNoise,
    PGCDState,
    clip_bounds,
    clip_score_sensitivity,
    pgcd,
)
from dpbnsl.mechanisms import (
    BoundedRangeDpEvent,
    ColumnwiseExponentialMechanism,
    clip_rows,
    gaussian_mechanism,
    gumbel_max,
)

SCORES = np.array(
    [[-np.inf, 0.3, 1.0, 0.0], [0.5, -np.inf, 0.2, 0.9], [1.2, 0.1, -np.inf, 0.4], [0.0, 0.7, 0.6, -np.inf]]
)


def _chi2_pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    keep = probs > 0
    assert counts[~keep].sum() == 0  # impossible outcomes never occur
    return stats.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


@pytest.mark.parametrize("scale", [0.3, 1.0])
def test_samplers_match_the_softmax(scale):
    """Both samplers draw P(j) ∝ exp(s_j/λ). 20 000 draws per sampler; under the null the χ²
    statistic (11 degrees of freedom) gives a uniform p-value, so with a fixed seed we require
    p > 1e-4: a correct sampler fails with probability 1e-4, while a sampler off by 2 % in one
    cell's probability gives χ² ≈ 20000·0.02²/p ≈ 30 (p ≈ 0.002) and one off by 5 % fails."""
    probs = np.exp(SCORES.ravel() / scale - np.max(SCORES / scale))
    probs /= probs.sum()
    rng = np.random.default_rng(2024)
    n = 20_000
    two_level = ColumnwiseExponentialMechanism(SCORES, sensitivity=1.0, scale=scale)
    c1 = np.bincount([two_level.sample(rng).value for _ in range(n)], minlength=16)
    c2 = np.bincount(
        [gumbel_max(SCORES, sensitivity=1.0, scale=scale, rng=rng).value for _ in range(n)], minlength=16
    )
    assert _chi2_pvalue(c1, probs) > 1e-4
    assert _chi2_pvalue(c2, probs) > 1e-4


def test_two_level_sampler_column_update_equals_fresh_sampler():
    s = ColumnwiseExponentialMechanism(SCORES, sensitivity=1.0, scale=0.5)
    new = SCORES.copy()
    new[:, 2] = [3.0, -1.0, -np.inf, 0.25]
    s.update_column(2, new[:, 2])
    fresh = ColumnwiseExponentialMechanism(new, sensitivity=1.0, scale=0.5)
    np.testing.assert_allclose(s.column_lse, fresh.column_lse, rtol=0, atol=1e-14)
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    assert [s.sample(r1).value for _ in range(50)] == [fresh.sample(r2).value for _ in range(50)]


def test_mechanism_events():
    rng = np.random.default_rng(0)
    r = gaussian_mechanism(np.zeros(3), sensitivity=0.5, sigma=2.0, rng=rng)
    assert r.event == GaussianDpEvent(4.0) and r.value.shape == (3,)
    assert gumbel_max([1.0, 2.0], sensitivity=0.5, scale=2.0, rng=rng).event == BoundedRangeDpEvent(0.5)
    assert gaussian_mechanism(1.0, sensitivity=1.0, sigma=0.0, rng=rng).value == 1.0
    assert gaussian_mechanism(0.0, sensitivity=0.3, multiplier=7.0, rng=rng).event == GaussianDpEvent(7.0)
    with pytest.raises(TypeError, match=r"exactly one of `sigma` and `multiplier`"):
        gaussian_mechanism(0.0, sensitivity=1.0, rng=rng)


def test_gaussian_mechanism_moments():
    """Mean and variance of 40 000 draws with σ = 3: the mean's s.e. is 3/200 = 0.015 (we allow 5
    s.e.); the sample variance's s.e. is σ²√(2/n) ≈ 0.064 (we allow 5 s.e.)."""
    rng = np.random.default_rng(11)
    x = gaussian_mechanism(np.full(40_000, 2.0), sensitivity=1.0, sigma=3.0, rng=rng).value
    assert abs(x.mean() - 2.0) < 5 * 0.015
    assert abs(x.var(ddof=1) - 9.0) < 5 * 9.0 * math.sqrt(2 / 40_000)


def test_clip_rows():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(clip_rows(X, norm=1.0), [[0.6, 0.8], [0.3, 0.4]])
    with pytest.raises(ValueError, match=r"`norm` must be >= 1e-100; got 0"):
        clip_rows(X, norm=0)


# ----------------------------------------------------------------------------- sensitivities


def _problem(seed, n=40, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    B = np.where(rng.random((d, d)) < 0.4, rng.normal(size=(d, d)), 0.0)
    np.fill_diagonal(B, 0.0)
    W = np.where(rng.random((d, d)) < 0.4, rng.normal(size=(d, d)), 0.0)
    np.fill_diagonal(W, 0.0)
    beta = 0.1 * rng.normal(size=(d, d))
    m = rng.uniform(0.5, 2.0, size=d)  # public smoothness constants
    return rng, X, B, W, beta, m


@pytest.mark.parametrize("scheme", CLIP_SCHEMES)
@pytest.mark.parametrize("seed", range(30))
def test_gradient_and_score_sensitivity_on_neighbouring_datasets(seed, scheme):
    """Replace one row (by a random row, or one crafted far outside the clip boundary): every
    clipped gradient coordinate moves by at most Δ_g,ab = 2C_ab/n and every score by at most
    Δ_s = 2c/n (c = C_a/√M_a, the same for every parent), for the same B, W, β and public M, under
    every clip scheme."""
    rng, X, B, W, beta, m = _problem(seed)
    n, d = X.shape
    C, lam, rho2 = 0.7, 0.05, 0.3
    M = m + rho2
    C_a = clip_bounds(M, C, scheme)
    c = {"relative": C, "parents": C / math.sqrt(M.sum()), "coordinates": C / math.sqrt((d - 1) * M.sum())}[
        scheme
    ]
    np.testing.assert_allclose(C_a, c * np.sqrt(M), rtol=1e-14)
    X2 = X.copy()
    i = rng.integers(n)
    X2[i] = rng.normal(size=d) * (1.0 if seed % 2 else 1e3)
    s1 = PGCDState(X, B.copy(), W, beta, M, lam, rho2, C_a)
    s2 = PGCDState(X2, B.copy(), W, beta, M, lam, rho2, C_a)
    dg = np.abs(s1.G - s2.G)
    assert np.all(dg <= (2 * C_a / n)[:, None] * (1 + 1e-12))
    delta_s = clip_score_sensitivity(M, C, n, scheme)
    assert delta_s == pytest.approx(2 * c / n, rel=1e-14)
    off = ~np.eye(d, dtype=bool)
    assert np.all(np.abs(s1.S[off] - s2.S[off]) <= delta_s * (1 + 1e-12))


def test_gradient_sensitivity_is_attained_at_the_clip_boundary():
    """A replaced row that flips the sign of a saturated per-sample gradient moves the clipped mean
    by exactly 2C_ab/n: the declared sensitivity is tight, not just an upper bound."""
    _, X, B, W, beta, m = _problem(1)
    n, d = X.shape
    B[:, 1] = 0.0  # column 1 of the residual is then x_i1 itself
    C, rho2 = 0.7, 0.3
    M = m + rho2
    C_a = clip_bounds(M, C)
    X[0, :2] = [2.0, 2.0]  # g_0,01 = −x_00·r_01 = −4: far beyond C_0
    X2 = X.copy()
    X2[0, 0] = -2.0  # now +4: the clipped value jumps from −C_0 to +C_0
    g1 = PGCDState(X, B, W, beta, M, 0.05, rho2, C_a).G[0, 1]
    g2 = PGCDState(X2, B, W, beta, M, 0.05, rho2, C_a).G[0, 1]
    assert abs(g1 - g2) == pytest.approx(2 * C_a[0] / n, rel=1e-12)


# ----------------------------------------------------------------------------- algorithm


def test_incremental_equals_naive_recomputation():
    _, X, B, W, beta, m = _problem(3, n=60, d=6)
    kw = dict(lambda1=0.02, rho2=0.2, iters=80, m=m, noise=PGCDNoise(clip=1.0, multiplier=2.0))
    fast = pgcd(X, B, W, beta, rng=np.random.default_rng(9), ledger=PrivacyLedger(), **kw)
    B_naive, sel_naive = naive_dp_pgcd(X, B, W, beta, rng=np.random.default_rng(9), **kw)
    np.testing.assert_array_equal(fast.selected, sel_naive)
    np.testing.assert_allclose(fast.B, B_naive, rtol=0, atol=1e-12)


def test_noise_off_reproduces_pgcd():
    """Multiplier 0 with a clip bound no per-sample gradient reaches is PGCD itself."""
    _, X, B, W, beta, m = _problem(4)
    kw = dict(lambda1=0.02, rho2=0.2, iters=40, m=m)
    plain = pgcd(X, B, W, beta, **kw)
    ledger = PrivacyLedger()
    off = pgcd(
        X,
        B,
        W,
        beta,
        noise=PGCDNoise(clip=1e9, multiplier=0.0),
        rng=np.random.default_rng(0),
        ledger=ledger,
        **kw,
    )
    np.testing.assert_array_equal(plain.selected, off.selected)
    np.testing.assert_allclose(plain.B, off.B, rtol=0, atol=1e-12)
    assert ledger.epsilon(1e-5) == math.inf  # no noise, no privacy: the ledger says so


def test_only_selected_coordinates_change_and_ledger_counts():
    _, X, B, W, beta, m = _problem(5)
    ledger = PrivacyLedger()
    r = pgcd(
        X,
        B,
        W,
        beta,
        lambda1=0.05,
        rho2=0.1,
        iters=25,
        m=m,
        noise=PGCDNoise(clip=1.0, multiplier=3.0),
        rng=np.random.default_rng(1),
        ledger=ledger,
    )
    changed = np.flatnonzero((r.B != B).ravel())
    assert set(changed) <= set(r.selected)
    assert np.all(np.diag(r.B) == 0)
    counts = {e.label: e.count for e in ledger.entries}
    assert counts == {"dp-pgcd/select": 25, "dp-pgcd/gradient": 25}
    assert {e.event for e in ledger.entries} == {BoundedRangeDpEvent(2 / 3.0), GaussianDpEvent(3.0)}
    # 25 iterations, 2 releases each at ρ = 1/(2·3²)
    assert ledger.rho() == pytest.approx(50 / 18)


def test_pgcd_does_not_modify_inputs():
    _, X, B, W, beta, m = _problem(6)
    copies = [a.copy() for a in (X, B, W, beta, m)]
    pgcd(
        X,
        B,
        W,
        beta,
        lambda1=0.05,
        rho2=0.1,
        iters=10,
        m=m,
        noise=PGCDNoise(clip=1.0, multiplier=3.0),
        rng=np.random.default_rng(1),
        ledger=PrivacyLedger(),
    )
    for a, c in zip((X, B, W, beta, m), copies):
        np.testing.assert_array_equal(a, c)


def test_pgcd_minimises_a_lasso_when_alone():
    """With β = W = 0 and ρ₂ = 0 the problem is a (column-wise) lasso; PGCD's objective decreases
    monotonically and ends near the optimum found by many more iterations."""
    _, X, _, _, _, _ = _problem(7, n=200, d=5)
    d = X.shape[1]
    Z = np.zeros((d, d))
    m = (X**2).mean(axis=0)

    def objective(B):
        return 0.5 * np.mean(np.sum((X - X @ B) ** 2, axis=1)) + 0.05 * np.abs(B).sum()

    values = [
        objective(pgcd(X, Z, Z, Z, lambda1=0.05, rho2=0.0, iters=k, m=m).B) for k in (0, 5, 10, 20, 40, 400)
    ]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-2] - values[-1] < 1e-3 * values[0]


def test_pgcd_validation():
    _, X, B, W, beta, m = _problem(8)
    kw = dict(lambda1=0.05, rho2=0.1, iters=3)
    with pytest.raises(TypeError, match=r"`ledger` is required when `noise` is given"):
        pgcd(X, B, W, beta, m=m, noise=PGCDNoise(1.0, 2.0), rng=0, **kw)
    with pytest.raises(ValueError, match=r"`clip` must be > 0; got 0.0"):
        PGCDNoise(clip=0.0, multiplier=1.0)
    with pytest.raises(ValueError, match=r"`multiplier` must be >= 0; got -1.0"):
        PGCDNoise(clip=1.0, multiplier=-1.0)
    with pytest.raises(ValueError, match=r"`m` must be 5 finite non-negative"):
        pgcd(X, B, W, beta, m=-m, **kw)
    with pytest.raises(ValueError, match=r"`B` must have shape \(5, 5\); got \(4, 4\)"):
        pgcd(X, B[:4, :4], W, beta, m=m, **kw)
    with pytest.raises(ValueError, match=r"`X` must have at least 2 columns"):
        pgcd(X[:, :1], B[:1, :1], W[:1, :1], beta[:1, :1], m=m[:1], **kw)
    # an int seed is accepted as rng
    r = pgcd(X, B, W, beta, m=m, noise=PGCDNoise(1.0, 2.0), rng=0, ledger=PrivacyLedger(), **kw)
    assert r.selected.shape == (3,)


def test_selection_event_carries_the_multiplier_exactly():
    """The event is 2/m itself, not 2Δ/(mΔ) (which can differ by an ulp from the calibration)."""
    s = ColumnwiseExponentialMechanism(SCORES, sensitivity=0.1234567, multiplier=57.136258902888464)
    assert s.event == BoundedRangeDpEvent(2.0 / 57.136258902888464)


def test_mechanism_validation():
    with pytest.raises(ValueError, match=r"`value` must be finite"):
        gaussian_mechanism(np.nan, sensitivity=1.0, sigma=1.0, rng=0)
    with pytest.raises(ValueError, match=r"`bound` must be >= 0"):
        from dpbnsl.mechanisms import clip

        clip(np.ones(2), -1.0)
    assert gaussian_mechanism(0.0, sensitivity=1.0, sigma=1.0, rng=3).event == GaussianDpEvent(1.0)
