"""The pure-DP releases of Priv-PC: the event, subsampling amplification, Laplace and AboveThreshold."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.mechanisms.sparse_vector import (
    AboveThreshold,
    epsilon_before_subsampling,
    laplace_mechanism,
    pure_dp_epsilon,
    pure_dp_event,
    subsampled_epsilon,
)


def _exact_rr_epsilon(eps0: float, k: int, delta: float) -> float:
    """ε(δ) of k-fold binary randomized response with ε₀ each, from its exact privacy profile:
    the loss is ε₀(k − 2L) with L ~ Bin(k, 1/(1 + e^ε₀)) under the first world, and
    δ(ε) = E[(1 − e^{ε − loss})₊] (bisection on ε)."""
    ell = np.arange(k + 1)
    logpmf = scipy.stats.binom.logpmf(ell, k, 1.0 / (1.0 + math.exp(eps0)))
    loss = eps0 * (k - 2 * ell)

    def profile(eps: float) -> float:
        return float(np.sum(np.exp(logpmf) * np.clip(-np.expm1(eps - loss), 0.0, None)))

    lo, hi = 0.0, eps0 * k
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if profile(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("eps", [1e-4, 0.3, 1.0, 20.0, 699.0])
def test_pure_dp_event_round_trips(eps):
    event = pure_dp_event(eps)
    assert event.num_buckets == 2
    assert pure_dp_epsilon(event) == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize("bad", [0.0, -1.0, 701.0, math.nan, math.inf])
def test_pure_dp_event_refuses(bad):
    with pytest.raises(ValueError, match="`epsilon`"):
        pure_dp_event(bad)


@pytest.mark.parametrize(("eps0", "k"), [(0.01, 1332), (0.1, 100), (0.5, 40), (2.0, 5)])
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_ledger_composes_every_randomized_response(eps0, k, accountant):
    """The ledger's ε(δ) of k pure ε₀-DP releases is an upper bound on the exact composition and,
    under PLD, within 5 % of it. dp-accounting 0.6's PLD accountant composes a randomized-response
    event once whatever its count (it would report ≈ ε₀ here): this fails if that reaches the
    ledger."""
    delta = 1e-5
    ledger = PrivacyLedger(accountant=accountant, neighbouring="replace-one")
    ledger.record("rounds", pure_dp_event(eps0), count=k)
    exact = _exact_rr_epsilon(eps0, k, delta)
    got = ledger.epsilon(delta)
    assert got >= exact * (1 - 1e-6)
    # PLD: pessimistic discretisation (interval 1e-4 per release) costs a few per cent here
    assert got <= exact * (1.05 if accountant == "pld" else 1.5) + 1e-4


def test_zcdp_counts_pure_dp_as_half_epsilon_squared():
    ledger = PrivacyLedger(accountant="zcdp")
    ledger.record("r", pure_dp_event(0.2), count=10)
    assert ledger.rho() == pytest.approx(10 * 0.2**2 / 2, rel=1e-9)


def test_randomized_response_is_a_replace_one_event():
    ledger = PrivacyLedger(neighbouring="add-remove")
    with pytest.raises(ValueError, match="replace-one"):
        ledger.record("r", pure_dp_event(1.0))
    restored = PrivacyLedger.from_json(_ledger_json())
    assert restored.entries[0].event == pure_dp_event(0.5)


def _ledger_json() -> str:
    ledger = PrivacyLedger(neighbouring="replace-one")
    ledger.record("r", pure_dp_event(0.5), count=3)
    return ledger.to_json()


@given(eps=st.floats(1e-6, 50.0), q=st.floats(1e-4, 1.0))
@settings(max_examples=200, deadline=None)
def test_subsampling_amplification_and_inverse(eps, q):
    amplified = subsampled_epsilon(eps, q)
    assert amplified <= eps * (1 + 1e-12)
    assert amplified == pytest.approx(math.log(1 + q * math.expm1(eps)), rel=1e-9)
    assert subsampled_epsilon(epsilon_before_subsampling(amplified, q), q) == pytest.approx(
        amplified, rel=1e-9
    )


def test_laplace_mechanism_scale_and_event():
    """The noise is Lap(Δ/ε): its sample mean absolute value over 200,000 draws is Δ/ε within
    5 standard errors (sd of |Lap(b)| is b)."""
    r = laplace_mechanism(np.zeros(200_000), sensitivity=0.3, epsilon=2.0, rng=0)
    b = 0.3 / 2.0
    assert abs(np.abs(r.value).mean() - b) < 5 * b / math.sqrt(200_000)
    assert r.event == pure_dp_event(2.0)
    with pytest.raises(ValueError, match="`sensitivity`"):
        laplace_mechanism(1.0, sensitivity=0.0, epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="`value` must be finite"):
        laplace_mechanism(math.inf, sensitivity=1.0, epsilon=1.0, rng=0)


def test_above_threshold_law_of_the_first_query():
    """P(first query answers 'above') = P(q + ν ≥ T + ρ) with ν ~ Lap(4Δ/ε), ρ ~ Lap(2Δ/ε); the
    frequency over 40,000 fresh rounds matches the exact value (the difference of two Laplace
    variables, by numerical integration) within 5 binomial standard errors."""
    eps, sens, q = 1.0, 0.5, 0.7
    hits = [
        AboveThreshold(0.0, sensitivity=sens, epsilon=eps, rng=np.random.default_rng([3, k]))(q)
        for k in range(40_000)
    ]
    b1, b2 = 2 * sens / eps, 4 * sens / eps
    grid = np.linspace(-60, 60, 200_001)
    f_rho = np.exp(-np.abs(grid) / b1) / (2 * b1)
    tail = np.where(grid - q >= 0, 0.5 * np.exp(-(grid - q) / b2), 1 - 0.5 * np.exp((grid - q) / b2))
    exact = float(np.trapezoid(f_rho * tail, grid))
    p = float(np.mean(hits))
    assert abs(p - exact) < 5 * math.sqrt(exact * (1 - exact) / len(hits))


def test_above_threshold_stops_after_the_first_above():
    svt = AboveThreshold(0.0, sensitivity=1e-3, epsilon=5.0, rng=0)
    assert svt(-10.0) is False and svt(-10.0) is False
    assert svt(10.0) is True and svt.done and svt.queries == 3
    with pytest.raises(RuntimeError, match="over"):
        svt(0.0)
    with pytest.raises(ValueError, match="`query` must be finite"):
        AboveThreshold(0.0, sensitivity=1.0, epsilon=1.0, rng=0)(math.nan)
    assert svt.event == pure_dp_event(5.0)


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 5.0, 30.0])
def test_closed_form_rdp_matches_dp_accounting(eps):
    """The package's randomized-response RDP curve against dp-accounting's order-by-order one
    (relative 1e-8), and never above the pure-DP bound ε."""
    from dp_accounting.rdp.rdp_privacy_accountant import _randomized_response_rdp_replace_one

    from dpbnsl.accounting.rdp_accountant import ORDERS, randomized_response_rdp

    orders = ORDERS[ORDERS < 1e4][::15]
    ours = randomized_response_rdp(orders, eps)
    p = 2.0 / (1.0 + math.exp(eps))
    theirs = np.array([_randomized_response_rdp_replace_one(p, 2, a) for a in orders])
    np.testing.assert_allclose(ours, theirs, rtol=1e-8)
    assert np.all(ours <= eps)


def test_closed_form_rdp_is_accurate_at_tiny_epsilon():
    """At ε = 1e-6 dp-accounting's own evaluation loses digits; the closed form matches 50-digit
    arithmetic (mpmath) to 1e-9."""
    mpmath = pytest.importorskip("mpmath")
    from dpbnsl.accounting.rdp_accountant import randomized_response_rdp

    mpmath.mp.dps = 50
    eps = mpmath.mpf("1e-6")
    p = mpmath.e**eps / (1 + mpmath.e**eps)
    for a in (1.5, 2.0, 10.0, 1000.0):
        A = mpmath.mpf(a)
        exact = mpmath.log(p**A * (1 - p) ** (1 - A) + (1 - p) ** A * p ** (1 - A)) / (A - 1)
        assert randomized_response_rdp(np.array([a]), 1e-6)[0] == pytest.approx(float(exact), rel=1e-9)
