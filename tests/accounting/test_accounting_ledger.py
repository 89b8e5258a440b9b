"""Tests for dpbnsl.accounting.ledger and .compose: the three accountants against dp-accounting's
accountants and closed forms, composition with counts, the budget filter, JSON round trip, summary,
validation.

Oracles:

- dp-accounting's ``RdpAccountant``: on our ORDERS it must agree with our "rdp" accountant to
  rounding; on its own default orders (a subset of ours) it can only be larger or equal;
- the exact ε(δ) of a Gaussian-only composition: k Gaussians of multiplier z_i compose exactly to one
  Gaussian of multiplier (Σ k_i/z_i²)^{-1/2}, whose ε(δ) is dp-accounting's analytic
  ``get_epsilon_gaussian`` (Balle & Wang 2018);
- dp-accounting's ``PLDAccountant`` (what our "pld" accountant delegates to, checked against the exact
  value above: pessimistic, within its discretisation);
- the Bun–Steinke closed form ξ + ρ + 2√(ρ ln 1/δ) for the "zcdp" accountant.
"""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting import GaussianDpEvent, UnsupportedEventError, ZCDpEvent
from dp_accounting.rdp import RdpAccountant
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpbnsl.accounting import (
    ORDERS,
    BoundedRangeDpEvent,
    BudgetExceededError,
    LedgerEntry,
    PrivacyLedger,
    bounded_range_rdp,
    compose_epsilon,
    event_rdp,
    event_rho,
)

ACCOUNTANTS = ("zcdp", "rdp", "pld")
# PLDAccountant's default: privacy losses are rounded up (pessimistic) to multiples of 1e-4, so each
# composed Gaussian shifts the privacy loss up by at most 1e-4 and k of them by at most k·1e-4.
PLD_INTERVAL = 1e-4


def bun_steinke(rho, delta):
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def exact_gaussian_epsilon(multipliers_counts, delta):
    """Exact ε(δ) of composed Gaussians (all with sensitivity 1)."""
    z = 1.0 / math.sqrt(sum(k / m**2 for m, k in multipliers_counts))
    return float(dp_accounting.get_epsilon_gaussian(z, delta))


def ledger_of(pairs, **kwargs):
    ledger = PrivacyLedger(**kwargs)
    for i, (event, count) in enumerate(pairs):
        ledger.record(f"e{i}", event, count=count)
    return ledger


gaussian_pairs = st.lists(
    st.tuples(st.floats(0.5, 100.0).map(GaussianDpEvent), st.integers(1, 1000)), min_size=1, max_size=4
)
any_event = st.one_of(
    st.floats(0.5, 100.0).map(GaussianDpEvent),
    st.builds(ZCDpEvent, st.floats(0.0, 0.5), st.floats(0.0, 0.05)),
    st.floats(0.0, 2.0, allow_subnormal=False).map(BoundedRangeDpEvent),
)
mixed_pairs = st.lists(st.tuples(any_event, st.integers(1, 300)), min_size=1, max_size=4)
pure_rho_pairs = st.lists(
    st.tuples(
        st.one_of(
            st.floats(0.5, 100.0).map(GaussianDpEvent),
            st.floats(0.0, 0.5).map(ZCDpEvent),
            st.floats(0.0, 2.0, allow_subnormal=False).map(BoundedRangeDpEvent),
        ),
        st.integers(1, 300),
    ),
    min_size=1,
    max_size=4,
)
deltas = st.floats(-12.0, -2.0).map(lambda x: 10.0**x)


# --------------------------------------------------------------------------------------------------
# Per-event curves
# --------------------------------------------------------------------------------------------------


def test_event_curves_closed_forms():
    assert event_rho(GaussianDpEvent(2.0)) == (0.125, 0.0)
    assert event_rho(GaussianDpEvent(0.0)) == (math.inf, 0.0)
    assert event_rho(ZCDpEvent(0.3, 0.01)) == (0.3, 0.01)
    assert event_rho(BoundedRangeDpEvent(0.4)) == (0.4**2 / 8, 0.0)
    np.testing.assert_allclose(event_rdp(GaussianDpEvent(2.0)), ORDERS / 8.0, rtol=1e-15)
    np.testing.assert_allclose(event_rdp(ZCDpEvent(0.3, 0.01)), 0.01 + 0.3 * ORDERS, rtol=1e-15)
    np.testing.assert_array_equal(event_rdp(BoundedRangeDpEvent(0.4)), bounded_range_rdp(ORDERS, 0.4))
    assert np.all(event_rdp(BoundedRangeDpEvent(math.inf)) == math.inf)
    assert np.all(event_rdp(GaussianDpEvent(0.0)) == math.inf)
    # the Gaussian curve is dp-accounting's (q = 1 Poisson-subsampled Gaussian = plain Gaussian)
    acct = RdpAccountant(orders=list(ORDERS))
    acct.compose(GaussianDpEvent(2.0))
    np.testing.assert_allclose(event_rdp(GaussianDpEvent(2.0)), acct._rdp, rtol=1e-14)
    # custom orders
    np.testing.assert_allclose(event_rdp(GaussianDpEvent(1.0), np.array([2.0, 3.0])), [1.0, 1.5])


# --------------------------------------------------------------------------------------------------
# The accountants against the oracles
# --------------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(pairs=gaussian_pairs, delta=deltas)
def test_rdp_matches_dp_accounting_rdp_accountant(pairs, delta):
    """Same orders: equal to rounding. dp-accounting's default orders ⊂ ORDERS: ours ≤ theirs."""
    ours = ledger_of(pairs).epsilon(delta, accountant="rdp")
    same, default = RdpAccountant(orders=list(ORDERS)), RdpAccountant()
    for event, count in pairs:
        same.compose(event, count)
        default.compose(event, count)
    assert ours == pytest.approx(same.get_epsilon(delta), rel=1e-12)
    assert ours <= default.get_epsilon(delta) * (1 + 1e-12)


@settings(max_examples=50, deadline=None)
@given(pairs=mixed_pairs, delta=deltas)
def test_rdp_with_zcdp_and_bounded_range_events(pairs, delta):
    """ZCDpEvents are in dp-accounting's RdpAccountant too; a bounded-range event is bounded above
    by ZCDpEvent(ε₀²/8) (its RDP curve is ≤ αε₀²/8), so replacing every bounded-range event by that
    ZCDpEvent in dp-accounting's accountant (same orders) gives an upper bound on ours."""
    ours = ledger_of(pairs).epsilon(delta, accountant="rdp")
    upper = RdpAccountant(orders=list(ORDERS))
    for event, count in pairs:
        if isinstance(event, BoundedRangeDpEvent):
            event = ZCDpEvent(event.epsilon0**2 / 8)
        upper.compose(event, count)
    theirs = upper.get_epsilon(delta)
    if not any(isinstance(e, BoundedRangeDpEvent) for e, _ in pairs):
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)
    assert ours <= theirs * (1 + 1e-12)


@settings(max_examples=50, deadline=None)
@given(pairs=mixed_pairs, delta=deltas)
def test_zcdp_accountant_is_bun_steinke_of_total_rho(pairs, delta):
    rho = xi = 0.0
    for event, count in pairs:
        if isinstance(event, GaussianDpEvent):
            rho += count / (2 * event.noise_multiplier**2)
        elif isinstance(event, ZCDpEvent):
            rho, xi = rho + count * event.rho, xi + count * event.xi
        else:
            rho += count * event.epsilon0**2 / 8
    ledger = ledger_of(pairs, accountant="zcdp")
    assert ledger.rho() == pytest.approx(rho, rel=1e-12)
    assert ledger.xi() == pytest.approx(xi, rel=1e-12)
    assert ledger.epsilon(delta) == pytest.approx(xi + bun_steinke(rho, delta), rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(pairs=pure_rho_pairs, delta=deltas)
def test_rdp_never_above_zcdp(pairs, delta):
    """For these ledgers (ξ = 0, total ρ ≤ a few hundred, δ ≤ 1e-2) the RDP accountant is at least
    as tight as the zCDP one (its curves are pointwise ≤ ρα and CKS ≤ Bun–Steinke on dense orders).
    Not with ξ > 0: a pure-ξ curve gives ε = ξ only as α → ∞, beyond the finite ORDERS, while
    Bun–Steinke gives ξ exactly; nor outside ORDERS' reach: the Bun–Steinke order 1 + √(ln(1/δ)/ρ)
    must lie in [1.05, 1e6] (we require ρ ∈ [1e-10, 30]·ln(1/δ), with margin; a scan of single zCDP
    events found the first ρ with rdp > zcdp at ρ ≈ 42·ln(1/δ))."""
    ledger = ledger_of(pairs)
    L = -math.log(delta)
    assume(ledger.rho() == 0 or 1e-10 * L <= ledger.rho() <= 30 * L)
    assert ledger.epsilon(delta, accountant="rdp") <= ledger.epsilon(delta, accountant="zcdp") * (1 + 1e-12)


PLD_CASES = [  # (multiplier, count) lists, chosen so that PLDAccountant runs in well under a second
    [(4.0, 1)],
    [(2.0, 3)],
    [(5.0, 10)],
    [(10.0, 8), (20.0, 5)],
    [(3.0, 2), (8.0, 4)],
]


@pytest.mark.parametrize("pairs", PLD_CASES)
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_pld_against_exact_gaussian_composition(pairs, delta):
    """exact ≤ pld ≤ exact + k·1e-4 (PLD is pessimistic, within its discretisation), and
    pld ≤ rdp ≤ zcdp for Gaussian-only ledgers."""
    ledger = ledger_of([(GaussianDpEvent(m), k) for m, k in pairs])
    exact = exact_gaussian_epsilon(pairs, delta)
    pld = ledger.epsilon(delta, accountant="pld")
    k = sum(c for _, c in pairs)
    # get_epsilon_gaussian's own root-finding tolerance is 1e-12
    assert exact - 1e-11 <= pld <= exact + k * PLD_INTERVAL
    assert pld <= ledger.epsilon(delta, accountant="rdp") <= ledger.epsilon(delta, accountant="zcdp")


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
@pytest.mark.parametrize(
    "event, k",
    [
        (GaussianDpEvent(5.0), 7),
        (GaussianDpEvent(20.0), 4),
        (ZCDpEvent(0.01, 0.001), 9),
        (BoundedRangeDpEvent(0.3), 6),
    ],
)
def test_count_k_equals_k_single_records(accountant, event, k):
    """record(event, count=k) ≡ k × record(event) (which the ledger merges into one entry) ≡ k
    separate compositions (k entries of count 1 given to compose_epsilon, which composes each on its
    own). zcdp and rdp: equal to rounding. pld: one k-fold self-composition vs k single compositions
    are both pessimistic discretisations of the same exact value, each within k·1e-4 of it."""
    if accountant == "pld" and not isinstance(event, GaussianDpEvent):
        pytest.skip("pld supports Gaussian events only (tested below)")
    one = PrivacyLedger()
    one.record("x", event, count=k)
    many = PrivacyLedger()
    for _ in range(k):
        many.record("x", event)
    assert many.entries == one.entries
    a = one.epsilon(1e-5, accountant=accountant)
    b = compose_epsilon([LedgerEntry("x", event, 1)] * k, 1e-5, accountant)
    assert many.epsilon(1e-5, accountant=accountant) == a
    if accountant == "pld":
        exact = exact_gaussian_epsilon([(event.noise_multiplier, k)], 1e-5)
        for v in (a, b):
            assert exact - 1e-11 <= v <= exact + k * PLD_INTERVAL
    else:
        assert a == pytest.approx(b, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(pairs=mixed_pairs, delta=deltas, accountant=st.sampled_from(["zcdp", "rdp"]))
def test_count_k_equals_k_single_records_property(pairs, delta, accountant):
    pairs = [(e, min(c, 50)) for e, c in pairs]  # k single entries cost k curve evaluations
    singles = [LedgerEntry(f"e{i}", event, 1) for i, (event, count) in enumerate(pairs) for _ in range(count)]
    assert ledger_of(pairs).epsilon(delta, accountant=accountant) == pytest.approx(
        compose_epsilon(singles, delta, accountant), rel=1e-11, abs=1e-15
    )


@settings(max_examples=30, deadline=None)
@given(
    m1=st.floats(0.5, 200.0),
    m2=st.floats(0.5, 200.0),
    k=st.integers(1, 1000),
    delta=deltas,
    accountant=st.sampled_from(["zcdp", "rdp"]),
)
def test_epsilon_monotone_in_noise(m1, m2, k, delta, accountant):
    """More noise never gives a larger ε, for a Gaussian and for a bounded-range selection whose
    ε₀ = 2/m shrinks with the noise multiplier m."""
    lo, hi = sorted((m1, m2))
    for make in (GaussianDpEvent, lambda m: BoundedRangeDpEvent(2.0 / m)):
        e_lo = compose_epsilon([LedgerEntry("x", make(lo), k)], delta, accountant)
        e_hi = compose_epsilon([LedgerEntry("x", make(hi), k)], delta, accountant)
        assert e_hi <= e_lo * (1 + 1e-12)


# --------------------------------------------------------------------------------------------------
# Unsupported events
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event, name", [(BoundedRangeDpEvent(0.1), "BoundedRangeDpEvent"), (ZCDpEvent(0.1), "ZCDpEvent")]
)
def test_pld_refuses_non_gaussian_events(event, name):
    ledger = PrivacyLedger()
    ledger.record("gradient", GaussianDpEvent(5.0), count=3)
    ledger.record("select", event, count=3)
    msg = rf"the 'pld' accountant supports Gaussian, Laplace and Poisson-subsampled events; entry 'select' is {name}"
    with pytest.raises(UnsupportedEventError, match=msg):
        ledger.epsilon(1e-5, accountant="pld")
    with pytest.raises(UnsupportedEventError, match=msg):
        compose_epsilon(ledger.entries, 1e-5, "pld")
    # a pld-filtered ledger refuses to record it, and records nothing
    filtered = PrivacyLedger(budget=(10.0, 1e-5), accountant="pld")
    with pytest.raises(UnsupportedEventError, match=msg):
        filtered.record("select", event)
    assert len(filtered) == 0


@pytest.mark.parametrize(
    "event", [dp_accounting.dp_event.DiscreteLaplaceDpEvent(1.0, 1), dp_accounting.NoOpDpEvent(), 3.0, None]
)
def test_unknown_events_are_unsupported(event):
    msg = (
        r"`event` of type \w+ is not supported: the ledger composes GaussianDpEvent, "
        r"ZCDpEvent, BoundedRangeDpEvent, SkellamDpEvent, LaplaceDpEvent, PoissonSampledDpEvent"
    )
    ledger = PrivacyLedger()
    if isinstance(event, dp_accounting.NoOpDpEvent):
        ledger.record("x", event)  # a no-op costs nothing: nothing is recorded
    else:
        with pytest.raises(UnsupportedEventError, match=msg):
            ledger.record("x", event)
    assert len(ledger) == 0
    with pytest.raises(UnsupportedEventError, match=msg):
        event_rho(event)
    with pytest.raises(UnsupportedEventError, match=msg):
        event_rdp(event)
    with pytest.raises(UnsupportedEventError, match=msg):
        compose_epsilon([LedgerEntry("x", event, 1)], 1e-5, "zcdp")


def test_from_json_refuses_unknown_event_type():
    text = json.dumps(
        {
            "accountant": "rdp",
            "budget": None,
            "entries": [
                {
                    "label": "x",
                    "count": 1,
                    "event": {"type": "DiscreteLaplaceDpEvent", "noise_parameter": 0.5},
                }
            ],
        }
    )
    with pytest.raises(UnsupportedEventError, match=r"unknown event type 'DiscreteLaplaceDpEvent'"):
        PrivacyLedger.from_json(text)


# --------------------------------------------------------------------------------------------------
# Budget filter
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_budget_filter_refuses_without_recording(accountant):
    ledger = PrivacyLedger(budget=(1.0, 1e-5), accountant=accountant)
    ledger.record("gradient", GaussianDpEvent(20.0), count=5)
    before, eps_before = ledger.entries, ledger.epsilon(1e-5)
    assert eps_before <= 1.0
    with pytest.raises(
        BudgetExceededError,
        match=rf"recording 100 × GaussianDpEvent\(noise_multiplier=20\.0\) "
        rf"\('gradient'\) would spend ε = [0-9.]+ > budget 1 at δ = 1e-05 "
        rf"\({accountant}\); nothing recorded",
    ):
        ledger.record("gradient", GaussianDpEvent(20.0), count=100)
    assert ledger.entries == before
    assert len(ledger) == 1
    assert ledger.epsilon(1e-5) == eps_before
    # the filter keeps working: a small event still fits, and is recorded
    ledger.record("gradient", GaussianDpEvent(20.0), count=1)
    assert sum(e.count for e in ledger.entries) == 6 and ledger.epsilon(1e-5) <= 1.0


def test_budget_exceeded_is_a_value_error():
    assert issubclass(BudgetExceededError, ValueError)


def test_budget_filter_boundary_is_inclusive():
    """Exactly spending the budget is allowed; any more is refused (zcdp: ρ* is the Bun–Steinke
    inverse of the budget, rounded to the safe side)."""
    from dpbnsl.accounting import epsilon_to_rho

    rho_star = epsilon_to_rho(1.0, 1e-5, conversion="bun-steinke")
    ok = PrivacyLedger(budget=(1.0, 1e-5), accountant="zcdp")
    ok.record("all", ZCDpEvent(rho_star))
    assert ok.epsilon(1e-5) <= 1.0
    refused = PrivacyLedger(budget=(1.0, 1e-5), accountant="zcdp")
    with pytest.raises(BudgetExceededError, match=r"budget 1 at δ = 1e-05 \(zcdp\)"):
        refused.record("all", ZCDpEvent(rho_star * (1 + 1e-9)))
    assert refused.entries == ()


def test_budget_filter_on_an_infinite_event():
    ledger = PrivacyLedger(budget=(5.0, 1e-5))
    with pytest.raises(BudgetExceededError, match=r"would spend ε = inf > budget 5"):
        ledger.record("raw", GaussianDpEvent(0.0))
    assert len(ledger) == 0


# --------------------------------------------------------------------------------------------------
# Degenerate cases
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_degenerate_ledgers(accountant):
    assert PrivacyLedger().epsilon(1e-5, accountant=accountant) == 0.0
    assert compose_epsilon([], 1e-5, accountant) == 0.0
    no_noise = PrivacyLedger()
    no_noise.record("raw", GaussianDpEvent(0.0), count=3)
    assert no_noise.epsilon(1e-5, accountant=accountant) == math.inf
    assert no_noise.rho() == math.inf


@pytest.mark.parametrize("accountant", ["zcdp", "rdp"])
def test_degenerate_non_gaussian_events(accountant):
    free = PrivacyLedger()
    free.record("nothing", BoundedRangeDpEvent(0.0), count=10)
    free.record("nothing", ZCDpEvent(0.0))
    free.record("nothing", GaussianDpEvent(math.inf))
    assert free.epsilon(1e-5, accountant=accountant) == 0.0
    unbounded = PrivacyLedger()
    unbounded.record("argmax", BoundedRangeDpEvent(math.inf))
    assert unbounded.epsilon(1e-5, accountant=accountant) == math.inf


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pld_infinite_noise_costs_nothing():
    ledger = PrivacyLedger()
    ledger.record("nothing", GaussianDpEvent(math.inf))
    assert ledger.epsilon(1e-5, accountant="pld") == 0.0


# --------------------------------------------------------------------------------------------------
# JSON round trip, summary, bookkeeping
# --------------------------------------------------------------------------------------------------


def full_ledger(**kwargs):
    ledger = PrivacyLedger(**kwargs)
    ledger.record("smoothness", GaussianDpEvent(30.0), count=5)
    ledger.record("dp-pgcd/select", BoundedRangeDpEvent(0.05), count=100)
    ledger.record("dp-pgcd/gradient", GaussianDpEvent(40.0), count=100)
    ledger.record("centring", ZCDpEvent(0.001, 1e-4))
    ledger.record("dp-pgcd/select", BoundedRangeDpEvent(0.05), count=20)
    return ledger


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"accountant": "zcdp"}, {"budget": (8.0, 1e-6)}, {"budget": (8.0, 1e-6), "accountant": "rdp"}],
)
def test_json_round_trip(kwargs):
    ledger = full_ledger(**kwargs)
    text = ledger.to_json()
    data = json.loads(text)
    assert data["accountant"] == ledger.accountant
    assert [e["label"] for e in data["entries"]] == [e.label for e in ledger.entries]
    assert data["entries"][1]["event"] == {"type": "BoundedRangeDpEvent", "epsilon0": 0.05}
    back = PrivacyLedger.from_json(text)
    assert back.entries == ledger.entries
    assert back.accountant == ledger.accountant
    assert back.budget == ledger.budget
    for acct in ("zcdp", "rdp"):
        assert back.epsilon(1e-6, accountant=acct) == ledger.epsilon(1e-6, accountant=acct)
    assert back.to_json() == text


def test_json_round_trip_of_empty_and_infinite_ledgers():
    empty = PrivacyLedger()
    assert PrivacyLedger.from_json(empty.to_json()).entries == ()
    inf = PrivacyLedger()
    inf.record("argmax", BoundedRangeDpEvent(math.inf))
    inf.record("raw", GaussianDpEvent(0.0))
    back = PrivacyLedger.from_json(inf.to_json())
    assert back.entries == inf.entries
    assert back.epsilon(1e-5) == math.inf


def test_summary_aggregates_by_label_event_and_parameter():
    ledger = PrivacyLedger()
    ledger.record("grad", GaussianDpEvent(5.0), count=3)
    ledger.record("sel", BoundedRangeDpEvent(0.1), count=4)
    ledger.record("grad", GaussianDpEvent(5.0), count=2)  # merged with the first row
    ledger.record("grad", GaussianDpEvent(7.0))  # other parameter: own row
    ledger.record("mean", ZCDpEvent(0.01, 0.002))
    ledger.record("sel2", BoundedRangeDpEvent(0.1))  # other label: own row
    s = ledger.summary()
    assert list(s.columns) == ["label", "event", "parameter", "value", "count", "rho"]
    expected = pd.DataFrame(
        {
            "label": ["grad", "sel", "grad", "mean", "sel2"],
            "event": [
                "GaussianDpEvent",
                "BoundedRangeDpEvent",
                "GaussianDpEvent",
                "ZCDpEvent",
                "BoundedRangeDpEvent",
            ],
            "parameter": ["noise_multiplier", "epsilon0", "noise_multiplier", "rho", "epsilon0"],
            "value": [5.0, 0.1, 7.0, 0.01, 0.1],
            "count": [5, 4, 1, 1, 1],
            "rho": [5 / 50, 4 * 0.01 / 8, 1 / 98, 0.01, 0.01 / 8],
        }
    )
    pd.testing.assert_frame_equal(s, expected, check_exact=False, rtol=1e-14)
    assert s["rho"].sum() == pytest.approx(ledger.rho(), rel=1e-14)
    assert ledger.xi() == 0.002
    empty = PrivacyLedger().summary()
    assert list(empty.columns) == list(s.columns) and len(empty) == 0


def test_repeated_records_merge_into_one_entry():
    """A record repeating an earlier (label, event) increases that entry's count in place; another
    label or another parameter makes a new entry. ε is unchanged by the merge."""
    ledger = PrivacyLedger()
    ledger.record("grad", GaussianDpEvent(5.0), count=3)
    ledger.record("sel", BoundedRangeDpEvent(0.1), count=4)
    ledger.record("grad", GaussianDpEvent(5.0), count=2)
    ledger.record("grad", GaussianDpEvent(7.0))
    ledger.record("sel2", BoundedRangeDpEvent(0.1))
    assert ledger.entries == (
        LedgerEntry("grad", GaussianDpEvent(5.0), 5),
        LedgerEntry("sel", BoundedRangeDpEvent(0.1), 4),
        LedgerEntry("grad", GaussianDpEvent(7.0), 1),
        LedgerEntry("sel2", BoundedRangeDpEvent(0.1), 1),
    )
    unmerged = [
        LedgerEntry("grad", GaussianDpEvent(5.0), 3),
        LedgerEntry("sel", BoundedRangeDpEvent(0.1), 4),
        LedgerEntry("grad", GaussianDpEvent(5.0), 2),
        LedgerEntry("grad", GaussianDpEvent(7.0), 1),
        LedgerEntry("sel2", BoundedRangeDpEvent(0.1), 1),
    ]
    for acct in ("zcdp", "rdp"):
        assert ledger.epsilon(1e-5, accountant=acct) == pytest.approx(
            compose_epsilon(unmerged, 1e-5, acct), rel=1e-13
        )


def test_entries_are_read_only_and_repr():
    ledger = full_ledger(budget=(8.0, 1e-6))
    entries = ledger.entries
    assert isinstance(entries, tuple) and len(ledger) == 4  # the repeated selection is merged
    assert entries[0] == LedgerEntry("smoothness", GaussianDpEvent(30.0), 5)
    with pytest.raises(AttributeError):
        entries[0].count = 1  # frozen
    assert repr(ledger).startswith("PrivacyLedger(4 entries, ρ=")
    assert repr(ledger).endswith(", budget=(8.0, 1e-06))")
    assert repr(PrivacyLedger()) == "PrivacyLedger(0 entries, ρ=0)"
    # the default accountant is the ledger's
    assert ledger.epsilon(1e-6) == ledger.epsilon(1e-6, accountant="rdp")


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: PrivacyLedger(accountant="moments"),
            ValueError,
            r"`accountant` must be one of 'zcdp', 'rdp', 'pld'; got 'moments'",
        ),
        (
            lambda: PrivacyLedger(budget=1.0),
            TypeError,
            r"`budget` must be a pair \(epsilon, delta\); got 1\.0",
        ),
        (lambda: PrivacyLedger(budget=(1.0, 1e-5, 0)), TypeError, r"`budget` must be a pair"),
        (lambda: PrivacyLedger(budget=(0.0, 1e-5)), ValueError, r"`epsilon` must be > 0; got 0\.0"),
        (
            lambda: PrivacyLedger(budget=(float("nan"), 1e-5)),
            ValueError,
            r"`epsilon` must be finite; got nan",
        ),
        (lambda: PrivacyLedger(budget=(1.0, 0.0)), ValueError, r"`delta` must be > 0; got 0\.0"),
        (lambda: PrivacyLedger(budget=(1.0, 1.0)), ValueError, r"`delta` must be < 1; got 1\.0"),
        (
            lambda: PrivacyLedger().record("", GaussianDpEvent(1.0)),
            TypeError,
            r"`label` must be a non-empty string; got ''",
        ),
        (
            lambda: PrivacyLedger().record(3, GaussianDpEvent(1.0)),
            TypeError,
            r"`label` must be a non-empty string; got 3",
        ),
        (
            lambda: PrivacyLedger().record("x", GaussianDpEvent(1.0), count=0),
            ValueError,
            r"`count` must be >= 1; got 0",
        ),
        (
            lambda: PrivacyLedger().record("x", GaussianDpEvent(1.0), count=-3),
            ValueError,
            r"`count` must be >= 1; got -3",
        ),
        (
            lambda: PrivacyLedger().record("x", GaussianDpEvent(1.0), count=2.0),
            TypeError,
            r"`count` must be an integer; got float 2\.0",
        ),
        (
            lambda: PrivacyLedger().record("x", GaussianDpEvent(-1.0)),
            ValueError,
            r"`noise_multiplier` must be >= 0; got -1\.0",
        ),
        (
            lambda: PrivacyLedger().record("x", GaussianDpEvent(float("nan"))),
            ValueError,
            r"`noise_multiplier` must be finite; got nan",
        ),
        (lambda: PrivacyLedger().record("x", ZCDpEvent(-0.1)), ValueError, r"`rho` must be >= 0; got -0\.1"),
        (
            lambda: PrivacyLedger().record("x", ZCDpEvent(0.1, -1.0)),
            ValueError,
            r"`xi` must be >= 0; got -1\.0",
        ),
        (
            lambda: PrivacyLedger().record("x", ZCDpEvent(0.1, math.inf)),
            ValueError,
            r"`xi` must be finite; got inf",
        ),
        (
            lambda: PrivacyLedger().record("x", BoundedRangeDpEvent(-0.5)),
            ValueError,
            r"`epsilon0` must be >= 0; got -0\.5",
        ),
        (lambda: PrivacyLedger().epsilon(0.0), ValueError, r"`delta` must be > 0; got 0\.0"),
        (lambda: PrivacyLedger().epsilon(2.0), ValueError, r"`delta` must be < 1; got 2\.0"),
        (
            lambda: PrivacyLedger().epsilon(1e-5, accountant="gdp"),
            ValueError,
            r"`accountant` must be one of 'zcdp', 'rdp', 'pld'; got 'gdp'",
        ),
        (lambda: compose_epsilon([], float("nan"), "rdp"), ValueError, r"`delta` must be finite; got nan"),
        (lambda: compose_epsilon([], 1e-5, "exact"), ValueError, r"`accountant` must be one of"),
    ],
)
def test_validation_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_failed_record_leaves_the_ledger_unchanged():
    ledger = full_ledger()
    before = ledger.entries
    for bad in (
        lambda: ledger.record("x", GaussianDpEvent(-1.0)),
        lambda: ledger.record("x", GaussianDpEvent(1.0), count=0),
        lambda: ledger.record("", GaussianDpEvent(1.0)),
    ):
        with pytest.raises((ValueError, TypeError)):
            bad()
    assert ledger.entries == before
