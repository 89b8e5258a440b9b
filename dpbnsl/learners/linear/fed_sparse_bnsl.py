"""Fed-Sparse-BNSL (Fassy El Fehri et al.): consensus ADMM with the ℓ1 penalty on the local
matrices, local steps by K iterations of PGCD (warm-started), a smooth server step, and sparse
messages both ways.

Round t (docs/decisions.md, 'Fed-Sparse-BNSL: the local problem and the ADMM round'), penalties
(ρ₁, ρ₂) fixed by default:

1. participant k: β_k += ρ₂(B_k − W) (the previous round's dual update), then K PGCD iterations on
   1/(2n_k)‖X_k − X_kB‖² + ⟨β_k, B − W⟩ + ρ₂/2‖B − W‖² + λ‖B‖₁ from the previous B_k; upload the
   non-zero (index, value) pairs of B_k;
2. server: W = argmin α h + ρ₁/2 h² + Σ⟨β_k, B_k − W⟩ + ρ₂/2 Σ‖B_k − W‖² (eq. 5, no ℓ1), over the
   entries non-zero in some B_k or β_k (the others provably stay 0), by L-BFGS-B or gradient steps;
   broadcast the non-zeros of W; β_k += ρ₂(B_k − W), α += ρ₁ h(W).

The private learner (:func:`dp_fed_sparse_bnsl`, in ``dp_fed_sparse_bnsl.py``) runs the same protocol
with DP-PGCD.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ..._validation import ArrayLike, as_participants, check_bool, check_choice
from ...federation import Payload, Sparse, Transcript, run_rounds
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...scores import centre as centre_data
from ..admm import ConsensusServer, PenaltySchedule, check_hyperparameters, gradient_steps, solve_server
from ..result import LearnResult
from .pgcd import PGCDNoise, PGCDState, new_state, run_iterations

if TYPE_CHECKING:
    from ...accounting.ledger import PrivacyLedger

__all__ = ["fed_sparse_bnsl", "run_sparse_admm", "sparse_hyperparameters"]


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
        run_iterations(self.state, self.local_iters, noise=self.noise, rng=self.rng, ledger=self.ledger)
        return "local_B", Sparse.from_dense(self.B)  # self.B is the state's B, updated in place


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


def fed_sparse_bnsl(
    participants: Any,
    *,
    lambda1: float = 0.1,
    rho1: float = 1.0,
    rho2: float = 1.0,
    rounds: int = 100,
    local_iters: int = 20,
    gamma1: float = 1.0,
    gamma2: float = 1.0,
    rho_max: float = np.inf,
    threshold: float = 0.3,
    server_solver: Literal["lbfgs", "gradient"] = "lbfgs",
    eta: float = 1e-2,
    server_steps: int = 10,
    centre: bool = True,
) -> LearnResult:
    """Learn one DAG with Fed-Sparse-BNSL (non-private).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
    lambda1 : float, default 0.1
        ℓ1 weight on each local B_k (objective (3)).
    rho1, rho2 : float, default 1.0
        Penalties on h(W)² and on the consensus gap (fixed unless ``gamma1``/``gamma2`` > 1).
    rounds, local_iters : int, default 100, 20
        ADMM rounds T and PGCD iterations K per round (so at most K new non-zeros per round).
    gamma1, gamma2, rho_max : float
        Optional geometric growth of the penalties (as Fed-BNSL), off by default.
    threshold : float, default 0.3
        Weights with ``|w| <= threshold`` are removed, then the weakest edges until acyclic.
    server_solver : {"lbfgs", "gradient"}, default "lbfgs"
        L-BFGS-B on the smooth server problem, or ``server_steps`` gradient steps of size ``eta``.
    centre : bool, default True
        Each participant subtracts its own column means.

    Returns
    -------
    LearnResult
        ``transcript`` holds sparse (index, value) messages both ways (12 bytes per entry);
        ``history`` per round: h, consensus gap, ρ₁, ρ₂, α, nnz of W, mean nnz of the B_k.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(10, 1000, participants=5, rng=0)
    >>> result = fed_sparse_bnsl(data.participants, rounds=30)
    >>> result.transcript.total_mb < 2 * 5 * 30 * 100 * 8 / 1e6   # less than Fed-BNSL's dense MB
    True
    """
    arrays, columns = as_participants(participants)
    if arrays[0].shape[1] < 2:
        raise ValueError(f"`participants` must have at least 2 columns; got {arrays[0].shape[1]}")
    params = sparse_hyperparameters(
        lambda1,
        rho1,
        rho2,
        gamma1,
        gamma2,
        rho_max,
        rounds,
        local_iters,
        threshold,
        server_solver,
        eta,
        server_steps,
    )
    params["centre"] = check_bool(centre, "centre")
    start = time.perf_counter()
    arrays = [centre_data(X) if centre else X for X in arrays]
    ms = [(X**2).mean(axis=0) for X in arrays]
    hyper = {k: v for k, v in params.items() if k != "centre"}
    W, server, transcript = run_sparse_admm(arrays, ms, **hyper)
    return LearnResult(
        "fed-sparse-bnsl",
        W,
        server.W,
        pd.DataFrame(server.rows),
        columns,
        transcript,
        None,
        params,
        {"seconds": time.perf_counter() - start, "n_samples": tuple(X.shape[0] for X in arrays)},
    )
