"""Fed-Sparse-BNSL and DP-Fed-Sparse-BNSL as hosted protocols: the participant and server objects that
:func:`fed_sparse_bnsl` and :func:`dp_fed_sparse_bnsl` drive in process and ``dpbnsl.flower`` runs on
separate machines (see :mod:`dpbnsl.federation.protocol`).

Exchanges: the setup ((n_k, d) up, all n_k down); for the private learner with a warm start, the warm
phase (Fed-BNSL on each participant's released covariance, B_k up and W down, dense; or, under secure
aggregation, one secure round whose sum the server fits, W down); then the
rounds (B_k up and W down, sparse). A private participant computes the plan (the schedule and the
noise, :func:`~dpbnsl.learners.linear.sparse_plan.plan`) itself from the public settings and the row
counts, refuses a plan that would spend more than its own ``budget``, and records every release in
its ledger.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, check_bool, check_data_scale, check_epsilon, check_int, check_real
from ...accounting import PrivacyLedger
from ...federation import Dense, Payload
from ...federation.guard import (
    RequestGuard,
    Reserve,
    SettingsLock,
    check_inbox,
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
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...mechanisms import clip_kernel
from ...mechanisms.moments import private_mean, private_smoothness, public_smoothness
from ..admm import ConsensusServer, PenaltySchedule, gradient_steps, solve_server
from ..covariance_release import Release, check_contributors, check_counts, decode_release, secure_share
from ..scale_checks import check_declared_centre, check_feature_bound
from .dp_fed_bnsl import release_covariance
from .hosted_fed_bnsl import (
    CovarianceParticipant,
    consensus_reply,
    covariance_state,
    learned,
    make_server,
    restore_covariance,
    schedule_of,
)
from .pgcd import PGCDNoise, PGCDState
from .secure_covariance import fit_release
from .sparse_admm import SparseParticipant, sparse_hyperparameters
from .sparse_plan import SparsePlan, plan
from .warm_start import LABEL as WARM_LABEL
from .warm_start import fed_bnsl_hyper

__all__ = [
    "fed_sparse_settings",
    "FedSparseParticipant",
    "DPFedSparseParticipant",
    "SparseServer",
]

FED_SPARSE_DEFAULTS: dict[str, Any] = dict(
    lambda1=0.1,
    rho1=1.0,
    rho2=1.0,
    gamma1=1.0,
    gamma2=1.0,
    rho_max=np.inf,
    rounds=100,
    local_iters=20,
    threshold=0.3,
    server_solver="lbfgs",
    eta=1e-2,
    server_steps=10,
    centre=True,
)


def fed_sparse_settings(**settings: Any) -> dict[str, Any]:
    """Fed-Sparse-BNSL's public settings (the keywords of :func:`fed_sparse_bnsl`), validated."""
    unknown = sorted(set(settings) - set(FED_SPARSE_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown Fed-Sparse-BNSL setting(s) {unknown}; known: {sorted(FED_SPARSE_DEFAULTS)}")
    merged = {**FED_SPARSE_DEFAULTS, **settings}
    out = sparse_hyperparameters(*(merged[k] for k in list(FED_SPARSE_DEFAULTS)[:-1]))
    out["centre"] = check_bool(merged["centre"], "centre")
    return out


def _core_state(core: SparseParticipant | None) -> dict[str, StateValue]:
    if core is None:
        return {}
    out: dict[str, StateValue] = {"B": core.B, "beta": core.beta, "W0": core.W0}
    if core.state is not None:
        out["pgcd.W"] = core.state.W
        out.update({"pgcd." + k: v for k, v in core.state.arrays().items()})
    return out


class SecureWarm:
    """The joint warm start on the participant's side: its one secure share, sent at warm round 0."""

    def __init__(self, share: SecureShare) -> None:
        self.share = share

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, SecureShare]:
        if t != 0:
            raise ProtocolError(f"the joint warm start has one round; asked for round {t}")
        return SECURE_SHARE, self.share


class _SparseParticipant(HostedParticipant):
    """What the two sparse participants share: the setup, the rounds and their saved state."""

    def __init__(self, X: Any, *, participant: int, columns: tuple[str, ...] | None = None) -> None:
        self.X = as_float_matrix(X, "X")
        if self.X.shape[0] < 2 or self.X.shape[1] < 2:
            raise ValueError(f"`X` must have at least 2 rows and 2 columns; got shape {self.X.shape}")
        self.k = check_int(participant, "participant", low=0)
        self.columns = columns
        self.prepared = False
        self.Xr = self.X  # the data the rounds use: X − offset (centred when asked)
        self.offset: np.ndarray | None = None  # the column means subtracted (None: none)
        self.m = np.zeros(self.X.shape[1])
        self.hyper: dict[str, Any] = {}
        self.noise: PGCDNoise | None = None
        self.rng: np.random.Generator | None = None
        self.ledger: PrivacyLedger | None = None
        self.warm: Any = None
        self.core: SparseParticipant | None = None

    def make_plan(self, n: tuple[int, ...]) -> None:
        """Decide everything that touches no data (the private participant: its plan, checked
        against its budget); nothing is released."""

    def prepare(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def admit(self, phase: str, t: int) -> None:
        """Refuse a request the participant's plan does not have (the private participant)."""

    def warm_start(self, inbox: Payload | None) -> np.ndarray | None:
        return None

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        if t == SETUP_ROUND:
            self.admit(phase, t)
            return shape_upload(self.X)
        if not self.prepared:  # the first request after the setup: inbox holds everybody's n_k
            n = read_n_vector(inbox, self.k)
            if not (0 <= self.k < len(n) and n[self.k] == self.X.shape[0]):
                raise ProtocolError(f"participant {self.k}: the setup reply does not hold its row count")
            self.make_plan(n)
            self.admit(phase, t)  # before any release
            self.prepare()
            self.prepared, inbox = True, None
        else:
            self.admit(phase, t)
        check_inbox(inbox, self.X.shape[1], participant=self.k, phase=phase, t=t)
        if phase == "warm":
            if self.warm is None:
                raise ProtocolError(f"participant {self.k}: a warm-start round it did not plan")
            return self.warm(t, inbox)
        if self.core is None:
            h = self.hyper
            self.core = SparseParticipant(
                self.Xr,
                self.m,
                self.schedule(),
                lambda1=h["lambda1"],
                local_iters=h["local_iters"],
                noise=self.noise,
                rng=self.rng,
                ledger=self.ledger,
                init=self.warm_start(inbox),
            )
            inbox = None
        return self.core(t, inbox)

    def schedule(self) -> PenaltySchedule:
        return schedule_of(self.hyper)

    def state_dict(self) -> dict[str, StateValue]:
        if not self.prepared:
            return {}
        # the data file itself is not saved, but this state is data (the offset subtracted, and in
        # the core the residuals X - XB from which the rows are recovered): it never leaves the
        # participant (see dpbnsl.federation.guard)
        out: dict[str, StateValue] = {"prepared": 1, "m": self.m, "hyper": json.dumps(self.hyper)}
        out["offset"] = self.offset
        out.update({"core." + k: v for k, v in _core_state(self.core).items()})
        return out

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        if "prepared" not in state:  # saved before the setup reply: nothing prepared yet
            return
        self.prepared = True
        offset = state.get("offset")
        self.offset = None if offset is None else np.array(offset, dtype=float)
        self.Xr = self.X if self.offset is None else self.X - self.offset
        self.m = np.array(state["m"], dtype=float)
        self.hyper = json.loads(str(state["hyper"]))
        self.core = None
        if "core.B" in state:
            h = self.hyper
            core = SparseParticipant.__new__(SparseParticipant)
            core.X, core.m, core.schedule = self.Xr, self.m, self.schedule()
            core.lambda1, core.local_iters = h["lambda1"], h["local_iters"]
            core.noise, core.rng, core.ledger = self.noise, self.rng, self.ledger
            core.W0 = np.array(state["core.W0"], dtype=float)
            core.B = np.array(state["core.B"], dtype=float)
            core.beta = np.array(state["core.beta"], dtype=float)
            core.state = None
            if "core.pgcd.W" in state:
                saved = {k[len("core.pgcd.") :]: v for k, v in state.items() if k.startswith("core.pgcd.")}
                W = np.array(saved.pop("W"), dtype=float)
                core.state = PGCDState.restore(core.X, core.B, W, core.beta, saved)
            self.core = core


class FedSparseParticipant(_SparseParticipant):
    """Participant ``participant`` of Fed-Sparse-BNSL (non-private), holding its data ``X``."""

    def __init__(
        self, X: Any, *, settings: Mapping[str, Any], participant: int, columns: tuple[str, ...] | None = None
    ) -> None:
        super().__init__(X, participant=participant, columns=columns)
        check_data_scale(self.X, "X")
        self.params = fed_sparse_settings(**settings)
        self.hyper = {k: v for k, v in self.params.items() if k != "centre"}

    def prepare(self) -> None:
        if self.params["centre"]:  # as scores.centre does: X − its column means
            self.offset = self.X.mean(axis=0, keepdims=True)
            self.Xr = self.X - self.offset
        self.m = (self.Xr**2).mean(axis=0)


class DPFedSparseParticipant(_SparseParticipant):
    """Participant ``participant`` of DP-Fed-Sparse-BNSL, holding its data ``X``.

    ``settings`` are the public keywords of :func:`dp_fed_sparse_bnsl` (ε and δ included); ``rng``
    is its own source of noise (**fresh entropy unless testing on simulated data**); ``budget`` is
    what this participant agreed to spend: its operator's ``(epsilon, delta)``, or ``"study"`` to
    accept the study's own (refused when infinite or when δ exceeds
    :func:`~dpbnsl.federation.guard.delta_ceiling`); see :func:`~dpbnsl.federation.guard.own_budget`.
    ``plan`` (the in-process driver's, computed from the same settings and row counts) saves
    recomputing it. ``reserve(entries, budget)``, when given, is called once with the run's whole
    planned spend before its first release (a deployed node charges it to its own ledger across
    runs, :class:`~dpbnsl.federation.spend.NodeLedger`, and refuses there).

    The participant defends itself (:mod:`dpbnsl.federation.guard`): it refuses a study beyond its
    budget, any request its plan does not have (a round beyond T, a repeated round, a round going
    backwards, a phase it did not plan) and a request whose settings differ from those it planned
    with — each before releasing anything; and its ledger is a privacy filter with its budget.
    """

    def __init__(
        self,
        X: Any,
        *,
        settings: Mapping[str, Any],
        participant: int,
        rng: np.random.Generator,
        budget: tuple[float, float] | str | None,
        columns: tuple[str, ...] | None = None,
        plan: SparsePlan | None = None,
        reserve: Reserve | None = None,
    ) -> None:
        super().__init__(X, participant=participant, columns=columns)
        self.reserve = reserve
        clip_kernel.backend()  # a bad DPBNSL_KERNEL (or numba asked for, broken) fails before any release
        self.settings = dict(settings)
        study = study_of(self.settings)
        self.budget = own_budget(budget, participant=self.k, n_rows=self.X.shape[0], study=study)
        if plan is None:  # the study's own (ε, δ), validated as plan() will (a data-free refusal)
            check_study(
                (check_epsilon(study[0], allow_inf=True), check_real(study[1], "delta")),
                self.budget,
                participant=self.k,
            )
        else:
            check_study((plan.epsilon, plan.delta), self.budget, participant=self.k)
        self.rng = rng
        self.ledger = PrivacyLedger(budget=ledger_budget(self.budget), neighbouring="replace-one")
        self.lock = SettingsLock(self.k, self.settings)
        self.guard = RequestGuard(self.k, [])
        self.plan = plan
        self.W0: np.ndarray | None = None

    def admit(self, phase: str, t: int) -> None:
        self.guard.admit(phase, t)

    def make_plan(self, n: tuple[int, ...]) -> None:
        if self.settings.get("aggregation") == "secure":  # the counts must be the study's
            declared = {
                "participants": self.settings.get("participants"),
                "n_total": self.settings.get("n_total"),
            }
            check_counts(n, declared, k=self.k, rows=self.X.shape[0])
        pl = self.plan if self.plan is not None else plan(self.X.shape[1], n_k=n, **self.settings)
        check_study((pl.epsilon, pl.delta), self.budget, participant=self.k)
        self.plan = pl
        phases = [("rounds", pl.hyper["rounds"])]
        if pl.warm_joint is not None:  # one secure round
            phases.insert(0, ("warm", 1))
        elif pl.m_warm is not None:  # the warm phase (post-processing) ends when the server's rule says
            phases.insert(0, ("warm", fed_bnsl_hyper()["max_rounds"]))
        self.guard.phases = phases

    def prepare(self) -> None:
        pl, X, k, cols = cast(SparsePlan, self.plan), self.X, self.k, self.columns
        if self.reserve is not None:  # the run's whole spend, charged before its first release
            self.reserve(pl.entries(), self.budget)
        centre = str(self.settings.get("centre", "declared"))  # dp_fed_sparse_bnsl's default
        bound, public_m, rng, ledger = pl.feature_bound, pl.smoothness, self.rng, self.ledger
        assert rng is not None and ledger is not None
        # local warnings to the data owner (nothing is released): bounds or centre off-scale
        if bound is not None and (centre == "private" or public_m is None):
            check_feature_bound(X, bound=bound, participant=k, columns=cols)
        if centre == "declared":
            check_declared_centre(X, participant=k, columns=cols)
        if centre == "private":
            assert pl.m_centre is not None  # plan() calibrates it whenever centre="private"
            self.offset = private_mean(X, bound=bound, multiplier=pl.m_centre, rng=rng, ledger=ledger)
            X = X - self.offset
        if public_m is not None:
            m = public_m
        elif self.settings.get("smoothness", "private") == "bounds":
            m = public_smoothness(bound, X.shape[1])
        else:  # smoothness="private" without public constants: plan() calibrated m_smooth
            assert pl.m_smooth is not None
            m = private_smoothness(X, bound=bound, multiplier=pl.m_smooth, rng=rng, ledger=ledger)
        self.Xr, self.m = X, np.asarray(m, dtype=float)
        self.hyper = dict(pl.hyper)
        self.hyper["warm_threshold"] = fed_bnsl_hyper()["threshold"]
        self.noise = PGCDNoise(pl.clip, pl.noise.gumbel_multiplier, pl.clip_scheme)
        if pl.warm_joint is not None:  # one secure share of the joint release; the server fits the sum
            share = secure_share(X, pl.warm_joint, rng=rng)
            ledger.record(WARM_LABEL, pl.warm_joint.event)
            self.warm = SecureWarm(share)
        elif pl.m_warm is not None:  # one covariance release; the warm phase fits the releases
            S, release = release_covariance(
                X, clip_norm=pl.warm_clip_norm, multiplier=pl.m_warm, psd_floor=0.0, rng=rng
            )
            ledger.record(WARM_LABEL, release.event)
            self.warm = CovarianceParticipant(S, schedule_of(fed_bnsl_hyper()))

    def warm_start(self, inbox: Payload | None) -> np.ndarray | None:
        if self.warm is None:
            return None
        if inbox is None:
            raise ProtocolError(f"participant {self.k}: the rounds began without the warm start's W")
        self.W0 = threshold_to_dag(
            threshold_weights(inbox.to_dense(), threshold=self.hyper["warm_threshold"])
        )
        return self.W0

    def state_dict(self) -> dict[str, StateValue]:
        out = super().state_dict()
        out.update(defence_state(self.lock, self.guard))
        out["rng"] = generator_state(self.rng)
        out["ledger"] = self.ledger.to_json() if self.ledger is not None else None
        if self.noise is not None:
            out.update(
                noise_clip=self.noise.clip,
                noise_multiplier=self.noise.multiplier,
                noise_scheme=self.noise.scheme,
            )
        if isinstance(self.warm, SecureWarm):
            out.update({"warm.share": self.warm.share.residues, "warm.bits": self.warm.share.bits})
        else:
            out.update(covariance_state(self.warm, prefix="warm."))
        return out

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        restore_defence(state, self.lock, self.guard)
        restore_generator(self.rng, state.get("rng"))  # type: ignore[arg-type]
        if state.get("ledger") is not None:
            self.ledger = PrivacyLedger.from_json(str(state["ledger"]))
        if "noise_clip" in state:
            clip, multiplier = cast(float, state["noise_clip"]), cast(float, state["noise_multiplier"])
            self.noise = PGCDNoise(float(clip), float(multiplier), str(state["noise_scheme"]))
        super().load_state_dict(state)
        if self.prepared and "warm.share" in state:
            share = np.asarray(state["warm.share"], dtype=np.int64)
            self.warm = SecureWarm(SecureShare(share, int(cast(int, state["warm.bits"]))))
        elif self.prepared:
            self.warm = restore_covariance(state, schedule_of(fed_bnsl_hyper()), prefix="warm.")

    def report(self) -> dict[str, Any]:
        """The privacy this participant spent (ε at the study's δ, by the ledger's accountant)."""
        assert self.ledger is not None
        delta = self.plan.delta if self.plan is not None else float(self.settings["delta"])
        return {"epsilon": self.ledger.epsilon(delta), "delta": delta, "ledger": self.ledger.to_json()}


class SparseServer(HostedServer):
    """The server of Fed-Sparse-BNSL (``private=False``) or DP-Fed-Sparse-BNSL (``private=True``,
    with the warm phase when the plan has one)."""

    def __init__(
        self,
        *,
        settings: Mapping[str, Any],
        n_participants: int,
        private: bool,
        plan: SparsePlan | None = None,
    ) -> None:
        self.settings, self.private, self.plan = dict(settings), private, plan
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        self.hyper: dict[str, Any] = {} if private else fed_sparse_settings(**settings)
        self.d = 0
        self.warm: ConsensusServer | None = None
        self.W0: np.ndarray | None = None
        self.n: tuple[int, ...] = ()
        self.release: Release | None = None  # the joint warm start's release (secure aggregation)
        self.core: ConsensusServer | None = None

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t == SETUP_ROUND:
            n, self.d = read_shapes(ordered)
            warm = False
            if self.private:
                if self.plan is None:
                    self.plan = plan(self.d, n_k=n, **self.settings)
                self.hyper = dict(self.plan.hyper)
                warm = self.plan.has_warm
            self.n = n
            return n_samples_reply(n, ("warm", 0) if warm else ("rounds", 0))
        if phase == "warm":
            wh = fed_bnsl_hyper()
            if self.warm is None:
                self.warm = make_server(
                    self.n_participants,
                    self.d,
                    schedule_of(wh),
                    lambda1=wh["lambda1"],
                    h_tol=wh["h_tol"],
                    gap_tol=wh["gap_tol"],
                )
            reply = consensus_reply(self.warm, phase, t, ordered, limit=wh["max_rounds"], after=("rounds", 0))
            if reply.next == ("rounds", 0):
                self.W0 = threshold_to_dag(threshold_weights(self.warm.W, threshold=wh["threshold"]))
            return reply
        if self.core is None:
            h = self.hyper
            solver = (
                solve_server if h["server_solver"] == "lbfgs" else gradient_steps(h["eta"], h["server_steps"])
            )
            self.core = ConsensusServer(
                self.n_participants, self.d, schedule_of(h), sparse=True, solver=solver
            )
            if self.W0 is not None:
                self.core.W = np.array(self.W0, float)
        return consensus_reply(self.core, phase, t, ordered, limit=self.hyper["rounds"], after=None)

    def receive_sum(self, phase: str, t: int, total: SecureSum) -> Reply:
        """The joint warm start: decode the secure sum and fit it (the noise-aware NOTEARS fit of
        DP-Fed-BNSL under secure aggregation); W goes down with the first round's request."""
        pl = self.plan
        if pl is None or pl.warm_joint is None or (phase, t) != ("warm", 0):
            raise ProtocolError(f"unexpected secure sum at {phase} round {t}")
        joint = pl.warm_joint
        check_contributors(total, honest=joint.honest)
        self.release = decode_release(joint, self.n, total)
        _, W_raw, _ = fit_release(self.release, threshold=fed_bnsl_hyper()["threshold"])
        self.W0 = threshold_to_dag(threshold_weights(W_raw, threshold=fed_bnsl_hyper()["threshold"]))
        return Reply("W", Dense(W_raw), ("rounds", 0))

    def secure_round(self, phase: str, t: int) -> SecureRound | None:
        joint = None if self.plan is None else self.plan.warm_joint
        if joint is None or (phase, t) != ("warm", 0):
            return None
        return SecureRound(joint.modulus_bits, joint.dropouts)

    def planned_rounds(self, phase: str) -> int | None:
        if phase == "warm":
            secure = self.plan is not None and self.plan.warm_joint is not None
            return 1 if secure else int(fed_bnsl_hyper()["max_rounds"])
        return int(self.hyper["rounds"]) if "rounds" in self.hyper else None

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        return learned(self.core, self.hyper["threshold"])
