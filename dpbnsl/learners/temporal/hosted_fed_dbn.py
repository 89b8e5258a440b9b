"""FedDBN as a hosted protocol: the participant and server objects that :func:`fed_dbn` drives in
process and ``dpbnsl.flower`` runs on separate machines (see :mod:`dpbnsl.federation.protocol`).

Exchanges: the setup (the participant's design rows n_k = Σ (T − p) over its realisations, and d,
up; all n_k down), then FedDBN's rounds (Θ_k = [B_k; D_k] up, [W; A] down, dense)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import check_bool, check_choice, check_int, check_real
from ...federation import Dense, Payload
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    n_samples_reply,
    read_n_vector,
    read_shapes,
)
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..admm import PenaltySchedule
from ._fed_dbn_server import FedDBNServer
from ._temporal import as_temporal_series, design_gram

__all__ = ["fed_dbn_settings", "DBNParticipant", "FedDBNParticipant", "HostedFedDBNServer"]

DEFAULTS: dict[str, Any] = dict(
    lag=1,
    lambda_w=0.5,
    lambda_a=0.5,
    rho1=1.0,
    rho2=1.0,
    phi1=1.6,
    phi2=1.1,
    rho_max=1e16,
    max_rounds=200,
    h_tol=1e-8,
    gap_tol=1e-4,
    threshold_w=0.3,
    threshold_a=0.3,
    normalize="local",
    dual_update="paper",
    stop_rule="h_and_gap",
    warm_start=True,
    centre=True,
    acyclic=True,
)


def fed_dbn_settings(**settings: Any) -> dict[str, Any]:
    """FedDBN's public settings (the keywords of :func:`fed_dbn`), validated, defaults filled."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown FedDBN setting(s) {unknown}; known: {sorted(DEFAULTS)}")
    m = {**DEFAULTS, **settings}
    p: dict[str, Any] = dict(
        lag=check_int(m["lag"], "lag", low=1),
        lambda_w=check_real(m["lambda_w"], "lambda_w", low=0.0),
        lambda_a=check_real(m["lambda_a"], "lambda_a", low=0.0),
    )
    for name in ("rho1", "rho2"):
        p[name] = check_real(m[name], name, low=0.0, low_open=True)
    for name in ("phi1", "phi2"):
        p[name] = check_real(m[name], name, low=1.0)
    p.update(
        rho_max=check_real(m["rho_max"], "rho_max", low=0.0, low_open=True, allow_inf=True),
        max_rounds=check_int(m["max_rounds"], "max_rounds", low=1),
        h_tol=check_real(m["h_tol"], "h_tol", low=0.0),
        gap_tol=check_real(m["gap_tol"], "gap_tol", low=0.0),
        threshold_w=check_real(m["threshold_w"], "threshold_w", low=0.0),
        threshold_a=check_real(m["threshold_a"], "threshold_a", low=0.0),
        normalize=check_choice(m["normalize"], "normalize", ("local", "global")),
        dual_update=check_choice(m["dual_update"], "dual_update", ("paper", "code")),
        stop_rule=check_choice(m["stop_rule"], "stop_rule", ("h_and_gap", "h")),
        warm_start=check_bool(m["warm_start"], "warm_start"),
        centre=check_bool(m["centre"], "centre"),
        acyclic=check_bool(m["acyclic"], "acyclic"),
    )
    return p


def schedule_of(p: Mapping[str, Any]) -> PenaltySchedule:
    return PenaltySchedule(p["rho1"], p["rho2"], p["phi1"], p["phi2"], p["rho_max"])


def local_step(
    U: np.ndarray, evals: np.ndarray, C: np.ndarray, duals: np.ndarray, Theta: np.ndarray, rho2: float
) -> np.ndarray:
    """``(G + ρ₂I)⁻¹ (C − duals + ρ₂Θ)`` with ``G = U diag(evals) Uᵀ``: the minimiser of
    ``ℓ_k(Θ_k) + ⟨duals, Θ_k − Θ⟩ + ρ₂/2 ‖Θ_k − Θ‖²`` (``C = G[:, :d]``)."""
    M = C - duals + rho2 * Theta
    return U @ ((U.T @ M) / (evals + rho2)[:, None])


class DBNParticipant:
    """Participant k's FedDBN step: its Gram matrix's eigendecomposition, its duals [β_k; γ_k] and
    its last Θ_k."""

    SAVED = ("C", "evals", "U", "duals", "Theta", "used")

    def __init__(self, G: np.ndarray, d: int, schedule: PenaltySchedule, dual_update: str) -> None:
        self.C = G[:, :d].copy()
        self.evals, self.U = np.linalg.eigh(G)
        self.schedule, self.dual_update = schedule, dual_update
        self.duals = np.zeros_like(self.C)
        self.Theta = np.zeros_like(self.C)
        self.used = np.zeros_like(self.C)  # the global [W; A] of the last local step

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        glob = np.zeros_like(self.C) if inbox is None else inbox.to_dense()
        if t > 0:  # dual update of round t-1, with the penalty in force then
            ref = glob if self.dual_update == "paper" else self.used
            self.duals += self.schedule.rho(t - 1)[1] * (self.Theta - ref)
        self.Theta = local_step(self.U, self.evals, self.C, self.duals, glob, self.schedule.rho(t)[1])
        self.used = glob
        return "local_B_D", Dense(self.Theta)


class FedDBNParticipant(HostedParticipant):
    """Participant ``participant`` of FedDBN, holding its time series (one series, rows in time
    order, or a list of realisations)."""

    def __init__(
        self,
        series: Any,
        *,
        settings: Mapping[str, Any],
        participant: int,
        columns: tuple[str, ...] | None = None,
    ) -> None:
        self.params = fed_dbn_settings(**settings)
        self.k = check_int(participant, "participant", low=0)
        self.arrays, _ = as_temporal_series(
            series, self.params["lag"], "series", where=f" (participant {self.k})"
        )
        self.n = sum(X.shape[0] - self.params["lag"] for X in self.arrays)
        self.d = self.arrays[0].shape[1]
        self.core: DBNParticipant | None = None

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        if t == SETUP_ROUND:
            return "data_shape", Dense(np.array([self.n, self.d], dtype=float))
        if self.core is None:  # the first round: inbox holds everybody's n_k
            n = read_n_vector(inbox, self.k)
            p = self.params
            scale = sum(n) if p["normalize"] == "global" else None
            G = design_gram(self.arrays, p["lag"], centre=p["centre"], scale=scale)[0]
            self.core = DBNParticipant(G, self.d, schedule_of(p), p["dual_update"])
            inbox = None
        return self.core(t, inbox)

    def state_dict(self) -> dict[str, StateValue]:
        if self.core is None:
            return {}
        return {k: getattr(self.core, k) for k in DBNParticipant.SAVED}

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        if "C" not in state:
            return
        core = DBNParticipant.__new__(DBNParticipant)
        for k in DBNParticipant.SAVED:
            setattr(core, k, np.array(state[k], dtype=float))
        core.schedule, core.dual_update = schedule_of(self.params), self.params["dual_update"]
        self.core = core


class HostedFedDBNServer(HostedServer):
    """FedDBN's server for ``n_participants`` participants."""

    def __init__(self, *, settings: Mapping[str, Any], n_participants: int) -> None:
        self.params = fed_dbn_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        self.d = 0
        self.core: FedDBNServer | None = None

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        p = self.params
        if t == SETUP_ROUND:
            n, self.d = read_shapes(ordered)
            return n_samples_reply(n, ("rounds", 0))
        if self.core is None:
            self.core = FedDBNServer(
                self.n_participants,
                self.d,
                p["lag"],
                schedule_of(p),
                lambda_w=p["lambda_w"],
                lambda_a=p["lambda_a"],
                h_tol=p["h_tol"],
                gap_tol=p["gap_tol"],
                stop_rule=p["stop_rule"],
                dual_update=p["dual_update"],
                warm_start=p["warm_start"],
            )
        r = self.core(t, ordered)
        done = r.stop or t + 1 >= p["max_rounds"]
        return Reply(r.kind, r.payload, None if done else ("rounds", t + 1))  # type: ignore[arg-type]

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        if self.core is None:
            raise ProtocolError("the server has not run a learning round")
        W = threshold_weights(self.core.W, threshold=self.params["threshold_w"])
        if self.params["acyclic"]:
            W = threshold_to_dag(W)
        return W, np.array(self.core.W), pd.DataFrame(self.core.rows)
