"""Clipping that holds for every finite record, including entries near ±1e308 and subnormals.

A record with huge finite entries overflows the residual X·B; without care 0·∞ and ∞ − ∞ give NaN
per-sample gradients, a NaN score, and a selection whose probability is 1 on D and 0 on D′
(unbounded privacy loss). These tests run the private computations on such records and check the
sensitivity bounds on neighbouring datasets.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpbnsl.learners import dp_fed_bnsl, dp_fed_sparse_bnsl
from dpbnsl.learners.linear.pgcd import PGCDState, clip_bounds, clip_score_sensitivity, clipped_products
from dpbnsl.mechanisms import clip, clip_rows, row_norms
from dpbnsl.simulation import simulate

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
ANY = st.floats(allow_nan=True, allow_infinity=True, width=64)
EXTREME = st.sampled_from(
    [
        1e308,
        -1e308,
        1.7976931348623157e308,
        -1.7976931348623157e308,
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        0.0,
        -0.0,
        1.0,
    ]
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # numpy warns about the overflows these tests provoke
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@settings(max_examples=200, deadline=None)
@given(
    X=arrays(float, (6, 3), elements=FINITE | EXTREME),
    r=arrays(float, 6, elements=ANY | EXTREME),
    bounds=arrays(float, 3, elements=st.floats(1e-300, 1e300)),
)
def test_clipped_products_are_bounded_and_never_nan(X, r, bounds):
    """Every clipped per-sample product lies in [−C_a, C_a] and is a number, whatever the record
    (finite) and whatever the residual (which may already have overflowed to ±∞ or NaN)."""
    out = clipped_products(X, r, bounds)
    assert not np.isnan(out).any()
    assert np.all(np.abs(out) <= bounds)
    # where the product is an ordinary finite number it is clipped as usual
    with np.errstate(all="ignore"):
        raw = X * r[:, None]
    ok = np.isfinite(raw)
    assert np.array_equal(out[ok], np.clip(raw, -bounds, bounds)[ok])


@settings(max_examples=300, deadline=None)
@given(X=arrays(float, (5, 4), elements=FINITE | EXTREME), R=st.floats(1e-100, 1e100))
def test_clip_rows_bounds_every_finite_row(X, R):
    """Every row comes out with norm ≤ R (never an ulp over), rows well inside are kept, and the
    others keep their direction and are not zeroed (an overflowing norm or a subnormal factor
    R/‖x‖ used to zero them)."""
    out = clip_rows(X, norm=R)
    assert np.isfinite(out).all()
    assert np.all(row_norms(out) <= R)
    norms = row_norms(X)
    inside = norms <= R * (1 - 1e-12)
    assert np.array_equal(out[inside], X[inside])
    for x, y in zip(X[~inside], out[~inside]):
        # same direction: y = c·x with 0 < c < 1, checked on the largest entry (exact ratios
        # elsewhere may underflow); the result sits at the bound
        a = int(np.argmax(np.abs(x)))
        assert y[a] != 0 and np.sign(y[a]) == np.sign(x[a])
        assert np.allclose(y / y[a], x / x[a], rtol=1e-12, atol=1e-200)  # subnormal outputs
        assert row_norms(y[None])[0] == pytest.approx(R, rel=1e-11)


def test_clip_rows_refuses_bounds_whose_sensitivity_would_underflow():
    with pytest.raises(ValueError, match=r"`norm` must be >= 1e-100"):
        clip_rows(np.ones((2, 3)), norm=5e-324)


@settings(max_examples=100, deadline=None)
@given(v=arrays(float, 8, elements=ANY), b=st.floats(0.0, 1e300))
def test_clip_is_bounded_for_any_input(v, b):
    out = clip(v, b)
    assert not np.isnan(out).any() and np.all(np.abs(out) <= b)


def _state(X, seed=0, C=0.7, rho2=0.3):
    rng = np.random.default_rng(seed)
    n, d = X.shape
    B = np.where(rng.random((d, d)) < 0.5, rng.normal(size=(d, d)), 0.0)
    np.fill_diagonal(B, 0.0)
    W = np.where(rng.random((d, d)) < 0.4, rng.normal(size=(d, d)), 0.0)
    np.fill_diagonal(W, 0.0)
    beta = 0.1 * rng.normal(size=(d, d))
    M = rng.uniform(0.5, 2.0, size=d) + rho2
    C_a = clip_bounds(M, C)
    return PGCDState(X, B, W, beta, M, 0.05, rho2, C_a), C_a, M


@settings(max_examples=150, deadline=None)
@given(record=arrays(float, 5, elements=FINITE | EXTREME), i=st.integers(0, 39), seed=st.integers(0, 20))
def test_neighbouring_extreme_record_keeps_the_sensitivities(record, i, seed):
    """Replace row i by any finite record: gradients and scores stay finite and move by at most
    Δ_g,ab = 2C_ab/n and Δ_s = 2C/(n√ΣM) (the bounds the noise is calibrated to)."""
    X = np.random.default_rng(100 + seed).normal(size=(40, 5))
    X2 = X.copy()
    X2[i] = record
    s1, C_a, M = _state(X, seed)
    s2, _, _ = _state(X2, seed)
    n, d = X.shape
    off = ~np.eye(d, dtype=bool)
    for s in (s1, s2):
        assert np.isfinite(s.G).all() and np.isfinite(s.S[off]).all()
    assert np.all(np.abs(s1.G - s2.G) <= (2 * C_a / n)[:, None] * (1 + 1e-12))
    delta_s = clip_score_sensitivity(M, 0.7, n)
    assert np.all(np.abs(s1.S[off] - s2.S[off]) <= delta_s * (1 + 1e-12))


def test_extreme_record_through_coordinate_updates():
    """A record whose residual overflows: x = (1.7e308, 1.7e308, 1, 0) with B[0, 2] = B[1, 2] = 1
    makes x·B[:, 2] = ∞, so r_2 = −∞ and the per-sample product of coordinate (3, 2) is 0·(−∞) =
    NaN (a NaN gradient and score before the fix). Through further updates, every gradient and
    score stays finite and within the sensitivity of the neighbouring dataset."""
    rng = np.random.default_rng(5)
    n, d, C, rho2 = 30, 4, 0.7, 0.3
    X = rng.normal(size=(n, d))
    X2 = X.copy()
    X2[7] = [1.7e308, 1.7e308, 1.0, 0.0]
    B = np.zeros((d, d))
    B[0, 2] = B[1, 2] = 1.0
    W, beta = np.zeros((d, d)), np.zeros((d, d))
    M = np.full(d, 1.0) + rho2
    C_a = clip_bounds(M, C)
    s1 = PGCDState(X, B.copy(), W, beta, M, 0.05, rho2, C_a)
    s2 = PGCDState(X2, B.copy(), W, beta, M, 0.05, rho2, C_a)
    assert np.isneginf(s2.R[7, 2])  # the overflow this test is about
    off = ~np.eye(d, dtype=bool)
    for a, b, g in [(None, None, None), (0, 1, 0.3), (2, 1, -0.8), (3, 2, 0.5), (1, 0, -0.2), (0, 3, 1.1)]:
        if a is not None:
            s1.update(a, b, g)
            s2.update(a, b, g)
        assert np.isfinite(s2.G[off]).all() and np.isfinite(s2.S[off]).all()
        assert np.all(np.abs(s1.G - s2.G)[off] <= (2 * C_a / n)[:, None].repeat(d, 1)[off] * (1 + 1e-12))


def _with_extreme_record(data):
    parts = [X.copy() for X in data.participants]
    parts[1][4] = [1e308, -1e308, 1.7976931348623157e308, -5e-324, 1e308]
    return parts


@pytest.mark.parametrize(
    "options",
    [
        dict(smoothness="private", centre="declared"),
        dict(smoothness="bounds", centre="private"),
        dict(smoothness=np.full(5, 4.0), centre="declared"),
    ],
)
def test_dp_fed_sparse_bnsl_runs_on_an_extreme_record(options):
    data = simulate(5, 900, participants=3, rng=2)
    r = dp_fed_sparse_bnsl(
        _with_extreme_record(data),
        epsilon=2.0,
        delta=1e-5,
        feature_bound=30.0,
        rounds=3,
        local_iters=5,
        rng=0,
        **options,
    )
    assert np.isfinite(r.W_raw).all() and r.privacy.epsilon <= 2.0


def test_dp_fed_bnsl_runs_on_an_extreme_record():
    data = simulate(5, 900, participants=3, rng=2)
    for centre in ("declared", "private"):
        r = dp_fed_bnsl(
            _with_extreme_record(data),
            epsilon=2.0,
            delta=1e-5,
            clip_norm=10.0,
            centre=centre,
            max_rounds=5,
            rng=0,
        )
        assert np.isfinite(r.W_raw).all() and r.privacy.epsilon <= 2.0
        assert all(np.isfinite(S).all() for S in r.info["covariances"])
