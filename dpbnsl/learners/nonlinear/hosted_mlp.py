"""NOTEARS-MLP-ADMM as a hosted protocol: the participant and server objects that
:func:`fed_bnsl_mlp` drives in process and ``dpbnsl.flower`` runs on separate machines (see
:mod:`dpbnsl.federation.protocol`).

Exchanges: the setup ((n_k, d) up; down, one vector: the P row counts followed by the server's
initial parameters θ⁰, which every θ_k starts from: public, drawn by the server), then the rounds
(θ_k up, θ down, dense)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, as_generator, check_choice, check_data_scale, check_int
from ...federation import Dense, Payload
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    read_shapes,
    shape_upload,
)
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..admm import PenaltySchedule, check_hyperparameters
from ._fed_bnsl_mlp_server import MLPParticipant, MLPServer
from ._mlp import MLPLayout, adjacency, init_params
from .notears_mlp import check_mlp_params

__all__ = ["mlp_admm_settings", "MLPADMMParticipant", "MLPADMMServer"]

DEFAULTS: dict[str, Any] = dict(
    hidden=10,
    lambda1=1e-3,
    lambda2=0.01,
    rho1=0.1,
    rho2=0.1,
    gamma1=1.75,
    gamma2=1.25,
    rho_max=1e16,
    max_rounds=200,
    h_tol=1e-8,
    gap_tol=1e-4,
    threshold=0.3,
    normalize="global",
    centre=False,
    solver_options=None,
)
_ADMM = ("rho1", "rho2", "gamma1", "gamma2", "rho_max", "max_rounds", "h_tol", "gap_tol")


def mlp_admm_settings(**settings: Any) -> dict[str, Any]:
    """NOTEARS-MLP-ADMM's public settings (the keywords of :func:`fed_bnsl_mlp` but ``rng``)."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown NOTEARS-MLP-ADMM setting(s) {unknown}; known: {sorted(DEFAULTS)}")
    m = {**DEFAULTS, **settings}
    params = check_mlp_params(
        hidden=m["hidden"],
        lambda1=m["lambda1"],
        lambda2=m["lambda2"],
        threshold=m["threshold"],
        centre=m["centre"],
        solver_options=m["solver_options"],
    )
    params.update(check_hyperparameters(**{k: m[k] for k in _ADMM}))
    params["normalize"] = check_choice(m["normalize"], "normalize", ("global", "local"))
    return params


def schedule_of(p: Mapping[str, Any]) -> PenaltySchedule:
    return PenaltySchedule(p["rho1"], p["rho2"], p["gamma1"], p["gamma2"], p["rho_max"])


class MLPADMMParticipant(HostedParticipant):
    """Participant ``participant`` of NOTEARS-MLP-ADMM, holding its data ``X`` (n_k × d)."""

    SAVED = ("theta0", "theta", "beta")

    def __init__(
        self, X: Any, *, settings: Mapping[str, Any], participant: int, columns: tuple[str, ...] | None = None
    ) -> None:
        self.X = check_data_scale(as_float_matrix(X, "X"), "X")
        self.k = check_int(participant, "participant", low=0)
        self.params = mlp_admm_settings(**settings)
        self.layout = MLPLayout(self.X.shape[1], self.params["hidden"])
        self.core: MLPParticipant | None = None

    def _core(self, n: tuple[int, ...], theta0: np.ndarray) -> MLPParticipant:
        p, X = self.params, self.X
        return MLPParticipant(
            X - X.mean(axis=0) if p["centre"] else X,
            self.layout,
            schedule_of(p),
            n_total=sum(n) if p["normalize"] == "global" else X.shape[0],
            theta0=theta0,
            solver_options=p["solver_options"],
        )

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        if t == SETUP_ROUND:
            return shape_upload(self.X)
        if self.core is None:  # the first round: the inbox holds the row counts, then θ⁰
            if inbox is None:
                raise ProtocolError(f"participant {self.k}: a round was requested before the setup exchange")
            v = inbox.to_dense().ravel()
            n_params = self.layout.n_params
            n = tuple(int(x) for x in v[: v.size - n_params])
            self.core = self._core(n, np.array(v[v.size - n_params :]))
            self.n = n
            inbox = None
        return self.core(t, inbox)

    def state_dict(self) -> dict[str, StateValue]:
        if self.core is None:
            return {}
        out: dict[str, StateValue] = {k: getattr(self.core, k) for k in self.SAVED}
        out["n"] = np.array(self.n, dtype=float)
        return out

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        if "theta" not in state:
            return
        self.n = tuple(int(x) for x in np.asarray(state["n"]))
        core = self._core(self.n, np.array(state["theta0"], dtype=float))
        core.theta = np.array(state["theta"], dtype=float)
        core.beta = np.array(state["beta"], dtype=float)
        self.core = core


class MLPADMMServer(HostedServer):
    """NOTEARS-MLP-ADMM's server; ``rng`` draws the initial parameters θ⁰ (public)."""

    def __init__(
        self,
        *,
        settings: Mapping[str, Any],
        n_participants: int,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        self.params = mlp_admm_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        self.rng = as_generator(rng)
        self.layout: MLPLayout | None = None
        self.core: MLPServer | None = None

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        p = self.params
        if t == SETUP_ROUND:
            n, d = read_shapes(ordered)
            self.layout = MLPLayout(d, p["hidden"])
            theta0 = init_params(self.layout, self.rng)
            h_tol, gap_tol, schedule = p["h_tol"], p["gap_tol"], schedule_of(p)
            self.core = MLPServer(
                self.n_participants,
                self.layout,
                schedule,
                theta0=theta0,
                lambda1=p["lambda1"],
                lambda2=p["lambda2"],
                threshold=p["threshold"],
                solver_options=p["solver_options"],
                stop=lambda t, h, gap: schedule.saturated(t) or (h <= h_tol and gap <= gap_tol),
            )
            vector = np.concatenate([np.array(n, dtype=float), theta0])
            return Reply("n_samples_theta0", Dense(vector), ("rounds", 0))
        assert self.core is not None  # the setup always comes first
        r = self.core(t, ordered)
        done = r.stop or t + 1 >= p["max_rounds"]
        return Reply(r.kind, r.payload, None if done else ("rounds", t + 1))  # type: ignore[arg-type]

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        if self.core is None or self.layout is None or not self.core.rows:
            raise ProtocolError("the server has not run a learning round")
        W_raw = np.sqrt(adjacency(self.core.theta, self.layout))
        W = threshold_to_dag(threshold_weights(W_raw, threshold=self.params["threshold"]))
        return W, W_raw, pd.DataFrame(self.core.rows)
