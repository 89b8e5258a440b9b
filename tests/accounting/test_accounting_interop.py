"""dp-accounting in and out: the bounded-range-aware RDP accountant, the ledger's new events, its
export as one DpEvent, and the exact Gaussian composition."""

import json
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import (
    GaussianDpEvent,
    LaplaceDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    ZCDpEvent,
)
from dp_accounting.dp_event import ComposedDpEvent
from dp_accounting.rdp import RdpAccountant
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.accounting import (
    ORDERS,
    BoundedRangeDpEvent,
    BoundedRangeRdpAccountant,
    PrivacyLedger,
    UnsupportedEventError,
    calibrate_dp_pgcd,
    composed_mu,
    dp_pgcd_entries,
    gaussian_delta,
    gaussian_epsilon,
)
from dpbnsl.accounting.gaussian import certified

DELTA = 1e-5
SGD = PoissonSampledDpEvent(0.01, GaussianDpEvent(1.1))


def _pgcd_ledger(epsilon=1.0, rounds=20, local_iters=10):
    m = calibrate_dp_pgcd(epsilon, DELTA, rounds=rounds, local_iters=local_iters).gaussian_multiplier
    ledger = PrivacyLedger()
    for e in dp_pgcd_entries(m, rounds * local_iters):
        ledger.record(e.label, e.event, e.count)
    return ledger


def test_dp_accounting_alone_refuses_bounded_range_events():
    # why the subclass exists
    assert not RdpAccountant().supports(BoundedRangeDpEvent(0.1))
    assert BoundedRangeRdpAccountant().supports(BoundedRangeDpEvent(0.1))


def test_accountant_reproduces_the_ledger_exactly():
    ledger = _pgcd_ledger()
    acct = BoundedRangeRdpAccountant()
    acct.compose(ledger.as_dp_event())
    assert acct.get_epsilon(DELTA) == ledger.epsilon(DELTA)
    assert ledger.epsilon(DELTA) <= 1.0  # the calibration's promise, read back by dp-accounting's API
    # the converse direction of the API
    assert acct.get_delta(ledger.epsilon(DELTA)) <= DELTA * (1 + 1e-9)


def test_user_composes_a_dp_pgcd_run_with_her_own_events():
    ledger = _pgcd_ledger()
    acct = BoundedRangeRdpAccountant()
    acct.compose(ledger.as_dp_event())
    acct.compose(SGD, 1000)
    # the same composition by hand: the ledger's curve plus dp-accounting's curve of her events,
    # evaluated at integer orders and bounded above at the fractional ones (monotone in the order)
    coarse = np.unique(np.ceil(ORDERS[ORDERS <= 4096]))
    hers = RdpAccountant(coarse)
    hers.compose(SGD, 1000)
    at = {o: r for o, r in zip(coarse, hers.rdp)}
    up = np.array([at[np.ceil(o)] if o <= 4096 else np.inf for o in ORDERS])
    integer = np.isin(ORDERS, coarse)
    assert np.allclose(acct.rdp[integer], (_pgcd_curve(ledger) + up)[integer], rtol=1e-12, atol=0)
    exact = RdpAccountant(ORDERS[ORDERS < 300])  # her curve at every order of the grid (slow above)
    exact.compose(SGD, 1000)
    assert np.all(acct.rdp[ORDERS < 300] >= (_pgcd_curve(ledger)[ORDERS < 300] + exact.rdp) * (1 - 1e-12))
    theirs = dp_accounting.rdp.compute_epsilon(ORDERS, acct.rdp, DELTA)[0]
    assert acct.get_epsilon(DELTA) == theirs
    # and through the ledger itself: it records her event and reports the same figure
    ledger.record("sgd", SGD, 1000)
    assert ledger.epsilon(DELTA) == acct.get_epsilon(DELTA)
    assert ledger.epsilon(DELTA) > _pgcd_ledger().epsilon(DELTA)


def _pgcd_curve(ledger):
    acct = BoundedRangeRdpAccountant()
    acct.compose(ledger.as_dp_event())
    return acct.rdp


def test_as_dp_event_round_trips_through_a_new_ledger():
    ledger = _pgcd_ledger()
    ledger.record("mean", GaussianDpEvent(3.0))
    event = ledger.as_dp_event()
    assert isinstance(event, ComposedDpEvent)
    again = PrivacyLedger()
    again.record("x", event)
    for acc in ("zcdp", "rdp"):
        assert again.epsilon(DELTA, accountant=acc) == pytest.approx(
            ledger.epsilon(DELTA, accountant=acc), rel=1e-12
        )
    assert isinstance(PrivacyLedger().as_dp_event(), dp_accounting.NoOpDpEvent)


def test_laplace_events_under_every_accountant():
    ledger = PrivacyLedger()
    ledger.record("count", LaplaceDpEvent(2.0), count=3)
    # pure 1/b-DP is 1/(2b²)-zCDP
    assert ledger.rho() == pytest.approx(3 * 0.5 / 4.0)
    ref = RdpAccountant(ORDERS)
    ref.compose(LaplaceDpEvent(2.0), 3)
    assert (
        ledger.epsilon(DELTA, accountant="rdp")
        == dp_accounting.rdp.compute_epsilon(ORDERS, ref.rdp, DELTA)[0]
    )
    pld = ledger.epsilon(DELTA, accountant="pld")
    assert pld <= 3 * 0.5 + 1e-9  # never above basic composition of three 0.5-DP releases
    assert pld <= ledger.epsilon(DELTA, accountant="rdp")


def test_sampled_events_where_the_accountant_supports_them():
    ledger = PrivacyLedger()
    ledger.record("sgd", SelfComposedDpEvent(SGD, 500))
    with pytest.raises(UnsupportedEventError, match="no zCDP bound"):
        ledger.epsilon(DELTA, accountant="zcdp")
    with pytest.raises(UnsupportedEventError, match="no zCDP bound"):
        ledger.rho()
    assert "sampled events" in repr(ledger)
    assert math.isnan(ledger.summary()["rho"].iloc[0])
    rdp, pld = ledger.epsilon(DELTA, accountant="rdp"), ledger.epsilon(DELTA, accountant="pld")
    assert 0 < pld < rdp  # PLD is the tighter accountant for subsampled Gaussians
    ref = dp_accounting.pld.PLDAccountant()
    ref.compose(SGD, 500)
    assert pld == pytest.approx(ref.get_epsilon(DELTA), rel=1e-12)
    # a budget filter refuses a sampled event its accountant cannot compose, recording nothing
    filt = PrivacyLedger(budget=(10.0, DELTA), accountant="zcdp")
    with pytest.raises(UnsupportedEventError):
        filt.record("sgd", SGD)
    assert len(filt) == 0


def test_sampling_without_replacement_and_mixed_relations():
    wor = SampledWithoutReplacementDpEvent(10_000, 100, GaussianDpEvent(1.0))
    ledger = PrivacyLedger()
    ledger.record("wor", wor, 100)
    integers = np.arange(2.0, 65.0)
    ref = RdpAccountant(integers, dp_accounting.NeighboringRelation.REPLACE_ONE)
    ref.compose(wor, 100)
    # the ledger evaluates at these integers and more orders, so it can only be tighter; the
    # low integer orders carry the curve here
    eps, on_integers = ledger.epsilon(DELTA), dp_accounting.rdp.compute_epsilon(integers, ref.rdp, DELTA)[0]
    assert 0.9 * on_integers <= eps <= on_integers
    ledger.record("sgd", SGD)
    with pytest.raises(UnsupportedEventError, match="both PoissonSampledDpEvent"):
        ledger.epsilon(DELTA)


@pytest.mark.parametrize(
    "event, match",
    [
        (PoissonSampledDpEvent(1.5, GaussianDpEvent(1.0)), "sampling_probability"),
        (PoissonSampledDpEvent(0.1, BoundedRangeDpEvent(1.0)), "must sample Gaussian or Laplace"),
        (SampledWithoutReplacementDpEvent(10, 20, GaussianDpEvent(1.0)), "sample_size"),
        (LaplaceDpEvent(-1.0), "noise_multiplier"),
    ],
)
def test_bad_user_events_are_refused_before_recording(event, match):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=match):
        ledger.record("x", event)
    assert len(ledger) == 0


def test_pld_refuses_bounded_range_and_zcdp_events():
    for event in (BoundedRangeDpEvent(0.1), ZCDpEvent(0.1)):
        ledger = PrivacyLedger()
        ledger.record("x", event)
        ledger.record("y", LaplaceDpEvent(1.0))
        with pytest.raises(UnsupportedEventError, match="'pld' accountant supports"):
            ledger.epsilon(DELTA, accountant="pld")


def test_json_round_trip_of_nested_events():
    ledger = _pgcd_ledger()
    ledger.record("sgd", SGD, 7)
    ledger.record("count", LaplaceDpEvent(3.0))
    again = PrivacyLedger.from_json(ledger.to_json())
    assert again.entries == ledger.entries
    assert json.loads(again.to_json()) == json.loads(ledger.to_json())
    bad = json.loads(ledger.to_json())
    bad["entries"][-2]["event"]["event"] = {"type": "Mystery"}
    with pytest.raises(UnsupportedEventError, match=r"entry 2\.event: unknown event type 'Mystery'"):
        PrivacyLedger.from_json(json.dumps(bad))


# --- the exact Gaussian profile -------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    mu=st.floats(1e-3, 1e4),
    log_delta=st.floats(-14.0, -0.5),
)
def test_gaussian_epsilon_is_certified_and_tight(mu, log_delta):
    delta = 10.0**log_delta
    eps = gaussian_epsilon(mu, delta)
    assert gaussian_delta(mu, eps) <= delta
    if eps > 0:
        # tight: 1e-9 relative below, δ exceeds the target (or the profile is flat at ε = 0)
        assert gaussian_delta(mu, eps * (1 - 1e-9)) > delta * (1 - 1e-6) or eps < 1e-300


def test_gaussian_profile_against_known_values():
    # δ(ε) at μ = 1, ε = 1 (Balle & Wang 2018, Thm 8): Φ(−1/2) − e·Φ(−3/2), evaluated independently
    from scipy.stats import norm

    assert gaussian_delta(1.0, 1.0) == pytest.approx(norm.cdf(-0.5) - math.e * norm.cdf(-1.5), rel=1e-12)
    assert gaussian_epsilon(float("inf"), DELTA) == math.inf
    assert gaussian_epsilon(0.0, DELTA) == 0.0
    assert composed_mu([0.0, 1.0]) == math.inf
    assert composed_mu([math.inf]) == 0.0
    with pytest.raises(ValueError, match="counts"):
        composed_mu([1.0, 2.0], [1])


def test_gaussian_only_pld_is_exact_and_never_above_dp_accountings_pld():
    ledger = PrivacyLedger()
    ledger.record("a", GaussianDpEvent(4.0), 30)
    ledger.record("b", GaussianDpEvent(2.0), 3)
    exact = ledger.epsilon(DELTA, accountant="pld")
    mu = math.sqrt(30 / 16 + 3 / 4)
    assert exact == gaussian_epsilon(composed_mu([4.0, 2.0], [30, 3]), DELTA)
    assert certified(mu, exact, DELTA)
    ref = dp_accounting.pld.PLDAccountant()
    ref.compose(GaussianDpEvent(4.0), 30)
    ref.compose(GaussianDpEvent(2.0), 3)
    pld = ref.get_epsilon(DELTA)
    # dp-accounting's PLD is a pessimistic discretisation of the same curve: above, and close
    assert exact <= pld <= exact * 1.01


def test_gaussian_only_pld_has_no_cut_off_at_large_losses():
    ledger = PrivacyLedger()
    ledger.record("one", GaussianDpEvent(0.01))  # ρ = 5000: minutes under dp-accounting's PLD
    eps = ledger.epsilon(DELTA, accountant="pld")
    assert math.isfinite(eps) and gaussian_delta(100.0, eps) <= DELTA
    assert eps < ledger.epsilon(DELTA, accountant="rdp")


# --- extremes found by review: cancellation, subnormal targets, underflow ---------------------------

# (μ, δ, the exact ε(δ)): computed once with mpmath at 200 digits by bisection on the exact profile
EXACT = [
    (1e-13, 1e-50, 1.2585160643683244e-12),
    (1e-12, 1e-200, 2.91622288952946e-11),
    (9.5e8, 3.5e-6, 4.5125000426900408e17),
    (1.0, 1e-320, 38.673188874602451),
    (1.0, 5e-324, 38.87183283249431),
    (386699715.21240944, 7.870666601409325e-279, 74768348662895459.0),
    (1.0, 1e-5, 4.3771780956815),
]


@pytest.mark.parametrize("mu, delta, exact", EXACT)
def test_gaussian_epsilon_never_below_the_exact_value(mu, delta, exact):
    eps = gaussian_epsilon(mu, delta)
    # the float nearest to the exact ε may lie one ulp below it: allow that much, nothing more
    assert eps >= exact * (1 - 4e-16)
    if 1e-300 < delta and 1e-6 < mu < 1e3:
        assert eps <= exact * (1 + 1e-9)  # and tight where the numerics allow it


def test_composed_mu_does_not_underflow():
    for z in (1e160, 3e161, 1e162, 1e300, 1e-300):
        assert composed_mu([z]) * z >= 1.0
    assert composed_mu([1e162, 1e162]) * 1e162 >= math.sqrt(2)


@pytest.mark.parametrize("b", [0.0, 1e-320, 1e-300])
def test_extreme_laplace_noise_is_infinite_or_refused_never_a_crash(b):
    ledger = PrivacyLedger()
    ledger.record("count", LaplaceDpEvent(b))
    assert ledger.epsilon(DELTA, accountant="rdp") >= (math.inf if b < 1e-310 else 1e299)
    assert ledger.epsilon(DELTA, accountant="zcdp") == math.inf
    try:
        assert ledger.epsilon(DELTA, accountant="pld") == math.inf
    except UnsupportedEventError as exc:
        assert "use accountant='rdp' or 'zcdp'" in str(exc)


def test_numpy_parameters_write_plain_json():
    ledger = PrivacyLedger()
    ledger.record("g", GaussianDpEvent(np.float32(2.0)), count=np.int64(3))
    ledger.record("w", SampledWithoutReplacementDpEvent(np.int64(1000), np.int64(10), GaussianDpEvent(1.0)))
    again = PrivacyLedger.from_json(ledger.to_json())
    assert again.epsilon(DELTA) == ledger.epsilon(DELTA) and type(again.entries[0].count) is int


def test_a_ledger_that_states_its_relation_refuses_the_other_sampling():
    ledger = PrivacyLedger(neighbouring="replace-one")
    with pytest.raises(UnsupportedEventError, match="add-remove neighbours"):
        ledger.record("sgd", SGD)
    with pytest.raises(UnsupportedEventError, match="add-remove neighbours"):
        ledger.record("sgd", ComposedDpEvent([GaussianDpEvent(1.0), SGD]))
    assert len(ledger) == 0
    ledger.record("wor", SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(1.0)))
    assert PrivacyLedger.from_json(ledger.to_json()).neighbouring == "replace-one"
    with pytest.raises(ValueError, match="`neighbouring`"):
        PrivacyLedger(neighbouring="swap")


def test_private_learners_state_their_relation(tmp_path):
    from dpbnsl import dp_fed_bnsl, simulate

    data = simulate(4, 200, participants=2, rng=0)
    r = dp_fed_bnsl(data.participants, epsilon=1.0, delta=1e-5, rng=1)
    assert all(g.neighbouring == "replace-one" for g in r.ledger)
    with pytest.raises(UnsupportedEventError):
        r.ledger[0].record("sgd", SGD, 100)
