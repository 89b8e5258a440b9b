"""DP-FedPC over secure aggregation: PC on the pooled rows whose every test is one jointly noised
Kendall statistic (:mod:`~dpbnsl.learners.constraint.secure_kendall`), as a hosted protocol.

Exchanges: the setup (n_k, d up; all n_k down, with the first batch of tests as an extra message),
then secure rounds of phase ``"tests"``: the server sends a batch of tests, one row per test
(i, j, then the indicator of S over the d columns); each participant answers with one secure share
holding ⌊γ T_p⌋ plus its Skellam noise share for every test of the batch; the server reads the sum,
decides every test with the noise-aware rule, and sends the next batch, until PC's skeleton search
ends or the reserved tests are spent (the remaining edges then stay).

The server runs PC-stable in batches: at the start of level ℓ every remaining edge {i, j} gets the
queue of its candidate sets (the size-ℓ subsets of adj(i) \\ {j}, then those of adj(j) \\ {i} not
already listed, adjacency frozen at the level's start); each batch holds the next set of every
edge still present, and an edge leaves with its separating set at the first test that finds it
independent. Within an edge the sets go in the order of their level-0 association with both ends
(the summed |z̃| of their variables with i and with j: post-processing of released statistics), and
at most ``max_sets`` of them are tested per level (default 2): every test is paid for, and the
likeliest separators come first. The orientation is PC's
(:func:`~dpbnsl.learners.constraint.pc.orient_skeleton`).

A participant refuses (before anything is computed or released) a request beyond its plan: more
tests of either kind than it reserved, a malformed batch, or settings other than those it planned
with; it records all K reserved tests in its ledger before its first share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import scipy.special

from ..._validation import as_float_matrix, check_choice, check_epsilon, check_int, check_real
from ...accounting import PrivacyLedger
from ...federation import Dense, Payload
from ...federation.guard import (
    Refusal,
    RequestGuard,
    Reserve,
    SettingsLock,
    check_study,
    defence_state,
    ledger_budget,
    own_budget,
    restore_defence,
    study_of,
)
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    generator_state,
    n_samples_reply,
    read_n_vector,
    read_shapes,
    restore_generator,
    shape_upload,
)
from ...federation.secure_sum import SECURE_SHARE, SecureRound, SecureShare, SecureSum
from ...mechanisms.distributed import MAX_MODULUS_BITS, centred
from ..covariance_release import check_contributors, check_counts
from .citests import check_alpha, subsets
from .kendall import StratifiedKendall, kendall_weight
from .pc import check_pc_options, needs_level, orient_skeleton
from .priv_pc import DATA_KINDS, check_data
from .secure_kendall import SecureTestPlan, batch_shares, default_tests, integer_numerators, plan_secure_tests

__all__ = [
    "SECURE_DEFAULTS",
    "secure_pc_settings",
    "SecurePCParticipant",
    "SecurePCServer",
    "batch_payload",
    "read_batch",
    "plan_of",
]

PHASE = "tests"
#: every public setting of the secure protocol and its default (ε, δ, P and N have none)
SECURE_DEFAULTS: dict[str, Any] = dict(
    dropouts=0,
    modulus_bits=31,
    max_examinations=None,
    data="discrete",
    bounds=None,
    bins=4,
    levels=None,
    alpha=0.2,
    max_cond_size=None,
    max_sets=2,
    variant="stable",
    conflict="first",
    extension="dor-tarsi",
)
_REQUIRED = ("epsilon", "delta", "participants", "n_total")


def secure_pc_settings(**settings: Any) -> dict[str, Any]:
    """The secure protocol's public settings, validated, defaults filled (``aggregation`` is
    accepted and dropped)."""
    settings = {k: v for k, v in settings.items() if k != "aggregation"}
    unknown = sorted(set(settings) - set(SECURE_DEFAULTS) - set(_REQUIRED))
    if unknown:
        raise TypeError(
            f"unknown secure DP-FedPC setting(s) {unknown}; known: {sorted([*_REQUIRED, *SECURE_DEFAULTS])}"
        )
    missing = [k for k in _REQUIRED if settings.get(k) is None]
    if missing:
        raise ValueError(f"secure DP-FedPC needs the study's {', '.join(missing)}")
    s = {**SECURE_DEFAULTS, **settings}
    s["epsilon"] = check_epsilon(s["epsilon"])
    s["delta"] = check_real(s["delta"], "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    s["participants"] = check_int(s["participants"], "participants", low=1)
    s["n_total"] = check_int(s["n_total"], "n_total", low=2 * s["participants"])
    s["dropouts"] = check_int(s["dropouts"], "dropouts", low=0, high=s["participants"] - 1)
    s["modulus_bits"] = check_int(s["modulus_bits"], "modulus_bits", low=8, high=MAX_MODULUS_BITS)
    if s["max_examinations"] is not None:
        s["max_examinations"] = check_int(s["max_examinations"], "max_examinations", low=1, high=10**6)
    check_choice(s["data"], "data", DATA_KINDS)
    s["bins"] = check_int(s["bins"], "bins", low=2, high=1 << 16)
    s["alpha"] = check_alpha(s["alpha"])
    opts = check_pc_options(
        alpha=s["alpha"],
        variant=s["variant"],
        max_cond_size=s["max_cond_size"],
        conflict=s["conflict"],
        extension=s["extension"],
    )
    if opts["variant"] != "stable":
        raise ValueError(
            'secure DP-FedPC runs PC-stable (its tests go in batches); `variant` must be "stable"; '
            f"got {s['variant']!r}"
        )
    s["max_cond_size"] = opts["max_cond_size"]
    if s["max_sets"] is not None:
        s["max_sets"] = check_int(s["max_sets"], "max_sets", low=1, high=10**6)
    return s


def plan_of(s: Mapping[str, Any], d: int) -> SecureTestPlan:
    """The plan every side computes from the validated settings ``s`` and d (no conditional test
    is reserved when none can run: d = 2 or ``max_cond_size`` = 0)."""
    tests = s["max_examinations"] or default_tests(d)
    if d == 2 or s["max_cond_size"] == 0:
        tests = min(tests, d * (d - 1) // 2)
    return plan_secure_tests(
        epsilon=s["epsilon"],
        delta=s["delta"],
        participants=s["participants"],
        n_total=s["n_total"],
        d=d,
        tests=tests,
        dropouts=s["dropouts"],
        modulus_bits=s["modulus_bits"],
    )


def batch_payload(tests: list[tuple[int, int, tuple[int, ...]]], d: int) -> Dense:
    """A batch of tests as the server sends it: rows (i, j, indicator of S)."""
    M = np.zeros((len(tests), d + 2))
    for r, (i, j, S) in enumerate(tests):
        M[r, :2] = i, j
        M[r, 2 + np.asarray(S, int)] = 1.0
    return Dense(M)


def read_batch(
    payload: Payload | None, d: int, *, participant: int, t: int
) -> list[tuple[int, int, tuple[int, ...]]]:
    """The tests of a batch, refused unless every row is (i, j, indicator) with i ≠ j in range and
    an indicator of 0/1 entries that excludes i and j."""

    def refuse(why: str) -> Refusal:
        return Refusal(f"participant {participant}: {PHASE} round {t}: {why}; nothing released")

    if not isinstance(payload, Dense):
        raise refuse("no batch of tests")
    M = payload.to_dense()
    if M.ndim != 2 or M.shape[1] != d + 2 or M.shape[0] < 1 or not np.isfinite(M).all():
        raise refuse(f"a batch of tests must be a finite m × {d + 2} matrix (m ≥ 1); got shape {M.shape}")
    ij, ind = M[:, :2], M[:, 2:]
    if not (np.all(ij == np.round(ij)) and ij.min() >= 0 and ij.max() < d and np.all(ij[:, 0] != ij[:, 1])):
        raise refuse("a test names variables out of range or the same one twice")
    if not np.all((ind == 0) | (ind == 1)):
        raise refuse("a conditioning set's indicator holds values other than 0 and 1")
    out = []
    for r in range(M.shape[0]):
        i, j = int(ij[r, 0]), int(ij[r, 1])
        if ind[r, i] or ind[r, j]:
            raise refuse(f"test {r} conditions on one of its own variables")
        out.append((i, j, tuple(int(k) for k in np.flatnonzero(ind[r]))))
    return out


class SecurePCParticipant(HostedParticipant):
    """One participant of secure DP-FedPC: a secure share of its Kendall numerators plus noise
    shares for every batch of tests, within the K tests its plan reserves (module docstring).
    Defends its budget as every private participant does (:mod:`dpbnsl.federation.guard`)."""

    def __init__(
        self,
        X: Any,
        *,
        settings: Mapping[str, Any],
        participant: int,
        rng: np.random.Generator,
        budget: tuple[float, float] | str | None,
        columns: tuple[str, ...] | None = None,
        reserve: Reserve | None = None,
    ) -> None:
        self.X = as_float_matrix(X, "X")
        self.k = check_int(participant, "participant", low=0)
        self.settings, self.columns, self.rng, self.reserve = dict(settings), columns, rng, reserve
        self.params = secure_pc_settings(**self.settings)
        self.budget = own_budget(
            budget, participant=self.k, n_rows=self.X.shape[0], study=study_of(self.params)
        )
        check_study((self.params["epsilon"], self.params["delta"]), self.budget, participant=self.k)
        self.ledger = PrivacyLedger(
            budget=ledger_budget(self.budget), accountant="rdp", neighbouring="replace-one"
        )
        self.lock = SettingsLock(self.k, self.settings)
        d = self.X.shape[1]
        self.K = self.params["max_examinations"] or default_tests(d)
        self.guard = RequestGuard(self.k, [(PHASE, self.K)])
        codes, levels = check_data(
            self.X, self.params["data"], self.params["bounds"], self.params["bins"], self.params["levels"]
        )
        self.ci = StratifiedKendall(self.X, codes, levels=levels)
        self.used = np.zeros(2, dtype=np.int64)  # tests answered: unconditional, conditional
        self._extra: Payload | None = None
        self._cached: SecureTestPlan | None = None
        self.reserved = False  # every reserved test recorded (at the first answered round of tests)

    def receive_extra(self, messages: list[tuple[str, Payload]]) -> None:
        if [kind for kind, _ in messages] not in ([], ["tests"]):
            raise ProtocolError(f"participant {self.k}: unexpected message(s) {[k for k, _ in messages]}")
        self._extra = messages[0][1] if messages else None

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Any]:
        self.guard.admit(phase, t)
        d = self.X.shape[1]
        if t == SETUP_ROUND:
            return shape_upload(self.X)
        if t == 0:
            check_counts(read_n_vector(inbox, self.k), self.params, k=self.k, rows=self.X.shape[0])
            batch = read_batch(self._extra, d, participant=self.k, t=t)
        elif not self.reserved:  # round 0 was refused: no later round is answered
            raise Refusal(
                f"participant {self.k}: {PHASE} round {t}: its first round of tests was never answered "
                "(its counts and reservation were never settled); nothing released"
            )
        else:
            batch = read_batch(inbox, d, participant=self.k, t=t)
        if self._cached is None:
            self._cached = plan_of(self.params, d)
        plan = self._cached
        kinds = np.array([len(S) > 0 for _, _, S in batch], dtype=bool)
        asked = self.used + np.array([(~kinds).sum(), kinds.sum()])
        if asked[0] > plan.unconditional or asked[1] > plan.conditional:
            raise Refusal(
                f"participant {self.k}: {PHASE} round {t}: the batch would take it to {int(asked[0])} "
                f"unconditional and {int(asked[1])} conditional tests; its plan reserves "
                f"{plan.unconditional} and {plan.conditional}; nothing released"
            )
        if not self.reserved:  # every reserved test, before the first share (the filter refuses beyond)
            if self.reserve is not None:
                self.reserve(plan.entries(), self.budget)
            for entry in plan.entries():
                self.ledger.record(entry.label, entry.event, count=entry.count)
            self.reserved = True
        self.used = asked
        values = integer_numerators(self.ci, batch, plan.scale)
        # the same share on every slot, whatever this participant's test there (module docstring)
        return SECURE_SHARE, SecureShare(batch_shares(values, plan, rng=self.rng), plan.modulus_bits)

    def state_dict(self) -> dict[str, StateValue]:
        return dict(
            defence_state(self.lock, self.guard),
            rng=generator_state(self.rng),
            ledger=self.ledger.to_json(),
            used=self.used.copy(),
            reserved=int(self.reserved),
        )

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        restore_defence(state, self.lock, self.guard)
        restore_generator(self.rng, state.get("rng"))  # type: ignore[arg-type]
        if state.get("ledger") is not None:
            self.ledger = PrivacyLedger.from_json(str(state["ledger"]))
        if state.get("used") is not None:
            self.used = np.asarray(state["used"], dtype=np.int64).reshape(2)
        self.reserved = bool(state.get("reserved", 0))

    def report(self) -> dict[str, Any]:
        delta = self.params["delta"]
        return {"epsilon": self.ledger.epsilon(delta), "delta": delta, "ledger": self.ledger.to_json()}


class SecurePCServer(HostedServer):
    """The server of secure DP-FedPC: PC-stable in batches of jointly noised tests (module
    docstring); :meth:`learned` returns (DAG, CPDAG, history) and :attr:`info` the run's details."""

    def __init__(self, *, settings: Mapping[str, Any], n_participants: int) -> None:
        self.params = secure_pc_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        if self.n_participants != self.params["participants"]:
            raise ValueError(
                f"the study declares {self.params['participants']} participants; the server has "
                f"{self.n_participants}"
            )
        self.opts = check_pc_options(
            **{k: self.params[k] for k in ("alpha", "variant", "max_cond_size", "conflict", "extension")}
        )
        self.z_alpha = float(-scipy.special.ndtri(self.params["alpha"] / 2.0))
        self.n: tuple[int, ...] | None = None
        self.plan: SecureTestPlan | None = None
        self.S = np.zeros((0, 0), dtype=bool)
        self.marginal = np.zeros((0, 0))  # |z̃| of every pair at level 0 (released statistics)
        self.sepsets: dict[tuple[int, int], tuple[int, ...]] = {}
        self.level = 0
        self.queues: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        self.batch: list[tuple[int, int, tuple[int, ...]]] = []
        self.used = [0, 0]
        self.rows: list[dict[str, Any]] = []
        self.exhausted = False
        self.result: tuple[np.ndarray, np.ndarray, pd.DataFrame] | None = None
        self.info: dict[str, Any] = {}

    # -- PC-stable in batches -------------------------------------------------------------------
    def _start_level(self) -> None:
        frozen = self.S.copy()
        self.queues = {}
        m, level = self.params["max_sets"], self.level
        for i, j in zip(*np.nonzero(np.triu(self.S, 1))):
            # the likeliest separators first: the variables most associated with both ends at
            # level 0 (post-processing of released statistics; ties in PC's order)
            strength = self.marginal[i] + self.marginal[j]
            found: dict[tuple[int, ...], None] = {}
            for a, b in ((i, j), (j, i)):
                cands = [int(k) for k in np.flatnonzero(frozen[a]) if k != b]
                if len(cands) < level:
                    continue
                if m is not None:  # the m strongest sets are sets of the level + m − 1 strongest variables
                    cands = sorted(sorted(cands, key=lambda k: (-strength[k], k))[: level + m - 1])
                found.update(dict.fromkeys(subsets(cands, level)))
            if found:
                queue = sorted(found, key=lambda Z: -float(strength[list(Z)].sum()) if Z else 0.0)
                self.queues[(int(i), int(j))] = queue[:m]

    def _next_batch(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """The next set of every queued edge, within the reserved tests; [] at the end."""
        if self.plan is None:
            raise ProtocolError("the server has no plan before the setup exchange")
        while True:
            if not self.queues:
                if not needs_level(self.S, self.level + 1, self.opts["max_cond_size"]):
                    return []
                self.level += 1
                self._start_level()
                continue
            left = (
                self.plan.conditional - self.used[1] if self.level else self.plan.unconditional - self.used[0]
            )
            # the weakest edges first (level-0 |z̃|): when the tests run short, they go to the
            # edges likeliest to be removed
            edges = sorted(self.queues, key=lambda e: (self.marginal[e], e))
            batch = [(i, j, self.queues[(i, j)][0]) for i, j in edges][: max(left, 0)]
            if not batch:
                self.exhausted = True
            return batch

    def _decide(self, z: np.ndarray, sd: float) -> None:
        threshold = self.z_alpha * math.sqrt(1.0 + sd * sd)
        for (i, j, Z), zr in zip(self.batch, z):
            self.used[int(bool(Z))] += 1
            if not Z:
                self.marginal[i, j] = self.marginal[j, i] = abs(zr)
            queue = self.queues[(i, j)]
            if abs(zr) <= threshold:
                self.S[i, j] = self.S[j, i] = False
                self.sepsets[(i, j)] = Z
                del self.queues[(i, j)]
            else:
                queue.pop(0)
                if not queue:
                    del self.queues[(i, j)]
        self.rows.append(
            dict(level=self.level, tests=len(self.batch), edges=int(np.triu(self.S, 1).sum()), noise_sd=sd)
        )

    # -- the protocol ---------------------------------------------------------------------------
    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t != SETUP_ROUND:
            raise ProtocolError(f"{phase} round {t}: the tests travel as secure shares only")
        self.n, d = read_shapes(ordered)
        if sum(self.n) != self.params["n_total"]:
            raise ProtocolError(
                f"the participants hold {sum(self.n)} rows; the study declared {self.params['n_total']}"
            )
        self.plan = plan_of(self.params, d)
        self.S = ~np.eye(d, dtype=bool)
        self.marginal = np.zeros((d, d))
        self._start_level()
        self.batch = self._next_batch()
        if not self.batch:  # pragma: no cover - level 0 of d ≥ 2 always has a test
            raise ProtocolError("no test to run")
        return Reply(
            "n_samples",
            n_samples_reply(self.n, (PHASE, 0)).payload,
            (PHASE, 0),
            extra=(("tests", batch_payload(self.batch, d)),),
        )

    def secure_round(self, phase: str, t: int) -> SecureRound | None:
        if phase != PHASE:
            return None
        return SecureRound(self.params["modulus_bits"], self.params["dropouts"])

    def receive_sum(self, phase: str, t: int, total: SecureSum) -> Reply:
        if self.plan is None or self.n is None or phase != PHASE:
            raise ProtocolError(f"unexpected secure sum at {phase} round {t}")
        plan = self.plan
        check_contributors(total, honest=plan.honest)
        if not set(total.contributors) <= set(range(self.n_participants)):
            raise ProtocolError(f"{phase} round {t}: the sum names unknown contributors {total.contributors}")
        values = centred(np.asarray(total.total).reshape(-1), bits=plan.modulus_bits).astype(float)
        if values.shape != (len(self.batch),):
            raise ProtocolError(
                f"{phase} round {t}: the sum holds {values.size} values for {len(self.batch)} tests"
            )
        rows = sum(self.n[k] for k in total.contributors)
        z = values / (plan.scale * math.sqrt(kendall_weight(rows)))
        sd = plan.z_noise_sd(contributors=len(total.contributors), rows=rows)
        self._decide(z, sd)
        self.batch = self._next_batch()
        if self.batch:
            return Reply("tests", batch_payload(self.batch, self.S.shape[0]), (PHASE, t + 1))
        self._finish()
        return Reply("done", None, None)

    def _finish(self) -> None:
        dag, cpdag, info = orient_skeleton(self.S, dict(self.sepsets), self.opts)
        self.info = dict(
            info,
            skeleton=self.S.copy(),
            sepsets=dict(self.sepsets),
            tests=tuple(self.used),
            exhausted=self.exhausted,
        )
        self.result = (dag, cpdag, pd.DataFrame(self.rows))

    def planned_rounds(self, phase: str) -> int | None:
        return None if self.plan is None else self.plan.tests

    def transcript_of(self, phase: str) -> str:
        return "rounds"

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        if self.result is None:
            raise ProtocolError("the server has not finished the skeleton search")
        return self.result
