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
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..._validation import as_participants, check_bool, check_data_scale
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..result import LearnResult
from .hosted_sparse import FedSparseParticipant, SparseServer
from .sparse_admm import SparseParticipant, run_sparse_admm, sparse_hyperparameters

__all__ = ["fed_sparse_bnsl", "run_sparse_admm", "sparse_hyperparameters", "SparseParticipant"]


@one_blas_thread
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
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
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
    clients = [
        FedSparseParticipant(X, settings=params, participant=k, columns=columns) for k, X in enumerate(arrays)
    ]
    server = SparseServer(settings=params, n_participants=len(arrays), private=False)
    transcript = run_protocol(server, clients)["rounds"]
    assert server.core is not None  # round 0 always runs (rounds >= 1)
    W = threshold_to_dag(threshold_weights(server.core.W, threshold=params["threshold"]))
    return LearnResult(
        "fed-sparse-bnsl",
        W,
        server.core.W,
        pd.DataFrame(server.core.rows),
        columns,
        transcript,
        None,
        params,
        {"seconds": time.perf_counter() - start, "n_samples": tuple(X.shape[0] for X in arrays)},
    )
