"""Fed-BNSL (Ng & Zhang 2022): NOTEARS split across participants by consensus ADMM.

Round t, with penalties (ρ₁, ρ₂) of the schedule:

1. participant k:  B_k = (S_k + ρ₂I)⁻¹ (ρ₂W − β_k + S_k)    (eq. 8, closed form; dense d×d upload)
2. server:         W = argmin λ‖W‖₁ + αh + ρ₁/2 h² + Σ⟨β_k, B_k − W⟩ + ρ₂/2 Σ‖B_k − W‖²   (eq. 3)
                   (L-BFGS-B, zero diagonal, diagonally preconditioned, tolerance tied to the
                   consensus gap; dense d×d broadcast)
3. both sides:     β_k += ρ₂ (B_k − W),  α += ρ₁ h(W),  then ρ₁ ×= γ₁, ρ₂ ×= γ₂ while below ρ_max.

``S_k = X_kᵀX_k / n`` of participant k's centred data (``n`` = total samples, so the local losses sum
to the global loss; ``normalize="local"`` uses n_k). Each participant eigendecomposes ``S_k = QΛQᵀ``
once, so step 1 is ``Q diag(1/(Λ + ρ₂)) Qᵀ M``: two matrix products per round, no inverse or solve.

The participant and server steps are the hosted objects of
:mod:`~dpbnsl.learners.linear.hosted_fed_bnsl` (:func:`fed_bnsl` drives them in process;
``dpbnsl.flower`` runs them on separate machines); the run starts with the setup exchange of the
row counts (:mod:`dpbnsl.federation.protocol`).
"""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..._validation import as_participants, check_choice, check_data_scale
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..result import LearnResult
from .fed_bnsl_secure import fed_bnsl_secure
from .hosted_fed_bnsl import (
    CovarianceParticipant,
    FedBNSLParticipant,
    FedBNSLServer,
    fed_bnsl_settings,
    local_statistic,
    make_server,
)

__all__ = ["fed_bnsl", "local_statistics", "CovarianceParticipant", "make_server"]


def local_statistics(
    arrays: list[np.ndarray], *, normalize: Literal["global", "local"], centre: bool
) -> list[np.ndarray]:
    """Each participant's Gram matrix ``X_kᵀX_k / n`` (``n`` total, or ``n_k`` when local)."""
    n_total = sum(X.shape[0] for X in arrays)
    return [local_statistic(X, n_total=n_total, normalize=normalize, centre=centre) for X in arrays]


@one_blas_thread
def fed_bnsl(
    participants: Any,
    *,
    lambda1: float = 0.01,
    rho1: float = 1e-3,
    rho2: float = 1e-3,
    gamma1: float = 1.75,
    gamma2: float = 1.25,
    rho_max: float = 1e16,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    gap_tol: float = 1e-6,
    threshold: float = 0.3,
    normalize: Literal["global", "local"] = "global",
    centre: bool = True,
    aggregation: Literal["consensus", "secure"] = "consensus",
    clip_norm: float | None = None,
    modulus_bits: int = 31,
    dropouts: int = 0,
) -> LearnResult:
    """Learn one DAG from data split across participants with Fed-BNSL (NOTEARS-ADMM).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        One dataset per participant (at least 2 rows each; n_k may differ).
    lambda1 : float, default 0.01
        ℓ1 weight on the global W (the authors' default).
    rho1, rho2 : float, default 1e-3
        Initial penalties on h(W)² and on the consensus gap.
    gamma1, gamma2 : float, default 1.75, 1.25
        Growth factors of ρ₁ and ρ₂ per round (applied while below ``rho_max``).
    rho_max : float, default 1e16
        The run stops once both penalties have reached it (after 197 rounds with the defaults).
    max_rounds : int, default 200
    h_tol, gap_tol : float, default 1e-8, 1e-6
        Earlier stop when ``max_k ‖B_k − W‖_F <= gap_tol`` and either ``h(W) <= h_tol`` or W has
        stalled (ρ₁ at ``rho_max`` and ``‖W_t − W_{t−1}‖_F <= gap_tol``).
    threshold : float, default 0.3
        Weights with ``|w| <= threshold`` are removed, then the weakest edges until acyclic.
    normalize : {"global", "local"}, default "global"
        Divide ``X_kᵀX_k`` by the total n (local losses sum to the NOTEARS loss) or by n_k.
    centre : bool, default True
        Each participant subtracts its own column means.
    aggregation : {"consensus", "secure"}, default "consensus"
        "consensus": the ADMM rounds above (each B_k reaches the server). "secure": secure
        aggregation alone, **not private**: each participant's Gram matrix of its rows (clipped to
        ``clip_norm`` and rounded to a public integer grid) is summed in one secure round and the
        server fits NOTEARS on the pooled covariance (the objective the rounds converge to;
        :mod:`dpbnsl.learners.plain_release`). The server reads only the sum — which is exact
        (:mod:`dpbnsl.attacks.secagg` shows what it reveals).
    clip_norm, modulus_bits, dropouts
        The secure sum's public row bound R (required), modulus 2^bits and the dropouts t it
        tolerates (secure only).

    Returns
    -------
    LearnResult
        ``history``: one row per round (h, consensus gap, step ‖W_t − W_{t−1}‖_F, ρ₁, ρ₂, α, nnz,
        seconds);
        ``transcript``: the setup exchange (round −1: each (n_k, d) up, the P row counts down) and
        every B_k upload and W broadcast, dense d×d (``2·P·T·d²·8`` bytes for T rounds).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(10, 300, participants=3, rng=0)
    >>> result = fed_bnsl(data.participants)
    >>> setup = 3 * 16 + 3 * (3 * 8)    # (n_k, d) up, the 3 row counts down to each participant
    >>> result.transcript.total_bytes == setup + 2 * 3 * len(result.history) * 10 * 10 * 8
    True
    """
    check_choice(aggregation, "aggregation", ("consensus", "secure"))
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    if aggregation == "consensus" and (clip_norm is not None or modulus_bits != 31 or dropouts != 0):
        raise ValueError('`clip_norm`, `modulus_bits` and `dropouts` apply to aggregation="secure" only')
    params = fed_bnsl_settings(
        lambda1=lambda1,
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
    )
    if aggregation == "secure":
        if params["normalize"] != "global":
            raise ValueError('aggregation="secure" pools the rows: it needs normalize="global"')
        return fed_bnsl_secure(
            arrays, columns, dict(params, clip_norm=clip_norm, modulus_bits=modulus_bits, dropouts=dropouts)
        )
    start = time.perf_counter()
    clients = [FedBNSLParticipant(X, settings=params, participant=k) for k, X in enumerate(arrays)]
    server = FedBNSLServer(settings=params, n_participants=len(arrays))
    transcript = run_protocol(server, clients)["rounds"]
    assert server.core is not None  # round 0 always runs (max_rounds >= 1)
    W = threshold_to_dag(threshold_weights(server.core.W, threshold=params["threshold"]))
    return LearnResult(
        method="fed-bnsl",
        W=W,
        W_raw=server.core.W,
        history=pd.DataFrame(server.core.rows),
        columns=columns,
        transcript=transcript,
        params=params,
        info={"seconds": time.perf_counter() - start, "n_samples": tuple(X.shape[0] for X in arrays)},
    )
