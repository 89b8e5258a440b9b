"""FedDBN ("2Dbn", Chen, Ma & Yue 2024): DYNOTEARS split across participants by ADMM.

Participant k holds time series; its lagged design is ``X_t^k`` (n_k × d) and
``Z_k = [X_{t−1} | … | X_{t−p}]`` (n_k × p·d), ``Ẑ_k = [X_t^k | Z_k]``. Round t (Algorithm 1):

1. participant k (the closed form of FedDBN §7.4, in stacked form; dense ((p+1)d × d) upload):
       Θ_k = [B_k; D_k] = (G_k + ρ₂I)⁻¹ (G_k[:, :d] − [β_k; γ_k] + ρ₂[W; A]),  G_k = Ẑ_kᵀẐ_k / c_k
   where ``G_k[:, :d] = Ẑ_kᵀX_t^k / c_k`` and ``c_k = n_k`` (``normalize="local"``, the paper's
   §7.4) or the total n (``"global"``: the local losses then sum to DYNOTEARS' loss).
   ``G_k = UΛUᵀ`` is eigendecomposed once, so each round is two matrix products.
2. server (problem 4, see ``_fed_dbn_server``): W by L-BFGS-B with the acyclicity augmented
   Lagrangian, A by exact soft-thresholding; dense ((p+1)d × d) broadcast of ``[W; A]``.
3. both sides (eq. 5): ``β_k += ρ₂(B_k − W)``, ``γ_k += ρ₂(D_k − A)``, ``α += ρ₁h(W)``, then
   ``ρ₁ ×= φ₁``, ``ρ₂ ×= φ₂`` (while below ρ_max), with the ρ of the round just finished.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..._validation import check_bool, check_choice, check_int, check_real, readonly_copy
from ...federation import Dense, Payload, run_rounds
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..admm import PenaltySchedule
from ..result import LearnResult
from ._fed_dbn_server import FedDBNServer
from ._temporal import as_temporal_participants, design_gram, lag_index, lag_threshold

__all__ = ["fed_dbn", "local_step"]


def local_step(
    U: np.ndarray, evals: np.ndarray, C: np.ndarray, duals: np.ndarray, Theta: np.ndarray, rho2: float
) -> np.ndarray:
    """``(G + ρ₂I)⁻¹ (C − duals + ρ₂Θ)`` with ``G = U diag(evals) Uᵀ``: the minimiser of
    ``ℓ_k(Θ_k) + ⟨duals, Θ_k − Θ⟩ + ρ₂/2 ‖Θ_k − Θ‖²`` (``C = G[:, :d]``)."""
    M = C - duals + rho2 * Theta
    return U @ ((U.T @ M) / (evals + rho2)[:, None])


class _Participant:
    """Participant k: its Gram matrix's eigendecomposition, its duals [β_k; γ_k] and last Θ_k."""

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


def fed_dbn(
    participants: Any,
    *,
    lag: int = 1,
    lambda_w: float = 0.5,
    lambda_a: float = 0.5,
    rho1: float = 1.0,
    rho2: float = 1.0,
    phi1: float = 1.6,
    phi2: float = 1.1,
    rho_max: float = 1e16,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    gap_tol: float = 1e-4,
    threshold_w: float = 0.3,
    threshold_a: float = 0.3,
    normalize: Literal["local", "global"] = "local",
    dual_update: Literal["paper", "code"] = "paper",
    stop_rule: Literal["h_and_gap", "h"] = "h_and_gap",
    warm_start: bool = True,
    centre: bool = True,
    acyclic: bool = True,
) -> LearnResult:
    """Learn a dynamic Bayesian network from time series held by several participants (FedDBN).

    Parameters
    ----------
    participants : sequence, one entry per participant
        Each entry is one time series (array or DataFrame of shape (T_k, d), rows in time order) or
        a list of realisations. A realisation of T rows gives ``T − lag`` design rows; at least
        ``lag + 1`` rows are needed. Column names flow through.
    lag : int >= 1
        The autoregressive order p.
    lambda_w, lambda_a : float >= 0, default 0.5
        ℓ1 weights on W and A, on the scale of ``Σ_k ℓ_k`` (with ``normalize="local"`` that is K
        times DYNOTEARS' scale for equal n_k). 0.5 is the paper's general recommendation (§7.3).
    rho1, rho2 : float > 0, default 1
        Initial penalties on h(W)² and on the consensus terms (one ρ₂ for W and A).
    phi1, phi2 : float >= 1, default 1.6, 1.1
        Growth factors of ρ₁, ρ₂ per round (the paper's φ; the authors' code uses φ₁ = 1.65).
    rho_max : float, default 1e16
        The penalties stop growing at this value (the authors' code).
    max_rounds : int, default 200
    h_tol, gap_tol : float, default 1e-8, 1e-4
        Stop after a round with ``h(W) <= h_tol`` and (``stop_rule="h_and_gap"``) an RMS consensus
        residual ``sqrt(Σ_k ‖[B_k; D_k] − [W; A]‖² / (K(p+1)d²)) <= gap_tol``.
    threshold_w, threshold_a : float >= 0, default 0.3
        Entries with ``|w| <= threshold`` are removed from W and from A (paper Fig. 1).
    normalize : {"local", "global"}
        Local loss ``1/(2n_k)‖·‖²`` (paper §7.4 and code) or ``1/(2n)‖·‖²`` (n total).
    dual_update : {"paper", "code"}
        Dual updates with the new global (W, A) (eq. 5) or the one used in the local step (code).
    stop_rule : {"h_and_gap", "h"}
        ``"h"`` stops as soon as ``h(W) <= h_tol`` (the authors' code; may stop before consensus).
    warm_start : bool, default True
        Start the server's W-step from the last W (False: from 0 each round, as the code does).
    centre : bool, default True
        Each participant subtracts its own column means (over its realisations).
    acyclic : bool, default True
        Remove the weakest edges of the thresholded W until it is a DAG (a no-op once converged).

    Returns
    -------
    LearnResult
        ``W``/``W_raw``: the global intra-slice graph. ``info["A"]``, ``info["A_raw"]``:
        thresholded and raw global lag weights (lag·d × d, lag 1 on top, read-only);
        ``info["A_index"]`` their row labels; ``info["converged"]``, ``info["n_samples"]``.
        ``history``: one row per round (h, gap, ρ₁, ρ₂, α, nnz_W, nnz_A, seconds).
        ``transcript``: every ``"local_B_D"`` upload and ``"global_W_A"`` broadcast, dense
        ((p+1)d × d) float64: ``2·K·T·(p+1)·d²·8`` bytes in T rounds.

    Examples
    --------
    >>> from dpbnsl.simulation.temporal import simulate_temporal
    >>> data = simulate_temporal(5, 400, participants=4, rng=0)
    >>> result = fed_dbn(data.series, lag=1)
    >>> result.transcript.total_bytes == 2 * 4 * len(result.history) * 2 * 5 * 5 * 8
    True
    """
    lag = check_int(lag, "lag", low=1)
    parts, columns = as_temporal_participants(participants, lag)
    params: dict[str, Any] = dict(
        lag=lag,
        lambda_w=check_real(lambda_w, "lambda_w", low=0.0),
        lambda_a=check_real(lambda_a, "lambda_a", low=0.0),
    )
    for name, value in (("rho1", rho1), ("rho2", rho2)):
        params[name] = check_real(value, name, low=0.0, low_open=True)
    for name, value in (("phi1", phi1), ("phi2", phi2)):
        params[name] = check_real(value, name, low=1.0)
    params.update(
        rho_max=check_real(rho_max, "rho_max", low=0.0, low_open=True, allow_inf=True),
        max_rounds=check_int(max_rounds, "max_rounds", low=1),
        h_tol=check_real(h_tol, "h_tol", low=0.0),
        gap_tol=check_real(gap_tol, "gap_tol", low=0.0),
        threshold_w=check_real(threshold_w, "threshold_w", low=0.0),
        threshold_a=check_real(threshold_a, "threshold_a", low=0.0),
        normalize=check_choice(normalize, "normalize", ("local", "global")),
        dual_update=check_choice(dual_update, "dual_update", ("paper", "code")),
        stop_rule=check_choice(stop_rule, "stop_rule", ("h_and_gap", "h")),
        warm_start=check_bool(warm_start, "warm_start"),
        centre=check_bool(centre, "centre"),
        acyclic=check_bool(acyclic, "acyclic"),
    )
    start = time.perf_counter()
    d = parts[0][0].shape[1]
    n_k = [sum(X.shape[0] - lag for X in arrays) for arrays in parts]
    scale = sum(n_k) if params["normalize"] == "global" else None
    grams = [design_gram(arrays, lag, centre=params["centre"], scale=scale)[0] for arrays in parts]
    schedule = PenaltySchedule(
        params["rho1"], params["rho2"], params["phi1"], params["phi2"], params["rho_max"]
    )
    clients = [_Participant(G, d, schedule, params["dual_update"]) for G in grams]
    server = FedDBNServer(
        len(parts),
        d,
        lag,
        schedule,
        lambda_w=params["lambda_w"],
        lambda_a=params["lambda_a"],
        h_tol=params["h_tol"],
        gap_tol=params["gap_tol"],
        stop_rule=params["stop_rule"],
        dual_update=params["dual_update"],
        warm_start=params["warm_start"],
    )
    _, transcript = run_rounds(clients, server, rounds=params["max_rounds"])
    W = threshold_weights(server.W, threshold=params["threshold_w"])
    if params["acyclic"]:
        W = threshold_to_dag(W)
    return LearnResult(
        method="fed-dbn",
        W=W,
        W_raw=server.W,
        history=pd.DataFrame(server.rows),
        columns=columns,
        transcript=transcript,
        params=params,
        info={
            "A": readonly_copy(lag_threshold(server.A, params["threshold_a"])),
            "A_raw": readonly_copy(server.A),
            "A_index": lag_index(columns, d, lag),
            "lag": lag,
            "converged": server.converged,
            "n_samples": tuple(n_k),
            "seconds": time.perf_counter() - start,
        },
    )
