"""Secure rounds on Flower's SecAgg+ (the ``flower`` extra): the package's integer shares pass
through Flower's quantisation and masking exactly, so a run on the simulation engine gives bitwise
the in-process result and transcript; a participant dropping out within the threshold leaves a
sum of the others' shares, beyond it the run ends naming who is missing, with nothing released;
a node refuses a SecAgg+ setup that differs from the study's. Marked ``flower``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.common.secure_aggregation.ndarrays_arithmetic import parameters_mod, parameters_multiply
from flwr.common.secure_aggregation.quantization import dequantize, quantize
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from flwr.supercore.task_identity import TaskIdentity
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.federation import SETUP_ROUND, Dense, Masked
from dpbnsl.federation.guard import ParticipantFailure
from dpbnsl.federation.protocol import ProtocolError
from dpbnsl.federation.secure_sum import InProcessSum, SecureShare
from dpbnsl.flower.apps import make_client_app, participant_id
from dpbnsl.flower.records import put_payload
from dpbnsl.flower.secagg import decode_sum, encode_share, secagg_parameters, share_stage
from dpbnsl.mechanisms.distributed import modular_sum
from dpbnsl.simulation import simulate

pytestmark = pytest.mark.flower


@pytest.fixture(autouse=True)
def _flower_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("flwr_home")
    monkeypatch.setenv("FLWR_HOME", str(home))
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")


def _flower_sum(shares: list[SecureShare]) -> np.ndarray:
    """Flower's own client and server arithmetic, without the masks (which cancel): the client's
    weighting and quantisation (``_collect_masked_vectors``) and the server's reduction and
    dequantisation (``unmask_stage``), with the parameters :func:`secagg_parameters` sets."""
    bits = shares[0].bits
    s = secagg_parameters(bits=bits, participants=max(3, len(shares)), dropouts=0)
    T, c = s.quantization_range, s.clipping_range
    total, weights = None, 0
    for share in shares:
        ratio = T / s.max_weight  # the node's weight T over max_weight T
        q_ratio = round(ratio * T)
        x = parameters_multiply([encode_share(share)], q_ratio / T)
        (q,) = quantize(x, c, T)
        np.testing.assert_array_equal(q, share.residues)  # the residue passes through exactly
        total = q.astype(np.int64) if total is None else total + q
        weights += q_ratio
    (recon,) = parameters_mod([total], s.modulus)
    q_total = weights % s.modulus
    (v,) = dequantize([recon], c, T)
    v += -(len(shares) - 1) * c
    v *= T / q_total
    return decode_sum(v, bits=bits, contributors=len(shares))


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(8, 31),
    n=st.integers(2, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_shares_pass_through_flowers_quantisation_exactly(bits, n, seed):
    rng = np.random.default_rng(seed)
    M = 1 << bits
    residues = [rng.integers(0, M, size=17) for _ in range(n)]
    residues[0][:3] = [0, M - 1, M // 2]  # the ends of the range: no saturation
    shares = [SecureShare(r, bits) for r in residues]
    np.testing.assert_array_equal(_flower_sum(shares), modular_sum(residues, bits=bits))


def test_secagg_parameters_refuse_what_flower_cannot_carry():
    s = secagg_parameters(bits=31, participants=10, dropouts=2)
    assert (s.modulus, s.quantization_range, s.threshold) == (2**31, 2**31 - 1, 8)
    assert secagg_parameters(bits=31, participants=3, dropouts=1).threshold == 2
    with pytest.raises(ValueError, match="moduli up to 2\\^31.*modulus_bits <= 31"):
        secagg_parameters(bits=32, participants=3, dropouts=0)
    with pytest.raises(ValueError, match="at least 3 participants"):
        secagg_parameters(bits=31, participants=2, dropouts=0)
    with pytest.raises(ValueError, match="modulus above 2\\^8"):
        secagg_parameters(bits=8, participants=256, dropouts=0)
    with pytest.raises(ValueError, match="declare dropouts <= 4"):
        secagg_parameters(bits=31, participants=10, dropouts=5)
    with pytest.raises(ProtocolError, match="not a vector of residues"):
        decode_sum(np.array([0.25]), bits=31, contributors=3)


# --- one node, its ClientApp called directly ---------------------------------------------------

DATA = simulate(5, 3 * 200, participants=3, rng=5)
SECURE = dict(aggregation="secure", epsilon=1.0, delta=1e-5, clip_norm=5.0, participants=3, n_total=600)
COUNTS = Dense(np.array([200.0, 200.0, 200.0]))


@pytest.fixture
def _identity():
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


class Node:
    def __init__(self):
        self.app = make_client_app(lambda k, cfg: DATA.participants[k], accept_study_budget=True)
        self.ctx = Context(
            run_id=1, node_id=7, node_config={"partition-id": 0}, state=RecordDict(), run_config={}
        )

    def ask(self, settings, phase, t, inbox=None):
        cfg = ConfigRecord(
            {"protocol": "dp-fed-bnsl", "settings": json.dumps(settings), "phase": phase, "round": t}
        )
        content = RecordDict({"config": cfg})
        content["inbox"] = put_payload(inbox)
        return self.app(message=Message(content, dst_node_id=7, message_type="query"), context=self.ctx)

    def secagg(self, kind="train", **config):
        content = RecordDict({RECORD_KEY_CONFIGS: ConfigRecord(config)})
        return self.app(message=Message(content, dst_node_id=7, message_type=kind), context=self.ctx)

    def keep(self):
        self.ask(SECURE, "rounds", SETUP_ROUND)
        return self.ask(SECURE, "covariance", 0, COUNTS)


PARAMS = secagg_parameters(bits=31, participants=3, dropouts=0)


def _setup(s=PARAMS, **change):
    return {
        Key.STAGE: Stage.SETUP,
        Key.SAMPLE_NUMBER: 3,
        Key.SHARE_NUMBER: 3,
        Key.THRESHOLD: s.threshold,
        Key.CLIPPING_RANGE: s.clipping_range,
        Key.TARGET_RANGE: s.quantization_range,
        Key.MOD_RANGE: s.modulus,
        Key.MAX_WEIGHT: s.max_weight,
        **change,
    }


@pytest.mark.usefixtures("_identity")
def test_a_node_keeps_its_share_and_checks_the_secagg_setup():
    node = Node()
    reply = node.keep()
    cfg = reply.content["config"]
    assert cfg["kept"] is True and json.loads(cfg["upload_kinds"]) == []  # nothing leaves
    assert not reply.content.array_records  # no share, no payload
    for key, bad in [
        (Key.MOD_RANGE, 2**40),  # a larger modulus would reveal how often the sum wrapped
        (Key.CLIPPING_RANGE, 1.0),  # saturation
        (Key.THRESHOLD, 2),  # below P − t: a sum of too few shares could be unmasked
        (Key.MAX_WEIGHT, 1000.0),
        (Key.SAMPLE_NUMBER, 5),
    ]:
        with pytest.raises(ParticipantFailure, match="SecAgg\\+ setup differs from the study's"):
            node.secagg(**_setup(**{key: bad}))
    node.secagg(**_setup())  # the study's own setup is accepted (the node answers its keys)


@pytest.mark.usefixtures("_identity")
def test_the_share_never_leaves_outside_secaggs_masking_stage():
    """A ``train.*`` message passes ``secaggplus_mod`` untouched: the node refuses it before the
    share is reached; and the hand-over works only once SecAgg+'s masking stage armed it."""
    from dpbnsl.flower.secagg import take_share

    node = Node()
    node.keep()
    with pytest.raises(ParticipantFailure, match="'train' messages only"):
        node.secagg(kind="train.default")
    msg = Message(RecordDict(), dst_node_id=7, message_type="train")
    with pytest.raises(Exception, match="masking stage only"):
        take_share(msg, node.ctx.state)
    assert "dpbnsl.pending.arrays" in node.ctx.state  # still kept, never sent


@pytest.mark.usefixtures("_identity")
def test_requests_that_would_expose_one_share_are_refused():
    """Without a consistency round, a server could (a) mask a share with too few nodes, or repeat
    one, and unmask a small subset; (b) declare a node dropped after it sent its masked share and
    strip its pairwise masks (its self-mask is a 32-bit seed); (c) list a node as live to some and
    dropped to others; (d) unmask fewer than P − t shares. The node refuses each."""
    from dpbnsl.flower.secagg import guard

    node = Node()
    node.keep()
    node.secagg(**_setup())  # the accepted setup samples 3 nodes

    def masking(sources):
        cfg = {Key.STAGE: Stage.COLLECT_MASKED_VECTORS, Key.SOURCE_LIST: sources, Key.CIPHERTEXT_LIST: []}
        guard(
            Message(RecordDict({RECORD_KEY_CONFIGS: ConfigRecord(cfg)}), dst_node_id=7, message_type="train"),
            node.ctx,
        )

    for sources in ([8, 8], [8], [7, 8], [8, 9, 10]):
        with pytest.raises(Exception, match="masked with every other node of the setup"):
            masking(sources)
    masking([8, 9])  # every other node: accepted

    def unmask(live, dead):
        cfg = {Key.STAGE: Stage.UNMASK, Key.ACTIVE_NODE_ID_LIST: live, Key.DEAD_NODE_ID_LIST: dead}
        content = RecordDict({RECORD_KEY_CONFIGS: ConfigRecord(cfg)})
        guard(Message(content, dst_node_id=7, message_type="train"), node.ctx)

    unmask([7, 8, 9], [])  # the honest request
    for live, dead, why in [
        ([7, 8, 9], [9], "listed as dropped after the masking stage"),
        ([7, 8, 8], [], "listed twice"),
        ([8, 9, 10], [7], "listed as dropped after the masking stage"),
        ([7, 8], [], "fewer than P − t = 3"),
    ]:
        with pytest.raises(Exception, match=why):
            unmask(live, dead)


@pytest.mark.usefixtures("_identity")
def test_a_node_refuses_what_secagg_cannot_carry_before_any_work():
    node = Node()
    with pytest.raises(ParticipantFailure, match="modulus_bits <= 31"):
        node.ask(dict(SECURE, modulus_bits=40), "rounds", SETUP_ROUND)
    assert "dpbnsl.state.config" not in node.ctx.state
    with pytest.raises(ParticipantFailure, match="at least 3 participants"):
        Node().ask(dict(SECURE, participants=2), "rounds", SETUP_ROUND)
    with pytest.raises(ParticipantFailure, match="no secure share is waiting"):
        Node().secagg(**_setup())


def test_a_masked_share_has_no_record():
    with pytest.raises(ValueError, match="no record"):
        put_payload(Masked(3, 31))


# --- whole runs on the simulation engine -----------------------------------------------------


def _same_transcript(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.round, x.sender, x.receiver, x.kind) == (y.round, y.sender, y.receiver, y.kind)
        assert type(x.payload) is type(y.payload)
        if isinstance(x.payload, Masked):
            assert (x.payload.size, x.payload.bits) == (y.payload.size, y.payload.bits)
        else:
            np.testing.assert_array_equal(x.to_dense(), y.to_dense())


def _cases():
    from dpbnsl.learners.constraint.dp_cov_pc import dp_cov_pc
    from dpbnsl.learners.constraint.dp_fed_pc import dp_fed_pc
    from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
    from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
    from dpbnsl.learners.linear.fed_bnsl import fed_bnsl

    return {
        "dp-fed-bnsl": (dp_fed_bnsl, dict(epsilon=1.0, delta=1e-5, clip_norm=10.0), 7),
        "dp-cov-pc": (dp_cov_pc, dict(epsilon=2.0, delta=1e-5, clip_norm=10.0, alpha=0.05), 3),
        # several secure rounds (one per batch of tests)
        "dp-fed-pc": (dp_fed_pc, dict(epsilon=4.0, delta=1e-5, data="continuous", bounds=[-8.0, 8.0]), 5),
        "fed-bnsl": (fed_bnsl, dict(clip_norm=20.0), None),
        "dp-fed-sparse-bnsl": (
            dp_fed_sparse_bnsl,
            dict(
                epsilon=4.0, delta=1e-5, feature_bound=25.0, rounds=3, local_iters=3, warm_start="covariance"
            ),
            11,
        ),
    }


@pytest.mark.parametrize("name", ["dp-fed-bnsl", "fed-bnsl", "dp-fed-sparse-bnsl", "dp-cov-pc", "dp-fed-pc"])
def test_a_secagg_run_equals_the_in_process_secure_sum(name):
    from dpbnsl.flower import simulate_on_flower

    learner, settings, seed = _cases()[name]
    data = simulate(6, 3 * 400, participants=3, rng=1).participants
    ref = learner(data, aggregation="secure", **settings, **({} if seed is None else {"rng": seed}))
    run = simulate_on_flower(name, data, settings=dict(settings, aggregation="secure"), seed=seed)
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    _same_transcript(run.transcript, ref.transcript)
    if name == "dp-fed-sparse-bnsl":
        _same_transcript(run.transcripts["warm"], ref.info["warm_start"]["transcript"])
    rounds = 1 if name != "dp-fed-pc" else sum(m.kind == "secure_sum" for m in ref.transcript)
    assert list(run.contributors.values()) == [(0, 1, 2)] * rounds
    for k, report in run.reports.items():  # each participant's own ledger: the learner's
        if ref.ledger and "ledger" in report:
            assert report["epsilon"] == ref.ledger[k].epsilon(1e-5) <= settings["epsilon"]


def _drop(who: set[int], stage: str):
    """A node that fails at SecAgg+'s ``stage``, or at the secure round's request (``"request"``)."""

    def mod(msg, ctx, call_next):
        at_request = msg.metadata.message_type == "query" and msg.content["config"]["phase"] == "covariance"
        here = at_request if stage == "request" else share_stage(msg) == stage
        if participant_id(ctx.node_config) in who and here:
            raise RuntimeError("this participant's machine went away")
        return call_next(msg, ctx)

    return mod


#: P = 4, t = 1 (threshold 3), 300 rows each
FOUR = dict(
    aggregation="secure", epsilon=1.0, delta=1e-5, clip_norm=10.0, dropouts=1, participants=4, n_total=1200
)


def _run_with_dropouts(data, settings, who, stage, seed):
    from flwr.simulation import run_simulation

    from dpbnsl.flower import make_client_app, make_server_app

    results: dict = {}
    saved = os.environ.get("PYTHONPATH")
    try:
        run_simulation(
            server_app=make_server_app(
                "dp-fed-bnsl", settings, len(data), results=results, round_timeout=120
            ),
            client_app=make_client_app(
                lambda k, _cfg: data[k], seed=seed, accept_study_budget=True, mods=[_drop(who, stage)]
            ),
            num_supernodes=len(data),
            backend_config={
                "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                "init_args": {"num_cpus": 2},
            },
        )
    finally:
        os.environ["PYTHONPATH"] = saved or ""
    return results


def _expected(data, settings, contributors, seed):
    """The in-process protocol with only ``contributors``' shares in the sum."""
    from dpbnsl.learners.hosted import hosted

    proto = hosted("dp-fed-bnsl")
    gens = np.random.default_rng(seed).spawn(len(data))
    clients = [
        proto.participant(X, settings=settings, participant=k, rng=g, budget="study")
        for k, (X, g) in enumerate(zip(data, gens))
    ]
    server = proto.server(settings=settings, n_participants=len(data))
    setup = {k: c.respond("rounds", SETUP_ROUND, None)[1] for k, c in enumerate(clients)}
    reply = server.receive("rounds", SETUP_ROUND, setup)
    shares = {k: c.respond("covariance", 0, reply.for_participant(k))[1] for k, c in enumerate(clients)}
    server.receive_sum("covariance", 0, InProcessSum()({k: shares[k] for k in contributors}))
    return server


@pytest.mark.parametrize("stage, contributors", [("request", (0, 1, 3)), (Stage.UNMASK, (0, 1, 2, 3))])
def test_a_dropout_within_the_threshold_leaves_the_others_sum(stage, contributors):
    """P = 4, t = 1 (threshold 3): participant 2 drops out at the secure round's request (its
    share never enters SecAgg+) or in the unmasking stage (the others' key shares unmask it); the
    run completes with bitwise the in-process sum of the shares that reached it, each
    participant's statement the one calibrated for P − t = 3 honest shares."""
    data = simulate(5, 4 * 300, participants=4, rng=2).participants
    settings = FOUR
    results = _run_with_dropouts(data, settings, {2}, stage, seed=5)
    run = results["run"]
    assert run.contributors == {"covariance:0": contributors}
    if stage == "request":  # the server says who was left out at the request, in data-free words
        assert list(run.dropped) == ["covariance:0"] and "participant 2" in run.dropped["covariance:0"][0]
    server = _expected(data, settings, contributors, seed=5)
    np.testing.assert_array_equal(run.W_raw, server.learned()[1])
    senders = [m.sender for m in run.transcript if m.kind == "secure_share"]
    assert tuple(senders) == contributors  # the transcript names the shares that reached the sum
    assert set(run.reports) >= {0, 1, 3}  # participant 2's node is still up on the engine
    assert all(r["epsilon"] <= 1.0 for r in run.reports.values())


def test_dropouts_beyond_the_threshold_end_the_run_naming_them():
    data = simulate(5, 4 * 300, participants=4, rng=2).participants
    settings = FOUR
    with pytest.raises(
        Exception,
        match=r"missing: participant 1 \(in SecAgg\+'s masking stage\), participant 2 \(in SecAgg\+'s "
        r"masking stage\); its threshold is 3 of 4;.*nothing released",
    ):
        _run_with_dropouts(data, settings, {1, 2}, Stage.COLLECT_MASKED_VECTORS, seed=5)


@pytest.mark.parametrize(
    "stage, name", [(Stage.SHARE_KEYS, "share-keys"), (Stage.COLLECT_MASKED_VECTORS, "masking")]
)
def test_a_dropout_before_secaggs_unmasking_ends_the_round_cleanly(stage, name):
    """A dropout in the key-sharing stage (flwr 1.42 cannot unmask after it) or in the masking
    stage (the nodes never reveal a dropped node's keys): the run ends naming the participant and
    the stage, with nothing released."""
    data = simulate(5, 4 * 300, participants=4, rng=2).participants
    settings = FOUR
    with pytest.raises(
        Exception,
        match=rf"missing: participant 2 \(in SecAgg\+'s {name} stage\).*before its unmasking stage.*nothing released",
    ):
        _run_with_dropouts(data, settings, {2}, stage, seed=5)
