"""A Flower ClientApp and ServerApp (Message API) that run any hosted protocol of this package.

The ServerApp sends each request as a ``query`` message to every participant's node (the config
record names the protocol, its public settings, the phase and the round; the array record holds what
the server sent last) and waits for one upload per participant; the ClientApp rebuilds the
participant from its own data, the public settings and its saved state (``context.state``), answers,
and saves the state again. Participants are known by the id their operator gives them (node config
``participant-id``, or the simulation's ``partition-id``), never by Flower's random node ids. At the
end the server sends the last reply with phase ``"done"`` and each participant reports what it spent.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.clientapp.typing import Mod
from flwr.serverapp import Grid, ServerApp

from ..federation import SERVER, SETUP_ROUND, Payload, Transcript
from ..federation import Message as WireMessage
from ..federation.guard import ParticipantFailure, Refusal, Reserve, public_failure
from ..federation.protocol import ProtocolError, messages_of, record_reply
from ..federation.secure_sum import SecureShare, record_secure_round
from ..federation.spend import NodeLedger, data_key
from ..io.tables import read_table
from ..learners.hosted import hosted
from .records import get_payload, get_state, put_payload, put_state
from .secagg import (
    guard,
    keep_share,
    secagg_parameters,
    share_reply,
    take_share,
)
from .secagg_server import run_secagg

__all__ = ["FlowerRun", "make_client_app", "make_server_app", "run_on_grid", "participant_id"]

DataLoader = Callable[[int, Mapping[str, Any]], Any]
#: seconds a secure round (and the final report) of a study that tolerates dropouts waits for a
#: node when no round timeout is set: a node that went away must not stall the run for ever
SECURE_TIMEOUT = 600.0


def participant_id(node_config: Mapping[str, Any]) -> int:
    """The participant id of a node: ``participant-id`` from its node config (a deployment) or the
    simulation engine's ``partition-id``."""
    for key in ("participant-id", "partition-id"):
        if key in node_config:
            return int(node_config[key])
    raise ProtocolError(
        "the node config names no participant: start the node with --node-config 'participant-id=K ...'"
    )


def load_csv(k: int, node_config: Mapping[str, Any]) -> pd.DataFrame:
    """The default data loader: the file at ``data-path``, a CSV (numbers, one header row) or, by
    its suffix ``.parquet`` / ``.pq``, a Parquet file (needs pyarrow); see
    :func:`dpbnsl.io.tables.read_table`."""
    path = node_config.get("data-path")
    if not path:
        raise ProtocolError(f"participant {k}: the node config has no data-path")
    return read_table(str(path), "data", participant=k)


def _generator(k: int, node_config: Mapping[str, Any], default: int | None) -> np.random.Generator:
    """Participant k's noise: fresh entropy, unless the node config (or the app) has a ``seed``
    (for tests on simulated data only: it gives the in-process learner's stream k of ``rng=seed``)."""
    if not _seeded(node_config, default):
        return np.random.default_rng()
    seed = int(str(node_config.get("seed", default)))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k,)))


def _budget(
    k: int,
    node_config: Mapping[str, Any],
    budgets: Mapping[int, tuple[float, float]] | None,
    accept_study_budget: bool,
) -> tuple[float, float] | str | None:
    """Participant k's own (ε, δ) budget: its node config's ``epsilon-budget`` and
    ``delta-budget``, else the app's ``budgets[k]``, else ``"study"`` when its operator opted out
    (node config ``accept-study-budget=true``, or the app's ``accept_study_budget``), else None:
    the participant then refuses to run (:func:`dpbnsl.federation.guard.own_budget`)."""
    if "epsilon-budget" in node_config or "delta-budget" in node_config:
        if not ("epsilon-budget" in node_config and "delta-budget" in node_config):
            raise ProtocolError(
                f"participant {k}: the node config gives only one of epsilon-budget and delta-budget; "
                f"give both"
            )
        return float(node_config["epsilon-budget"]), float(node_config["delta-budget"])
    if budgets is not None and k in budgets:
        return budgets[k]
    if accept_study_budget or _truthy(node_config.get("accept-study-budget", False)):
        return "study"
    return None


def _reserver(ledger: NodeLedger, data: Any, k: int, protocol: str) -> Reserve:
    """The participant's ``reserve``: charge a run's plan to its dataset's ledger file (the data's
    hash is taken then, once a run, not at every message)."""

    def reserve(entries: Any, budget: tuple[float, float]) -> None:
        ledger.reserve(data_key(data), entries, budget=budget, participant=k, what=protocol)

    return reserve


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _seeded(node_config: Mapping[str, Any], default: int | None) -> bool:
    seed = node_config.get("seed", default)
    return not (seed is None or seed == "")


#: where the protocol a node answers is kept in its saved state: a run's protocol never changes
_PROTOCOL_KEY = "dpbnsl.protocol"


def _admit_protocol(
    k: int,
    name: str,
    private: bool,
    ctx: Context,
    budgets: Mapping[int, tuple[float, float]] | None,
    accept_study_budget: bool,
    protocols: tuple[str, ...] | None,
) -> None:
    """Refuse a protocol the node does not run: one outside its allowlist (node config
    ``protocols``, comma-separated, or the app's ``protocols``), a non-private one on a node that
    holds a privacy budget (it joined for a private study), or another protocol than the one this
    run started with (kept in the node's state)."""
    listed = ctx.node_config.get("protocols")
    allowed = (
        tuple(p.strip() for p in str(listed).split(",") if p.strip()) if listed is not None else protocols
    )
    if allowed is not None and name not in allowed:
        raise Refusal(f"participant {k} runs only {', '.join(allowed)}; the study asks for {name}")
    has_budget = _budget(k, ctx.node_config, budgets, accept_study_budget) is not None
    if not private and has_budget and allowed is None:
        raise Refusal(
            f"participant {k} holds a privacy budget and runs private protocols only; the study asks "
            f"for {name}, which is not private (list it in the node config's protocols to allow it)"
        )
    kept = ctx.state.config_records.get(_PROTOCOL_KEY)
    if kept is None:
        ctx.state[_PROTOCOL_KEY] = ConfigRecord({"name": name})
    elif str(kept["name"]) != name:
        began = str(kept["name"])
        raise Refusal(f"participant {k} began this run with {began}; it refuses to switch to {name}")


def make_client_app(
    load: DataLoader = load_csv,
    *,
    seed: int | None = None,
    budgets: Mapping[int, tuple[float, float]] | None = None,
    accept_study_budget: bool = False,
    protocols: tuple[str, ...] | None = None,
    ledger_dir: str | os.PathLike[str] | None = None,
    mods: Sequence[Mod] = (),
) -> ClientApp:
    """The participant's ClientApp; ``load(participant_id, node_config)`` returns its data (default:
    the file at node config ``data-path``). The data and the noise never leave this process: only
    the protocol's uploads are sent.

    ``seed`` (or a node config ``seed``) fixes the noise: **for tests on simulated data only** (a
    fixed seed voids the guarantee). Without a seed, every message draws fresh entropy and the
    generator's state is never saved (nothing lets a later reader replay the noise).

    A private participant needs a budget of its own: node config ``epsilon-budget`` and
    ``delta-budget``, else ``budgets[participant id]``; or, as an explicit opt-out, node config
    ``accept-study-budget=true`` (or ``accept_study_budget=True`` here) to accept the study's
    (ε, δ), refused when ε is above 10 (or infinite) or δ above min(1e-3, 1/n_k). It refuses a
    study beyond its
    budget, any request its plan does not have and changed settings, before releasing anything
    (:mod:`dpbnsl.federation.guard`).

    A participant's budget spans runs: with a ledger directory (node config ``ledger-dir``, or
    ``ledger_dir`` here; the deployment's ClientApp uses ``~/.dpbnsl/ledgers``), every run's whole
    planned spend is charged to its dataset's ledger file before its first release, and a run
    whose plan would take the data beyond the budget is refused
    (:class:`~dpbnsl.federation.spend.NodeLedger`). Without one the budget holds within a run only.

    The participant's work runs with numpy's floating-point errors ignored and warnings shown
    (never raised), so that whether a request fails cannot depend on the data.

    Which protocols a node answers: those of ``protocols`` (or the node config's ``protocols``,
    comma-separated) when given; else, on a node that holds a privacy budget (or accepts the
    study's), the private ones only — a server cannot switch a node that joined a private study to
    a non-private protocol. A run's first protocol is kept in the node's state: a later message
    asking for another is refused.

    Secure rounds (``aggregation="secure"``) run on Flower's SecAgg+ (:mod:`dpbnsl.flower.secagg`):
    the node keeps its share until ``secaggplus_mod`` masks it, and it refuses a SecAgg+ setup whose
    modulus, quantisation, weight, threshold or number of nodes differ from the study's. ``mods``
    are further Flower mods, run before those two.

    On failure the reply carries only :func:`~dpbnsl.federation.guard.public_failure`'s data-free
    message (a refusal's own, or the participant with the phase and round); the detail, which may
    quote the data, is logged on this machine only (logger ``dpbnsl.participant``)."""
    app = ClientApp(mods=[*mods, _check_secagg_setup, secaggplus_mod])

    def answer(msg: Message, ctx: Context, k: int, phase: str, t: int) -> Message:
        cfg = msg.content["config"]
        proto = hosted(str(cfg["protocol"]))
        _admit_protocol(k, proto.name, proto.private, ctx, budgets, accept_study_budget, protocols)
        settings = json.loads(str(cfg["settings"]))
        secure = settings.get("aggregation", "local") == "secure"
        if secure:  # before any work: the share must fit Flower's SecAgg+ (it is kept, never sent)
            try:
                secagg_parameters(
                    bits=settings.get("modulus_bits", 31),
                    participants=settings.get("participants", 0),
                    dropouts=settings.get("dropouts", 0),
                )
            except (TypeError, ValueError) as exc:  # public settings only: the message is data-free
                raise Refusal(f"participant {k}: {exc}; nothing released") from None
        extra: dict[str, Any] = {}
        data = load(k, ctx.node_config)
        if proto.private:
            extra = {
                "rng": _generator(k, ctx.node_config, seed),
                "budget": _budget(k, ctx.node_config, budgets, accept_study_budget),
            }
            where = ctx.node_config.get("ledger-dir", ledger_dir)
            if where not in (None, ""):
                extra["reserve"] = _reserver(NodeLedger(str(where)), data, k, proto.name)
        elif proto.participant_random:  # not private, but random (e.g. DS-FCD's Gumbel noise)
            extra = {"rng": _generator(proto.stream_offset + k, ctx.node_config, seed)}
        p = proto.participant(data, settings=settings, participant=k, **extra)
        p.load_state_dict(get_state(ctx.state))
        if phase == "done":
            report = ConfigRecord({"participant": k, "report": json.dumps(p.report())})
            return Message(RecordDict({"config": report}), reply_to=msg)
        p.receive_extra(_get_messages(msg.content, "extra"))
        upload = p.respond(phase, t, get_payload(msg.content["inbox"]))
        messages = messages_of(upload)
        kept = [payload for _, payload in messages if isinstance(payload, SecureShare)]
        if kept:  # a share is kept on this node until Flower's SecAgg+ sums it; it is never sent
            if not (secure and len(messages) == 1):
                raise Refusal(f"participant {k}: a secure share outside a secure study; nothing released")
            keep_share(
                ctx.state,
                kept[0],
                participants=settings["participants"],
                dropouts=settings.get("dropouts", 0),
            )
            messages = []
        state = p.state_dict()
        if not _seeded(ctx.node_config, seed):  # fresh entropy at every message: nothing to keep
            state.pop("rng", None)
        put_state(ctx.state, state)
        config = ConfigRecord({"participant": k, "multi": isinstance(upload, list), "kept": bool(kept)})
        return Message(_put_messages(messages, "upload", config), reply_to=msg)

    @app.train()
    def hand_over(msg: Message, ctx: Context) -> Message:
        """SecAgg+'s request for the kept share (called by ``secaggplus_mod`` in its masking stage)."""
        k: int | None = None
        try:
            k = participant_id(ctx.node_config)
            return share_reply(msg, take_share(msg, ctx.state))
        except Exception as exc:  # what leaves this machine: a data-free message only
            failure = public_failure(exc, participant=k, phase="secure sum", t=0)
        raise ParticipantFailure(failure)

    @app.query()
    def handle(msg: Message, ctx: Context) -> Message:
        k: int | None = None
        phase, t = "(unknown phase)", 0
        try:
            cfg = msg.content["config"]
            phase, t = str(cfg["phase"]), int(str(cfg["round"]))
            k = participant_id(ctx.node_config)
            # a warning raised as an error, or a floating-point trap, would make whether the request
            # fails depend on the data: shown (on this machine) and ignored instead
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("default")
                return answer(msg, ctx, k, phase, t)
        except Exception as exc:  # what leaves this machine: a data-free message only
            failure = public_failure(exc, participant=k, phase=phase, t=t)
        raise ParticipantFailure(failure)  # outside the except block: no chained detail

    return app


def _check_secagg_setup(
    msg: Message, ctx: Context, call_next: Callable[[Message, Context], Message]
) -> Message:
    """A mod before ``secaggplus_mod``: the node checks every SecAgg+ message (any ``train`` or
    ``train.*`` message) against its kept share and the study (:func:`~dpbnsl.flower.secagg.guard`)
    before Flower's mod reads it."""
    if msg.metadata.message_type.split(".")[0] == "train":
        k: int | None = None
        try:
            k = participant_id(ctx.node_config)
            guard(msg, ctx)
        except Exception as exc:
            failure = public_failure(exc, participant=k, phase="secure sum", t=0)
            raise ParticipantFailure(failure) from None
    return call_next(msg, ctx)


def _put_messages(messages: list[tuple[str, Payload]], prefix: str, config: ConfigRecord) -> RecordDict:
    """Messages as records: their kinds in ``config`` (JSON), payload i in ``{prefix}_{i}``."""
    config[f"{prefix}_kinds"] = json.dumps([kind for kind, _ in messages])
    content = RecordDict({"config": config})
    for i, (_, payload) in enumerate(messages):
        content[f"{prefix}_{i}"] = put_payload(payload)
    return content


def _get_messages(content: RecordDict, prefix: str) -> list[tuple[str, Payload]]:
    kinds = json.loads(str(content["config"].get(f"{prefix}_kinds", "[]")))
    return [(str(kind), cast(Payload, get_payload(content[f"{prefix}_{i}"]))) for i, kind in enumerate(kinds)]


@dataclass
class FlowerRun:
    """What the server of a Flower run learned: the graph, the per-round history, the transcripts
    (the same :class:`~dpbnsl.federation.Transcript` the in-process learner returns, so the attacks
    run on them unchanged) and each participant's report."""

    protocol: str
    W: np.ndarray | None = None
    W_raw: np.ndarray | None = None
    history: pd.DataFrame | None = None
    transcripts: dict[str, Transcript] = field(default_factory=dict)
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    #: the participants whose shares reached each secure round's sum (``"phase:round"``)
    contributors: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: the server's wall seconds of each secure round (the request, then Flower's SecAgg+)
    secure_seconds: dict[str, float] = field(default_factory=dict)
    #: why participants were left out of a secure round at its request (their data-free messages)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    #: the bytes of each secure round's SecAgg+ messages: ``{"down": …, "up": …}`` (records only)
    secure_bytes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def transcript(self) -> Transcript:
        return self.transcripts["rounds"]


def _wait_for_nodes(grid: Grid, n: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(nodes := sorted(grid.get_node_ids())) < n:
        if time.monotonic() > deadline:
            raise ProtocolError(
                f"only {len(nodes)} of {n} participants' nodes connected within {timeout:g} s"
            )
        time.sleep(0.05)
    return nodes


def _exchange(
    grid: Grid,
    sent: list[tuple[int | None, Message]],
    where: str,
    timeout: float | None,
    *,
    tolerate: int = 0,
    failures: list[str] | None = None,
) -> list[tuple[int | None, Message]]:
    """Send, and pair each sent message with its reply; a missing reply or an error reply names
    the participant (or the node, before the ids are known) and the round. Up to ``tolerate``
    participants may fail (a secure round's dropouts): their pairs are left out."""
    replies = {
        r.metadata.reply_to_message_id: r
        for r in grid.send_and_receive([m for _, m in sent], timeout=timeout)
    }
    bad, ok = [], []
    for k, m in sent:
        r = replies.get(m.metadata.message_id)
        who = f"participant {k}" if k is not None else f"node {m.metadata.dst_node_id}"
        if r is None:
            bad.append(f"{who}: no reply" + (f" within {timeout:g} s" if timeout else ""))
        elif r.has_error():
            bad.append(f"{who}: {_reason(r.error.reason, r.error.code)}")
        else:
            ok.append((k, r))
    if failures is not None:
        failures.extend(bad)
    if len(bad) > tolerate:
        raise ProtocolError(f"{where}: " + "; ".join(bad) + ("; nothing released" if tolerate else ""))
    return ok


def _reason(reason: str | None, code: int) -> str:
    """A participant's error message from Flower's reason: ``"<class '…'>:<'message'>"`` in a
    deployment; on the simulation engine the message is the last line of Ray's report, after
    ``"Message: "``."""
    text = (reason or "").strip()
    head, sep, rest = text.partition(":<'")
    if sep and head.startswith("<class ") and rest.endswith("'>"):
        text = rest[:-2].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"error code {code}"
    last = lines[-1]
    marker = "occurred. Message: "
    return last.partition(marker)[2] if marker in last else last


def run_on_grid(
    grid: Grid,
    protocol: str,
    settings: Mapping[str, Any],
    n_participants: int,
    *,
    round_timeout: float | None = None,
    node_timeout: float = 120.0,
    server_rng: np.random.Generator | int | None = None,
) -> FlowerRun:
    """Run hosted protocol ``protocol`` with ``n_participants`` nodes on a Flower grid (the body of
    the ServerApp); the server's messages and the uploads are recorded as in process.
    ``server_rng`` is the server's own public randomness, for the protocols that draw some.

    A secure round (``aggregation="secure"``) runs on Flower's SecAgg+
    (:mod:`dpbnsl.flower.secagg`): up to t = ``dropouts`` participants may be missing at its request
    (``FlowerRun.dropped`` says who and why) or drop out during SecAgg+; with t > 0 and no
    ``round_timeout``, the secure round and the final report wait :data:`SECURE_TIMEOUT` seconds
    for a node at most."""
    dropouts = int(settings.get("dropouts", 0) or 0)
    if settings.get("aggregation", "local") == "secure":  # before any exchange
        secagg_parameters(
            bits=settings.get("modulus_bits", 31),
            participants=n_participants,
            dropouts=settings.get("dropouts", 0),
        )
    start = time.perf_counter()
    proto = hosted(protocol)
    extra = {"rng": server_rng} if proto.server_random else {}
    server = proto.server(settings=settings, n_participants=n_participants, **extra)
    nodes = _wait_for_nodes(grid, n_participants, node_timeout)
    base = {"protocol": protocol, "settings": json.dumps(dict(settings))}
    node_of: dict[int, int] = {}
    run = FlowerRun(protocol)
    step: tuple[str, int] | None = ("rounds", SETUP_ROUND)
    inbox: dict[int, Payload] = {}
    extras: dict[int, list[tuple[str, Payload]]] = {}
    targets: list[tuple[int | None, int]] = [(None, n) for n in nodes[:n_participants]]

    def send(phase: str, t: int) -> list[tuple[int | None, Message]]:
        out = []
        for k, node in targets:
            config = ConfigRecord({**base, "phase": phase, "round": t})
            content = _put_messages([] if k is None else extras.get(k, []), "extra", config)
            content["inbox"] = put_payload(None if k is None else inbox.get(k))
            out.append((k, Message(content, dst_node_id=node, message_type="query", group_id=f"{phase}:{t}")))
        return out

    def deliver(record: Transcript, t: int, reply: Any) -> tuple[str, int] | None:
        """Record the server's reply and queue what each participant receives next."""
        record_reply(record, t, reply, n_participants)
        for k in range(n_participants):
            sent = reply.for_participant(k)
            if sent is not None:
                inbox[k] = sent
            extras[k] = reply.extra_for(k)
        return cast("tuple[str, int] | None", reply.next)

    while step is not None:
        phase, t = step
        where = f"{phase} round {t}" if t != SETUP_ROUND else "the setup exchange"
        secure = server.secure_round(phase, t)
        if secure is not None:  # the shares stay on the nodes until Flower's SecAgg+ sums them
            began = time.perf_counter()
            record = run.transcripts.setdefault(server.transcript_of(phase), Transcript())
            params = secagg_parameters(
                bits=secure.bits, participants=n_participants, dropouts=secure.dropouts
            )
            failed: list[str] = []
            # a study that tolerates dropouts must not wait for ever for a node that went away
            wait = round_timeout if round_timeout is not None or not secure.dropouts else SECURE_TIMEOUT
            acked = _exchange(grid, send(phase, t), where, wait, tolerate=secure.dropouts, failures=failed)
            if failed:  # a refusal or a missing reply: the participant's share is not in the sum
                run.dropped[f"{phase}:{t}"] = failed
            kept = {}
            for k, r in acked:
                if not bool(r.content["config"].get("kept", False)) or k is None:
                    raise ProtocolError(f"{where}: participant {k} answered a secure round without a share")
                kept[k] = r.metadata.src_node_id
            missing = tuple(sorted(set(range(n_participants)) - set(kept)))
            wire: dict[str, int] = {}
            total = run_secagg(
                grid, kept, params, where=where, timeout=wait, already_missing=missing, wire=wire
            )
            run.secure_bytes[f"{phase}:{t}"] = wire
            run.contributors[f"{phase}:{t}"] = total.contributors
            run.secure_seconds[f"{phase}:{t}"] = time.perf_counter() - began
            record_secure_round(record, t, total, list(total.contributors))
            step = deliver(record, t, server.receive_sum(phase, t, total))
            continue
        replies = _exchange(grid, send(phase, t), where, round_timeout)
        uploads: dict[int, Any] = {}
        sent_up: dict[int, list[tuple[str, Payload]]] = {}
        for _, r in replies:
            k = int(r.content["config"]["participant"])
            if k in uploads:
                raise ProtocolError(f"{where}: two nodes claim to be participant {k}")
            sent_up[k] = _get_messages(r.content, "upload")
            multi = bool(r.content["config"]["multi"])
            uploads[k] = sent_up[k] if multi else sent_up[k][0][1]
            if targets[0][0] is None:  # the setup: learn which node is which participant
                node_of[k] = r.metadata.src_node_id
        record = run.transcripts.setdefault(server.transcript_of(phase), Transcript())
        for k in sorted(sent_up):
            for kind, payload in sent_up[k]:
                record.append(WireMessage(t, k, SERVER, kind, payload))
        reply = server.receive(phase, t, uploads)  # names missing or unknown participant ids
        if targets[0][0] is None:
            targets = [(k, node_of[k]) for k in sorted(node_of)]
        step = deliver(record, t, reply)
    # a participant that dropped out of a secure round may be gone: its report is then missing
    late = dropouts if run.contributors else 0
    wait = round_timeout if round_timeout is not None or not late else SECURE_TIMEOUT
    for _, r in _exchange(grid, send("done", 0), "the final report", wait, tolerate=late):
        run.reports[int(r.content["config"]["participant"])] = json.loads(str(r.content["config"]["report"]))
    run.W, run.W_raw, run.history = server.learned()
    run.seconds = time.perf_counter() - start
    return run


def make_server_app(
    protocol: str,
    settings: Mapping[str, Any],
    n_participants: int,
    *,
    results: dict[str, FlowerRun] | None = None,
    round_timeout: float | None = None,
    server_rng: np.random.Generator | int | None = None,
) -> ServerApp:
    """A ServerApp running ``protocol``; the outcome is put in ``results["run"]`` (the simulation
    engine runs the ServerApp in the caller's process)."""
    hosted(protocol)  # a clear error before Flower starts anything
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        run = run_on_grid(
            grid, protocol, settings, n_participants, round_timeout=round_timeout, server_rng=server_rng
        )
        if results is not None:
            results["run"] = run

    return app
