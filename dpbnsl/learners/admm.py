"""Pieces shared by the consensus-ADMM learners: the penalty schedule and the server's W-step.

Server problem (Fed-BNSL problem (3); Fed-Sparse-BNSL eq. (5) with ``lambda1 = 0``):

    min_W  λ‖W‖₁ + α h(W) + ρ₁/2 h(W)² + Σ_k ⟨β_k, B_k − W⟩ + ρ₂/2 Σ_k ‖B_k − W‖_F²

With ``B̄`` the mean of the B_k, ``Σ_k ‖B_k − W‖² = P‖W − B̄‖² + Σ_k ‖B_k − B̄‖²``, so the problem depends
on the participants only through ``B̄``, ``Σβ_k`` and a constant; one evaluation costs O(d²) plus one
matrix exponential (for h and ∇h). Writing it around ``B̄`` (rather than expanding ``‖B_k‖²``) keeps
the objective free of cancellation when ρ₂ is large, which L-BFGS-B's relative-decrease test needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize

from .._validation import check_int, check_real
from ..federation import Dense, Payload, ServerReply, Sparse
from ..graphs import acyclicity

__all__ = [
    "PenaltySchedule",
    "ServerProblem",
    "solve_server",
    "check_hyperparameters",
    "ConsensusServer",
    "gradient_steps",
    "inner_ftol",
    "curvature_diagonal",
    "tuned_lbfgs",
    "converged_stop",
    "stalled_stop",
]

_NONNEG = ("lambda1", "h_tol", "gap_tol", "threshold")
_POSITIVE = ("rho1", "rho2", "eta")
_AT_LEAST_ONE = ("gamma1", "gamma2")
_COUNTS = ("max_rounds", "rounds", "local_iters", "server_steps")
#: Upper bound of every round and iteration count (a larger one is a typo, not a plan: a million
#: rounds already take days).
MAX_COUNT = 10**6


def check_hyperparameters(**values: Any) -> dict:
    """Validate the numeric hyperparameters shared by the ADMM learners (one rule per name)."""
    out = {}
    for name, v in values.items():
        if name in _NONNEG:
            out[name] = check_real(v, name, low=0.0)
        elif name in _POSITIVE:
            out[name] = check_real(v, name, low=0.0, low_open=True)
        elif name in _AT_LEAST_ONE:
            out[name] = check_real(v, name, low=1.0)
        elif name == "rho_max":
            out[name] = check_real(v, name, low=0.0, low_open=True, allow_inf=True)
        elif name in _COUNTS:
            out[name] = check_int(v, name, low=1, high=MAX_COUNT)
        else:  # pragma: no cover - a programming error, not user input
            raise KeyError(f"no validation rule for hyperparameter {name!r}")
    return out


@dataclass(frozen=True)
class PenaltySchedule:
    """Penalties ρ₁, ρ₂ growing geometrically (×γ₁, ×γ₂) each round while below ``rho_max``.

    ``rho(t)`` gives the pair in force during round ``t`` (0-based); the multiplier updates of round
    ``t`` use these values, before they grow (Fed-BNSL, Ng & Zhang, Alg. 1).
    """

    rho1: float
    rho2: float
    gamma1: float = 1.0
    gamma2: float = 1.0
    rho_max: float = np.inf

    def rho(self, t: int) -> tuple[float, float]:
        return self._grow(self.rho1, self.gamma1, t), self._grow(self.rho2, self.gamma2, t)

    def _grow(self, r: float, g: float, t: int) -> float:
        for _ in range(t):
            if r >= self.rho_max or g == 1.0:
                break
            r *= g
        return r

    def saturated(self, t: int) -> bool:
        """True when both penalties have reached ``rho_max`` after round ``t``'s growth."""
        r1, r2 = self.rho(t + 1)
        return r1 >= self.rho_max and r2 >= self.rho_max


@dataclass(frozen=True)
class ServerProblem:
    """The data of one server W-step: the mean of the B_k, the sum of the β_k, and the constant
    ``Σ_k ⟨β_k, B_k⟩ + ρ₂/2 Σ_k ‖B_k − B̄‖²`` (so that the objective value is exact)."""

    B_mean: np.ndarray
    beta_sum: np.ndarray
    const: float
    n_participants: int
    alpha: float
    rho1: float
    rho2: float
    lambda1: float = 0.0


def _objective(W: np.ndarray, p: ServerProblem) -> tuple[float, np.ndarray]:
    """Smooth part of the server objective (everything but λ‖W‖₁) and its gradient.

    A trial point so far out that exp(W∘W) overflows is reported as +inf, which L-BFGS-B never
    accepts: scipy's solver ends the solve at the last finite iterate (this happens only when ρ is
    very large).
    """
    P = p.n_participants
    D = W - p.B_mean
    with np.errstate(over="ignore", invalid="ignore"):
        h, gh = acyclicity(W)
        f = (
            p.alpha * h
            + 0.5 * p.rho1 * h * h
            - float(np.sum(p.beta_sum * W))
            + 0.5 * p.rho2 * P * float(np.sum(D * D))
            + p.const
        )
        g = (p.alpha + p.rho1 * h) * gh - p.beta_sum + p.rho2 * P * D
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return np.inf, np.zeros_like(W)
    return f, g


#: scipy's default relative-reduction tolerance of L-BFGS-B (``factr = 1e7`` times the machine ε).
LBFGSB_FTOL = 1e7 * float(np.finfo(float).eps)
#: scipy's default projected-gradient tolerance of L-BFGS-B.
LBFGSB_GTOL = 1e-5
#: The loosest inner tolerance :func:`inner_ftol` hands out (while the consensus gap is large).
INNER_FTOL_MAX = 1e-6
#: Inner tolerance per unit of consensus gap.
INNER_FTOL_PER_GAP = 1e-3


def inner_ftol(gap: float | None) -> float:
    """L-BFGS-B's relative-reduction tolerance for a W-step, tied to the last consensus gap.

    Inexact ADMM: while the participants' B_k are still far from W (gap ≳ 10⁻³), solving the W-step
    to scipy's default precision buys nothing: the next round moves the target anyway. The tolerance
    is ``10⁻³ · gap``, between scipy's default (``factr = 10⁷``, about 2.2·10⁻⁹, reached once the gap
    is ≲ 2·10⁻⁶) and 10⁻⁶ (the first round, ``gap=None``, gets 10⁻⁶). The last rounds are therefore
    solved exactly as before. On Fed-BNSL's benchmark (ER graphs, d = 20–100) this cuts the
    objective evaluations 2–3× at the same thresholded graph (``benchmarks/bench_fed_bnsl_peer.py``).
    """
    if gap is None or not np.isfinite(gap):
        return INNER_FTOL_MAX
    return float(min(INNER_FTOL_MAX, max(LBFGSB_FTOL, INNER_FTOL_PER_GAP * gap)))


def tuned_lbfgs(last_gap: float | None) -> dict[str, Any]:
    """The W-step options of the Fed-BNSL server: preconditioned L-BFGS-B (:func:`solve_server`) to
    the tolerance :func:`inner_ftol` of the last consensus gap."""
    return {"ftol": inner_ftol(last_gap), "precondition": True}


def converged_stop(
    schedule: PenaltySchedule, *, h_tol: float, gap_tol: float
) -> Callable[[Mapping[str, Any]], bool]:
    """Stop after a round (given its history row) once both penalties have saturated (Fed-BNSL,
    Ng & Zhang, Alg. 1), or once ``h(W) ≤ h_tol`` and the consensus gap is at most ``gap_tol``."""

    def stop(row: Mapping[str, Any]) -> bool:
        return bool(schedule.saturated(row["round"]) or (row["h"] <= h_tol and row["gap"] <= gap_tol))

    return stop


def stalled_stop(
    schedule: PenaltySchedule, *, h_tol: float, gap_tol: float
) -> Callable[[Mapping[str, Any]], bool]:
    """The Fed-BNSL stopping rule: :func:`converged_stop`, or W has stalled with the consensus gap
    at most ``gap_tol``: ρ₁ has reached ``rho_max`` (it cannot push h further) and W moved by at
    most ``gap_tol`` (Frobenius) in the round. Without the stall branch a run whose h settles just
    above ``h_tol`` (W's tiny weights on cycles, kept by the ℓ1 split) goes on until ρ₂ saturates
    too, some 80 rounds in which W does not change.
    """
    converged = converged_stop(schedule, h_tol=h_tol, gap_tol=gap_tol)

    def stop(row: Mapping[str, Any]) -> bool:
        stalled = row["rho1"] >= schedule.rho_max and row["step"] <= gap_tol
        return converged(row) or bool(row["gap"] <= gap_tol and stalled)

    return stop


def solve_server(
    W0: np.ndarray,
    p: ServerProblem,
    *,
    free: np.ndarray | None = None,
    ftol: float = LBFGSB_FTOL,
    precondition: bool = False,
) -> np.ndarray:
    """Solve the server W-step by L-BFGS-B on the split ``W = W⁺ − W⁻`` (``W⁺, W⁻ ≥ 0``).

    The diagonal is fixed at 0; entries where ``free`` is False are fixed at 0 as well. Warm-started
    from ``W0``. By default scipy's L-BFGS-B options (as in the authors' code); ``ftol`` (the
    relative-reduction tolerance, see :func:`inner_ftol`) can be set.

    ``precondition=True`` solves the same problem in the variables ``y = x / s`` with
    ``s = √(H_min/H)``, ``H`` the diagonal estimate of the smooth objective's curvature at ``W0``
    (:func:`curvature_diagonal`). The bounds ``x ≥ 0`` are unchanged by a positive diagonal scaling.
    The penalty ρ₁/2·h² makes the W-step very ill-conditioned once ρ₁ ≫ ρ₂P (ρ₁ reaches 10¹⁶, ρ₂P is
    10³–10⁵ then); unscaled, L-BFGS-B crawls for thousands of evaluations and stops at a worse point
    than the scaled solve reaches in tens (``benchmarks/bench_fed_bnsl_peer.py``). Two details keep
    the scaled solve from stopping early: the least curved variables keep their scale (s ≤ 1, so
    a unit step in y is never longer than one in x: with s = 1/√H a tiny ρ₂P made the first trial
    step overflow exp(W∘W)), and the projected-gradient test is tightened to ``1e-5·min(s)``, which
    implies scipy's test in the original variables (else a warm start far from acyclic, where H is
    huge, passed it with gradients in the thousands).
    """
    d = W0.shape[0]
    fixed = np.eye(d, dtype=bool) if free is None else (np.eye(d, dtype=bool) | ~free)
    upper = np.tile(np.where(fixed.ravel(), 0.0, np.inf), 2)
    bounds = scipy.optimize.Bounds(np.zeros(2 * d * d), upper)
    start = np.where(fixed, 0.0, W0)
    scale = np.ones(2 * d * d)
    if precondition:
        H = curvature_diagonal(start, p)
        if np.isfinite(H).all():
            scale = np.tile(np.sqrt(H.min() / H).ravel(), 2)
    x0 = np.concatenate([np.maximum(start, 0).ravel(), np.maximum(-start, 0).ravel()]) / scale
    lam = p.lambda1

    def fun(y: np.ndarray) -> tuple[float, np.ndarray]:
        x = y * scale
        W = (x[: d * d] - x[d * d :]).reshape(d, d)
        f, g = _objective(W, p)
        f += lam * float(x.sum())
        g = g.ravel()
        return f, np.concatenate([g + lam, -g + lam]) * scale

    options = {"ftol": ftol, "gtol": LBFGSB_GTOL * float(scale.min())}
    sol = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options)
    x = sol.x * scale
    return (x[: d * d] - x[d * d :]).reshape(d, d)


def curvature_diagonal(W: np.ndarray, p: ServerProblem) -> np.ndarray:
    """A positive estimate of the diagonal of the Hessian of the smooth server objective at ``W``.

    ``ρ₂P`` (the consensus term, exact) ``+ ρ₁ (∂h/∂w_ij)²`` (the Gauss-Newton part of ρ₁/2·h²)
    ``+ (α + ρ₁h)·2·exp(W∘W)_ji`` (the leading part of ``∂²h/∂w_ij²``; the omitted remainder is
    non-negative). Entries are ∞ where exp(W∘W) overflows.
    """
    P = p.n_participants
    with np.errstate(over="ignore", invalid="ignore"):
        E = scipy.linalg.expm(W * W)
        h = float(np.trace(E) - W.shape[0])
        gh = 2.0 * W * E.T
        H = p.rho2 * P + p.rho1 * gh * gh + max(p.alpha + p.rho1 * h, 0.0) * 2.0 * E.T
    return np.where(np.isnan(H), np.inf, H)


def gradient_steps(eta: float, steps: int) -> Callable:
    """A server solver taking ``steps`` gradient steps of size ``eta`` on the smooth objective
    (the alternative to L-BFGS-B for the ℓ1-free server problem of Fed-Sparse-BNSL).

    A step that lands where the objective overflows (exp(W∘W) beyond float range, which a large
    ``eta`` or ρ₁ can cause) is halved until it does not; without this the overflowed point would
    have a zero gradient and the solver would stay there.
    """

    def solve(W0: np.ndarray, p: ServerProblem, *, free: np.ndarray | None = None) -> np.ndarray:
        keep = ~np.eye(W0.shape[0], dtype=bool) if free is None else free
        W = np.where(keep, W0, 0.0)
        f, g = _objective(W, p)
        if not np.isfinite(f):
            return W  # no finite gradient to follow
        for _ in range(steps):
            step = eta
            while True:
                trial = np.where(keep, W - step * g, 0.0)
                f_trial, g_trial = _objective(trial, p)
                if np.isfinite(f_trial):
                    break
                step /= 2.0
                if step < 1e-12 * eta:
                    return W
            W, g = trial, g_trial
        return W

    return solve


class ConsensusServer:
    """The server of the consensus-ADMM learners: the W-step, the dual updates of α and of its
    copies of the β_k, and a history row per round.

    ``sparse=True`` restricts the W-step to the entries non-zero in some B_k or β_k (they provably
    stay zero otherwise when λ = 0) and replies with the non-zeros of W; otherwise W is sent dense.
    ``stop(row)`` ends the protocol after the round whose history row it is given when it returns
    True. ``solve_options(last_gap)`` (``last_gap`` is None in round 0) gives extra keywords for the
    solver each round, e.g. :func:`tuned_lbfgs`; without it the solver runs with its defaults.

    History rows: round, h, the consensus gap ``max_k ‖B_k − W‖_F``, ``step`` = ``‖W_t − W_{t−1}‖_F``,
    ρ₁, ρ₂, α, the number of non-zeros of W and the seconds of the round.
    """

    def __init__(
        self,
        n_participants: int,
        d: int,
        schedule: PenaltySchedule,
        *,
        lambda1: float = 0.0,
        sparse: bool = False,
        solver: Callable = solve_server,
        stop: Callable[[Mapping[str, Any]], bool] | None = None,
        solve_options: Callable[[float | None], Mapping[str, Any]] | None = None,
    ) -> None:
        self.schedule, self.lambda1, self.sparse = schedule, lambda1, sparse
        self.solver, self.stop, self.solve_options = solver, stop, solve_options
        self.W = np.zeros((d, d))
        self.alpha = 0.0
        self.betas = np.zeros((n_participants, d, d))
        self.rows: list[dict] = []
        self._clock = time.perf_counter()

    def __call__(self, t: int, uploads: list[Payload]) -> ServerReply:
        Bs = np.stack([u.to_dense() for u in uploads])
        rho1, rho2 = self.schedule.rho(t)
        B_mean = Bs.mean(axis=0)
        problem = ServerProblem(
            B_mean=B_mean,
            beta_sum=self.betas.sum(axis=0),
            const=float(np.sum(self.betas * Bs) + 0.5 * rho2 * np.sum((Bs - B_mean) ** 2)),
            n_participants=len(Bs),
            alpha=self.alpha,
            rho1=rho1,
            rho2=rho2,
            lambda1=self.lambda1,
        )
        free = None
        if self.sparse:
            free = (Bs != 0).any(axis=0) | (self.betas != 0).any(axis=0)
            np.fill_diagonal(free, False)
        before = self.W
        options = {}
        if self.solve_options is not None:
            options = dict(self.solve_options(self.rows[-1]["gap"] if self.rows else None))
        self.W = self.solver(before, problem, free=free, **options)
        h = acyclicity(self.W)[0]
        gap = float(np.sqrt(((Bs - self.W) ** 2).sum(axis=(1, 2))).max())
        self.betas += rho2 * (Bs - self.W)  # dual updates with the penalties of this round
        self.alpha += rho1 * h
        now = time.perf_counter()
        row = {
            "round": t,
            "h": h,
            "gap": gap,
            "step": float(np.sqrt(np.sum((self.W - before) ** 2))),
            "rho1": rho1,
            "rho2": rho2,
            "alpha": self.alpha,
            "nnz": int(np.count_nonzero(self.W)),
        }
        if self.sparse:
            row["nnz_local_mean"] = float((Bs != 0).sum(axis=(1, 2)).mean())
        self.rows.append({**row, "seconds": now - self._clock})
        self._clock = now
        payload = Sparse.from_dense(self.W) if self.sparse else Dense(self.W)
        return ServerReply(payload, "global_W", stop=bool(self.stop and self.stop(row)))
