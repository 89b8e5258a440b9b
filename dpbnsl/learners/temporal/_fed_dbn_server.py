"""FedDBN's server step (FedDBN problem 4, eq. 5): the global (W, A) update and the dual updates.

Up to constants, problem (4) separates into

    W-part:  min_W  λ_W‖W‖₁ + α h(W) + ρ₁/2 h(W)² + Σ_k ⟨β_k, B_k − W⟩ + ρ₂/2 Σ_k ‖B_k − W‖²
    A-part:  min_A  λ_A‖A‖₁ + Kρ₂/2 ‖A − U‖²,   U = mean_k(D_k + γ_k/ρ₂)

The W-part is the consensus-ADMM server problem of ``_admm`` (L-BFGS-B on W = W⁺ − W⁻, diag(W) = 0,
warm-started); the A-part is solved exactly by element-wise soft-thresholding,
``A = sign(U) ∘ max(|U| − λ_A/(Kρ₂), 0)``. The server keeps mirror copies of the duals β_k, γ_k
(docs/decisions.md, 'FedDBN: ADMM steps, dual mirrors and defaults'): their updates use only what
the participants upload and what it sends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ...federation import Dense, Payload, ServerReply
from ...graphs import acyclicity
from ..admm import PenaltySchedule, ServerProblem, solve_server

__all__ = ["soft_threshold", "solve_lag_step", "FedDBNServer"]


def soft_threshold(U: np.ndarray, tau: float) -> np.ndarray:
    """Element-wise ``sign(U) ∘ max(|U| − tau, 0)``, the proximal map of ``tau‖·‖₁``."""
    return np.sign(U) * np.maximum(np.abs(U) - tau, 0.0)


def solve_lag_step(D: np.ndarray, gammas: np.ndarray, *, lambda_a: float, rho2: float) -> np.ndarray:
    """Exact minimiser of ``λ_A‖A‖₁ + Σ_k ⟨γ_k, D_k − A⟩ + ρ₂/2 Σ_k ‖D_k − A‖²``.

    Parameters
    ----------
    D, gammas : arrays of shape (K, p·d, d), the uploaded D_k and the duals γ_k
    """
    K = D.shape[0]
    U = D.mean(axis=0) + gammas.sum(axis=0) / (K * rho2)
    return soft_threshold(U, lambda_a / (K * rho2))


class FedDBNServer:
    """The server: W-step, exact A-step, mirrored dual updates, stopping rule and history.

    ``uploads`` are the stacked ``Θ_k = [B_k; D_k]`` of shape ((p+1)·d, d); the reply is the
    stacked global ``[W; A]`` broadcast to every participant.

    ``dual_update="paper"`` uses the new (W, A) in ``β_k += ρ₂(B_k − W)`` (eq. 5); ``"code"`` the
    (W, A) the participants used in this round's local step (the authors' code). ``stop_rule="h"``
    stops as soon as ``h(W) <= h_tol`` (the authors' code); ``"h_and_gap"`` also needs the RMS
    consensus residual ``sqrt(Σ_k ‖Θ_k − Θ‖² / (K(p+1)d²)) <= gap_tol``.
    """

    def __init__(
        self,
        n_participants: int,
        d: int,
        lag: int,
        schedule: PenaltySchedule,
        *,
        lambda_w: float,
        lambda_a: float,
        h_tol: float,
        gap_tol: float,
        stop_rule: str = "h_and_gap",
        dual_update: str = "paper",
        warm_start: bool = True,
        solver: Callable = solve_server,
    ) -> None:
        self.K, self.d, self.lag = n_participants, d, lag
        self.schedule, self.solver = schedule, solver
        self.lambda_w, self.lambda_a = lambda_w, lambda_a
        self.h_tol, self.gap_tol = h_tol, gap_tol
        self.stop_rule, self.dual_update, self.warm_start = stop_rule, dual_update, warm_start
        q = (lag + 1) * d
        self.W = np.zeros((d, d))
        self.A = np.zeros((q - d, d))
        self.alpha = 0.0
        self.duals = np.zeros((n_participants, q, d))  # mirrors of [β_k; γ_k]
        self.rows: list[dict] = []
        self.converged = False
        self._clock = time.perf_counter()

    @property
    def Theta(self) -> np.ndarray:
        return np.vstack([self.W, self.A])

    def __call__(self, t: int, uploads: list[Payload]) -> ServerReply:
        d = self.d
        Th = np.stack([u.to_dense() for u in uploads])
        B, D = Th[:, :d], Th[:, d:]
        betas, gammas = self.duals[:, :d], self.duals[:, d:]
        rho1, rho2 = self.schedule.rho(t)
        before = self.Theta
        B_mean = B.mean(axis=0)
        problem = ServerProblem(
            B_mean=B_mean,
            beta_sum=betas.sum(axis=0),
            const=float(np.sum(betas * B) + 0.5 * rho2 * np.sum((B - B_mean) ** 2)),
            n_participants=self.K,
            alpha=self.alpha,
            rho1=rho1,
            rho2=rho2,
            lambda1=self.lambda_w,
        )
        self.W = self.solver(self.W if self.warm_start else np.zeros_like(self.W), problem)
        self.A = solve_lag_step(D, gammas, lambda_a=self.lambda_a, rho2=rho2)
        after = self.Theta
        h = acyclicity(self.W)[0]
        gap = float(np.sqrt(np.sum((Th - after) ** 2) / Th.size))
        self.duals += rho2 * (Th - (after if self.dual_update == "paper" else before))
        self.alpha += rho1 * h
        self.converged = h <= self.h_tol and (self.stop_rule == "h" or gap <= self.gap_tol)
        now = time.perf_counter()
        self.rows.append(
            {
                "round": t,
                "h": h,
                "gap": gap,
                "rho1": rho1,
                "rho2": rho2,
                "alpha": self.alpha,
                "nnz_W": int(np.count_nonzero(self.W)),
                "nnz_A": int(np.count_nonzero(self.A)),
                "seconds": now - self._clock,
            }
        )
        self._clock = now
        return ServerReply(Dense(after), "global_W_A", stop=self.converged)
