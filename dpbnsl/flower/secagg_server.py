"""The server's side of a secure round on Flower's SecAgg+ (:mod:`dpbnsl.flower.secagg` holds the
design and the node's side): Flower's ``SecAggPlusWorkflow`` run over the nodes that kept a share,
with a one-round strategy that keeps the sum, the nodes that dropped out at each stage noted, and
the bytes of its messages counted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.common import FitIns, FitRes, Parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat
from flwr.server import ServerConfig
from flwr.server.client_manager import SimpleClientManager
from flwr.server.compat.grid_client_proxy import GridClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import Strategy
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.serverapp import Grid

from ..federation.protocol import ProtocolError
from ..federation.secure_sum import SecureSum
from .secagg import SecAggParameters, decode_sum

__all__ = ["run_secagg", "message_bytes"]


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


def message_bytes(msg: Message) -> int:
    """The bytes of a message's records (arrays, configuration values): its payload, without
    Flower's framing."""
    return sum(_record_bytes(record) for record in msg.content.values())


def _record_bytes(record: Any) -> int:
    if isinstance(record, ConfigRecord):  # its own count refuses some values SecAgg+ puts in it
        return sum(len(str(key)) + _value_bytes(value) for key, value in record.items())
    return int(record.count_bytes())


def _value_bytes(value: Any) -> int:
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(_value_bytes(v) for v in value)
    return 8  # a number


class _Counted:
    """A grid that counts the bytes of the messages sent and of the replies received."""

    def __init__(self, grid: Grid) -> None:
        self.grid, self.down, self.up = grid, 0, 0

    def send_and_receive(self, messages: Any, timeout: float | None = None) -> Any:
        messages = list(messages)
        self.down += sum(message_bytes(m) for m in messages)
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        self.up += sum(message_bytes(r) for r in replies if not r.has_error())
        return replies

    def __getattr__(self, name: str) -> Any:
        return getattr(self.grid, name)


def run_secagg(
    grid: Grid,
    nodes: Mapping[int, int],
    params: SecAggParameters,
    *,
    where: str,
    timeout: float | None,
    already_missing: tuple[int, ...] = (),
    wire: dict[str, int] | None = None,
) -> SecureSum:
    """One SecAgg+ round over ``nodes`` (participant id → node id) whose kept shares are summed;
    the :class:`SecureSum` of the shares that reached the sum. A round that cannot unmask the sum
    is a ProtocolError naming the participants whose shares are missing (nothing is released).
    ``wire``, when given, receives the bytes SecAgg+ sent to the nodes (``"down"``) and received
    from them (``"up"``): keys, encrypted key shares, masked vectors, unmasking shares."""
    counted = _Counted(grid)
    grid = cast(Grid, counted)
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
    if wire is not None:
        wire.update(down=counted.down, up=counted.up)
    results = strategy.results
    if not results:
        missing = [f"participant {k} (at the request)" for k in already_missing]
        for stage, nodes_out in workflow.dropped.items():
            out = sorted(by_node[n] for n in nodes_out)
            missing += [f"participant {k} (in SecAgg+'s {stage} stage)" for k in out]
        early = any(workflow.dropped.get(stage) for stage in ("setup", "share-keys", "masking"))
        raise ProtocolError(
            f"{where}: SecAgg+ could not unmask the sum"
            + (f" (it halted in its {workflow.halted_at} stage)" if workflow.halted_at else "")
            + f"; missing: {', '.join(missing) or 'none reported'}; its threshold is {params.threshold} of "
            f"{params.participants}"
            + (
                "; a SecAgg+ round cannot complete after a dropout before its unmasking stage (the "
                "nodes never reveal a dropped node's keys)"
                if early
                else ""
            )
            + "; nothing released"
        )
    contributors = tuple(sorted(by_node[proxy.node_id] for proxy, _ in results))
    if len(contributors) < params.participants - params.dropouts:  # Flower's threshold forbids it
        raise ProtocolError(
            f"{where}: SecAgg+ summed {len(contributors)} shares, fewer than P − t = "
            f"{params.participants - params.dropouts}; nothing released"
        )
    (values,) = parameters_to_ndarrays(results[0][1].parameters)
    residues = decode_sum(values, bits=params.bits, contributors=len(contributors))
    return SecureSum(residues, params.bits, contributors)
