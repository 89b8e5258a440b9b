"""A private participant on Flower defends itself: its ClientApp refuses to run without a budget of
its own, refuses a server that asks for more (rounds, ε, δ, changed settings) before releasing
anything, keeps its generator's state only when seeded, and what reaches the server on failure is
a fixed, data-free message. Marked ``flower``; the ClientApp is called directly (as a SuperNode
calls it) except in the tests on the simulation engine."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.supercore.task_identity import TaskIdentity

from dpbnsl.federation import SETUP_ROUND, Dense
from dpbnsl.federation.guard import ParticipantFailure
from dpbnsl.flower.apps import load_csv, make_client_app
from dpbnsl.flower.records import get_payload, put_payload
from dpbnsl.simulation import simulate

pytestmark = pytest.mark.flower
SECRET = "HIV+, diagnosed 2019"
DATA = simulate(5, 2 * 200, participants=2, rng=5)
SETTINGS = {
    "dp-fed-bnsl": dict(epsilon=1.0, delta=1e-5, clip_norm=5.0, max_rounds=3),
    "dp-fed-sparse-bnsl": dict(
        epsilon=1.0,
        delta=1e-5,
        feature_bound=25.0,
        smoothness="bounds",
        rounds=2,
        local_iters=2,
        warm_start="none",
    ),
}


@pytest.fixture(autouse=True)
def _identity():
    """Messages made outside a Flower run need a task identity (as a SuperNode sets one)."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


class Node:
    """One participant's SuperNode: its node config, its saved state, its ClientApp."""

    def __init__(self, app, node_config):
        self.app = app
        self.ctx = Context(run_id=1, node_id=7, node_config=node_config, state=RecordDict(), run_config={})

    def ask(self, protocol, settings, phase, t, inbox=None):
        cfg = ConfigRecord(
            {"protocol": protocol, "settings": json.dumps(settings), "phase": phase, "round": t}
        )
        content = RecordDict({"config": cfg})
        content["inbox"] = put_payload(inbox)
        return self.app(message=Message(content, dst_node_id=7, message_type="query"), context=self.ctx)


def _saved(node):
    """The non-array part of the participant's saved state (``context.state``)."""
    return json.loads(node.ctx.state["dpbnsl.state.config"]["json"])


def _node(name, node_config, **app_kw):
    return Node(
        make_client_app(lambda k, cfg: DATA.participants[k], **app_kw), {"partition-id": 0, **node_config}
    )


def _play(node, name, settings, rounds):
    """The setup, then ``rounds`` rounds (inboxes of the right shape); returns the replies."""
    out = [node.ask(name, settings, "rounds", SETUP_ROUND)]
    out.append(node.ask(name, settings, "rounds", 0, Dense(np.array([200.0, 200.0]))))
    for t in range(1, rounds):
        out.append(node.ask(name, settings, "rounds", t, Dense(np.zeros((5, 5)))))
    return out


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_no_budget_in_the_node_config_is_refused(name):
    node = _node(name, {})
    with pytest.raises(ParticipantFailure, match="participant 0 has no privacy budget of its own"):
        node.ask(name, SETTINGS[name], "rounds", SETUP_ROUND)
    node = _node(name, {"epsilon-budget": 1.0})
    with pytest.raises(ParticipantFailure, match="only one of epsilon-budget and delta-budget"):
        node.ask(name, SETTINGS[name], "rounds", SETUP_ROUND)


@pytest.mark.parametrize("name", sorted(SETTINGS))
@pytest.mark.parametrize(
    "change, message",
    [
        (dict(epsilon=math.inf), "no privacy"),
        (dict(epsilon=100.0), r"ε = 100, above the ceiling 10"),
        (dict(delta=0.9), "above the ceiling"),
    ],
)
def test_the_study_budget_opt_out_refuses_infinite_epsilon_and_large_delta(name, change, message):
    node = _node(name, {"accept-study-budget": True})
    with pytest.raises(ParticipantFailure, match=message):
        node.ask(name, dict(SETTINGS[name], **change), "rounds", SETUP_ROUND)
    assert _play(_node(name, {"accept-study-budget": True}), name, SETTINGS[name], 1)  # within: runs


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_server_asking_for_more_rounds_is_refused(name):
    node = _node(name, {"epsilon-budget": 1.0, "delta-budget": 1e-5})
    settings = SETTINGS[name]
    planned = settings.get("rounds", settings.get("max_rounds"))
    _play(node, name, settings, planned)
    ledger = _saved(node)["ledger"]
    with pytest.raises(ParticipantFailure, match=rf"refuses rounds round {planned}: its plan ends"):
        node.ask(name, settings, "rounds", planned, Dense(np.zeros((5, 5))))
    with pytest.raises(ParticipantFailure, match=rf"refuses rounds round {planned - 1}: it answered"):
        node.ask(name, settings, "rounds", planned - 1, Dense(np.zeros((5, 5))))
    assert _saved(node)["ledger"] == ledger  # nothing more
    with pytest.raises(ParticipantFailure, match="settings differ"):  # re-planned with more rounds
        more = "rounds" if name == "dp-fed-sparse-bnsl" else "max_rounds"
        node.ask(name, dict(settings, **{more: 200}), "rounds", planned, Dense(np.zeros((5, 5))))


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_study_beyond_the_node_budget_is_refused(name):
    node = _node(name, {"epsilon-budget": 0.5, "delta-budget": 1e-5})
    with pytest.raises(ParticipantFailure, match=r"the study asks for \(ε, δ\) = \(1, 1e-05\), beyond"):
        node.ask(name, SETTINGS[name], "rounds", SETUP_ROUND)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_generator_state_is_saved_only_when_seeded(name):
    fresh = _node(name, {"epsilon-budget": 1.0, "delta-budget": 1e-5})
    _play(fresh, name, SETTINGS[name], 2)
    seeded = _node(name, {"epsilon-budget": 1.0, "delta-budget": 1e-5, "seed": 3})
    _play(seeded, name, SETTINGS[name], 2)
    assert "rng" not in _saved(fresh)
    assert "rng" in _saved(seeded)


def test_a_bad_data_file_reaches_the_server_as_a_data_free_message(tmp_path):
    """The issue's case: a non-numeric cell. Locally the detail is logged; the server's error
    names the participant, the phase and round and the kind of failure only."""
    path = tmp_path / "site.csv"
    rows = ["x1,x2"] + [f"{i}.5,{i}" for i in range(16)] + [f'1.0,"{SECRET}"']
    path.write_text("\n".join(rows) + "\n")
    for bad in (path, tmp_path / "missing.csv"):
        app = make_client_app(load_csv)
        node = Node(
            app, {"participant-id": 1, "data-path": str(bad), "epsilon-budget": 1.0, "delta-budget": 1e-5}
        )
        with pytest.raises(ParticipantFailure) as info:
            node.ask("dp-fed-bnsl", SETTINGS["dp-fed-bnsl"], "rounds", SETUP_ROUND)
        text = str(info.value)
        assert (
            text
            == "participant 1 failed in the setup exchange; the detail stays in the participant's own log"
        )
        assert info.value.__context__ is None and info.value.__cause__ is None


def test_warnings_as_errors_cannot_make_failure_depend_on_the_data(tmp_path):
    """A review's oracle: with warnings turned into errors on the participant's machine, a server
    varying clip_norm learned from each refusal whether a scale warning fired, i.e. a quantile of
    the row norms. Inside the ClientApp warnings are shown, never raised, and numpy's errors are
    ignored: the request succeeds whatever the data."""
    X = np.random.default_rng(0).standard_normal((50, 3))
    X[7, 1] = 123456.789
    path = tmp_path / "site.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="")
    config = {"participant-id": 0, "data-path": str(path), "epsilon-budget": 1.0, "delta-budget": 1e-5}
    node = Node(make_client_app(load_csv), config)
    settings = dict(SETTINGS["dp-fed-bnsl"], clip_norm=0.1)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        node.ask("dp-fed-bnsl", settings, "rounds", SETUP_ROUND)
        reply = node.ask("dp-fed-bnsl", settings, "rounds", 0, Dense(np.array([50.0])))
    assert "upload_0" in reply.content.keys()


def test_a_malformed_server_message_is_refused_before_the_data(tmp_path):
    """A server's W of the wrong shape, or with huge or non-finite entries, never reaches the
    data: refused with a data-free message before any computation."""
    for bad in (np.zeros((4, 4)), np.full((5, 5), np.inf)):
        node = _node("dp-fed-sparse-bnsl", {"epsilon-budget": 1.0, "delta-budget": 1e-5})
        settings = SETTINGS["dp-fed-sparse-bnsl"]
        _play(node, "dp-fed-sparse-bnsl", settings, 1)
        with pytest.raises(ParticipantFailure, match=r"the server's message must be a finite 5 × 5 matrix"):
            node.ask("dp-fed-sparse-bnsl", settings, "rounds", 1, Dense(bad))


def test_the_budget_spans_runs_on_a_node_with_a_ledger(tmp_path):
    """A review's attack: every new Flower run starts with an empty state, so a server could run
    the study again and again, each time with the whole budget. With a ledger directory the node
    charges each run's plan to its dataset before the first release and refuses once the budget
    is spent; nothing of the refused run is released."""
    from dpbnsl.federation.spend import NodeLedger
    from dpbnsl.learners.covariance_plan import plan

    ledger = tmp_path / "ledgers"
    settings = dict(SETTINGS["dp-fed-bnsl"], epsilon=0.6)
    config = {"epsilon-budget": 1.0, "delta-budget": 1e-5}
    accepted = 0
    for _ in range(10):  # new runs, each with a new context, until the node refuses
        node = _node("dp-fed-bnsl", config, ledger_dir=ledger)
        node.ask("dp-fed-bnsl", settings, "rounds", SETUP_ROUND)
        try:
            node.ask("dp-fed-bnsl", settings, "rounds", 0, Dense(np.array([200.0, 200.0])))
        except ParticipantFailure as refused:
            assert "beyond its budget (1, 1e-05)" in str(refused) and f"by {accepted} earlier run(s)" in str(
                refused
            )
            break
        accepted += 1
    else:
        raise AssertionError("the node never refused")
    # exactly as many runs as fit: k runs of ε = 0.6 compose within ε = 1, k + 1 do not
    entries = plan(epsilon=0.6, delta=1e-5, clip_norm=5.0, max_rounds=3).entries()
    key = next(ledger.glob("*.json")).stem
    spent = NodeLedger(ledger).spent(key, 1e-5)
    assert accepted >= 1 and spent <= 1.0
    from dpbnsl.federation.spend import spent_epsilon

    assert spent_epsilon(list(entries) * (accepted + 1), 1e-5) > 1.0
    assert len(list(ledger.glob("*.json"))) == 1
    other = _node("dp-fed-bnsl", config, ledger_dir=ledger)  # the node config can name another directory
    other.ctx.node_config["ledger-dir"] = str(tmp_path / "elsewhere")
    other.ask("dp-fed-bnsl", settings, "rounds", SETUP_ROUND)
    other.ask("dp-fed-bnsl", settings, "rounds", 0, Dense(np.array([200.0, 200.0])))


# --- on the simulation engine (Ray workers: the participants in other processes) -----------------


@pytest.fixture
def flower_home(tmp_path_factory, monkeypatch):
    """Flower and Ray write under FLWR_HOME and a temp dir: keep both out of the user's home."""
    pytest.importorskip("ray")
    monkeypatch.setenv("FLWR_HOME", str(tmp_path_factory.mktemp("flwr_home")))
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")


class Recording:
    """A grid that keeps every reply the server receives (the server's whole view)."""

    def __init__(self, grid):
        self.grid, self.replies = grid, []

    def get_node_ids(self):
        return self.grid.get_node_ids()

    def send_and_receive(self, messages, timeout=None):
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        self.replies.extend(replies)
        return replies


def _simulate(server_main, arrays):
    from flwr.serverapp import ServerApp
    from flwr.simulation import run_simulation

    from dpbnsl.flower.simulation import DEFAULT_BACKEND

    app = ServerApp()
    app.main()(server_main)
    client = make_client_app(lambda k, _cfg: arrays[k], accept_study_budget=True)
    run_simulation(
        server_app=app, client_app=client, num_supernodes=len(arrays), backend_config=DEFAULT_BACKEND
    )


def test_the_server_receives_exactly_the_transcript_and_the_reports(flower_home):
    """What reaches the server of a DP-Fed-Sparse-BNSL run on Flower: the uploads of the
    transcript and, at the end, each participant's spent ε; never its saved state (the DP-PGCD
    residual, from which its rows are recovered; its ledger's internals stay too)."""
    from dpbnsl.flower.apps import run_on_grid

    settings = dict(SETTINGS["dp-fed-sparse-bnsl"], warm_start="covariance")
    out = {}

    def main(grid, context):
        rec = Recording(grid)
        out["run"], out["replies"] = run_on_grid(rec, "dp-fed-sparse-bnsl", settings, 2), rec.replies

    _simulate(main, DATA.participants)
    run, replies = out["run"], out["replies"]
    received = {0: [], 1: []}
    for r in replies:
        config = r.content["config"]
        uploads = sorted(key for key in r.content.keys() if key != "config")
        assert uploads == [f"upload_{i}" for i in range(len(uploads))]  # no other record
        assert set(config.keys()) <= {"participant", "multi", "kept", "upload_kinds", "report"}
        received[int(config["participant"])] += [get_payload(r.content[key]) for key in uploads]
        if "report" in config:  # the spent ε, its δ and the ledger of public events
            assert set(json.loads(config["report"])) == {"epsilon", "delta", "ledger"}
    for k in (0, 1):  # every array the server received is an upload of the transcript, in order
        sent = [m.payload for name in ("rounds", "warm") for m in run.transcripts[name] if m.sender == k]
        got = [p.to_dense().tobytes() for p in received[k]]
        assert sorted(got) == sorted(p.to_dense().tobytes() for p in sent)
        assert len(got) > 3
    assert sorted(run.reports) == [0, 1] and all(r["epsilon"] <= 1.0 for r in run.reports.values())


def test_a_greedy_server_on_flower_gets_a_clean_refusal(flower_home, monkeypatch):
    """A server that asks for rounds beyond the plan: the run ends with the participant's refusal,
    naming the round and the plan."""
    import dataclasses

    import dpbnsl.learners.hosted as registry
    from dpbnsl.federation.protocol import ProtocolError, Reply
    from dpbnsl.flower.apps import run_on_grid

    name = "dp-fed-bnsl"
    proto = registry.HOSTED[name]

    class Greedy:
        def __init__(self, server):
            self.server, self.n_participants = server, server.n_participants

        def transcript_of(self, phase):
            return phase

        def secure_round(self, phase, t):
            return None

        def receive(self, phase, t, uploads):
            r = self.server.receive(phase, t, uploads)
            return Reply(r.kind, r.payload, r.next or ("rounds", t + 1))

    monkeypatch.setitem(
        registry.HOSTED, name, dataclasses.replace(proto, server=lambda **kw: Greedy(proto.server(**kw)))
    )
    out = {}

    def main(grid, context):
        try:
            run_on_grid(grid, name, SETTINGS[name], 2)
        except ProtocolError as exc:
            out["error"] = str(exc)

    _simulate(main, DATA.participants)
    assert (
        "rounds round 3: participant 0: participant 0: refuses rounds round 3: its plan ends phase 'rounds' after 3 round(s)"
        in out["error"]
    )
    assert "participant 1: participant 1: refuses rounds round 3" in out["error"]


def test_a_node_with_a_budget_runs_private_protocols_only(tmp_path):
    """A server cannot switch a node that joined a private study to a non-private protocol (which
    would send its exact statistics), nor switch protocols mid-run; an allowlist decides when set."""
    node = _node("dp-fed-bnsl", {"epsilon-budget": 1.0, "delta-budget": 1e-5})
    with pytest.raises(ParticipantFailure, match="runs private protocols only; the study asks for fed-bnsl"):
        node.ask("fed-bnsl", {"max_rounds": 3}, "rounds", SETUP_ROUND)
    node.ask("dp-fed-bnsl", SETTINGS["dp-fed-bnsl"], "rounds", SETUP_ROUND)
    with pytest.raises(ParticipantFailure, match="began this run with dp-fed-bnsl; it refuses to switch"):
        node.ask("dp-fed-sparse-bnsl", SETTINGS["dp-fed-sparse-bnsl"], "rounds", SETUP_ROUND)
    allow = _node("fed-bnsl", {"protocols": "fed-bnsl", "epsilon-budget": 1.0, "delta-budget": 1e-5})
    allow.ask("fed-bnsl", {"max_rounds": 3}, "rounds", SETUP_ROUND)  # the operator listed it
    only = _node("fed-bnsl", {"protocols": "dp-fed-bnsl"})
    with pytest.raises(ParticipantFailure, match="runs only dp-fed-bnsl; the study asks for fed-bnsl"):
        only.ask("fed-bnsl", {"max_rounds": 3}, "rounds", SETUP_ROUND)
    plain = _node("fed-bnsl", {})  # no budget, no list: a non-private study is the operator's choice
    plain.ask("fed-bnsl", {"max_rounds": 3}, "rounds", SETUP_ROUND)
