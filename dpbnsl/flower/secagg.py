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
the sum) or in SecAgg+'s unmasking stage, up to t; the sum then holds the shares of those that
reached the masking stage, and :attr:`~dpbnsl.federation.secure_sum.SecureSum.contributors` says
whose. A dropout in SecAgg+'s setup, key-sharing or masking stage ends the round with nothing
released: the nodes refuse to reveal a dropped node's key shares (:func:`guard`), and flwr 1.42
cannot unmask after an earlier dropout anyway. A node hands its share to SecAgg+ once (it is
removed from the node's state), so no second round can be run on another subset of the same
shares and differenced.

**Threshold.** ``num_shares`` is every sampled node (SecAgg+ on the complete graph: the
study sizes are small); the reconstruction threshold is P − t for the declared bound t of missing
or colluding participants. Flower then refuses, at every stage, to go on with fewer than P − t
nodes, so no sum of fewer than the P − t shares the noise needs is ever unmasked. The study must
have P − t > t (t colluders with the server hold too few key shares of a secret) and P − t > P/2;
:func:`secagg_parameters` checks both, and P ≥ 3, before any exchange.

**The node's own checks** (:func:`guard`, a mod before ``secaggplus_mod``): the setup must be the
study's; only plain ``train`` messages are answered (``secaggplus_mod`` passes any other type
through untouched, so a ``train.*`` message must never reach the share); the share is masked with
every other node of the setup and handed over once, in the masking stage; the unmasking request
must list at least P − t live nodes and no dropped one. These per-node checks stand in for the
consistency round of Bonawitz et al., which Flower's SecAgg+ does not have: without them a server
could combine different nodes' answers to unmask one share.

**What Flower does not protect.** SecAgg+ hides the individual shares from an honest-but-curious
server. Its public keys are not authenticated within the protocol, so a server that forges keys
(an active attacker) can recover shares; node authentication protects the connections, not this.
flwr 1.42 expands each mask from a 32-bit seed with numpy's Mersenne Twister, not a cryptographic
generator: a share stripped of its pairwise masks would be one brute force (2³² seeds) from
exposed, which is why the nodes never reveal a dropped node's key shares (above), and why P ≥ 3.
With those checks, a server that follows the protocol's message formats but lies in them can
unmask only the sum of every node of the setup (at least P − t shares), which the guarantee
covers. The package uses the protocol as Flower ships it and states these limits rather than
patching them.
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
    FitRes,
    Status,
    ndarrays_to_parameters,
)
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from flwr.compat.common import recorddict_compat as compat

from ..federation.guard import Refusal
from ..federation.protocol import ProtocolError
from ..federation.secure_sum import SecureShare

__all__ = [
    "MAX_BITS",
    "SecAggParameters",
    "secagg_parameters",
    "encode_share",
    "decode_sum",
    "keep_share",
    "take_share",
    "check_setup",
    "guard",
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
        return self.participants - self.dropouts


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
    if P < 3:
        raise ValueError(
            f"secure aggregation on Flower needs at least 3 participants; the study has {P} (with two, "
            f"each share is masked by one pairwise mask from a 32-bit seed, and either party learns "
            f"the other's share from the sum)"
        )
    if P >= 1 << b:
        raise ValueError(f"{P} participants need a modulus above 2^{b}: set modulus_bits higher")
    most = P - (P // 2 + 1)
    if not 0 <= t <= most:
        raise ValueError(
            f"with P = {P} participants SecAgg+ needs P − t > max(t, P/2) nodes (its threshold is "
            f"P − t): declare dropouts <= {most}; t = {t} is beyond it"
        )
    return SecAggParameters(b, P, t)


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
        and np.all(np.abs(s - r) < 0.25)  # Flower's division errs by ulps of n·c: < 1e-3 at n < 4e5
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


def _pending_or_done(state: RecordDict) -> tuple[SecureShare | None, SecAggParameters]:
    """The kept share (None once handed over) and the study's SecAgg+ parameters."""
    if PENDING_CONFIG not in state:
        raise Refusal("no secure round is under way on this node")
    cfg = cast(ConfigRecord, state[PENDING_CONFIG])
    declared = int(cast(int, cfg["participants"])), int(cast(int, cfg["dropouts"]))
    params = secagg_parameters(
        bits=int(cast(int, cfg["bits"])), participants=declared[0], dropouts=declared[1]
    )
    if PENDING_ARRAYS not in state:
        return None, params
    residues = cast(ArrayRecord, state[PENDING_ARRAYS])["residues"]
    return SecureShare(residues.numpy(), params.bits), params


def _pending(state: RecordDict) -> tuple[SecureShare, SecAggParameters]:
    share, params = _pending_or_done(state) if PENDING_CONFIG in state else (None, None)
    if share is None or params is None:
        raise Refusal("no secure share is waiting on this node: a SecAgg+ round was not requested")
    return share, params


def take_share(msg: Message, state: RecordDict) -> SecureShare:
    """The kept share, removed from the node's state (a share is summed once): only in a plain
    ``train`` message of SecAgg+'s masking stage, which :func:`guard` arms."""
    armed = GUARD in state and bool(cast(ConfigRecord, state[GUARD]).get("hand-over", False))
    if msg.metadata.message_type != MessageType.TRAIN or not armed:
        raise Refusal("the share is handed to SecAgg+'s masking stage only")
    share, _ = _pending(state)
    del state[PENDING_ARRAYS], state[GUARD]  # the study's parameters stay for the unmasking checks
    return share


GUARD = "dpbnsl.secagg.guard"
#: the number of nodes the accepted SecAgg+ setup sampled (the masking stage must use them all)
SAMPLED = "dpbnsl.secagg.sampled"


def guard(msg: Message, ctx: Context) -> None:
    """A node's checks of every SecAgg+ message before ``secaggplus_mod`` reads it:

    - only the plain ``train`` type is accepted (``secaggplus_mod`` ignores any other, so a
      ``train.*`` message would reach the share unmasked);
    - the setup must be the study's (:func:`check_setup`);
    - the masking stage must forward the key shares of every other node of the accepted setup
      (at least P − t − 1, distinct; so the only subset of masked shares whose pairwise masks
      cancel is the whole sample), and it arms a one-time hand-over of the kept share
      (:func:`take_share` refuses without it);
    - the unmasking stage must list at least P − t live nodes, without repeats, and **no dropped
      node**: the key shares of a node declared dropped remove its pairwise masks, and a server
      that declared a node dropped after it sent its masked share would be left with that share
      under its self-mask alone (a 32-bit seed in flwr 1.42), or, listing it as both live and
      dropped, with nothing. A dropout in SecAgg+'s masking stage therefore ends the round (nothing
      released); dropouts at the request and in the unmasking stage are tolerated.
    """
    kind = msg.metadata.message_type
    if kind != MessageType.TRAIN:
        raise Refusal(f"a {kind!r} message: this node hands its share to SecAgg+ in 'train' messages only")
    stage = share_stage(msg)
    if stage == Stage.SETUP:
        check_setup(msg, ctx)
    elif stage == Stage.COLLECT_MASKED_VECTORS:
        cfg = msg.content.config_records[RECORD_KEY_CONFIGS]
        sources = [int(v) for v in cast(list[int], cfg.get(Key.SOURCE_LIST, []))]
        _pending(ctx.state)
        sampled = (
            int(cast(int, cast(ConfigRecord, ctx.state[SAMPLED])["sampled"])) if SAMPLED in ctx.state else 0
        )
        need = sampled - 1  # every other node of the setup (a dropout before masking ends the round)
        if len(set(sources)) != len(sources) or msg.metadata.dst_node_id in sources or len(sources) != need:
            raise Refusal(
                f"the server's SecAgg+ masking request is refused: the share must be masked with every "
                f"other node of the setup ({need} distinct nodes); the server forwarded {sources}"
            )
        ctx.state[GUARD] = ConfigRecord({"hand-over": True})
    elif stage == Stage.UNMASK:
        cfg = msg.content.config_records[RECORD_KEY_CONFIGS]
        live = [int(v) for v in cast(list[int], cfg.get(Key.ACTIVE_NODE_ID_LIST, []))]
        dead = [int(v) for v in cast(list[int], cfg.get(Key.DEAD_NODE_ID_LIST, []))]
        _, s = _pending_or_done(ctx.state)
        wrong = []
        if len(set(live)) != len(live):
            wrong.append("a node is listed twice")
        if dead:  # a node declared dropped after it sent its masked share would lose every pairwise mask
            wrong.append(f"nodes {sorted(set(dead))} are listed as dropped after the masking stage")
        if len(live) < s.participants - s.dropouts:
            wrong.append(f"{len(live)} live nodes, fewer than P − t = {s.participants - s.dropouts}")
        if wrong:
            raise Refusal("the server's SecAgg+ unmasking request is refused: " + "; ".join(wrong))


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
    ctx.state[SAMPLED] = ConfigRecord({"sampled": sampled})


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


def share_stage(msg: Message) -> str:
    """The SecAgg+ stage of a train message ("" for any other message)."""
    if msg.metadata.message_type != MessageType.TRAIN:
        return ""
    cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    return "" if cfg is None else str(cfg.get(Key.STAGE, ""))
