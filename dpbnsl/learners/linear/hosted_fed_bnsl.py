"""Fed-BNSL as a hosted protocol: the participant and server objects that :func:`fed_bnsl` drives in
process and ``dpbnsl.flower`` runs on separate machines (see :mod:`dpbnsl.federation.protocol`).

Exchanges: the setup (n_k up, all n_k down), then Fed-BNSL's rounds (B_k up, W down, dense).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, check_bool, check_choice, check_data_scale, check_int
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
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...mechanisms.covariance import release_covariance
from ...mechanisms.moments import private_mean
from ...scores import centre as centre_data
from ...scores import gram
from ..admm import ConsensusServer, PenaltySchedule, check_hyperparameters, stalled_stop, tuned_lbfgs
from ..covariance_plan import ACCOUNTANT, CovariancePlan
from ..covariance_plan import plan as covariance_plan
from ..scale_checks import check_declared_centre, check_row_norm

__all__ = [
    "fed_bnsl_settings",
    "FedBNSLParticipant",
    "FedBNSLServer",
    "DPFedBNSLParticipant",
    "CovarianceParticipant",
    "make_server",
    "consensus_reply",
]

_HYPER = (
    "lambda1",
    "rho1",
    "rho2",
    "gamma1",
    "gamma2",
    "rho_max",
    "max_rounds",
    "h_tol",
    "gap_tol",
    "threshold",
)
DEFAULTS: dict[str, Any] = dict(
    lambda1=0.01,
    rho1=1e-3,
    rho2=1e-3,
    gamma1=1.75,
    gamma2=1.25,
    rho_max=1e16,
    max_rounds=200,
    h_tol=1e-8,
    gap_tol=1e-6,
    threshold=0.3,
    normalize="global",
    centre=True,
)


def fed_bnsl_settings(**settings: Any) -> dict[str, Any]:
    """Fed-BNSL's public settings (the keywords of :func:`fed_bnsl`), validated, defaults filled."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown Fed-BNSL setting(s) {unknown}; known: {sorted(DEFAULTS)}")
    merged = {**DEFAULTS, **settings}
    out = check_hyperparameters(**{k: merged[k] for k in _HYPER})
    out["normalize"] = check_choice(merged["normalize"], "normalize", ("global", "local"))
    out["centre"] = check_bool(merged["centre"], "centre")
    return out


class CovarianceParticipant:
    """The Fed-BNSL step of participant k: keeps S_k's eigendecomposition, its dual β_k and its
    last B_k; ``B_k = (S_k + ρ₂I)⁻¹ (ρ₂W − β_k + S_k)`` as two matrix products per round."""

    def __init__(self, S: np.ndarray, schedule: PenaltySchedule) -> None:
        self.S = S
        self.evals, self.Q = np.linalg.eigh(S)
        self.schedule = schedule
        self.beta = np.zeros_like(S)
        self.B = np.zeros_like(S)

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        W = np.zeros_like(self.S) if inbox is None else inbox.to_dense()
        if t > 0:  # dual update of round t-1, with the penalty in force then
            self.beta += self.schedule.rho(t - 1)[1] * (self.B - W)
        rho2 = self.schedule.rho(t)[1]
        M = rho2 * W - self.beta + self.S
        self.B = self.Q @ ((self.Q.T @ M) / (self.evals + rho2)[:, None])
        return "local_B", Dense(self.B)


def make_server(
    P: int, d: int, schedule: PenaltySchedule, *, lambda1: float, h_tol: float, gap_tol: float
) -> ConsensusServer:
    """Fed-BNSL's server: ℓ1 W-step by preconditioned L-BFGS-B, solved inexactly while the consensus
    gap is large (:func:`~dpbnsl.learners.admm.tuned_lbfgs`), dense replies, the stopping rule
    :func:`~dpbnsl.learners.admm.stalled_stop`."""
    return ConsensusServer(
        P,
        d,
        schedule,
        lambda1=lambda1,
        stop=stalled_stop(schedule, h_tol=h_tol, gap_tol=gap_tol),
        solve_options=tuned_lbfgs,
    )


def local_statistic(X: np.ndarray, *, n_total: int, normalize: str, centre: bool) -> np.ndarray:
    """Participant k's Gram matrix ``X_kᵀX_k / n`` (``n`` = ``n_total``, or n_k when local)."""
    Xc = centre_data(X) if centre else X
    return gram(Xc, n_total if normalize == "global" else X.shape[0])


def schedule_of(params: Mapping[str, Any]) -> PenaltySchedule:
    return PenaltySchedule(
        params["rho1"], params["rho2"], params["gamma1"], params["gamma2"], params["rho_max"]
    )


def covariance_state(core: CovarianceParticipant | None, prefix: str = "") -> dict[str, StateValue]:
    """A Fed-BNSL participant core's arrays (its statistic, eigendecomposition, β_k and B_k)."""
    if core is None:
        return {}
    return {prefix + k: getattr(core, k) for k in ("S", "evals", "Q", "beta", "B")}


def restore_covariance(
    state: Mapping[str, StateValue], schedule: PenaltySchedule, prefix: str = ""
) -> CovarianceParticipant | None:
    """The core :func:`covariance_state` saved (None when none was)."""
    if prefix + "S" not in state:
        return None
    core = CovarianceParticipant.__new__(CovarianceParticipant)
    for k in ("S", "evals", "Q", "beta", "B"):
        setattr(core, k, np.array(state[prefix + k], dtype=float))
    core.schedule = schedule
    return core


class FedBNSLParticipant(HostedParticipant):
    """Participant ``participant`` of Fed-BNSL, holding its data ``X`` (n_k × d)."""

    def __init__(
        self, X: Any, *, settings: Mapping[str, Any], participant: int, columns: tuple[str, ...] | None = None
    ) -> None:
        self.X = check_data_scale(as_float_matrix(X, "X"), "X")
        if self.X.shape[0] < 2:
            raise ValueError(f"`X` must have at least 2 rows; got {self.X.shape[0]}")
        self.k = check_int(participant, "participant", low=0)
        self.params = fed_bnsl_settings(**settings)
        self.schedule = schedule_of(self.params)
        self.core: CovarianceParticipant | None = None

    def statistic(self, n: tuple[int, ...]) -> np.ndarray:
        """S_k = X_kᵀX_k / n (n total or n_k) of the centred data."""
        p = self.params
        return local_statistic(self.X, n_total=sum(n), normalize=p["normalize"], centre=p["centre"])

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        if t == SETUP_ROUND:
            return shape_upload(self.X)
        if self.core is None:  # the first round: inbox holds everybody's n_k
            n = read_n_vector(inbox, self.k)
            self.core = CovarianceParticipant(self.statistic(n), self.schedule)
            inbox = None
        return self.core(t, inbox)

    def state_dict(self) -> dict[str, StateValue]:
        return covariance_state(self.core)

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        self.core = restore_covariance(state, self.schedule)


class DPFedBNSLParticipant(FedBNSLParticipant):
    """Participant ``participant`` of DP-Fed-BNSL: its statistic is its own private covariance
    release (rows clipped, Gaussian noise; optionally after a private mean), recorded in its ledger;
    the rounds are Fed-BNSL's on that release (post-processing).

    ``settings`` are the public keywords of :func:`dp_fed_bnsl` (ε and δ included); ``rng`` is its
    own source of noise (**fresh entropy unless testing on simulated data**); ``budget`` is what
    this participant agreed to spend: its operator's ``(epsilon, delta)``, or ``"study"`` to accept
    the study's own (refused when infinite or when δ exceeds
    :func:`~dpbnsl.federation.guard.delta_ceiling`). It refuses a study beyond its budget, a request
    its plan does not have (a round beyond ``max_rounds``, repeated or going backwards) and a
    request whose settings differ from those it planned with, before releasing anything
    (:mod:`dpbnsl.federation.guard`); its ledger is a privacy filter with its budget.
    ``reserve(entries, budget)``, when given, is called with the run's whole planned spend before
    its release (a deployed node's ledger across runs, :class:`~dpbnsl.federation.spend.NodeLedger`).
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
        plan: CovariancePlan | None = None,
        reserve: Reserve | None = None,
    ) -> None:
        self.X = as_float_matrix(X, "X")
        self.k = check_int(participant, "participant", low=0)
        self.reserve = reserve
        self.settings, self.columns, self.rng = dict(settings), columns, rng
        study = study_of(self.settings)
        self.budget = own_budget(budget, participant=self.k, n_rows=self.X.shape[0], study=study)
        self.plan = plan if plan is not None else covariance_plan(**self.settings)
        check_study((self.plan.epsilon, self.plan.delta), self.budget, participant=self.k)
        self.params = dict(self.plan.hyper)
        self.schedule = schedule_of(self.params)
        self.ledger = PrivacyLedger(
            budget=ledger_budget(self.budget),
            accountant=ACCOUNTANT[self.settings.get("calibration", "tight")],
            neighbouring="replace-one",
        )
        self.lock = SettingsLock(self.k, self.settings)
        self.guard = RequestGuard(self.k, [("rounds", self.params["max_rounds"])])
        self.repaired = False
        self.core = None

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        self.guard.admit(phase, t)  # before anything is computed or released
        if t != SETUP_ROUND and self.core is not None:
            check_inbox(inbox, self.X.shape[1], participant=self.k, phase=phase, t=t)
        return super().respond(phase, t, inbox)

    def statistic(self, n: tuple[int, ...]) -> np.ndarray:
        pl, X, k, rng, ledger = self.plan, self.X, self.k, self.rng, self.ledger
        if self.reserve is not None:  # the run's whole spend, charged before its first release
            self.reserve(pl.entries(), self.budget)
        # local warnings to the data owner (nothing is released): centre or rows off-scale
        if self.settings.get("centre", "declared") == "declared":
            check_declared_centre(X, participant=k, columns=self.columns)
        if pl.z_mean is not None:
            X = X - private_mean(
                X, row_norm=pl.clip_norm, multiplier=pl.z_mean, rng=rng, ledger=ledger, label="mean"
            )
        check_row_norm(X, clip_norm=pl.clip_norm, participant=k)
        S, release = release_covariance(
            X, clip_norm=pl.clip_norm, multiplier=pl.z_cov, psd_floor=pl.psd, rng=rng
        )
        ledger.record("covariance", release.event)
        low = float(np.linalg.eigvalsh(S)[0])
        rho2 = self.params["rho2"]
        if low + rho2 <= 0.0:
            # S̃_k + ρ₂I must be invertible. The budget is already spent, so never raise here (a
            # re-run would spend it again): repair by post-processing and say so.
            warnings.warn(
                f"the released covariance of participant {k} has eigenvalue {low:.4g} "
                f"<= -rho2 = {-rho2:g}; its eigenvalues were raised to "
                f"-rho2/2 (post-processing; use psd=True to project onto PSD)",
                RuntimeWarning,
                stacklevel=2,
            )
            evals, Q = np.linalg.eigh(S)
            S = (Q * np.maximum(evals, -0.5 * rho2)) @ Q.T
            S = (S + S.T) / 2.0
            self.repaired = True
        S.setflags(write=False)
        return S

    def state_dict(self) -> dict[str, StateValue]:
        out = super().state_dict()
        out.update(
            defence_state(self.lock, self.guard),
            rng=generator_state(self.rng),
            ledger=self.ledger.to_json(),
            repaired=int(self.repaired),
        )
        return out

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        restore_defence(state, self.lock, self.guard)
        super().load_state_dict(state)
        restore_generator(self.rng, state.get("rng"))  # type: ignore[arg-type]
        if state.get("ledger") is not None:
            self.ledger = PrivacyLedger.from_json(str(state["ledger"]))
        self.repaired = bool(state.get("repaired", 0))

    def report(self) -> dict[str, Any]:
        """The privacy this participant spent (ε at the study's δ, by the ledger's accountant)."""
        delta = self.plan.delta
        return {"epsilon": self.ledger.epsilon(delta), "delta": delta, "ledger": self.ledger.to_json()}


def consensus_reply(
    core: ConsensusServer,
    phase: str,
    t: int,
    uploads: list[Payload],
    *,
    limit: int,
    after: tuple[str, int] | None,
) -> Reply:
    """One consensus-ADMM server round as a :class:`Reply`; the phase ends after ``limit`` rounds or
    when the server's stopping rule fires, and the protocol goes on with ``after``."""
    r = core(t, uploads)
    done = r.stop or t + 1 >= limit
    return Reply(r.kind, r.payload, after if done else (phase, t + 1))  # type: ignore[arg-type]


class FedBNSLServer(HostedServer):
    """Fed-BNSL's server for ``n_participants`` participants."""

    def __init__(self, *, settings: Mapping[str, Any], n_participants: int) -> None:
        self.params = fed_bnsl_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        self.n: tuple[int, ...] | None = None
        self.d = 0
        self.core: ConsensusServer | None = None

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t == SETUP_ROUND:
            self.n, self.d = read_shapes(ordered)
            return n_samples_reply(self.n, ("rounds", 0))
        if self.core is None:
            p, d = self.params, self.d
            self.core = make_server(
                self.n_participants,
                d,
                schedule_of(p),
                lambda1=p["lambda1"],
                h_tol=p["h_tol"],
                gap_tol=p["gap_tol"],
            )
        return consensus_reply(self.core, phase, t, ordered, limit=self.params["max_rounds"], after=None)

    def planned_rounds(self, phase: str) -> int | None:
        return int(self.params["max_rounds"])

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        return learned(self.core, self.params["threshold"])


def learned(core: ConsensusServer | None, threshold: float) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """(thresholded DAG W, raw W, history) of a consensus server that has run."""
    if core is None:
        raise ProtocolError("the server has not run a learning round")
    W = threshold_to_dag(threshold_weights(core.W, threshold=threshold))
    return W, np.array(core.W), pd.DataFrame(core.rows)
