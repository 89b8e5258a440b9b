"""Calibration of pure-DP rounds (Priv-PC): never over the target, and not far below it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.accounting.calibrate_pure import calibrate_pure_rounds
from dpbnsl.learners.constraint.priv_pc import plan_priv_pc
from dpbnsl.mechanisms.sparse_vector import pure_dp_event, subsampled_epsilon


@given(
    epsilon=st.floats(1e-3, 100.0),
    log10_delta=st.floats(-9.0, -2.0),
    rounds=st.integers(1, 3000),
    share=st.floats(0.05, 0.95),
    accountant=st.sampled_from(["rdp", "zcdp"]),
)
@settings(max_examples=60, deadline=None)
def test_pure_rounds_never_overshoot(epsilon, log10_delta, rounds, share, accountant):
    """An independent ledger, fed every reserved release, certifies at most the target; a 1 %
    larger per-round budget would not (the search is tight to its tolerance)."""
    delta = 10.0**log10_delta
    c = calibrate_pure_rounds(epsilon, delta, rounds=rounds, shares=(share, 1 - share), accountant=accountant)
    ledger = PrivacyLedger(accountant=accountant, neighbouring="replace-one")
    for k, e in enumerate(c.epsilons):
        ledger.record(f"release {k}", pure_dp_event(e), count=rounds)
    assert ledger.epsilon(delta) <= epsilon
    assert c.epsilons[0] / c.epsilons[1] == pytest.approx(share / (1 - share), rel=1e-9)
    bigger = PrivacyLedger(accountant=accountant, neighbouring="replace-one")
    for k, e in enumerate(c.epsilons):
        bigger.record(f"release {k}", pure_dp_event(min(e * 1.01, 700.0)), count=rounds)
    if max(c.epsilons) * 1.01 < 700.0:
        assert bigger.epsilon(delta) > epsilon


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 30.0])
def test_pld_calibration_never_overshoots(epsilon):
    c = calibrate_pure_rounds(epsilon, 1e-5, rounds=50, accountant="pld")
    ledger = PrivacyLedger(accountant="pld", neighbouring="replace-one")
    for k, e in enumerate(c.epsilons):
        ledger.record(f"release {k}", pure_dp_event(e), count=50)
    assert ledger.epsilon(1e-5) <= epsilon


def test_one_round_spends_the_whole_budget_up_to_the_conversion():
    """One round of one release is pure ε-DP: the calibration gives it (nearly) all of ε."""
    c = calibrate_pure_rounds(1.0, 1e-6, rounds=1, shares=(1.0,), accountant="rdp")
    assert 0.95 <= c.epsilons[0] <= 1.0


@given(
    epsilon=st.floats(1e-3, 100.0),
    n=st.integers(4, 10**7),
    rounds=st.integers(1, 2000),
    subsample=st.one_of(st.just("auto"), st.floats(1e-6, 1.0)),
)
@settings(max_examples=40, deadline=None)
def test_priv_pc_plan_never_overshoots(epsilon, n, rounds, subsample):
    """The plan's sieve ε′ on the subsample amplifies back to at most the calibrated ε_s, and the
    reserved rounds compose to at most the target."""
    p = plan_priv_pc(epsilon=epsilon, delta=1e-3, n=n, rounds=rounds, subsample=subsample)
    assert subsampled_epsilon(p.sieve_epsilon_subsample, p.subsample_rows / n) <= p.sieve_epsilon * (
        1 + 1e-12
    )
    ledger = PrivacyLedger(neighbouring="replace-one")
    ledger.record("sieve", pure_dp_event(p.sieve_epsilon), count=rounds)
    ledger.record("examine", pure_dp_event(p.examine_epsilon), count=rounds)
    assert ledger.epsilon(1e-3) <= epsilon
    assert 2 <= p.subsample_rows <= n
    if subsample == "auto" and n >= 40:
        assert 1 / 20 - 2 / n <= p.subsample_fraction <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(rounds=0), "`rounds`"),
        (dict(shares=()), "`shares`"),
        (dict(shares=(0.5, -1.0)), r"`shares\[1\]`"),
        (dict(accountant="x"), "`accountant`"),
        (dict(rtol=0.0), "`rtol`"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        calibrate_pure_rounds(1.0, 1e-5, **(dict(rounds=3) | kwargs))
    assert math.isfinite(calibrate_pure_rounds(1.0, 1e-5, rounds=3).accounted)
