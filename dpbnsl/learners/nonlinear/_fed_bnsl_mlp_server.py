"""NOTEARS-MLP-ADMM's two steps: the participant's θ_k-step and the server's θ-step (Fed-BNSL §5.2).

Participant k (data X_k, dual β_k, penalty ρ₂), warm-started from its previous θ_k:

    θ_k = argmin  1/(2n) ‖X_k − f_θk(X_k)‖² + ⟨β_k, θ_k − θ⟩ + ρ₂/2 ‖θ_k − θ‖²

Server (no data), with θ̄ the mean of the P uploads and ``w`` the W1 block of θ:

    θ = argmin  λ1‖w‖₁ + λ2/2 ‖(W1, W2)‖² + α h(w) + ρ₁/2 h(w)²
                + Σ_k ⟨β_k, θ_k − θ⟩ + ρ₂/2 Σ_k ‖θ_k − θ‖²

Since ``Σ_k ‖θ_k − θ‖² = P‖θ − θ̄‖² + const``, the problem separates: the W1 block is solved by
L-BFGS-B on the split ``w = w⁺ − w⁻`` (self-loops fixed at 0, warm start from the last θ); every
other coordinate has the closed form ``θ_c = (Pρ₂ θ̄_c + Σβ_k,c) / (Pρ₂ + λ2·[c is a weight])``.
Then ``β_k += ρ₂(θ_k − θ)`` and ``α += ρ₁ h(θ)`` with the penalties of the round (before they grow).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.optimize

from ...federation import Dense, Payload, ServerReply
from ..admm import PenaltySchedule
from ._mlp import MLPLayout, acyclicity, adjacency, squared_loss

__all__ = ["MLPParticipant", "MLPServer", "server_objective", "solve_w1"]


class MLPParticipant:
    """Participant k's side: its data, its dual β_k and its last θ_k (self-loop weights fixed at 0).

    The local problem is solved over the free coordinates only (no bounds), by L-BFGS-B with the
    learner's ``solver_options`` (scipy's defaults unless given).
    """

    def __init__(
        self,
        X: np.ndarray,
        layout: MLPLayout,
        schedule: PenaltySchedule,
        *,
        n_total: float,
        theta0: np.ndarray,
        solver_options: dict | None = None,
    ) -> None:
        self.X, self.layout, self.schedule, self.n_total = X, layout, schedule, n_total
        self.options = solver_options
        self.free = np.ones(layout.n_params, dtype=bool)
        self.free[: layout.n_w1] = ~layout.self_loops
        self.theta0 = theta0
        self.theta = np.where(self.free, theta0, 0.0)
        self.beta = np.zeros(layout.n_params)
        self.loss = np.nan
        self.seconds = 0.0

    def objective(self, theta: np.ndarray, glob: np.ndarray, rho2: float) -> tuple[float, np.ndarray]:
        """The local objective and its gradient in θ_k (all coordinates)."""
        loss, g = squared_loss(theta, self.X, self.layout, n=self.n_total)
        D = theta - glob
        return (
            loss + float(np.dot(self.beta, D)) + 0.5 * rho2 * float(np.dot(D, D)),
            g + self.beta + rho2 * D,
        )

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        start = time.perf_counter()
        glob = self.theta0 if inbox is None else inbox.to_dense()
        if t > 0:  # dual update of round t-1, with the penalty in force then
            self.beta += self.schedule.rho(t - 1)[1] * (self.theta - glob)
        rho2 = self.schedule.rho(t)[1]
        free, theta = self.free, self.theta.copy()

        def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
            theta[free] = z
            f, g = self.objective(theta, glob, rho2)
            return f, g[free]

        sol = scipy.optimize.minimize(
            fun, self.theta[free], jac=True, method="L-BFGS-B", options=self.options
        )
        theta[free] = sol.x
        self.theta = theta
        self.loss = squared_loss(theta, self.X, self.layout, n=self.n_total)[0]
        self.seconds = time.perf_counter() - start
        return "local_theta", Dense(theta)


def server_objective(
    x: np.ndarray,
    layout: MLPLayout,
    *,
    w_mean: np.ndarray,
    beta_sum: np.ndarray,
    P: int,
    alpha: float,
    rho1: float,
    rho2: float,
    lambda1: float,
    lambda2: float,
) -> tuple[float, np.ndarray]:
    """The server's W1-block objective in the split form ``x = [w⁺, w⁻]`` and its gradient:

    ``λ1 Σ(w⁺ + w⁻) + λ2/2‖w‖² + αh(w) + ρ₁/2 h(w)² − ⟨Σβ, w⟩ + Pρ₂/2 ‖w − w̄‖²`` (the terms of
    the full server objective that depend on w, up to a constant). A trial point at which exp(A)
    overflows gives +inf, which L-BFGS-B never accepts (scipy's solver then ends the step at the
    last finite iterate).
    """
    a = layout.n_w1
    w = x[:a] - x[a:]
    D = w - w_mean
    with np.errstate(over="ignore", invalid="ignore"):
        h, gh = acyclicity(w, layout)
        f = (
            alpha * h
            + 0.5 * rho1 * h * h
            + 0.5 * lambda2 * float(np.dot(w, w))
            - float(np.dot(beta_sum, w))
            + 0.5 * P * rho2 * float(np.dot(D, D))
        )
        g = (alpha + rho1 * h) * gh + lambda2 * w - beta_sum + P * rho2 * D
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return np.inf, np.zeros_like(x)
    return f + lambda1 * float(x.sum()), np.concatenate([g + lambda1, -g + lambda1])


def solve_w1(
    w0: np.ndarray, layout: MLPLayout, *, solver_options: dict | None = None, **problem: Any
) -> np.ndarray:
    """Minimise :func:`server_objective` by L-BFGS-B on ``w⁺, w⁻ ≥ 0`` (self-loops fixed at 0),
    warm-started from ``w0`` (``solver_options``: scipy's defaults when None); return
    ``w = w⁺ − w⁻``."""
    a = layout.n_w1
    upper = np.tile(np.where(layout.self_loops, 0.0, np.inf), 2)
    bounds = scipy.optimize.Bounds(np.zeros(2 * a), upper)
    w0 = np.where(layout.self_loops, 0.0, w0)
    x0 = np.concatenate([np.maximum(w0, 0.0), np.maximum(-w0, 0.0)])
    sol = scipy.optimize.minimize(
        lambda x: server_objective(x, layout, **problem),
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options=solver_options,
    )
    return sol.x[:a] - sol.x[a:]


class MLPServer:
    """The server: θ-step, its copies of the β_k, α, and one history row per round.

    ``stop(t, h, gap)`` ends the protocol after round t when it returns True.
    """

    def __init__(
        self,
        n_participants: int,
        layout: MLPLayout,
        schedule: PenaltySchedule,
        *,
        theta0: np.ndarray,
        lambda1: float,
        lambda2: float,
        threshold: float,
        stop: Callable[[int, float, float], bool],
        solver_options: dict | None = None,
    ) -> None:
        self.layout, self.schedule, self.stop = layout, schedule, stop
        self.options = solver_options
        self.lambda1, self.lambda2, self.threshold = lambda1, lambda2, threshold
        self.theta = np.where(
            np.concatenate([layout.self_loops, np.zeros(layout.n_params - layout.n_w1, bool)]), 0.0, theta0
        )
        self.alpha = 0.0
        self.betas = np.zeros((n_participants, layout.n_params))
        self.rows: list[dict] = []

    def __call__(self, t: int, uploads: list[Payload]) -> ServerReply:
        start = time.perf_counter()
        L, a = self.layout, self.layout.n_w1
        Th = np.stack([u.to_dense() for u in uploads])
        P = len(Th)
        rho1, rho2 = self.schedule.rho(t)
        mean, beta_sum = Th.mean(axis=0), self.betas.sum(axis=0)
        theta = np.empty_like(mean)
        rest_l2 = np.where(L.weights[a:], self.lambda2, 0.0)
        theta[a:] = (P * rho2 * mean[a:] + beta_sum[a:]) / (P * rho2 + rest_l2)
        theta[:a] = solve_w1(
            self.theta[:a],
            L,
            w_mean=mean[:a],
            beta_sum=beta_sum[:a],
            P=P,
            alpha=self.alpha,
            rho1=rho1,
            rho2=rho2,
            lambda1=self.lambda1,
            lambda2=self.lambda2,
            solver_options=self.options,
        )
        self.theta = theta
        h = acyclicity(theta, L)[0]
        gap = float(np.sqrt(((Th - theta) ** 2).sum(axis=1)).max())
        self.betas += rho2 * (Th - theta)  # dual updates with the penalties of this round
        self.alpha += rho1 * h
        edges = np.sqrt(adjacency(theta, L)) > self.threshold
        self.rows.append(
            {
                "round": t,
                "h": h,
                "gap": gap,
                "rho1": rho1,
                "rho2": rho2,
                "alpha": self.alpha,
                "nnz": int(np.count_nonzero(edges)),
                "server_seconds": time.perf_counter() - start,
            }
        )
        return ServerReply(Dense(theta), "global_theta", stop=bool(self.stop(t, h, gap)))
