"""Distributed noise under secure aggregation: the integer statistic's sensitivity on neighbouring
datasets, the samplers against their distributions, the accounting against independent
arithmetic (Rényi divergences computed from the pmfs), and calibration that never overshoots."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from dpbnsl.accounting import LedgerEntry, compose_epsilon
from dpbnsl.accounting.distributed import calibrate_distributed
from dpbnsl.accounting.events_json import event_from_dict, event_to_dict
from dpbnsl.accounting.skellam import ddg_rho, skellam_rdp
from dpbnsl.mechanisms.distributed import (
    SkellamDpEvent,
    centred,
    discrete_gaussian_share,
    integer_gram,
    integer_gram_sensitivity,
    integer_grid,
    modular_sum,
    noisy_share,
    quantise_rows,
    skellam_share,
    to_residues,
    wrap_probability,
)


def _renyi(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """D_α(P‖Q) of two pmfs on one support, in log space (points where either pmf underflows to 0
    carry less than 1e-300 of mass and are left out)."""
    mask = (p > 0) & (q > 0)
    return float(special.logsumexp(alpha * np.log(p[mask]) + (1 - alpha) * np.log(q[mask])) / (alpha - 1))


# --- the integer statistic and its sensitivity ---------------------------------------------------


@pytest.mark.parametrize("d", [1, 3, 12])
def test_rounded_rows_stay_within_the_norm_bound_even_for_extreme_rows(d):
    rng = np.random.default_rng(0)
    grid = integer_grid(clip_norm=2.5, d=d, norm_bound=900)
    X = rng.normal(size=(500, d)) * rng.choice([0.1, 1.0, 1e3], size=(500, 1))
    X[0] = 1e300
    X[1, 0] = np.inf
    X[2] = 2.5 / math.sqrt(d)  # on the clip sphere
    Q = quantise_rows(X, grid, rng=rng)
    assert np.array_equal(Q, np.round(Q))
    assert np.einsum("ij,ij->i", Q, Q).max() <= 900
    assert not Q[1].any()  # a non-finite row contributes nothing


def test_randomised_rounding_is_unbiased():
    # E q = γx coordinate-wise; the mean of 40,000 roundings of one row has sd ≤ 0.5/√40,000 = 0.0025
    grid = integer_grid(clip_norm=1.0, d=3, norm_bound=400)
    x = np.array([[0.3, -0.55, 0.1]])
    Q = quantise_rows(np.repeat(x, 40_000, axis=0), grid, rng=np.random.default_rng(1))
    assert np.all(np.abs(Q.mean(axis=0) - grid.scale * x[0]) < 5 * 0.0025)


@pytest.mark.parametrize("seed", range(6))
def test_integer_gram_sensitivity_on_neighbouring_datasets(seed):
    """Replace one row (the others round with the same uniforms): the integer statistics differ by
    at most Δ₂ = √2·B in ℓ2 and Δ₁ = (d + 1)·B in ℓ1; the worst pair (R e_a vs R e_b) comes close."""
    rng = np.random.default_rng(seed)
    d, R, B = 6, 3.0, 2000
    grid = integer_grid(clip_norm=R, d=d, norm_bound=B)
    l2, l1 = integer_gram_sensitivity(d=d, norm_bound=B)
    X = rng.normal(size=(40, d))
    cases = [rng.normal(size=d) * 10, np.eye(d)[0] * R, -X[0]]
    for new in cases:
        Xn = X.copy()
        Xn[0] = new
        if seed % 2:  # the worst case in direction: R e_a against R e_b
            X = X.copy()
            X[0] = np.eye(d)[1] * R
        a = integer_gram(quantise_rows(X, grid, rng=np.random.default_rng(seed + 100)))
        b = integer_gram(quantise_rows(Xn, grid, rng=np.random.default_rng(seed + 100)))
        diff = (a - b).astype(float)
        assert np.linalg.norm(diff) <= l2
        assert np.abs(diff).sum() <= l1
    # the worst case reaches ≥ 80 % of Δ₂ (the grid leaves √d of room for the rounding)
    e = np.zeros((2, d))
    e[0, 0] = e[1, 1] = R
    qa = integer_gram(quantise_rows(e[:1], grid, rng=np.random.default_rng(0)))
    qb = integer_gram(quantise_rows(e[1:], grid, rng=np.random.default_rng(0)))
    assert np.linalg.norm((qa - qb).astype(float)) >= 0.8 * l2


def test_integer_gram_is_exact_and_refuses_inexact_sizes():
    Q = np.array([[3.0, -4.0], [1.0, 2.0]])
    assert integer_gram(Q).tolist() == [10, -10, 20]
    with pytest.raises(ValueError, match="not exact in float64"):
        integer_gram(np.full((4, 1), 2.0**26))


def test_grid_refuses_a_bound_with_no_room_for_rounding():
    with pytest.raises(ValueError, match="leaves no room"):
        integer_grid(clip_norm=1.0, d=9, norm_bound=9)


# --- samplers ----------------------------------------------------------------------------------


def test_skellam_share_has_its_variance():
    # sample variance of n draws: sd √((2v² + v)/n) (Skellam's excess kurtosis is 1/v); 5 sd
    n, v = 200_000, 40.0
    x = skellam_share(n, variance=v, rng=np.random.default_rng(2))
    assert x.dtype == np.int64
    assert abs(x.mean()) < 5 * math.sqrt(v / n)
    assert abs(x.var() - v) < 5 * math.sqrt((2 * v * v + v) / n)


def test_discrete_gaussian_share_matches_its_pmf():
    # χ² goodness of fit on |k| ≤ 8 (pooled tails) for σ = 2.5; p-value above 1e-4
    sigma, n = 2.5, 100_000
    x = discrete_gaussian_share(n, sigma=sigma, rng=np.random.default_rng(3))
    ks = np.arange(-40, 41)
    pmf = np.exp(-(ks**2) / (2 * sigma**2))
    pmf /= pmf.sum()
    inner = np.abs(ks) <= 8
    observed = np.array([(x == k).sum() for k in ks[inner]] + [(np.abs(x) > 8).sum()])
    expected = n * np.append(pmf[inner], pmf[~inner].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_modular_sum_is_the_sum_read_back_and_wraps_exactly():
    rng = np.random.default_rng(4)
    parts = [rng.integers(-1000, 1000, 50) for _ in range(7)]
    total = modular_sum([to_residues(p, bits=16) for p in parts], bits=16)
    assert np.array_equal(centred(total, bits=16), np.sum(parts, axis=0))
    big = [np.array([30_000]), np.array([30_000])]  # 60,000 ≥ 2^15: wraps to 60,000 − 2^16
    assert (
        centred(modular_sum([to_residues(p, bits=16) for p in big], bits=16), bits=16)[0] == 60_000 - 65_536
    )
    with pytest.raises(ValueError, match="not a vector of residues"):
        modular_sum([np.array([70_000])], bits=16)


def test_noisy_share_refuses_an_unknown_noise():
    with pytest.raises(ValueError, match="`noise` must be one of"):
        noisy_share(
            np.zeros(3, dtype=np.int64), noise="gauss", share=1.0, bits=16, rng=np.random.default_rng(0)
        )


@pytest.mark.parametrize("noise", ["skellam", "ddg"])
def test_wrap_probability_bounds_the_observed_frequency(noise):
    # 100,000 draws of noise of variance 25 against a room of 12: the bound is ≥ the frequency
    # (+ 5 binomial sd of slack)
    n, v, room = 100_000, 25.0, 12.0
    rng = np.random.default_rng(5)
    x = (
        skellam_share(n, variance=v, rng=rng)
        if noise == "skellam"
        else discrete_gaussian_share(n, sigma=5.0, rng=rng)
    )
    freq = float(np.mean(np.abs(x) >= room))
    bound = wrap_probability(noise=noise, variance=v, room=room, size=1)
    assert freq <= bound + 5 * math.sqrt(bound / n)
    assert bound < 1.0


# --- accounting against independent arithmetic ----------------------------------------------------


@pytest.mark.parametrize("variance", [8.0, 60.0])
@pytest.mark.parametrize("shift", [[1], [3], [2, -1, 1]])
@pytest.mark.parametrize("alpha", [2, 5, 16])
def test_skellam_rdp_bounds_the_renyi_divergence_of_the_pmfs(variance, shift, alpha):
    """D_α(Sk + v ‖ Sk) summed over coordinates (product distributions), computed from scipy's
    Skellam pmf, never exceeds the bound at (‖v‖₂, ‖v‖₁); at the larger variance the bound is
    within a factor 1.5 of it (the accounting is not vacuous)."""
    mu = variance / 2.0
    support = np.arange(-400, 401)
    p0 = stats.skellam.pmf(support, mu, mu)
    exact = 0.0
    for s in shift:
        p1 = stats.skellam.pmf(support - s, mu, mu)
        exact += _renyi(p1, p0, alpha)
    v = np.array(shift, float)
    bound = float(
        skellam_rdp(np.array([alpha]), l2=np.linalg.norm(v), l1=np.abs(v).sum(), variance=variance)[0]
    )
    assert exact <= bound * (1 + 1e-9)
    if variance == 60.0 and alpha <= 5:
        assert bound <= 1.5 * exact


def test_skellam_rdp_at_fractional_orders_takes_the_next_integer():
    a = skellam_rdp(np.array([2.5, 3.0]), l2=1.0, l1=1.0, variance=10.0)
    assert a[0] == a[1]


@pytest.mark.parametrize("sigma,shares", [(1.0, 2), (2.0, 3), (0.6, 4)])
def test_ddg_rho_bounds_the_renyi_divergence_of_the_sum(sigma, shares):
    """The pmf of a sum of discrete Gaussians (by convolution), shifted by Δ = 1 and 2: its Rényi
    divergence is at most ρα with ρ = ddg_rho (Kairouz et al. Thm 1), at every order tried."""
    ks = np.arange(-60, 61)
    one = np.exp(-(ks**2) / (2 * sigma**2))
    one /= one.sum()
    total = one
    for _ in range(shares - 1):
        total = np.convolve(total, one)
    for delta in (1, 2):
        shifted = np.concatenate([np.zeros(delta), total[:-delta]])
        rho = ddg_rho(l2=float(delta), sigma=sigma, shares=shares, dimension=1)
        for alpha in (1.5, 2.0, 4.0, 10.0):
            assert _renyi(shifted, total, alpha) <= rho * alpha * (1 + 1e-9)


def test_skellam_event_round_trips_through_json_and_composes():
    ev = SkellamDpEvent(3.0, 9.0, 400.0)
    assert event_from_dict(event_to_dict(ev)) == ev
    entries = [LedgerEntry("cov", ev, 2)]
    assert compose_epsilon(entries, 1e-5, "rdp") < compose_epsilon(entries, 1e-5, "zcdp")
    with pytest.raises(ValueError, match="'pld' accountant"):
        compose_epsilon(entries, 1e-5, "pld")


# --- calibration ---------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    epsilon=st.floats(0.05, 20.0),
    delta=st.sampled_from([1e-3, 1e-5, 1e-8]),
    d=st.integers(1, 60),
    n_total=st.integers(10, 200_000),
    participants=st.integers(1, 30),
    drop=st.floats(0.0, 0.9),
    noise=st.sampled_from(["skellam", "ddg"]),
)
def test_calibration_never_overshoots(epsilon, delta, d, n_total, participants, drop, noise):
    t = min(int(drop * participants), participants - 1)
    plan = calibrate_distributed(
        epsilon,
        delta,
        d=d,
        n_total=n_total,
        participants=participants,
        dropouts=t,
        clip_norm=2.0,
        noise=noise,
    )
    assert plan.spent <= epsilon
    assert compose_epsilon([LedgerEntry("c", plan.event, 1)], delta, "rdp") <= epsilon
    assert plan.wrap <= 1e-9
    assert plan.n_total * plan.norm_bound < 2 ** (plan.modulus_bits - 1)


def test_declared_dropouts_grow_each_share_as_the_analysis_says():
    base = calibrate_distributed(1.0, 1e-5, d=10, n_total=5000, participants=10, clip_norm=3.0)
    t3 = calibrate_distributed(1.0, 1e-5, d=10, n_total=5000, participants=10, dropouts=3, clip_norm=3.0)
    assert t3.norm_bound == base.norm_bound or t3.norm_bound < base.norm_bound
    if t3.norm_bound == base.norm_bound:
        # the honest variance is the same; each share carries it over 7 shares instead of 10
        assert t3.variance == pytest.approx(base.variance, rel=1e-6)
        assert t3.share == pytest.approx(base.share * 10 / 7, rel=1e-6)


def test_joint_release_has_about_sqrt_p_less_noise_than_the_local_average():
    """At P = 10 the secure release's entry sd is ≥ 2.5× below the average of ten local Gaussian
    releases at the same ε (√10 = 3.16 before the RDP conversion and the grid's rounding room)."""
    from dpbnsl.accounting import calibrate_gaussian

    plan = calibrate_distributed(1.0, 1e-5, d=20, n_total=10_000, participants=10, clip_norm=10.0)
    local = calibrate_gaussian(1.0, 1e-5, math.sqrt(2) * 100 / 1000) / math.sqrt(10)
    assert plan.covariance_sd * 2.5 <= local


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(dropouts=10), "`dropouts`"),
        (dict(noise="gauss"), "`noise` must be one of"),
        (dict(modulus_bits=60), "`modulus_bits`"),
        (dict(clip_norm=0.0), "`clip_norm`"),
    ],
)
def test_calibration_refuses_bad_settings(kwargs, match):
    base = dict(d=5, n_total=1000, participants=10, clip_norm=1.0)
    with pytest.raises(ValueError, match=match):
        calibrate_distributed(1.0, 1e-5, **{**base, **kwargs})


def test_calibration_refuses_a_modulus_too_small_for_the_data():
    with pytest.raises(ValueError, match="modulus bits cannot hold"):
        calibrate_distributed(
            1.0, 1e-5, d=50, n_total=10_000_000, participants=10, clip_norm=1.0, modulus_bits=16
        )


@pytest.mark.parametrize("noise", ["skellam", "ddg"])
def test_fewer_honest_shares_give_a_weaker_guarantee(noise):
    """With the P − t shares the plan counts on, ε is the plan's; a coalition that subtracts more
    shares leaves a larger ε, growing as the shares left fall (one share: the coalition of all the
    others)."""
    from dpbnsl.accounting.distributed import epsilon_with_shares

    plan = calibrate_distributed(
        1.0, 1e-5, d=10, n_total=5000, participants=6, dropouts=2, clip_norm=5.0, noise=noise
    )
    assert epsilon_with_shares(plan, plan.honest, delta=1e-5) == pytest.approx(plan.spent, rel=1e-9)
    eps = [epsilon_with_shares(plan, k, delta=1e-5) for k in range(1, 7)]
    assert all(a > b for a, b in zip(eps, eps[1:]))
    assert eps[plan.honest - 1] <= 1.0 < eps[0]
    with pytest.raises(ValueError, match="`shares`"):
        epsilon_with_shares(plan, 0, delta=1e-5)
