"""Tests for dpbnsl.accounting.calibrate and .calibrate_pgcd: the issue's numerical targets,
never-overshoot round trips through independent accountants, tight ≤ paper, field consistency,
validation.

Oracles:

- Fed-Sparse-BNSL's Theorem 5.1 in closed form, √(TK/ρ*) with ρ* = (√(ε + ln 1/δ) − √(ln 1/δ))²;
- dp-accounting's analytic Gaussian (``get_epsilon_gaussian``, Balle & Wang 2018) and our own exact
  δ(ε) of the Gaussian mechanism, Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ), in 40-digit arithmetic;
- for the tight DP-PGCD calibration, an independent RDP composition: the bounded-range curve by
  brute force over the two-point pairs (written here), the Gaussian curve α/(2m²), and dp-accounting's
  ``compute_epsilon`` (CKS conversion);
- the advanced composition theorem (Dwork, Rothblum & Vadhan 2010) for the Laplace variant.
"""

from __future__ import annotations

import math

import dp_accounting
import mpmath
import numpy as np
import pytest
import scipy.optimize
from dp_accounting import GaussianDpEvent, ZCDpEvent
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dpbnsl.accounting.calibrate
import dpbnsl.accounting.calibrate_pgcd
from dpbnsl.accounting import (
    ORDERS,
    BoundedRangeDpEvent,
    BudgetSplit,
    LaplaceScales,
    LedgerEntry,
    NoiseScales,
    PrivacyLedger,
    calibrate_dp_pgcd,
    calibrate_dp_pgcd_laplace,
    calibrate_gaussian,
    calibrate_smoothness,
    compose_epsilon,
    dp_pgcd_entries,
    split_budget,
)

# Fed-Sparse-BNSL Table 5: (ε, T, K), with δ = 1e-5; PAPER_PRINTED: Theorem 5.1's multipliers
# √(TK/ρ*) for them, rounded (computed from the formula, see docs/decisions.md, 'DP-PGCD: noise
# calibration, paper and tight')
TABLE5 = [(0.5, 10, 10), (1.0, 10, 10), (2.0, 100, 10), (5.0, 100, 20), (25.0, 100, 30), (50.0, 100, 50)]
PAPER_PRINTED = {0.5: 137, 1.0: 69, 2.0: 112, 5.0: 67, 25.0: 21, 50.0: 16}
DELTA = 1e-5
# The zCDP-based calibrations (Theorem 5.1, Theorem D.1, the "zcdp" Gaussian, split_budget) compute
# ρ* = epsilon_to_rho(ε) on the safe side, but the noise m = √(TK/ρ*) and back ρ = TK/m² round-trip
# in double precision, which can add one ulp to ρ and hence to ε (about 2.5% of random targets,
# ≤ 3.7e-16 relative; reported, and pinned by test_zcdp_calibrations_exactly_conservative). The
# property tests allow those few ulps; nothing else.
ULPS = 4 * 2.0**-52


def rho_star(epsilon, delta):
    """Theorem 5.1's ρ* = (√(ε + L) − √L)², L = ln(1/δ), written as (ε/(√(ε + L) + √L))²: the
    same number without the cancellation of the difference (which costs ~L/ε ulps)."""
    L = -math.log(delta)
    return (epsilon / (math.sqrt(epsilon + L) + math.sqrt(L))) ** 2


def gaussian_delta(sigma, epsilon):
    """Exact δ(ε) of the Gaussian mechanism with sensitivity 1 and noise σ (Balle & Wang 2018,
    Thm 8), δ = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ), in 40-digit arithmetic (mpmath)."""
    with mpmath.workdps(40):
        s, e = mpmath.mpf(sigma), mpmath.mpf(epsilon)
        return mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)


def rounding_allowance(sigma, epsilon, delta):
    """Relative error of deciding δ(σ) ≤ δ in double precision: δ is the difference of two terms of
    size ≈ Φ(1/(2σ) − εσ), each good to some ulps, so the decision can be off by k·2⁻⁵³·Φ(…)/δ
    relative to δ. We allow k = 64 ulps (the largest error seen on this grid is ~17 ulps of Φ, i.e.
    1.4e-12 relative at ε = 0.05, δ = 1e-12, where Φ(1/(2σ) − εσ) ≈ 770·δ)."""
    from scipy.stats import norm

    return 64 * 2.0**-53 * float(norm.cdf(0.5 / sigma - epsilon * sigma)) / delta


def two_point_divergence(t, alpha, epsilon0):
    """D_α of the two-point pair with privacy loss in {t, t − ε₀} (see test_accounting_zcdp.py)."""
    q = np.exp(-t) * -np.expm1(t - epsilon0) / -math.expm1(-epsilon0)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(q) + alpha * t, np.log1p(-q) + alpha * (t - epsilon0)) / (alpha - 1)


def bounded_range_curve_bruteforce(orders, epsilon0, n=2001):
    """The exact bounded-range RDP curve by brute force: per order, a grid over t, then a bounded
    scalar maximisation in the two cells around the best grid point (to ~1e-14·ε₀ in t)."""
    t = np.linspace(0.0, epsilon0, n)[1:-1]
    vals = two_point_divergence(t[None, :], orders[:, None], epsilon0)
    out = np.empty(orders.shape)
    for i, a in enumerate(orders):
        k = int(np.argmax(vals[i]))
        lo = t[k - 1] if k > 0 else 0.0
        hi = t[k + 1] if k + 1 < t.size else epsilon0
        res = scipy.optimize.minimize_scalar(
            lambda s: -float(two_point_divergence(s, a, epsilon0)),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-14 * epsilon0},
        )
        out[i] = max(float(vals[i, k]), -float(res.fun))
    return out


@pytest.fixture(scope="module")
def table5():
    """{ε: (paper, tight)} for the Table 5 configurations (each tight calibration ≈ 0.3 s)."""
    return {
        e: (
            calibrate_dp_pgcd(e, DELTA, rounds=T, local_iters=K, method="paper"),
            calibrate_dp_pgcd(e, DELTA, rounds=T, local_iters=K),
        )
        for e, T, K in TABLE5
    }


# --------------------------------------------------------------------------------------------------
# Gaussian mechanism
# --------------------------------------------------------------------------------------------------


def test_analytic_gaussian_target():
    """The issue's target: σ(ε = 1, δ = 1e-5, Δ = 1) = 3.7306316 within 1e-6."""
    assert abs(calibrate_gaussian(1.0, 1e-5, 1.0) - 3.7306316) <= 1e-6
    assert calibrate_gaussian(1.0, 1e-5) == calibrate_gaussian(1.0, 1e-5, 1.0, method="analytic")


EPS_GRID = [0.05, 0.3, 1.0, 2.0, 5.0, 10.0]
DELTA_GRID = [1e-12, 1e-9, 1e-5, 1e-2]


@pytest.mark.parametrize("epsilon", EPS_GRID)
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_analytic_gaussian_round_trip(epsilon, delta):
    """σ → exact δ(σ) ≤ δ (40-digit oracle; up to the double-precision rounding allowance, see
    test_analytic_gaussian_exactly_conservative) and ε(σ) ≤ ε by dp-accounting (to its 1e-12
    root-finding tolerance); σ is the smallest: 1e-6 less noise violates δ. Also ≤ the zCDP σ and,
    for ε < 1, ≤ the classic σ."""
    sigma = calibrate_gaussian(epsilon, delta)
    assert gaussian_delta(sigma, epsilon) <= delta * (1 + rounding_allowance(sigma, epsilon, delta))
    assert gaussian_delta(sigma * (1 - 1e-6), epsilon) > delta
    assert dp_accounting.get_epsilon_gaussian(sigma, delta) <= epsilon + 1e-11
    assert sigma <= calibrate_gaussian(epsilon, delta, method="zcdp")
    if epsilon < 1:
        assert sigma <= calibrate_gaussian(epsilon, delta, method="classic")


def test_analytic_gaussian_exactly_conservative():
    """Exact δ(σ) ≤ δ with no allowance. Fails by 1.4e-12 relative at (ε, δ) = (0.05, 1e-12) and by
    2e-14 at the headline (1, 1e-5): the package's check Φ(a) − e^ε Φ(b) cancels (Φ(a) ≈ 770δ at the
    first point). σ would need to grow by ~1e-14 relative."""
    for epsilon, delta in [(0.05, 1e-12), (0.3, 1e-12), (1.0, 1e-5)]:
        assert gaussian_delta(calibrate_gaussian(epsilon, delta), epsilon) <= delta


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.3, 1e-9), (5.0, 1e-2)])
def test_analytic_gaussian_against_pld(epsilon, delta):
    """A single Gaussian at the analytic σ, accounted by dp-accounting's PLD (pessimistic, within
    its 1e-4 loss discretisation), spends ε up to that discretisation."""
    ledger = PrivacyLedger(accountant="pld")
    ledger.record("g", GaussianDpEvent(calibrate_gaussian(epsilon, delta)))
    # the analytic σ sits 1e-10 (relative) above the exact root, so ε is a hair below the target
    assert epsilon - 1e-8 <= ledger.epsilon(delta) <= epsilon + 1e-4


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 0.99])
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_classic_and_zcdp_gaussian_closed_forms(epsilon, delta):
    assert calibrate_gaussian(epsilon, delta, 2.0, method="classic") == pytest.approx(
        2.0 * math.sqrt(2 * math.log(1.25 / delta)) / epsilon, rel=1e-15
    )
    z = calibrate_gaussian(epsilon, delta, 2.0, method="zcdp")
    assert z >= 2.0 / math.sqrt(2 * rho_star(epsilon, delta)) * (1 - 1e-15)
    assert z == pytest.approx(2.0 / math.sqrt(2 * rho_star(epsilon, delta)), rel=1e-11)
    # its zCDP spend converts back to at most ε (Bun–Steinke)
    ledger = PrivacyLedger(accountant="zcdp")
    ledger.record("g", GaussianDpEvent(z / 2.0))
    assert ledger.epsilon(delta) <= epsilon * (1 + ULPS)


@pytest.mark.parametrize("method", ["analytic", "classic", "zcdp"])
def test_gaussian_sensitivity_scaling(method):
    base = calibrate_gaussian(0.5, 1e-6, 1.0, method=method)
    assert calibrate_gaussian(0.5, 1e-6, 3.5, method=method) == pytest.approx(3.5 * base, rel=1e-15)
    assert calibrate_gaussian(0.5, 1e-6, 0.0, method=method) == 0.0


def test_classic_refuses_epsilon_at_least_one():
    for eps in (1.0, 2.5):
        with pytest.raises(
            ValueError,
            match=rf"the classic Gaussian calibration holds only for ε < 1; "
            rf"`epsilon` = {eps!r} \(use method='analytic'\)",
        ):
            calibrate_gaussian(eps, 1e-5, method="classic")


# --------------------------------------------------------------------------------------------------
# DP-PGCD: the paper's Theorem 5.1 and the tight calibration
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, T, K", TABLE5)
def test_paper_multipliers_match_theorem_5_1(table5, epsilon, T, K):
    paper, _ = table5[epsilon]
    closed = math.sqrt(T * K / rho_star(epsilon, DELTA))
    assert round(paper.gumbel_multiplier) == PAPER_PRINTED[epsilon]
    assert paper.gumbel_multiplier >= closed * (1 - 1e-15)  # never less noise than the theorem
    assert paper.gumbel_multiplier == pytest.approx(closed, rel=1e-11)
    assert paper.rho_total <= rho_star(epsilon, DELTA) * (1 + 1e-15)
    assert paper.epsilon_zcdp <= epsilon * (1 + ULPS)
    assert paper.epsilon_zcdp == pytest.approx(epsilon, rel=1e-11)


@pytest.mark.parametrize("epsilon, T, K", TABLE5)
def test_tight_saves_noise_on_table5(table5, epsilon, T, K):
    """The issue's target: ≥ 15% less noise than Theorem 5.1 at ε ≤ 1, ≥ 10% at ε = 2, never more.
    (Measured: 21.0%, 17.6%, 14.0%, 9.7%, 3.8%, 2.2%.)"""
    paper, tight = table5[epsilon]
    saving = 1 - tight.gumbel_multiplier / paper.gumbel_multiplier
    assert tight.gumbel_multiplier <= paper.gumbel_multiplier
    if epsilon <= 1:
        assert saving >= 0.15
    elif epsilon == 2:
        assert saving >= 0.10


@pytest.mark.parametrize("epsilon, T, K", TABLE5)
def test_tight_table5_never_overshoots_and_is_minimal(table5, epsilon, T, K):
    """ε(rdp) of the returned multiplier ≤ target; 2e-6 less noise exceeds it (the bisection stops
    when its bracket is 1e-6 wide, keeping the feasible end)."""
    _, tight = table5[epsilon]
    m, steps = tight.gumbel_multiplier, T * K
    assert tight.epsilon_rdp <= epsilon
    assert compose_epsilon(dp_pgcd_entries(m, steps), DELTA, "rdp") == tight.epsilon_rdp
    assert compose_epsilon(dp_pgcd_entries(m * (1 - 2e-6), steps), DELTA, "rdp") > epsilon


@pytest.mark.parametrize("epsilon, T, K", TABLE5[:3])
def test_tight_table5_against_independent_rdp_composition(table5, epsilon, T, K):
    """Recompose the tight multiplier without the package's curve or conversion: brute-force
    bounded-range curve + Gaussian α/(2m²), T·K times, dp-accounting's CKS conversion on ORDERS. The
    brute force approaches the exact curve from below to ~1e-12 relative, far inside the calibration's
    slack (ε(m) ≈ target − 3e-7), so ≤ target is a real check."""
    _, tight = table5[epsilon]
    m, steps = tight.gumbel_multiplier, T * K
    curve = bounded_range_curve_bruteforce(ORDERS, 2.0 / m) + ORDERS / (2 * m * m)
    eps, _ = compute_epsilon(ORDERS, steps * curve, DELTA)
    assert eps <= epsilon
    assert eps == pytest.approx(tight.epsilon_rdp, rel=1e-9)


def check_noise_scales(s: NoiseScales, epsilon, delta, T, K, method):
    m = s.gumbel_multiplier
    assert (s.method, s.rounds, s.local_iters, s.epsilon, s.delta) == (method, T, K, epsilon, delta)
    assert s.steps == T * K
    assert s.gaussian_multiplier == m  # the paper's balancing: ρ_sel = ρ_grad
    assert s.rho_per_step == pytest.approx(1 / (2 * m * m), rel=1e-15)
    assert s.rho_total == pytest.approx(2 * T * K * s.rho_per_step, rel=1e-15)
    entries = dp_pgcd_entries(m, T * K)
    assert s.epsilon_zcdp == compose_epsilon(entries, delta, "zcdp")
    assert s.epsilon_rdp == compose_epsilon(entries, delta, "rdp")
    # the RDP accountant is never looser than the zCDP one on these ledgers
    assert s.epsilon_rdp <= s.epsilon_zcdp


@settings(max_examples=25, deadline=None)
@given(
    epsilon=st.floats(0.05, 50.0),
    log10_delta=st.floats(-9.0, -2.0),
    T=st.integers(1, 200),
    K=st.integers(1, 100),
)
def test_calibration_never_overshoots(epsilon, log10_delta, T, K):
    """For random (ε, δ, T, K): tight ≤ paper; each method meets the target under the accountant it
    claims (paper: zCDP with Bun–Steinke, hence also RDP; tight: RDP with CKS); fields consistent."""
    delta = 10.0**log10_delta
    paper = calibrate_dp_pgcd(epsilon, delta, rounds=T, local_iters=K, method="paper")
    tight = calibrate_dp_pgcd(epsilon, delta, rounds=T, local_iters=K, method="tight")
    assert tight.gumbel_multiplier <= paper.gumbel_multiplier
    assert paper.epsilon_zcdp <= epsilon * (1 + ULPS)
    assert paper.epsilon_rdp <= epsilon
    assert tight.epsilon_rdp <= epsilon
    assert paper.gumbel_multiplier >= math.sqrt(T * K / rho_star(epsilon, delta)) * (1 - 1e-15)
    check_noise_scales(paper, epsilon, delta, T, K, "paper")
    check_noise_scales(tight, epsilon, delta, T, K, "tight")


def test_zcdp_calibrations_exactly_conservative():
    """Reproducers found by the property tests and a 3000-point scan; each exceeds its target by
    one ulp: 29.000000000000007, 20.900000000000002, 6.1000000000000005, 46.02700000000001."""
    over = []
    s = calibrate_dp_pgcd(29.0, 0.01, rounds=1, local_iters=1, method="paper")
    if s.epsilon_zcdp > 29.0:
        over.append(("calibrate_dp_pgcd paper", s.epsilon_zcdp))
    e, d = 20.9, 0.0024454204262525535
    ledger = PrivacyLedger(accountant="zcdp")
    ledger.record("m", GaussianDpEvent(calibrate_smoothness(e, d, d=76, method="paper")), count=76)
    if ledger.epsilon(d) > e:
        over.append(("calibrate_smoothness paper", ledger.epsilon(d)))
    e, d = 6.1, 0.006351289607966938
    ledger = PrivacyLedger(accountant="zcdp")
    ledger.record("g", GaussianDpEvent(calibrate_gaussian(e, d, method="zcdp")))
    if ledger.epsilon(d) > e:
        over.append(("calibrate_gaussian zcdp", ledger.epsilon(d)))
    e, d = 46.027, 1.8996804779960724e-08
    ledger = PrivacyLedger(accountant="zcdp")
    for k, r in split_budget(e, d, {"a": 1, "b": 2, "c": 3.3}).rho.items():
        ledger.record(k, ZCDpEvent(r))
    if ledger.epsilon(d) > e:
        over.append(("split_budget", ledger.epsilon(d)))
    assert not over, over


def test_tight_falls_back_to_the_rounded_paper_multiplier(monkeypatch):
    """If the "rdp" composition ever rejected the paper's multiplier, "tight" returns the paper's
    value, including its ulp round-up: ε = 3.985, δ = 1e-5, T·K = 100 is a point where the raw
    closed form √(TK/ρ*) lands one ulp over the target under zCDP."""
    epsilon, delta = 3.985, 1e-5
    raw = math.sqrt(100 / rho_star(epsilon, delta))
    assert (
        dpbnsl.accounting.calibrate_pgcd.compose_epsilon(
            dpbnsl.accounting.calibrate_pgcd.dp_pgcd_entries(raw, 100), delta, "zcdp"
        )
        > epsilon
    )
    paper = calibrate_dp_pgcd(epsilon, delta, rounds=10, local_iters=10, method="paper")
    real = dpbnsl.accounting.calibrate_pgcd.compose_epsilon

    def rdp_rejects_everything(entries, delta, accountant):
        return math.inf if accountant == "rdp" else real(entries, delta, accountant)

    monkeypatch.setattr(dpbnsl.accounting.calibrate_pgcd, "compose_epsilon", rdp_rejects_everything)
    tight = calibrate_dp_pgcd(epsilon, delta, rounds=10, local_iters=10)
    assert tight.gumbel_multiplier == paper.gumbel_multiplier > raw
    assert tight.epsilon_zcdp <= epsilon


def test_calibration_monotone_in_epsilon():
    """A larger budget never needs more noise (same T, K, δ)."""
    prev_p = prev_t = math.inf
    for eps in (0.25, 0.5, 1.0, 2.0, 4.0):
        p = calibrate_dp_pgcd(eps, 1e-6, rounds=20, local_iters=5, method="paper").gumbel_multiplier
        t = calibrate_dp_pgcd(eps, 1e-6, rounds=20, local_iters=5).gumbel_multiplier
        assert p < prev_p and t < prev_t
        prev_p, prev_t = p, t


def test_dp_pgcd_entries():
    entries = dp_pgcd_entries(50.0, 30)
    assert entries == [
        LedgerEntry("dp-pgcd/select", BoundedRangeDpEvent(2.0 / 50.0), 30),
        LedgerEntry("dp-pgcd/gradient", GaussianDpEvent(50.0), 30),
    ]
    assert dp_pgcd_entries(50.0, 30, label="p3")[0].label == "p3/select"
    # as zCDP, one step costs 2·1/(2m²): selection (2/m)²/8 = 1/(2m²) plus the Gaussian's 1/(2m²)
    ledger = PrivacyLedger()
    for e in entries:
        ledger.record(e.label, e.event, e.count)
    assert ledger.rho() == pytest.approx(30 * 2 / (2 * 50.0**2), rel=1e-15)


def test_dp_pgcd_entries_validates():
    with pytest.raises(ValueError, match="`multiplier`"):
        dp_pgcd_entries(0.0, 5)
    with pytest.raises(ValueError, match="`steps`"):
        dp_pgcd_entries(10.0, -3)


def test_compose_epsilon_refuses_non_positive_counts():
    with pytest.raises(ValueError, match="`count`"):
        compose_epsilon([LedgerEntry("x", GaussianDpEvent(1.0), -5)], 1e-5, "rdp")


# --------------------------------------------------------------------------------------------------
# Smoothness constants, the Laplace variant, budget splitting
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 5, 20, 100])
@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-6), (1.0, 1e-5), (5.0, 1e-3)])
def test_smoothness_calibration(d, epsilon, delta):
    """Paper: √(d/(2ρ*)) (Thm D.1). Tight: d Gaussian releases of multiplier m compose exactly into
    one of multiplier m/√d, whose analytic ε(δ) must be ≤ ε. Tight ≤ paper."""
    paper = calibrate_smoothness(epsilon, delta, d=d, method="paper")
    tight = calibrate_smoothness(epsilon, delta, d=d)
    assert paper == pytest.approx(math.sqrt(d / (2 * rho_star(epsilon, delta))), rel=1e-11)
    assert tight <= paper
    assert dp_accounting.get_epsilon_gaussian(tight / math.sqrt(d), delta) <= epsilon + 1e-11
    sigma = tight / math.sqrt(d)
    assert gaussian_delta(sigma, epsilon) <= delta * (1 + rounding_allowance(sigma, epsilon, delta))
    zcdp = PrivacyLedger(accountant="zcdp")
    zcdp.record("m_a", GaussianDpEvent(paper), count=d)
    assert zcdp.epsilon(delta) <= epsilon * (1 + ULPS)


def advanced_composition(e0, k, delta):
    """Dwork, Rothblum & Vadhan (2010): k ε₀-DP mechanisms are (ε₀√(2k ln 1/δ) + kε₀(e^ε₀ − 1), δ)-DP."""
    return e0 * math.sqrt(2 * k * -math.log(delta)) + k * e0 * (math.exp(e0) - 1)


@settings(max_examples=50, deadline=None)
@given(
    epsilon=st.floats(0.01, 50.0),
    log10_delta=st.floats(-12.0, -1.0),
    T=st.integers(1, 200),
    K=st.integers(1, 100),
)
@example(epsilon=14.288525776671479, log10_delta=-12.0, T=175, K=1)  # once 1 ulp over with exp − 1
def test_laplace_calibration(epsilon, log10_delta, T, K):
    """At the returned ε₀ the advanced-composition total over 2TK steps is ≤ ε, and (1 + 1e-9)ε₀
    exceeds it; multipliers are 2/ε₀ (report-noisy-max) and 1/ε₀ (update)."""
    delta = 10.0**log10_delta
    s = calibrate_dp_pgcd_laplace(epsilon, delta, rounds=T, local_iters=K)
    assert isinstance(s, LaplaceScales)
    k = 2 * T * K
    assert advanced_composition(s.epsilon_per_step, k, delta) <= epsilon
    assert advanced_composition(s.epsilon_per_step * (1 + 1e-9), k, delta) > epsilon
    assert s.selection_multiplier == 2.0 / s.epsilon_per_step
    assert s.update_multiplier == 1.0 / s.epsilon_per_step
    assert (s.rounds, s.local_iters, s.epsilon, s.delta) == (T, K, epsilon, delta)


def test_laplace_needs_more_noise_than_gaussian_at_table5():
    """The motivation for the Gaussian/Gumbel design: on the Table 5 settings the Laplace variant's
    update noise (b/Δ = 1/ε₀; standard deviation √2·b) exceeds the paper's Gaussian σ/Δ."""
    for eps, T, K in TABLE5[:3]:
        lap = calibrate_dp_pgcd_laplace(eps, DELTA, rounds=T, local_iters=K)
        paper = calibrate_dp_pgcd(eps, DELTA, rounds=T, local_iters=K, method="paper")
        assert math.sqrt(2) * lap.update_multiplier > paper.gaussian_multiplier


@settings(max_examples=50, deadline=None)
@given(
    epsilon=st.floats(0.01, 50.0),
    log10_delta=st.floats(-12.0, -1.0),
    shares=st.dictionaries(st.text(min_size=1, max_size=8), st.floats(1e-3, 1e3), min_size=1, max_size=5),
)
def test_split_budget(epsilon, log10_delta, shares):
    """Shares sum to ρ_total = ρ*, proportional to the weights; the parts, recorded as ZCDpEvents,
    compose (zCDP, Bun–Steinke) to at most ε (up to ULPS)."""
    delta = 10.0**log10_delta
    s = split_budget(epsilon, delta, shares)
    assert isinstance(s, BudgetSplit)
    assert (s.epsilon, s.delta) == (epsilon, delta)
    assert s.rho_total <= rho_star(epsilon, delta) * (1 + 1e-15)
    assert s.rho_total == pytest.approx(rho_star(epsilon, delta), rel=1e-11)
    assert set(s.rho) == set(shares)
    assert sum(s.rho.values()) == pytest.approx(s.rho_total, rel=1e-14)
    total_w = sum(shares.values())
    for k, w in shares.items():
        assert s.rho[k] == pytest.approx(s.rho_total * w / total_w, rel=1e-14)
    ledger = PrivacyLedger(accountant="zcdp")
    for k, r in s.rho.items():
        ledger.record(k, ZCDpEvent(r))
    assert ledger.epsilon(delta) <= epsilon * (1 + ULPS)


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------

NAN = float("nan")


def pgcd(**kw):
    args = {"epsilon": 1.0, "delta": 1e-5, "rounds": 10, "local_iters": 10}
    args.update(kw)
    e, d = args.pop("epsilon"), args.pop("delta")
    return calibrate_dp_pgcd(e, d, **args)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        # ε ≤ 0 or NaN (and ∞) for every calibration
        (lambda: pgcd(epsilon=0.0), ValueError, r"`epsilon` must be > 0; got 0\.0"),
        (lambda: pgcd(epsilon=-1.0), ValueError, r"`epsilon` must be > 0; got -1\.0"),
        (lambda: pgcd(epsilon=NAN), ValueError, r"`epsilon` must be finite; got nan"),
        (lambda: pgcd(epsilon=math.inf), ValueError, r"`epsilon` must be finite; got inf"),
        (lambda: pgcd(epsilon="1"), TypeError, r"`epsilon` must be a real number; got str '1'"),
        (lambda: calibrate_gaussian(0.0, 1e-5), ValueError, r"`epsilon` must be > 0; got 0\.0"),
        (lambda: calibrate_gaussian(NAN, 1e-5), ValueError, r"`epsilon` must be finite; got nan"),
        (lambda: calibrate_smoothness(-0.5, 1e-5, d=3), ValueError, r"`epsilon` must be > 0; got -0\.5"),
        (
            lambda: calibrate_dp_pgcd_laplace(0.0, 1e-5, rounds=1, local_iters=1),
            ValueError,
            r"`epsilon` must be > 0; got 0\.0",
        ),
        (lambda: split_budget(NAN, 1e-5, {"a": 1}), ValueError, r"`epsilon` must be finite; got nan"),
        # δ outside (0, 1)
        (lambda: pgcd(delta=0.0), ValueError, r"`delta` must be > 0; got 0\.0"),
        (lambda: pgcd(delta=1.0), ValueError, r"`delta` must be < 1; got 1\.0"),
        (lambda: pgcd(delta=-1e-5), ValueError, r"`delta` must be > 0; got -1e-05"),
        (lambda: pgcd(delta=1.5), ValueError, r"`delta` must be < 1; got 1\.5"),
        (lambda: pgcd(delta=NAN), ValueError, r"`delta` must be finite; got nan"),
        (lambda: calibrate_gaussian(1.0, 0.0), ValueError, r"`delta` must be > 0; got 0\.0"),
        (
            lambda: calibrate_gaussian(1.0, 1.0, method="classic"),
            ValueError,
            r"`delta` must be < 1; got 1\.0",
        ),
        (lambda: calibrate_smoothness(1.0, 2.0, d=3), ValueError, r"`delta` must be < 1; got 2\.0"),
        (
            lambda: calibrate_dp_pgcd_laplace(1.0, 0.0, rounds=1, local_iters=1),
            ValueError,
            r"`delta` must be > 0; got 0\.0",
        ),
        (lambda: split_budget(1.0, 1.0, {"a": 1}), ValueError, r"`delta` must be < 1; got 1\.0"),
        # non-integer or non-positive rounds / iterations
        (lambda: pgcd(rounds=0), ValueError, r"`rounds` must be >= 1; got 0"),
        (lambda: pgcd(rounds=-3), ValueError, r"`rounds` must be >= 1; got -3"),
        (lambda: pgcd(rounds=2.5), TypeError, r"`rounds` must be an integer; got float 2\.5"),
        (lambda: pgcd(rounds=10.0), TypeError, r"`rounds` must be an integer; got float 10\.0"),
        (lambda: pgcd(rounds=True), TypeError, r"`rounds` must be an integer; got bool True"),
        (lambda: pgcd(local_iters=0), ValueError, r"`local_iters` must be >= 1; got 0"),
        (lambda: pgcd(local_iters=1.5), TypeError, r"`local_iters` must be an integer; got float 1\.5"),
        (
            lambda: calibrate_dp_pgcd_laplace(1.0, 1e-5, rounds=0, local_iters=1),
            ValueError,
            r"`rounds` must be >= 1; got 0",
        ),
        (
            lambda: calibrate_dp_pgcd_laplace(1.0, 1e-5, rounds=1, local_iters=-1),
            ValueError,
            r"`local_iters` must be >= 1; got -1",
        ),
        (lambda: calibrate_smoothness(1.0, 1e-5, d=0), ValueError, r"`d` must be >= 1; got 0"),
        (
            lambda: calibrate_smoothness(1.0, 1e-5, d=3.0),
            TypeError,
            r"`d` must be an integer; got float 3\.0",
        ),
        # negative sensitivity
        (lambda: calibrate_gaussian(1.0, 1e-5, -1.0), ValueError, r"`sensitivity` must be >= 0; got -1\.0"),
        (lambda: calibrate_gaussian(1.0, 1e-5, NAN), ValueError, r"`sensitivity` must be finite; got nan"),
        # closed vocabularies
        (lambda: pgcd(method="exact"), ValueError, r"`method` must be one of 'tight', 'paper'; got 'exact'"),
        (
            lambda: calibrate_gaussian(1.0, 1e-5, method="laplace"),
            ValueError,
            r"`method` must be one of 'analytic', 'classic', 'zcdp'; got 'laplace'",
        ),
        (
            lambda: calibrate_smoothness(1.0, 1e-5, d=3, method="analytic"),
            ValueError,
            r"`method` must be one of 'tight', 'paper'; got 'analytic'",
        ),
        # shares
        (
            lambda: split_budget(1.0, 1e-5, {}),
            ValueError,
            r"`shares` must be a non-empty mapping of part name to weight; got \{\}",
        ),
        (lambda: split_budget(1.0, 1e-5, [1, 2]), ValueError, r"`shares` must be a non-empty mapping"),
        (
            lambda: split_budget(1.0, 1e-5, {"a": 1, "b": 0}),
            ValueError,
            r"`shares\['b'\]` must be > 0; got 0",
        ),
        (lambda: split_budget(1.0, 1e-5, {"a": -2.0}), ValueError, r"`shares\['a'\]` must be > 0; got -2\.0"),
        (lambda: split_budget(1.0, 1e-5, {"a": NAN}), ValueError, r"`shares\['a'\]` must be finite; got nan"),
        (lambda: split_budget(1.0, 1e-5, {"a": "1"}), TypeError, r"`shares\['a'\]` must be a real number"),
    ],
)
def test_validation_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
