"""The Fed-Sparse-BNSL protocol's core: participant k's local step (K (DP-)PGCD iterations), the
in-process run of the whole protocol on prepared arrays (:func:`run_sparse_admm`, which the audit
games replay) and the validated hyperparameters. The learners :func:`fed_sparse_bnsl` and
:func:`dp_fed_sparse_bnsl` drive the hosted objects of :mod:`.hosted_sparse`, built on these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import ArrayLike, check_choice
from ...federation import Payload, Sparse, Transcript, run_rounds
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..admm import ConsensusServer, PenaltySchedule, check_hyperparameters, gradient_steps, solve_server
from .pgcd import PGCDNoise, PGCDState, new_state, run_iterations

if TYPE_CHECKING:
    from ...accounting.ledger import PrivacyLedger

__all__ = ["SparseParticipant", "run_sparse_admm", "sparse_hyperparameters"]


class SparseParticipant:
    """Participant k: its data, dual β_k and local matrix B_k; the local step is K (DP-)PGCD
    iterations warm-started from B_k. The PGCD state (residual, clipped data gradient) is kept
    across rounds while ρ₂ is unchanged, so a round starts in O(d²) instead of O(n_k·d²)."""

    def __init__(
        self,
        X: np.ndarray,
        m: ArrayLike,
        schedule: PenaltySchedule,
        *,
        lambda1: float,
        local_iters: int,
        noise: PGCDNoise | None = None,
        rng: np.random.Generator | None = None,
        ledger: PrivacyLedger | None = None,
        init: ArrayLike | None = None,
    ) -> None:
        self.X, self.m, self.schedule = X, np.asarray(m, float), schedule
        self.lambda1, self.local_iters = lambda1, local_iters
        self.noise, self.rng, self.ledger = noise, rng, ledger
        d = X.shape[1]
        self.W0 = np.zeros((d, d)) if init is None else np.array(init, float)
        self.B = self.W0.copy()
        self.beta = np.zeros((d, d))
        self.state: PGCDState | None = None

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        state = self.start_round(t, inbox)
        run_iterations(state, self.local_iters, noise=self.noise, rng=self.rng, ledger=self.ledger)
        return "local_B", Sparse.from_dense(self.B)  # self.B is the state's B, updated in place

    def start_round(self, t: int, inbox: Payload | None) -> PGCDState:
        """The dual update with the server's W and the PGCD state for round ``t`` (no release)."""
        W = self.W0 if inbox is None else inbox.to_dense()
        if t > 0:
            self.beta += self.schedule.rho(t - 1)[1] * (self.B - W)
        rho2 = self.schedule.rho(t)[1]
        if self.state is None or self.state.rho2 != rho2:  # ρ₂ enters M and the clip bounds
            self.state = new_state(
                self.X,
                self.B,
                W,
                self.beta,
                M=self.m + rho2,
                lambda1=self.lambda1,
                rho2=rho2,
                noise=self.noise,
            )
        else:
            self.state.reset(W, self.beta)
        return self.state


def run_sparse_admm(
    arrays: Sequence[np.ndarray],
    ms: Sequence[ArrayLike],
    *,
    lambda1: float,
    rho1: float,
    rho2: float,
    gamma1: float,
    gamma2: float,
    rho_max: float,
    rounds: int,
    local_iters: int,
    threshold: float,
    server_solver: str,
    eta: float,
    server_steps: int,
    noises: Sequence[PGCDNoise] | None = None,
    rngs: Sequence[np.random.Generator] | None = None,
    ledgers: Sequence[PrivacyLedger] | None = None,
    init: ArrayLike | None = None,
) -> tuple[np.ndarray, ConsensusServer, Transcript]:
    """The Fed-Sparse-BNSL protocol on prepared (centred) arrays and smoothness constants;
    ``noises``/``rngs``/``ledgers`` (one per participant) make the local steps DP-PGCD. ``init``
    (a public d × d matrix, e.g. a warm start) is where every B_k and the server's W start
    (default 0)."""
    P, d = len(arrays), arrays[0].shape[1]
    schedule = PenaltySchedule(rho1, rho2, gamma1, gamma2, rho_max)
    clients = [
        SparseParticipant(
            X,
            m,
            schedule,
            lambda1=lambda1,
            local_iters=local_iters,
            noise=None if noises is None else noises[k],
            rng=None if rngs is None else rngs[k],
            ledger=None if ledgers is None else ledgers[k],
            init=init,
        )
        for k, (X, m) in enumerate(zip(arrays, ms))
    ]
    solver = solve_server if server_solver == "lbfgs" else gradient_steps(eta, server_steps)
    server = ConsensusServer(P, d, schedule, sparse=True, solver=solver)
    if init is not None:
        server.W = np.array(init, float)
    _, transcript = run_rounds(clients, server, rounds=rounds)
    W = threshold_to_dag(threshold_weights(server.W, threshold=threshold))
    return W, server, transcript


def sparse_hyperparameters(
    lambda1: float,
    rho1: float,
    rho2: float,
    gamma1: float,
    gamma2: float,
    rho_max: float,
    rounds: int,
    local_iters: int,
    threshold: float,
    server_solver: str,
    eta: float,
    server_steps: int,
) -> dict:
    """The validated hyperparameters of the Fed-Sparse-BNSL protocol (shared by the private
    learner and the audits that replay it)."""
    params = check_hyperparameters(
        lambda1=lambda1,
        rho1=rho1,
        rho2=rho2,
        gamma1=gamma1,
        gamma2=gamma2,
        rho_max=rho_max,
        rounds=rounds,
        local_iters=local_iters,
        threshold=threshold,
        eta=eta,
        server_steps=server_steps,
    )
    params["server_solver"] = check_choice(server_solver, "server_solver", ("lbfgs", "gradient"))
    return params
