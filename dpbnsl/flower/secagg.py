"""Secure rounds on Flower's SecAgg+: the package's integer shares summed by Flower's own protocol.

A secure round of a hosted protocol (a participant answers with a
:class:`~dpbnsl.federation.secure_sum.SecureShare`: residues modulo 2^b) runs in two steps on a
Flower grid. First the request goes out as every other request does; the participant computes its
share and keeps it on its own node (``context.state``), answering with an acknowledgement only.
Then the server runs Flower's ``SecAggPlusWorkflow`` over the nodes that acknowledged; each node's
``secaggplus_mod`` masks the kept share, and the server unmasks the sum.

**Exact pass-through.** SecAgg+ clips a float vector into [−c, c], scales it by the sample weight
and quantises it into [0, T] by stochastic rounding (values beyond c saturate silently). With
T = 2^b − 1, c = T/2, ``max_weight`` = T and the node's weight T (a weight ratio of exactly 1), the
float sent for residue r is r − c: clipping leaves it alone, the quantiser maps it to r + 0 exactly
(the rounding has no fractional part to round) and the masked sum is taken modulo
``modulus_range`` = 2^b, so the server reads Σ_k r_k mod 2^b — what
:class:`~dpbnsl.federation.secure_sum.InProcessSum` computes, and nothing more (a larger modulus
would reveal how often the sum wrapped, which depends on the individual shares). Flower's
dequantisation turns the sum into a float, v = (s − n·c)·T/(2^b − n) for n contributors (the
weights' sum n·T is also reduced modulo 2^b); :func:`decode_sum` inverts it and checks that the
result is an integer. T must fit Flower's 32-bit quantised values: b ≤ 31 (:data:`MAX_BITS`).

**Dropouts.** A participant may drop out at the request (its share is then never made into
the sum) or in SecAgg+'s masking and unmasking stages, up to the threshold; the sum then holds the
others' shares, and :attr:`~dpbnsl.federation.secure_sum.SecureSum.contributors` says whose. A
dropout in SecAgg+'s setup or key-sharing stage ends the round with nothing released: flwr 1.42
then asks every node for key shares of the missing node, which no node holds. A node hands its
share to SecAgg+ once (it is removed from the node's state), so no second round can be run on
another subset of the same shares and differenced.

**Threshold.** ``num_shares`` is every sampled node (SecAgg+ on the complete graph: the
study sizes are small); the reconstruction threshold is max(t + 1, ⌊P/2⌋ + 1) for the declared
bound t of missing or colluding participants: t colluders with the server hold t shares of a
secret, one too few, and a majority threshold keeps a server that lies about who dropped out from
collecting both of one node's secrets (Bonawitz et al., CCS 2017). The run survives t dropouts
only when P − t ≥ the threshold, which :func:`secagg_parameters` checks before any exchange.

**What Flower does not protect.** SecAgg+ hides the individual shares from an honest-but-curious
server; it does not authenticate the nodes (a deployment should run with Flower's node
authentication), and flwr 1.42 expands each mask from a 32-bit seed with numpy's Mersenne
Twister, not a cryptographic generator. The package uses the protocol as Flower ships it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.app.message_type import MessageType
from flwr.common import (
    Code,
    FitIns,
    FitRes,
    Parameters,
    Status,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from flwr.compat.common import recorddict_compat as compat
from flwr.server import ServerConfig
from flwr.server.client_manager import SimpleClientManager
from flwr.server.compat.grid_client_proxy import GridClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import Strategy
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.serverapp import Grid

from ..federation.guard import Refusal
from ..federation.protocol import ProtocolError
from ..federation.secure_sum import SecureShare, SecureSum

__all__ = [
    "MAX_BITS",
    "SecAggParameters",
    "secagg_parameters",
    "encode_share",
    "decode_sum",
    "keep_share",
    "take_share",
    "check_setup",
    "run_secagg",
]

#: the widest modulus SecAgg+ carries: its quantised values are 32-bit signed integers
MAX_BITS = 31
#: where a node keeps its share between the request and the SecAgg+ round
PENDING_ARRAYS, PENDING_CONFIG = "dpbnsl.pending.arrays", "dpbnsl.pending.config"


@dataclass(frozen=True)
class SecAggParameters:
    """Flower SecAgg+ settings for a secure round of ``participants`` (P) nodes, modulus 2^``bits``
    and declared bound ``dropouts`` (t) on missing or colluding participants."""

    bits: int
    participants: int
    dropouts: int

    @property
    def modulus(self) -> int:
        return 1 << self.bits

    @property
    def quantization_range(self) -> int:
        return self.modulus - 1

    @property
    def clipping_range(self) -> float:
        return self.quantization_range / 2.0

    @property
    def max_weight(self) -> float:
        return float(self.quantization_range)

    @property
    def threshold(self) -> int:
        return max(self.dropouts + 1, self.participants // 2 + 1)


def secagg_parameters(*, bits: int, participants: int, dropouts: int) -> SecAggParameters:
    """The SecAgg+ settings of a secure round; a clear error when Flower's SecAgg+ cannot carry
    it (modulus above 2^31, fewer than two participants, or t dropouts that would leave fewer
    nodes than the threshold)."""
    b, P, t = int(bits), int(participants), int(dropouts)
    if not 2 <= b <= MAX_BITS:
        raise ValueError(
            f"Flower's SecAgg+ carries moduli up to 2^{MAX_BITS} (its quantised values are 32-bit "
            f"integers); the study's secure sum is modulo 2^{b}: set modulus_bits <= {MAX_BITS}"
        )
    if P < 2:
        raise ValueError(f"Flower's SecAgg+ needs at least 2 participants; the study has {P}")
    s = SecAggParameters(b, P, t)
    if not 0 <= t < P or P - t < s.threshold:
        raise ValueError(
            f"with P = {P} participants, SecAgg+'s threshold is {s.threshold} (max(t + 1, ⌊P/2⌋ + 1)); "
            f"t = {t} dropouts would leave {P - t} nodes, too few to unmask the sum: declare "
            f"dropouts <= {P - s.threshold}"
        )
    return s


def encode_share(share: SecureShare) -> np.ndarray:
    """The float vector a node hands SecAgg+ for its share: r − c, which SecAgg+ quantises back to
    the residue r exactly (module docstring)."""
    c = ((1 << share.bits) - 1) / 2.0
    return share.residues.astype(np.float64) - c


def decode_sum(values: np.ndarray, *, bits: int, contributors: int) -> np.ndarray:
    """The residues Σ_k r_k mod 2^bits from SecAgg+'s dequantised average of ``contributors``
    shares; a value that does not decode to an integer in [0, 2^bits) is a ProtocolError (nothing
    is released)."""
    M = 1 << bits
    T, n = M - 1, int(contributors)
    c = T / 2.0
    v = np.asarray(values, dtype=np.float64).ravel()
    s = v * ((M - n) % M) / T + n * c
    r = np.rint(s)
    if not (
        np.isfinite(s).all()
        and np.all(np.abs(s - r) < 1e-3)
        and r.min(initial=0) >= 0
        and r.max(initial=0) < M
    ):
        raise ProtocolError("SecAgg+ returned a sum that is not a vector of residues; nothing released")
    return r.astype(np.int64)


def keep_share(state: RecordDict, share: SecureShare, *, participants: int, dropouts: int) -> None:
    """Keep a node's share in its own state until the SecAgg+ round takes it."""
    state[PENDING_ARRAYS] = ArrayRecord({"residues": _array(share.residues)})
    state[PENDING_CONFIG] = ConfigRecord(
        {"bits": share.bits, "participants": int(participants), "dropouts": int(dropouts)}
    )


def _array(a: np.ndarray) -> Any:
    from flwr.app import Array

    return Array.from_numpy_ndarray(np.ascontiguousarray(a))


def _pending(state: RecordDict) -> tuple[SecureShare, SecAggParameters]:
    if PENDING_CONFIG not in state:
        raise Refusal("no secure share is waiting on this node: a SecAgg+ round was not requested")
    cfg = cast(ConfigRecord, state[PENDING_CONFIG])
    residues = cast(ArrayRecord, state[PENDING_ARRAYS])["residues"]
    share = SecureShare(residues.numpy(), int(cast(int, cfg["bits"])))
    declared = int(cast(int, cfg["participants"])), int(cast(int, cfg["dropouts"]))
    params = secagg_parameters(bits=share.bits, participants=declared[0], dropouts=declared[1])
    return share, params


def take_share(state: RecordDict) -> SecureShare:
    """The kept share, removed from the node's state (a share is summed once)."""
    share, _ = _pending(state)
    del state[PENDING_ARRAYS], state[PENDING_CONFIG]
    return share


def check_setup(msg: Message, ctx: Context) -> None:
    """A node's check of the server's SecAgg+ setup against its own kept share and the study:
    the modulus, the quantisation and the weight must pass the share through exactly, at least
    P − t nodes must be sampled and every one of them must hold a key share of it, and the
    threshold must be the study's. Anything else is refused before any key is sent."""
    cfg = msg.content.config_records[RECORD_KEY_CONFIGS]
    if str(cfg.get(Key.STAGE, "")) != Stage.SETUP:
        return
    _, s = _pending(ctx.state)
    sampled = int(cast(int, cfg[Key.SAMPLE_NUMBER]))
    expected: Mapping[str, Any] = {
        Key.MOD_RANGE: s.modulus,
        Key.TARGET_RANGE: s.quantization_range,
        Key.CLIPPING_RANGE: s.clipping_range,
        Key.MAX_WEIGHT: s.max_weight,
        Key.THRESHOLD: s.threshold,
        Key.SHARE_NUMBER: sampled,
    }
    wrong = [
        f"{key} = {cfg.get(key)!r} (expected {want!r})"
        for key, want in expected.items()
        if not _same(cfg.get(key), want)
    ]
    if not s.participants - s.dropouts <= sampled <= s.participants:
        wrong.append(f"{sampled} sampled nodes (expected {s.participants - s.dropouts} to {s.participants})")
    if wrong:
        raise Refusal("the server's SecAgg+ setup differs from the study's: " + "; ".join(wrong))


def _same(got: Any, want: Any) -> bool:
    try:
        return math.isclose(float(got), float(want), rel_tol=0.0, abs_tol=0.0)
    except (TypeError, ValueError):
        return False


def share_reply(msg: Message, share: SecureShare) -> Message:
    """The train reply that hands the share to ``secaggplus_mod`` (FitRes-shaped, weight T)."""
    T = (1 << share.bits) - 1
    fitres = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([encode_share(share)]), T, {})
    return Message(compat.fitres_to_recorddict(fitres, keep_input=False), reply_to=msg)


class _KeepSum(Strategy):
    """A one-round strategy for the workflow: it samples the given nodes and keeps the sum."""

    def __init__(self, proxies: list[GridClientProxy]) -> None:
        self.proxies = proxies
        self.results: list[tuple[Any, FitRes]] | None = None

    def initialize_parameters(self, client_manager: Any) -> Parameters | None:
        return None

    def configure_fit(self, server_round: int, parameters: Parameters, client_manager: Any) -> list[Any]:
        return [(p, FitIns(Parameters([], "numpy.ndarray"), {})) for p in self.proxies]

    def aggregate_fit(self, server_round: int, results: list[Any], failures: list[Any]) -> Any:
        self.results = list(results)
        return (results[0][1].parameters if results else None), {}

    def configure_evaluate(self, server_round: int, parameters: Parameters, client_manager: Any) -> list[Any]:
        return []

    def aggregate_evaluate(self, server_round: int, results: list[Any], failures: list[Any]) -> Any:
        return None, {}

    def evaluate(self, server_round: int, parameters: Parameters) -> Any:
        return None


class _Observed(SecAggPlusWorkflow):
    """Flower's workflow, unchanged, with the nodes that drop out at each stage noted (a stage
    that halts the protocol does not raise: this is how the server learns who is missing)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dropped: dict[str, set[int]] = {}
        self.halted_at: str | None = None

    def _observe(self, name: str, step: Any, grid: Grid, context: Any, state: Any) -> bool:
        before = set(state.active_node_ids)
        ok = bool(step(grid, context, state))
        self.dropped[name] = before - set(state.active_node_ids)
        if not ok and self.halted_at is None:
            self.halted_at = name
        return ok

    def setup_stage(self, grid: Grid, context: Any, state: Any) -> bool:
        return self._observe("setup", super().setup_stage, grid, context, state)

    def share_keys_stage(self, grid: Grid, context: Any, state: Any) -> bool:
        return self._observe("share-keys", super().share_keys_stage, grid, context, state)

    def collect_masked_vectors_stage(self, grid: Grid, context: Any, state: Any) -> bool:
        return self._observe("masking", super().collect_masked_vectors_stage, grid, context, state)

    def unmask_stage(self, grid: Grid, context: Any, state: Any) -> bool:
        return self._observe("unmasking", super().unmask_stage, grid, context, state)


def run_secagg(
    grid: Grid,
    nodes: Mapping[int, int],
    params: SecAggParameters,
    *,
    where: str,
    timeout: float | None,
    already_missing: tuple[int, ...] = (),
) -> SecureSum:
    """One SecAgg+ round over ``nodes`` (participant id → node id) whose kept shares are summed;
    the :class:`SecureSum` of the shares that reached the sum. A round that cannot unmask the sum
    is a ProtocolError naming the participants whose shares are missing (nothing is released)."""
    by_node = {node: k for k, node in nodes.items()}
    proxies = [GridClientProxy(node, grid, grid.run.run_id) for node in sorted(by_node)]
    strategy = _KeepSum(proxies)
    manager = SimpleClientManager()
    for proxy in proxies:
        manager.register(proxy)
    base = Context(run_id=grid.run.run_id, node_id=0, node_config={}, state=RecordDict(), run_config={})
    context = LegacyContext(
        base, config=ServerConfig(num_rounds=1), strategy=strategy, client_manager=manager
    )
    context.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord({"current_round": 1})
    context.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(
        Parameters([], "numpy.ndarray"), True
    )
    workflow = _Observed(
        num_shares=1.0,
        reconstruction_threshold=params.threshold,
        max_weight=params.max_weight,
        clipping_range=params.clipping_range,
        quantization_range=params.quantization_range,
        modulus_range=params.modulus,
        timeout=timeout,
    )
    if len(proxies) >= params.threshold:
        workflow(grid, context)
    results = strategy.results
    if not results:
        missing = [f"participant {k} (at the request)" for k in already_missing]
        for stage, nodes_out in workflow.dropped.items():
            out = sorted(by_node[n] for n in nodes_out)
            missing += [f"participant {k} (in SecAgg+'s {stage} stage)" for k in out]
        early = any(workflow.dropped.get(stage) for stage in ("setup", "share-keys"))
        raise ProtocolError(
            f"{where}: SecAgg+ could not unmask the sum"
            + (f" (it halted in its {workflow.halted_at} stage)" if workflow.halted_at else "")
            + f"; missing: {', '.join(missing) or 'none reported'}; its threshold is {params.threshold} of "
            f"{params.participants}"
            + (
                "; Flower's SecAgg+ cannot unmask a sum after a dropout before its masking stage"
                if early
                else ""
            )
            + "; nothing released"
        )
    contributors = tuple(sorted(by_node[proxy.node_id] for proxy, _ in results))
    (values,) = parameters_to_ndarrays(results[0][1].parameters)
    residues = decode_sum(values, bits=params.bits, contributors=len(contributors))
    return SecureSum(residues, params.bits, contributors)


def share_stage(msg: Message) -> str:
    """The SecAgg+ stage of a train message ("" for any other message)."""
    if msg.metadata.message_type != MessageType.TRAIN:
        return ""
    cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    return "" if cfg is None else str(cfg.get(Key.STAGE, ""))
