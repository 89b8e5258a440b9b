"""A private participant defends its own budget against the server: it refuses a study without a
budget of its own, an infinite ε or a large δ it did not agree to, any request its plan does not
have (extra, repeated or backward rounds, phases it did not plan), and changed settings — each
before releasing anything, in process and when rebuilt from its saved state (as on Flower)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpbnsl.accounting import BudgetExceededError
from dpbnsl.federation import SETUP_ROUND, Dense
from dpbnsl.federation.guard import (
    DELTA_CEILING,
    Refusal,
    RequestGuard,
    SettingsLock,
    delta_ceiling,
    own_budget,
    public_failure,
)
from dpbnsl.federation.protocol import HostedServer, ProtocolError, Reply, run_protocol
from dpbnsl.learners.hosted import hosted
from dpbnsl.simulation import simulate

P = 2
DATA = simulate(5, P * 200, participants=P, rng=4)  # 200 rows each
SETTINGS = {
    "dp-fed-sparse-bnsl": dict(
        epsilon=1.0,
        delta=1e-5,
        feature_bound=25.0,
        smoothness="bounds",
        rounds=3,
        local_iters=4,
        warm_start="none",
    ),
    "dp-fed-bnsl": dict(epsilon=1.0, delta=1e-5, clip_norm=5.0, max_rounds=4),
}
WARM = dict(SETTINGS["dp-fed-sparse-bnsl"], warm_start="covariance")
PRIVATE = sorted(SETTINGS)


def participant(name, k=0, *, settings=None, budget=(1.0, 1e-5), rng=0):
    return hosted(name).participant(
        DATA.participants[k],
        settings=SETTINGS[name] if settings is None else settings,
        participant=k,
        rng=np.random.default_rng(rng),
        budget=budget,
    )


class Scripted(HostedServer):
    """The real server, with the next request of each reply rewritten by ``alter(phase, t, next)``
    (the participants refuse the rewritten request, so the real server never sees its uploads)."""

    def __init__(self, server, alter):
        self.server, self.alter = server, alter
        self.n_participants = server.n_participants

    def transcript_of(self, phase):
        return self.server.transcript_of(phase)

    def receive(self, phase, t, uploads):
        reply = self.server.receive(phase, t, uploads)
        nxt = self.alter(phase, t, reply.next)
        payload = reply.payload if reply.payload is not None else Dense(np.zeros((5, 5)))
        return Reply(reply.kind, payload, nxt, reply.extra)


def greedy(limit):
    """A server that, once the study is over, asks for more rounds, up to ``limit``."""

    def alter(phase, t, nxt):
        if nxt is None and t + 1 < limit:
            return (phase, t + 1)
        return nxt

    return alter


def run(name, alter, *, settings=None, budgets=((1.0, 1e-5),) * P):
    settings = SETTINGS[name] if settings is None else settings
    parts = [participant(name, k, settings=settings, budget=budgets[k], rng=k) for k in range(P)]
    server = hosted(name).server(settings=settings, n_participants=P)
    return parts, lambda: run_protocol(Scripted(server, alter), parts)


def spent(p):
    return [(e.label, e.count) for e in p.ledger.entries]


# --- the plan of requests ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRIVATE)
def test_a_server_asking_for_more_rounds_is_refused_and_nothing_more_is_released(name):
    """The issue's case: a server asking for 200 rounds where the plan has a few. Every
    participant answers the planned rounds, then refuses the first extra one before releasing."""
    parts, go = run(name, greedy(200))
    planned = SETTINGS[name].get("rounds", SETTINGS[name].get("max_rounds"))
    with pytest.raises(Refusal, match=rf"participant 0: refuses rounds round {planned}: its plan ends"):
        go()
    p = parts[0]
    assert p.guard.last == ("rounds", planned - 1)
    eps = p.ledger.epsilon(1e-5)
    assert eps <= 1.0
    if name == "dp-fed-sparse-bnsl":  # exactly the plan's T·K steps were spent
        assert dict(spent(p))["dp-pgcd/gradient"] == 3 * 4


@pytest.mark.parametrize(
    "what, alter, message",
    [
        (
            "repeated",
            lambda phase, t, nxt: (phase, t) if (phase, t) == ("rounds", 1) else nxt,
            "round 1 last",
        ),
        (
            "backwards",
            lambda phase, t, nxt: (phase, 0) if (phase, t) == ("rounds", 1) else nxt,
            "round 1 last",
        ),
        ("skipped", lambda phase, t, nxt: (phase, 3) if (phase, t) == ("rounds", 0) else nxt, "round 0 last"),
        (
            "unplanned phase",
            lambda phase, t, nxt: ("orient", 0) if (phase, t) == ("rounds", 0) else nxt,
            "no phase 'orient'",
        ),
        (
            "setup again",
            lambda phase, t, nxt: ("rounds", SETUP_ROUND) if (phase, t) == ("rounds", 0) else nxt,
            "the setup exchange again",
        ),
    ],
)
@pytest.mark.parametrize("name", PRIVATE)
def test_requests_out_of_plan_are_refused_before_any_release(name, what, alter, message):
    parts, go = run(name, alter)
    with pytest.raises(Refusal, match=message):
        go()
    before, (phase, t) = spent(parts[0]), parts[0].guard.last
    with pytest.raises(Refusal):  # the refusal released nothing, and the participant stays put
        parts[0].respond(phase, t, None)
    assert spent(parts[0]) == before and parts[0].guard.last == (phase, t)


def test_the_warm_phase_cannot_be_skipped_or_reentered():
    skip = lambda phase, t, nxt: ("rounds", 0) if (phase, t) == ("rounds", SETUP_ROUND) else nxt
    _, go = run("dp-fed-sparse-bnsl", skip, settings=WARM)
    with pytest.raises(Refusal, match="the plan's phase 'warm' comes first"):
        go()
    back = lambda phase, t, nxt: ("warm", 0) if (phase, t) == ("rounds", 1) else nxt
    parts, go = run("dp-fed-sparse-bnsl", back, settings=WARM)
    with pytest.raises(Refusal, match="its phase 'rounds' came after 'warm'"):
        go()
    assert dict(spent(parts[0]))["warm-start/covariance"] == 1


def test_the_guard_unit():
    g = RequestGuard(3, [("warm", 2), ("rounds", 3)])
    with pytest.raises(Refusal, match="refuses rounds round 0 before the setup exchange"):
        g.admit("rounds", 0)
    g.admit("rounds", SETUP_ROUND)
    g.admit("warm", 0)
    g.admit("warm", 1)
    with pytest.raises(Refusal, match="its plan ends phase 'warm' after 2 round"):
        g.admit("warm", 2)
    with pytest.raises(Refusal, match="a phase starts at round 0"):
        g.admit("rounds", 1)
    g.admit("rounds", 0)
    saved = g.state()
    h = RequestGuard(3, [("warm", 2), ("rounds", 3)])
    h.restore(saved)
    with pytest.raises(Refusal, match=r"participant 3: refuses rounds round 0: it answered round 0 last"):
        h.admit("rounds", 0)
    h.admit("rounds", 1)
    h.admit("rounds", 2)
    with pytest.raises(Refusal, match="planned: phase 'warm': up to 2 round"):
        h.admit("rounds", 3)


# --- rebuilt from its saved state (as a Flower ClientApp is, once per message) -------------------


def _through_records(state):
    """What a record store gives back: copies of the arrays, a JSON round trip for the rest."""
    return {k: v.copy() if isinstance(v, np.ndarray) else json.loads(json.dumps(v)) for k, v in state.items()}


def _rebuilt_answers(name, settings, requests, *, change=None):
    """Answer ``requests`` with a participant rebuilt from its saved state before each one;
    ``change(i, settings)`` gives the settings the server sends with request i."""
    saved, p = {}, None
    for i, (phase, t) in enumerate(requests):
        p = participant(name, settings=settings if change is None else change(i, settings))
        p.load_state_dict(_through_records(saved))
        inbox = None if i == 0 else Dense(np.array([200.0] * P)) if i == 1 else Dense(np.zeros((5, 5)))
        p.respond(phase, t, inbox)
        saved = p.state_dict()
    return p


@pytest.mark.parametrize("name", PRIVATE)
def test_a_rebuilt_participant_refuses_a_repeated_round(name):
    p = _rebuilt_answers(name, SETTINGS[name], [("rounds", SETUP_ROUND), ("rounds", 0), ("rounds", 1)])
    with pytest.raises(Refusal, match="it answered round 1 last"):
        _rebuilt_answers(
            name, SETTINGS[name], [("rounds", SETUP_ROUND), ("rounds", 0), ("rounds", 1), ("rounds", 1)]
        )
    assert p.guard.last == ("rounds", 1)


@pytest.mark.parametrize("name", PRIVATE)
def test_settings_changed_mid_run_are_refused(name):
    """A server that re-sends the study with more rounds (or another ε) after the plan was made:
    the participant keeps its plan and refuses."""
    more = "rounds" if name == "dp-fed-sparse-bnsl" else "max_rounds"
    change = lambda i, s: dict(s, **{more: 200}) if i >= 2 else s
    with pytest.raises(Refusal, match="settings differ from those it planned"):
        _rebuilt_answers(
            name, SETTINGS[name], [("rounds", SETUP_ROUND), ("rounds", 0), ("rounds", 1)], change=change
        )


def test_the_settings_lock_is_canonical():
    a = SettingsLock(0, {"b": (1, 2), "a": np.array([1.0, 2.0])})
    a.check(SettingsLock(0, {"a": [1.0, 2.0], "b": [1, 2]}).text)
    with pytest.raises(Refusal):
        a.check(SettingsLock(0, {"a": [1.0, 2.5], "b": [1, 2]}).text)


# --- the budget ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRIVATE)
def test_no_budget_of_its_own_is_refused(name):
    with pytest.raises(Refusal, match="participant 0 has no privacy budget of its own"):
        participant(name, budget=None)


@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize(
    "change, message",
    [
        (dict(epsilon=math.inf), r"the study asks for ε = inf \(no privacy\)"),
        (dict(delta=0.9), r"the study asks for δ = 0.9, above the ceiling 0.001"),
        (dict(delta=2e-3), r"above the ceiling 0.001"),
    ],
)
def test_the_study_budget_refuses_infinite_epsilon_and_large_delta(name, change, message):
    with pytest.raises(Refusal, match=message):
        participant(name, settings=dict(SETTINGS[name], **change), budget="study")


@pytest.mark.parametrize("name", PRIVATE)
def test_a_study_beyond_its_own_budget_is_refused_at_once(name):
    for change in (dict(epsilon=math.inf), dict(delta=0.9), dict(epsilon=2.0)):
        with pytest.raises(
            Refusal, match=r"participant 0: the study asks for .* beyond this participant's budget"
        ):
            participant(name, settings=dict(SETTINGS[name], **change), budget=(1.0, 1e-5))


@pytest.mark.parametrize("name", PRIVATE)
def test_an_operator_may_allow_what_the_ceiling_refuses(name):
    """The ceilings apply to the opt-out only; an operator's own budget is the operator's say."""
    p = participant(name, settings=dict(SETTINGS[name], delta=0.01), budget=(1.0, 0.01))
    assert p.budget == (1.0, 0.01) and p.ledger.budget == (1.0, 0.01)
    q = participant(name, settings=dict(SETTINGS[name], epsilon=math.inf), budget=(math.inf, 1e-5))
    assert q.ledger.budget is None  # an infinite budget filters nothing


@pytest.mark.parametrize("name", PRIVATE)
def test_the_ledger_is_a_filter_with_the_budget(name):
    """Behind the plan, the ledger carries the participant's budget: after a whole run within it,
    one more release is refused by the ledger itself (nothing recorded)."""
    parts, go = run(name, lambda phase, t, nxt: nxt)
    go()
    p = parts[0]
    assert p.ledger.budget == (1.0, 1e-5) and p.ledger.epsilon(1e-5) <= 1.0
    entry = p.ledger.entries[-1]
    before = spent(p)
    with pytest.raises(BudgetExceededError, match="nothing recorded"):
        p.ledger.record(entry.label, entry.event, 1000)
    assert spent(p) == before


def test_own_budget_validation():
    assert own_budget((2, 1e-6), participant=0, n_rows=10) == (2.0, 1e-6)
    assert own_budget("study", participant=0, n_rows=10, study=(1.0, 1e-5)) == (1.0, 1e-5)
    with pytest.raises(ValueError, match=r'`budget` must be a pair \(epsilon, delta\) or "study"'):
        own_budget("all", participant=0, n_rows=10)
    with pytest.raises(TypeError, match=r"`budget` must be a pair"):
        own_budget((1.0,), participant=0, n_rows=10)
    with pytest.raises(ValueError, match="`budget delta` must be < 1"):
        own_budget((1.0, 1.0), participant=0, n_rows=10)
    with pytest.raises(ValueError, match="`budget epsilon` must be > 0"):
        own_budget((0.0, 1e-5), participant=0, n_rows=10)
    assert delta_ceiling(100) == 1e-3 == DELTA_CEILING and delta_ceiling(10_000) == 1e-4
    with pytest.raises(Refusal, match=r"δ = 0.0005, above the ceiling 0.0001"):
        own_budget("study", participant=0, n_rows=10_000, study=(1.0, 5e-4))


# --- what leaves a participant on failure ---------------------------------------------------------


def test_public_failure_keeps_the_detail_local(caplog):
    secret = "HIV+, diagnosed 2019"
    try:
        raise ValueError(f"column 'x2' is not numeric (e.g. {secret!r} at data row 17)")
    except ValueError as exc:
        with caplog.at_level("ERROR", logger="dpbnsl.participant"):
            text = public_failure(exc, participant=4, phase="rounds", t=3)
    assert secret not in text and "17" not in text
    assert text == "participant 4 failed in rounds round 3; the detail stays in the participant's own log"
    assert secret in caplog.text  # on the participant's side
    refusal = Refusal("participant 4: refuses rounds round 9: its plan ends phase 'rounds' after 9 round(s)")
    assert public_failure(refusal, participant=4, phase="rounds", t=9) == str(refusal)
    assert "setup exchange" in public_failure(KeyError("x"), participant=None, phase="rounds", t=SETUP_ROUND)


def test_protocol_errors_are_data_free():
    assert issubclass(Refusal, ProtocolError)
