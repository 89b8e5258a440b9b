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
from typing import Any, Literal, cast

from ..._validation import readonly_copy
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ..result import LearnResult
from ._fed_dbn_server import FedDBNServer
from ._temporal import as_temporal_participants, lag_index, lag_threshold
from .hosted_fed_dbn import FedDBNParticipant, HostedFedDBNServer, fed_dbn_settings, local_step

__all__ = ["fed_dbn", "local_step"]


@one_blas_thread
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
        ``transcript``: the setup exchange (round −1: each participant's design rows and d up,
        the K row counts down), then every ``"local_B_D"`` upload and ``"global_W_A"`` broadcast,
        dense ((p+1)d × d) float64: ``2·K·T·(p+1)·d²·8`` bytes in T rounds.

    Examples
    --------
    >>> from dpbnsl.simulation.temporal import simulate_temporal
    >>> data = simulate_temporal(5, 400, participants=4, rng=0)
    >>> result = fed_dbn(data.series, lag=1)
    >>> result.transcript.learning().total_bytes == 2 * 4 * len(result.history) * 2 * 5 * 5 * 8
    True
    """
    params = fed_dbn_settings(
        lag=lag,
        lambda_w=lambda_w,
        lambda_a=lambda_a,
        rho1=rho1,
        rho2=rho2,
        phi1=phi1,
        phi2=phi2,
        rho_max=rho_max,
        max_rounds=max_rounds,
        h_tol=h_tol,
        gap_tol=gap_tol,
        threshold_w=threshold_w,
        threshold_a=threshold_a,
        normalize=normalize,
        dual_update=dual_update,
        stop_rule=stop_rule,
        warm_start=warm_start,
        centre=centre,
        acyclic=acyclic,
    )
    lag = params["lag"]
    parts, columns = as_temporal_participants(participants, lag)
    start = time.perf_counter()
    clients = [FedDBNParticipant(arrays, settings=params, participant=k) for k, arrays in enumerate(parts)]
    server = HostedFedDBNServer(settings=params, n_participants=len(parts))
    transcript = run_protocol(server, clients)["rounds"]
    W, _, history = server.learned()
    core = cast(FedDBNServer, server.core)
    n_k = [c.n for c in clients]
    return LearnResult(
        method="fed-dbn",
        W=W,
        W_raw=core.W,
        history=history,
        columns=columns,
        transcript=transcript,
        params=params,
        info={
            "A": readonly_copy(lag_threshold(core.A, params["threshold_a"])),
            "A_raw": readonly_copy(core.A),
            "A_index": lag_index(columns, clients[0].d, lag),
            "lag": lag,
            "converged": core.converged,
            "n_samples": tuple(n_k),
            "seconds": time.perf_counter() - start,
        },
    )
