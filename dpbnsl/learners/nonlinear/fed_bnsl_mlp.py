"""NOTEARS-MLP-ADMM (Ng & Zhang 2022, §5/§6.4): NOTEARS-MLP split across participants.

The consensus variable is the *whole* parameter vector θ of the d node networks (layout in
:mod:`dpbnsl.learners.nonlinear._mlp`); ℓ1, ℓ2 and the acyclicity constraint sit on the server's θ:

    min  Σ_k 1/(2n) ‖X_k − f_θk(X_k)‖² + λ1‖W1‖₁ + λ2/2 ‖(W1, W2)‖²   s.t.  h(θ) = 0,  θ_k = θ ∀k

Round t, with penalties (ρ₁, ρ₂) of the schedule (steps in :mod:`._fed_bnsl_mlp_server`):

1. participant k: θ_k-step by L-BFGS-B (warm start), uploads θ_k (dense, n_params floats);
2. server: θ-step (W1 block by L-BFGS-B with the proper ℓ1 via a pos/neg split; other blocks in
   closed form), broadcasts θ (dense);
3. both sides: β_k += ρ₂(θ_k − θ), α += ρ₁h(θ), then ρ₁ ×= γ₁, ρ₂ ×= γ₂ while below ρ_max.

The duals β_k never travel: each side computes them from θ_k and θ. Deviations from the authors'
code: ℓ1 is the proper ``Σ|W1|`` (theirs sums signed weights), λ2 is used (theirs ignores it),
self-loop weights are fixed at 0 (theirs are free), and all θ_k start at the server's θ⁰ (theirs
draw independent random starts).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from ..._validation import as_generator, as_participants, check_data_scale
from ...blas import one_blas_thread
from ...federation import Payload
from ...federation.protocol import Reply, run_protocol
from ..result import LearnResult
from ._fed_bnsl_mlp_server import MLPServer
from ._mlp import MLPLayout
from .hosted_mlp import MLPADMMParticipant, MLPADMMServer, mlp_admm_settings

__all__ = ["fed_bnsl_mlp"]


class _InProcessServer(MLPADMMServer):
    """The server with the participants' diagnostics (Σ_k local loss and seconds) beside its own
    history: read from the participant objects, so in process only (a deployment's server never
    sees the local losses)."""

    def __init__(self, clients: list[MLPADMMParticipant], **kw: Any) -> None:
        super().__init__(**kw)
        self.clients = clients
        self.local_rows: list[dict[str, float]] = []

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        if t >= 0:
            cores = [c.core for c in self.clients if c.core is not None]
            self.local_rows.append(
                {"local_loss": sum(c.loss for c in cores), "local_seconds": sum(c.seconds for c in cores)}
            )
        return super().receive(phase, t, uploads)


@one_blas_thread
def fed_bnsl_mlp(
    participants: Any,
    *,
    hidden: int = 10,
    lambda1: float = 1e-3,
    lambda2: float = 0.01,
    rho1: float = 0.1,
    rho2: float = 0.1,
    gamma1: float = 1.75,
    gamma2: float = 1.25,
    rho_max: float = 1e16,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    gap_tol: float = 1e-4,
    threshold: float = 0.3,
    normalize: Literal["global", "local"] = "global",
    centre: bool = False,
    solver_options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | int | None = None,
) -> LearnResult:
    """Learn one DAG from data split across participants with NOTEARS-MLP-ADMM.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        One dataset per participant (at least 2 rows each; n_k may differ).
    hidden : int, default 10
        Sigmoid units per node network.
    lambda1 : float, default 1e-3
        ℓ1 weight on the first layer of the global θ (the authors' nonlinear default).
    lambda2 : float, default 0.01
        ℓ2 weight on the weights of the global θ (the authors' default value, which their code
        accepts but never uses).
    rho1, rho2 : float, default 0.1
        Initial penalties on h(θ)² and on the consensus gap (authors' nonlinear code).
    gamma1, gamma2 : float, default 1.75, 1.25
        Growth factors per round while below ``rho_max``.
    rho_max : float, default 1e16
        The run stops once both penalties have reached it (after 176 rounds with the defaults).
    max_rounds : int, default 200
    h_tol, gap_tol : float, default 1e-8, 1e-4
        Earlier stop when ``h(θ) <= h_tol`` and ``max_k ‖θ_k − θ‖₂ <= gap_tol``.
    threshold : float, default 0.3
        Entries of ``√A`` at or below it are removed, then the weakest edges until acyclic.
    normalize : {"global", "local"}, default "global"
        Local losses divided by the total n (they sum to the pooled NOTEARS-MLP loss; the
        authors' ``1/(n_k·P)`` with equal shards) or by n_k.
    centre : bool, default False
        Each participant subtracts its own column means. With IID shards this only moves the
        starting point (the networks have biases), but when the participants' means differ it
        changes the model: one shared first-layer bias cannot absorb per-participant input
        shifts through the sigmoid. Off by default.
    solver_options : mapping, optional
        L-BFGS-B options for the local and the server steps (see :func:`notears_mlp`); default
        scipy's, as the authors' code.
    rng : None, int or numpy Generator
        Draws θ⁰ (as :func:`dpbnsl.learners.nonlinear.notears_mlp` does), the server's start and every
        participant's first warm start; a public seed, not data.

    Returns
    -------
    LearnResult
        ``W_raw = √A(θ)`` of the server's final θ; ``history``: one row per round (h, gap, ρ₁, ρ₂,
        α, nnz, local_loss = Σ_k local losses, seconds); ``transcript``: the setup exchange
        (round −1: (n_k, d) up; the row counts and the initial θ⁰ down), then every θ_k upload
        and θ broadcast (``2·P·T·n_params·8`` bytes); ``info["theta"]``: the final θ.

    Examples
    --------
    >>> from dpbnsl.simulation.nonlinear import simulate_nonlinear
    >>> sim = simulate_nonlinear(4, 120, participants=2, rng=0)
    >>> result = fed_bnsl_mlp(sim.participants, max_rounds=5, rng=0)
    >>> len(result.transcript.learning()) == 2 * 2 * len(result.history)
    True
    """
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    params = mlp_admm_settings(
        hidden=hidden,
        lambda1=lambda1,
        lambda2=lambda2,
        rho1=rho1,
        rho2=rho2,
        gamma1=gamma1,
        gamma2=gamma2,
        rho_max=rho_max,
        max_rounds=max_rounds,
        h_tol=h_tol,
        gap_tol=gap_tol,
        threshold=threshold,
        normalize=normalize,
        centre=centre,
        solver_options=solver_options,
    )
    rng = as_generator(rng)
    start = time.perf_counter()
    clients = [MLPADMMParticipant(X, settings=params, participant=k) for k, X in enumerate(arrays)]
    server = _InProcessServer(clients, settings=params, n_participants=len(arrays), rng=rng)
    transcript = run_protocol(server, clients)["rounds"]
    W, W_raw, rows = server.learned()
    core = cast(MLPServer, server.core)
    layout = cast(MLPLayout, server.layout)
    history = pd.concat([rows, pd.DataFrame(server.local_rows)], axis=1)
    return LearnResult(
        method="fed-bnsl-mlp",
        W=W,
        W_raw=W_raw,
        history=history,
        columns=columns,
        transcript=transcript,
        params=params,
        info={
            "seconds": time.perf_counter() - start,
            "theta": core.theta.copy(),
            "n_samples": tuple(X.shape[0] for X in arrays),
            "n_params": layout.n_params,
        },
    )
