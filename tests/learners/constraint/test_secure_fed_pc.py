"""Secure DP-FedPC: the jointly noised Kendall test's sensitivity on neighbouring datasets, its
calibration, its audit, and the hosted protocol's behaviour (decoding, reservations, refusals)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.accounting.compose import LedgerEntry, compose_epsilon
from dpbnsl.audits import audit
from dpbnsl.audits._pure_games import _crafted_neighbours, _strata
from dpbnsl.federation import Dense
from dpbnsl.federation.guard import Refusal
from dpbnsl.federation.protocol import SETUP_ROUND
from dpbnsl.federation.secure_sum import InProcessSum
from dpbnsl.io.networks import sample_network
from dpbnsl.learners.constraint.dp_fed_pc import dp_fed_pc
from dpbnsl.learners.constraint.kendall import StratifiedKendall, kendall_weight
from dpbnsl.learners.constraint.secure_fed_pc import (
    SecurePCParticipant,
    SecurePCServer,
    batch_payload,
    read_batch,
    secure_pc_settings,
)
from dpbnsl.learners.constraint.secure_kendall import (
    KENDALL_BOUND,
    TEST_KINDS,
    default_tests,
    integer_numerators,
    plan_secure_tests,
)
from dpbnsl.mechanisms.distributed import SkellamDpEvent, centred
from dpbnsl.metrics import skeleton_scores

GAMMA = 64.0
SENS = tuple(math.ceil(GAMMA * b) + 1 for b in KENDALL_BOUND)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 120),
    states=st.integers(2, 4),
    conditional=st.booleans(),
)
def test_integer_numerator_moves_by_at_most_its_sensitivity(seed, n, states, conditional):
    """Replace one row of one participant: ⌊γ T_p⌋ moves by at most ⌈γΔ⌉ + 1."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, states, size=(n, 3)).astype(float)
    Y = X.copy()
    Y[rng.integers(n)] = rng.integers(0, states, size=3)
    test = [(0, 1, (2,) if conditional else ())]
    a, b = (integer_numerators(StratifiedKendall(Z), test, GAMMA)[0] for Z in (X, Y))
    assert abs(int(a) - int(b)) <= SENS[int(conditional)]


def test_crafted_neighbours_move_the_numerator_by_nearly_its_sensitivity():
    """Random neighbours reach only 0.35–0.6 of the bound; these reach over 0.98 of it, so a bound
    2 % too small would fail. Conditional: the priv-pc-examine pair. Unconditional: x = y = 1..m,
    and the row (1, 1) replaced by (1, m + 1), which turns m − 1 concordant pairs discordant:
    ΔT = 18(m − 1)/(2m + 5) → 9."""
    D, E = _crafted_neighbours(4001)
    a, b = (integer_numerators(StratifiedKendall(X, _strata(X)), [(0, 1, (2,))], GAMMA)[0] for X in (D, E))
    assert 0.98 * SENS[1] < abs(int(a) - int(b)) <= SENS[1]
    m = 4000
    X = np.column_stack([np.arange(1.0, m + 1), np.arange(1.0, m + 1)])
    Y = X.copy()
    Y[0] = (1.0, m + 1.0)
    a, b = (
        integer_numerators(StratifiedKendall(Z, np.zeros((m, 2), int)), [(0, 1, ())], GAMMA)[0]
        for Z in (X, Y)
    )
    assert 0.99 * SENS[0] < abs(int(a) - int(b)) <= SENS[0]


def _spent(plan, factor: float) -> float:
    v = (factor * plan.multiplier * plan.sensitivity[1]) ** 2
    entries = [
        LedgerEntry(k, SkellamDpEvent(float(s), float(s), v), m)
        for k, s, m in zip(TEST_KINDS, plan.sensitivity, (plan.unconditional, plan.conditional))
        if m
    ]
    return compose_epsilon(entries, plan.delta, "rdp")


@settings(max_examples=40, deadline=None)
@given(
    epsilon=st.floats(0.05, 30.0),
    delta=st.floats(1e-9, 1e-2),
    tests=st.integers(1, 3000),
    d=st.integers(2, 40),
    participants=st.integers(2, 12),
    data=st.data(),
)
def test_calibration_never_overshoots_and_is_tight(epsilon, delta, tests, d, participants, data):
    """ε(δ) of every reserved test ≤ the target; 1 % less noise would exceed it."""
    t = data.draw(st.integers(0, participants - 1))
    plan = plan_secure_tests(
        epsilon=epsilon,
        delta=delta,
        participants=participants,
        n_total=1000 * participants,
        d=d,
        tests=tests,
        dropouts=t,
    )
    assert plan.accounted <= epsilon
    assert _spent(plan, 1.0) == pytest.approx(plan.accounted, rel=1e-12)
    assert _spent(plan, 0.99) > epsilon
    assert plan.unconditional == min(tests, d * (d - 1) // 2) and plan.tests == tests
    for s, ev in zip(plan.sensitivity, plan.events):  # one share, sized for the conditional Δ
        assert ev.l2_sensitivity == ev.l1_sensitivity == s
        assert ev.variance == pytest.approx(plan.share * (participants - t), rel=1e-12)
        assert ev.variance == pytest.approx((plan.multiplier * plan.sensitivity[1]) ** 2, rel=1e-12)
    assert plan.wrap <= 1e-9


def test_plan_errors_are_clean():
    with pytest.raises(ValueError, match="modulus bits cannot hold"):
        plan_secure_tests(
            epsilon=1.0, delta=1e-5, participants=3, n_total=10**9, d=5, tests=10, modulus_bits=31
        )
    with pytest.raises(ValueError, match="`dropouts` must be"):
        plan_secure_tests(epsilon=1.0, delta=1e-5, participants=3, n_total=3000, d=5, tests=10, dropouts=3)
    with pytest.raises(ValueError, match="`unconditional` must be"):
        plan_secure_tests(
            epsilon=1.0, delta=1e-5, participants=3, n_total=3000, d=5, tests=10, unconditional=11
        )


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_secure_test_audit_passes_and_flags_a_20_percent_deficit(epsilon):
    """10⁵ trials per world: the μ-GDP bound stays below the claim on the correct release (the
    Skellam sum's trade-off curve is the Gaussian's up to its 3Δ₁/(2μ) term, μ ≈ 10⁵–10⁶ here) and
    exceeds it with 80 % of the noise (true μ 1.25 times the claim's) and with a missing share."""
    ok = audit("secure-kendall", epsilon=epsilon, trials=100_000, rng=3)
    assert not ok.flagged and not ok.gdp_flagged
    assert ok.gdp.epsilon_lb >= 0.7 * ok.claimed_epsilon
    assert audit("secure-kendall", epsilon=epsilon, trials=100_000, rng=3, noise_deficit=0.2).gdp_flagged
    assert audit("secure-kendall", epsilon=epsilon, trials=100_000, rng=3, broken="missing-share").gdp_flagged


SETTINGS = dict(epsilon=5.0, delta=1e-5, participants=3, n_total=3 * 2000)


def _parties(X_parts, settings_=SETTINGS, seed=0):
    s = secure_pc_settings(**settings_)
    rngs = np.random.default_rng(seed).spawn(len(X_parts))
    budget = (s["epsilon"], s["delta"])
    parts = [
        SecurePCParticipant(X, settings=settings_, participant=k, rng=g, budget=budget)
        for k, (X, g) in enumerate(zip(X_parts, rngs))
    ]
    return parts, SecurePCServer(settings=settings_, n_participants=len(X_parts))


def _child_parts(n=6000, P=3, seed=0):
    return sample_network("child", n, participants=P, rng=seed).participants


def test_the_server_reads_the_pooled_numerators_plus_one_noise():
    """The first round's sum, decoded, is Σ_p ⌊γ T_p⌋ plus noise of sd √(P·share): within 6 sd."""
    X = [np.asarray(x, float) for x in _child_parts()]
    parts, server = _parties(X)
    reply = server.receive(
        "rounds", SETUP_ROUND, {k: p.respond("rounds", SETUP_ROUND, None)[1] for k, p in enumerate(parts)}
    )
    for k, p in enumerate(parts):
        p.receive_extra(reply.extra_for(k))
    shares = {k: p.respond("tests", 0, reply.for_participant(k))[1] for k, p in enumerate(parts)}
    total = InProcessSum()(shares)
    plan = server.plan
    batch = server.batch
    assert len(batch) == 20 * 19 // 2 and all(S == () for _, _, S in batch)
    exact = sum(integer_numerators(StratifiedKendall(x), batch, plan.scale) for x in X)
    noise = centred(total.total, bits=plan.modulus_bits) - exact
    assert np.abs(noise).max() <= 6 * math.sqrt(3 * plan.share)
    # and the noise is there: its sample sd within 25 % of the plan's (190 draws)
    assert noise.std() == pytest.approx(math.sqrt(3 * plan.share), rel=0.25)
    # every participant holds every reserved test in its ledger, before anything else
    for p in parts:
        assert sum(e.count for e in p.ledger.entries) == default_tests(20)
        assert p.ledger.epsilon(1e-5) <= 5.0


def test_participants_refuse_batches_beyond_their_plan_or_malformed():
    X = [np.asarray(x, float) for x in _child_parts()]
    small = dict(SETTINGS, max_examinations=200)  # fewer than the 190 + the next batch
    parts, server = _parties(X, small)
    reply = server.receive(
        "rounds", SETUP_ROUND, {k: p.respond("rounds", SETUP_ROUND, None)[1] for k, p in enumerate(parts)}
    )
    p = parts[0]
    p.receive_extra(reply.extra_for(0))
    p.respond("tests", 0, reply.for_participant(0))
    too_many = batch_payload([(0, 1, (2,))] * 11, 20)  # 10 conditional tests are reserved
    with pytest.raises(Refusal, match="its plan reserves 190 and 10; nothing released"):
        p.respond("tests", 1, too_many)
    assert p.used.tolist() == [190, 0]
    for bad, why in [
        (Dense(np.zeros((1, 5))), "finite m × 22 matrix"),
        (batch_payload([(3, 3, ())], 20), "same one twice"),
        (batch_payload([(0, 1, (1,))], 20), "conditions on one of its own variables"),
        (Dense(np.r_[[0.0, 1.0, 0.5], np.zeros(19)][None, :]), "other than 0 and 1"),
    ]:
        with pytest.raises(Refusal, match=why):
            read_batch(bad, 20, participant=0, t=1)
    with pytest.raises(Refusal):  # a round going backwards
        p.respond("tests", 0, batch_payload([(0, 1, ())], 20))


def test_a_run_stops_at_its_reserved_tests_and_keeps_the_remaining_edges():
    X = _child_parts()
    r = dp_fed_pc(X, epsilon=5.0, delta=1e-5, aggregation="secure", max_examinations=200, rng=1)
    assert r.info["exhausted"] and r.info["tests"][0] + r.info["tests"][1] <= 200
    assert r.info["tests"][0] == 190 and r.params["max_examinations"] == 200
    for ledger in r.ledger:  # every reserved test is in the ledger, used or not
        assert sum(e.count for e in ledger.entries) == 200 and ledger.epsilon(1e-5) <= 5.0
    # what level 0 left (its last row of history) stays: the 10 conditional tests removed at most 10
    left = r.history["edges"].iloc[-1]
    assert (
        2 * left == r.info["skeleton"].sum()
        and left >= r.history["edges"][r.history["level"] == 0].iloc[-1] - 10
    )
    full = dp_fed_pc(X, epsilon=5.0, delta=1e-5, aggregation="secure", max_examinations=50_000, rng=1)
    assert not full.info["exhausted"]


def test_secure_run_learns_child_and_its_transcript_hides_every_share():
    s = sample_network("child", 30_000, participants=3, rng=0)
    r = dp_fed_pc(s.participants, epsilon=5.0, delta=1e-3, aggregation="secure", rng=1)
    assert r.params["aggregation"] == "secure" and r.method == "dp-fed-pc"
    # child's 25 edges at n = 30,000, ε = 5: observed 0.92-0.98 over seeds 0-4 (PC's plain order
    # without the cap ran out of tests at 0.40-0.46); 0.8 leaves room for the noise
    assert skeleton_scores(s.B_true, r.W).f1 >= 0.8
    uploads = [m for m in r.transcript if m.kind == "secure_share"]
    assert uploads and all(type(m.payload).__name__ == "Masked" for m in uploads)
    assert len(r.ledger) == 3 and r.info["plan"].accounted == pytest.approx(r.ledger[0].epsilon(1e-3))


def test_secure_options_are_validated_before_any_work():
    X = _child_parts()
    with pytest.raises(ValueError, match='`variant` must be "stable"'):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, aggregation="secure", variant="original")
    with pytest.raises(ValueError, match='`accountant` must be "rdp"'):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, aggregation="secure", accountant="pld")
    with pytest.raises(ValueError, match="`aggregation` must be one of"):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, aggregation="joint")
    with pytest.raises(ValueError, match="`dropouts` must be"):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, aggregation="secure", dropouts=3)
    with pytest.raises(TypeError, match="unknown secure DP-FedPC setting"):
        secure_pc_settings(**SETTINGS, ratio=0.5)
    with pytest.raises(ValueError, match="needs the study's n_total"):
        secure_pc_settings(epsilon=1.0, delta=1e-5, participants=3)


def test_kendall_weight_normalises_the_pooled_statistic():
    """With one participant and no noise the decoded statistic is StratifiedKendall's z (up to ⌊·⌋)."""
    X = np.asarray(_child_parts(P=1)[0], float)
    ci = StratifiedKendall(X)
    tests = [(0, 1, ()), (2, 5, (1,))]
    v = integer_numerators(ci, tests, GAMMA)
    z = v / (GAMMA * math.sqrt(kendall_weight(len(X))))
    np.testing.assert_allclose(
        z, [ci.z(*t) for t in tests], atol=1.0 / (GAMMA * math.sqrt(kendall_weight(len(X))))
    )


def test_the_server_tries_the_likeliest_separators_first_and_at_most_max_sets():
    """Level 1 on the edge (0, 1) with neighbours 2, 3, 4: the sets go by their level-0 association
    with both ends (4, then 2, then 3 here), two of them at most; the weakest edges come first."""
    server = SecurePCServer(settings=dict(SETTINGS, max_sets=2), n_participants=3)
    d = 5
    server.S = ~np.eye(d, dtype=bool)
    server.marginal = np.zeros((d, d))
    for (a, b), z in {(0, 4): 9.0, (1, 4): 8.0, (0, 2): 5.0, (1, 3): 1.0, (0, 1): 30.0}.items():
        server.marginal[a, b] = server.marginal[b, a] = z
    server.level = 1
    server._start_level()
    assert server.queues[(0, 1)] == [(4,), (2,)]
    server.plan = plan_secure_tests(
        epsilon=1.0, delta=1e-5, participants=3, n_total=6000, d=d, tests=1000, unconditional=10
    )
    batch = server._next_batch()
    assert batch[-1][:2] == (0, 1) and len(batch) == len(server.queues)  # the strongest edge last
    every = SecurePCServer(settings=dict(SETTINGS, max_sets=None), n_participants=3)
    every.S, every.marginal, every.level = server.S, server.marginal, 1
    every._start_level()
    assert every.queues[(0, 1)] == [(4,), (2,), (3,)]


def _setup(parts, server):
    reply = server.receive(
        "rounds", SETUP_ROUND, {k: p.respond("rounds", SETUP_ROUND, None)[1] for k, p in enumerate(parts)}
    )
    for k, p in enumerate(parts):
        p.receive_extra(reply.extra_for(k))
    return reply


def test_every_slot_carries_the_conditional_share_whatever_the_participant_was_asked():
    """A server that sends one participant conditional tests and the others unconditional ones in
    the same slots: every share still has the plan's (conditional) variance, so the victim's
    statistic gets the noise its ledger records. Sample variance of 2,000 slots of one honest share
    within 10 % of the plan's (the sd of a sample variance of 2,000 near-Gaussian draws is 3 %)."""
    X = [np.asarray(x, float) for x in _child_parts()]
    settings_ = dict(SETTINGS, max_examinations=190 + 2000)
    parts, server = _parties(X, settings_)
    reply = _setup(parts, server)
    for k, p in enumerate(parts):
        p.respond("tests", 0, reply.for_participant(k))
    plan = server.plan
    conditional = [(0, 1, (2,))] * 2000
    p = parts[0]
    exact = integer_numerators(p.ci, conditional, plan.scale)
    share = centred(p.respond("tests", 1, batch_payload(conditional, 20))[1].residues, bits=plan.modulus_bits)
    assert (share - exact).var() == pytest.approx(plan.share, rel=0.1)
    assert plan.share == pytest.approx((plan.multiplier * plan.sensitivity[1]) ** 2 / 3, rel=1e-12)


def test_no_round_is_answered_after_a_refused_first_round():
    """If the first round of tests is refused (here: the node's own cross-run reservation refuses),
    nothing is recorded or released, and every later round is refused too."""
    X = [np.asarray(x, float) for x in _child_parts()]
    s = secure_pc_settings(**SETTINGS)

    def refuse(entries, budget):
        raise Refusal("participant 0: its spend across runs would exceed its budget")

    p = SecurePCParticipant(
        X[0],
        settings=SETTINGS,
        participant=0,
        rng=np.random.default_rng(0),
        budget=(s["epsilon"], s["delta"]),
        reserve=refuse,
    )
    others, server = _parties(X)
    reply = server.receive(
        "rounds",
        SETUP_ROUND,
        {k: q.respond("rounds", SETUP_ROUND, None)[1] for k, q in enumerate([p, *others[1:]])},
    )
    p.receive_extra(reply.extra_for(0))
    with pytest.raises(Refusal, match="spend across runs"):
        p.respond("tests", 0, reply.for_participant(0))
    with pytest.raises(Refusal, match="first round of tests was never answered"):
        p.respond("tests", 1, batch_payload([(0, 1, ())], 20))
    assert p.ledger.entries == () or len(p.ledger.entries) == 0
    state = p.state_dict()
    assert state["reserved"] == 0


def test_the_server_decodes_a_sum_with_a_missing_participant():
    """t = 1 declared, participant 2 missing from the sum: the server reads the two contributors'
    numerators over their own rows, with the two shares' noise."""
    from dpbnsl.federation.secure_sum import SecureSum
    from dpbnsl.mechanisms.distributed import modular_sum

    X = [np.asarray(x, float) for x in _child_parts()]
    settings_ = dict(SETTINGS, dropouts=1)
    parts, server = _parties(X, settings_)
    reply = _setup(parts, server)
    shares = [parts[k].respond("tests", 0, reply.for_participant(k))[1] for k in (0, 1)]
    plan, batch = server.plan, list(server.batch)
    total = SecureSum(
        modular_sum([sh.residues for sh in shares], bits=plan.modulus_bits), plan.modulus_bits, (0, 1)
    )
    seen = {}
    server._decide = lambda z, sd: seen.update(z=z, sd=sd)  # what the server decides on
    server.receive_sum("tests", 0, total)
    rows = len(X[0]) + len(X[1])
    exact = sum(integer_numerators(StratifiedKendall(x), batch, plan.scale) for x in X[:2])
    z_exact = exact / (plan.scale * math.sqrt(kendall_weight(rows)))
    assert seen["sd"] == pytest.approx(plan.z_noise_sd(contributors=2, rows=rows))
    assert np.abs(seen["z"] - z_exact).max() <= 6 * seen["sd"]
    with pytest.raises(Exception, match="unknown contributors"):
        server.receive_sum("tests", 0, SecureSum(total.total, plan.modulus_bits, (0, 7)))


def test_options_of_the_other_trust_model_are_refused():
    X = _child_parts()
    with pytest.raises(ValueError, match='apply to aggregation="secure" only'):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, dropouts=1)
    with pytest.raises(ValueError, match="apply to the local vote only"):
        dp_fed_pc(X, epsilon=1.0, delta=1e-5, aggregation="secure", ratio=0.5)


def test_a_dense_level_starts_quickly_with_max_sets():
    """A complete skeleton on 37 variables at level 3: with max_sets the server enumerates only the
    sets of the strongest variables (C(5, 3) per side instead of C(35, 3))."""
    server = SecurePCServer(settings=dict(SETTINGS, max_sets=3), n_participants=3)
    d = 37
    server.S = ~np.eye(d, dtype=bool)
    server.marginal = np.random.default_rng(0).random((d, d))
    server.level = 3
    server._start_level()
    assert len(server.queues) == d * (d - 1) // 2 and all(len(q) == 3 for q in server.queues.values())
    i, j = 0, 1
    strength = server.marginal[i] + server.marginal[j]
    best = sorted(
        {Z for Z in itertools.combinations([k for k in range(d) if k not in (i, j)], 3)},
        key=lambda Z: -strength[list(Z)].sum(),
    )[:3]
    assert server.queues[(0, 1)] == best


def test_no_conditional_test_is_reserved_when_none_can_run():
    """max_cond_size = 0: only level 0 runs, so only its d(d − 1)/2 tests are reserved and paid for."""
    X = _child_parts()
    r = dp_fed_pc(X, epsilon=5.0, delta=1e-5, aggregation="secure", max_cond_size=0, rng=1)
    assert r.info["plan"].tests == r.params["max_examinations"] == 190 == r.info["plan"].unconditional
    assert all(sum(e.count for e in ledger.entries) == 190 for ledger in r.ledger)
