"""Hosted protocols: rebuilt from their saved state before every request (as a Flower ClientApp is),
every participant gives bitwise the in-process learner's W and transcript; bad conversations fail
with errors naming the participant."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from dpbnsl.federation import SETUP_ROUND, Dense
from dpbnsl.federation.protocol import HostedParticipant, ProtocolError, run_protocol
from dpbnsl.learners.constraint.fed_pc import fed_pc
from dpbnsl.learners.hosted import hosted
from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.learners.linear.fed_sparse_bnsl import fed_sparse_bnsl
from dpbnsl.learners.nonlinear.ds_fcd import as_fcd, ds_fcd
from dpbnsl.learners.nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
from dpbnsl.learners.temporal.fed_dbn import fed_dbn
from dpbnsl.simulation import simulate
from dpbnsl.simulation.temporal import simulate_temporal

P = 3
DATA = simulate(6, 3 * 300, participants=P, rng=2)  # 300 rows each
CASES = {
    "fed-bnsl": (fed_bnsl, dict(max_rounds=40)),
    "fed-sparse-bnsl": (fed_sparse_bnsl, dict(rounds=6, local_iters=4)),
    "dp-fed-bnsl": (
        dp_fed_bnsl,
        dict(epsilon=2.0, delta=1e-5, clip_norm=5.0, centre="private", max_rounds=30),
    ),
    "dp-fed-sparse-bnsl": (
        dp_fed_sparse_bnsl,
        dict(epsilon=4.0, delta=1e-5, feature_bound=25.0, rounds=4, local_iters=3, warm_start="covariance"),
    ),
}
SEED = 17
SERIES = simulate_temporal(5, 3 * 200, participants=P, rng=0).series
DATA_OF = {"fed-dbn": SERIES}
CASES["fed-dbn"] = (fed_dbn, dict(lag=1, max_rounds=30))
CASES["fed-bnsl-mlp"] = (fed_bnsl_mlp, dict(hidden=3, max_rounds=6))
CASES["fed-pc"] = (fed_pc, dict(alpha=0.05))
FCD = dict(it_in=20, it_fl=10, it_max=2, hidden=3, layers=1)
CASES["ds-fcd"] = (ds_fcd, FCD)
CASES["as-fcd"] = (as_fcd, FCD)


def _through_records(state: Mapping[str, Any]) -> dict[str, Any]:
    """What a record store gives back: fresh copies of arrays, numbers and strings (a JSON
    round trip for the non-arrays, as a config record would)."""
    out: dict[str, Any] = {}
    for k, v in state.items():
        out[k] = np.array(v, copy=True) if isinstance(v, np.ndarray) else json.loads(json.dumps(v))
    return out


class Rebuilt(HostedParticipant):
    """A participant that exists only between requests: built anew from its data and settings,
    loaded with the saved state, asked, saved again."""

    def __init__(self, build: Any) -> None:
        self.build, self.saved, self.extra = build, {}, []

    def receive_extra(self, messages):  # type: ignore[no-untyped-def]
        self.extra = messages  # handed to the participant rebuilt for the next request

    def respond(self, phase, t, inbox):  # type: ignore[no-untyped-def]
        p = self.build()
        p.load_state_dict(_through_records(self.saved))
        p.receive_extra(self.extra)
        out = p.respond(phase, t, inbox)
        self.saved = p.state_dict()
        self.last = p
        return out

    def state_dict(self):  # type: ignore[no-untyped-def]
        return self.saved

    def load_state_dict(self, state):  # type: ignore[no-untyped-def]
        self.saved = state


@pytest.mark.parametrize("name", sorted(CASES))
def test_rebuilt_participants_reproduce_the_learner_bitwise(name):
    learner, settings = CASES[name]
    proto = hosted(name)
    random = proto.private or proto.server_random or proto.participant_random
    kw = dict(settings, rng=SEED) if random else settings
    data = DATA_OF.get(name, DATA.participants)
    ref = learner(data, **kw)

    def builder(k):  # participant k's stream: child stream_offset + k of the learner's seed
        stream = np.random.default_rng(np.random.SeedSequence(SEED, spawn_key=(proto.stream_offset + k,)))
        extra = {"rng": stream} if proto.private or proto.participant_random else {}
        if proto.private:  # each participant's own budget: here, the study's
            extra["budget"] = (settings["epsilon"], settings["delta"])
        return lambda: proto.participant(data[k], settings=settings, participant=k, **extra)

    parts = [Rebuilt(builder(k)) for k in range(P)]
    extra = {"rng": SEED} if proto.server_random else {}  # its server draws public randomness
    server = proto.server(settings=settings, n_participants=P, **extra)
    transcripts = run_protocol(server, parts)
    W, W_raw, history = server.learned()
    np.testing.assert_array_equal(W_raw, ref.W_raw)
    np.testing.assert_array_equal(W, ref.W)
    # FedPC's learner adds the orientation's row (participants' CI-test counts) to the server's
    assert len(history) == len(ref.history) - (name == "fed-pc")
    got = transcripts["rounds"]
    assert len(got) == len(ref.transcript)
    for a, b in zip(got, ref.transcript):
        assert (a.round, a.sender, a.receiver, a.kind) == (b.round, b.sender, b.receiver, b.kind)
        np.testing.assert_array_equal(a.to_dense(), b.to_dense())
    assert got.n_samples() == (300,) * P if name != "fed-dbn" else len(set(got.n_samples())) == 1
    if proto.private:  # the ledger survives the round trips: the same spend as the learner's
        for k, p in enumerate(parts):
            assert p.last.ledger.entries == ref.ledger[k].entries
            rep = p.last.report()
            assert rep["epsilon"] <= settings["epsilon"]


def test_seed_sequence_children_are_the_learners_streams():
    """A participant seeded with SeedSequence(seed, spawn_key=(k,)) draws what the in-process
    learner's stream k (``default_rng(seed).spawn(P)[k]``) draws."""
    ours = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(2,))).random(4)
    theirs = np.random.default_rng(5).spawn(3)[2].random(4)
    np.testing.assert_array_equal(ours, theirs)


def test_setup_is_in_the_transcript_and_the_attacks_skip_it():
    r = fed_bnsl(DATA.participants, max_rounds=3)
    setup = r.transcript.setup()
    assert [m.kind for m in setup] == ["data_shape"] * P + ["n_samples"] * P
    assert all(m.round == SETUP_ROUND for m in setup)
    np.testing.assert_array_equal(setup[P].to_dense(), [300.0] * P)
    assert len(r.transcript.learning()) == len(r.transcript) - 2 * P


def test_missing_and_unknown_participants_are_named():
    server = hosted("fed-bnsl").server(settings={}, n_participants=3)
    up = Dense(np.array([10.0, 4.0]))
    with pytest.raises(ProtocolError, match=r"rounds round -1: no upload from participant\(s\) \[2\]"):
        server.receive("rounds", SETUP_ROUND, {0: up, 1: up})
    with pytest.raises(ProtocolError, match=r"unknown participant\(s\) \[7\]"):
        server.receive("rounds", SETUP_ROUND, {0: up, 1: up, 2: up, 7: up})


def test_participants_disagreeing_on_d_are_refused():
    server = hosted("fed-sparse-bnsl").server(settings={}, n_participants=2)
    with pytest.raises(
        ProtocolError, match=r"different numbers of columns \(participant 0: 4, participant 1: 5\)"
    ):
        server.receive(
            "rounds", SETUP_ROUND, {0: Dense(np.array([10.0, 4.0])), 1: Dense(np.array([10.0, 5.0]))}
        )


def test_a_round_before_the_setup_is_refused():
    p = hosted("fed-bnsl").participant(DATA.participants[0], settings={}, participant=0)
    with pytest.raises(ProtocolError, match="participant 0: a round was requested before the setup"):
        p.respond("rounds", 0, None)


def test_unknown_protocol_and_settings_are_named():
    with pytest.raises(
        ValueError, match="no hosted protocol for 'notears'; hosted: as-fcd, dp-cov-pc, dp-fed-bnsl"
    ):
        hosted("notears")
    with pytest.raises(TypeError, match=r"unknown Fed-BNSL setting\(s\) \['rounds'\]"):
        hosted("fed-bnsl").server(settings={"rounds": 3}, n_participants=2)
    with pytest.raises(ValueError, match="`budget` applies to private protocols only"):
        hosted("fed-bnsl").participant(DATA.participants[0], settings={}, participant=0, budget=(1.0, 1e-5))
    local = {"epsilon": 1.0, "delta": 1e-5, "clip_norm": 5.0}
    with pytest.raises(ValueError, match='dp-cov-pc is hosted with aggregation="secure"'):
        hosted("dp-cov-pc").server(settings=local, n_participants=2)


def test_fedpc_participants_must_agree_on_the_test():
    """With test="auto" each participant resolves the test on its own data; the server refuses
    participants whose data call for different tests, naming them, before any skeleton work."""
    rng = np.random.default_rng(0)
    continuous = rng.standard_normal((200, 4))
    discrete = rng.integers(0, 3, size=(200, 4)).astype(float)
    proto = hosted("fed-pc")
    parts = [
        proto.participant(X, settings={"test": "auto"}, participant=k)
        for k, X in enumerate((continuous, discrete))
    ]
    server = proto.server(settings={"test": "auto"}, n_participants=2)
    with pytest.raises(
        ProtocolError, match=r"different CI tests \['fisher-z', 'g2'\]: set `test` explicitly"
    ):
        run_protocol(server, parts)
    with pytest.raises(ProtocolError, match="participant 0: a round was requested before the setup exchange"):
        proto.participant(continuous, settings={}, participant=0).respond("rounds", 2, None)


@pytest.mark.parametrize(
    "module, defaults, learner",
    [
        ("dpbnsl.learners.linear.hosted_fed_bnsl", "DEFAULTS", fed_bnsl),
        ("dpbnsl.learners.linear.hosted_sparse", "FED_SPARSE_DEFAULTS", fed_sparse_bnsl),
        ("dpbnsl.learners.temporal.hosted_fed_dbn", "DEFAULTS", fed_dbn),
        ("dpbnsl.learners.nonlinear.hosted_mlp", "DEFAULTS", fed_bnsl_mlp),
        ("dpbnsl.learners.constraint.hosted_fed_pc", "DEFAULTS", fed_pc),
    ],
)
def test_hosted_defaults_are_the_learners(module, defaults, learner):
    """The hosted settings' defaults are written beside the protocol (the learner modules import
    it); they must stay the learner's keyword defaults."""
    import importlib
    import inspect

    table = getattr(importlib.import_module(module), defaults)
    sig = {k: p.default for k, p in inspect.signature(learner).parameters.items() if k in table}
    assert sig == table
