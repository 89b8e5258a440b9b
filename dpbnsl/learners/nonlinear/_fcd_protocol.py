"""The federated protocol of DS-FCD / AS-FCD: Algorithm 2 (sub-problem solver with
``it_in`` local Adam steps and an aggregation every ``it_fl`` steps) inside the augmented-Lagrangian
outer loop (Algorithm 1, or the MCSL-style schedule of the authors' code).

Aggregation (Sec. 4.2): the server draws ``r`` of the ``P`` participants uniformly without
replacement, each uploads its ``U_k`` (and, for AS-FCD, its ``Φ_k``); the server broadcasts the plain
(unweighted) means to **all** participants, who overwrite their copies. Each participant keeps its own
Adam state for the whole run. The ALM coefficients ``α, ρ`` are common and updated by the server
from ``h(U_new)``: by default ``h(σ(U_new/τ))`` (the Gumbel noise at its median 0), or the mean over
``h_samples`` Gumbel draws (a separate stream, so the estimate does not depend on how often the
participants communicated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from ...federation import FLOAT_BYTES, SERVER, Dense, Message, Transcript
from ._fcd_model import Adam, Model, Parts, Workspace, acyclicity_value

__all__ = ["FCDConfig", "FCDRun", "run_fcd"]


@dataclass(frozen=True)
class FCDConfig:
    """Resolved hyperparameters (see :func:`dpbnsl.learners.nonlinear.ds_fcd.ds_fcd`)."""

    mechanism: str
    share_phi: bool
    lambda1: float
    rho_init: float
    beta: float
    alpha_init: float
    gamma: float
    h_tol: float
    rho_max: float
    it_max: int
    it_in: int
    it_fl: int
    lr: float
    tau: float
    hidden: int
    layers: int
    per_round: int
    schedule: str
    init_iter: int
    acyclicity: str
    h_samples: int
    dtype: str
    record_transcript: bool
    threshold: float


@dataclass
class FCDRun:
    """What a run leaves behind: the final global ``U`` (and mean ``Φ``), the participants' final
    parameter vectors, history rows, the transcript and counters."""

    U: np.ndarray
    thetas: list
    rows: list
    transcript: Transcript | None
    rounds: int
    solves: int
    bytes_up: int
    bytes_down: int


class _Federation:
    """Participants' states plus the server's aggregation step and bookkeeping."""

    def __init__(self, arrays: Sequence[np.ndarray], cfg: FCDConfig, rng: np.random.Generator) -> None:
        d = arrays[0].shape[1]
        self.cfg, self.P, self.d = cfg, len(arrays), d
        self.model = Model(d, cfg.mechanism, cfg.hidden, cfg.layers)
        init_rng, self.select_rng, self.h_rng, *self.rngs = rng.spawn(3 + self.P)
        theta0 = self.model.init(init_rng)  # common initialisation
        self.thetas = [theta0.copy() for _ in arrays]
        self.opts = [Adam(self.model.size, cfg.lr) for _ in arrays]
        self.wss = [Workspace(X, self.model, cfg.dtype) for X in arrays]
        self.transcript = Transcript() if cfg.record_transcript else None
        self.U = theta0[: d * d].reshape(d, d).copy()
        self.alpha, self.rho = cfg.alpha_init, cfg.rho_init
        self.rounds = self.solves = self.outer = self.bytes_up = self.bytes_down = 0
        self.rows: list[dict] = []
        self.last: list[Parts | None] = [None] * self.P

    # ------------------------------------------------------------------------ participants
    def local_step(self) -> None:
        """One full-batch Adam step of every participant on its own loss (fixed α, ρ)."""
        cfg, m = self.cfg, self.model
        for k in range(self.P):
            G = m.sample_noise(self.rngs[k])
            parts, grad = m.loss_grad(
                self.thetas[k],
                self.wss[k],
                G,
                tau=cfg.tau,
                lambda1=cfg.lambda1,
                alpha=self.alpha,
                rho=self.rho,
                acyclicity=cfg.acyclicity,
            )
            self.opts[k].step(self.thetas[k], grad)
            self.last[k] = parts

    # ------------------------------------------------------------------------------ server
    def aggregate(self, step: int) -> None:
        """Random participation, plain averaging and broadcast to all participants."""
        cfg, P, g = self.cfg, self.P, self.model.n_graph
        if cfg.per_round < P:
            chosen = np.sort(self.select_rng.choice(P, cfg.per_round, replace=False))
        else:
            chosen = np.arange(P)
        stop = self.model.size if cfg.share_phi else g
        sent = [self.thetas[k][:stop].copy() for k in chosen]
        new = np.mean(sent, axis=0)
        for k in range(P):
            self.thetas[k][:stop] = new
        self.U = new[:g].reshape(self.d, self.d).copy()
        kinds = [("W" if cfg.mechanism == "linear" else "U", 0, g)]
        if cfg.share_phi and self.model.n_phi:
            kinds.append(("phi", g, stop))
        size = FLOAT_BYTES * sum(b - a for _, a, b in kinds)  # dense float64 payloads
        up, down = size * len(chosen), size * P
        self.bytes_up += up
        self.bytes_down += down
        self._record(chosen, sent, kinds, new)
        self.rows.append(self._row(step, len(chosen), up, down))
        self.rounds += 1

    def _shape(self, kind: str, v: np.ndarray) -> np.ndarray:
        return v if kind == "phi" else v.reshape(self.d, self.d)

    def _record(
        self,
        chosen: np.ndarray,
        sent: list[np.ndarray],
        kinds: list[tuple[str, int, int]],
        new: np.ndarray,
    ) -> None:
        if self.transcript is None:
            return
        for k, theta in zip(chosen, sent):
            for kind, a, b in kinds:
                self.transcript.append(
                    Message(self.rounds, int(k), SERVER, kind, Dense(self._shape(kind, theta[a:b])))
                )
        for kind, a, b in kinds:
            payload = Dense(self._shape(kind, new[a:b]))
            for k in range(self.P):
                self.transcript.append(Message(self.rounds, SERVER, k, kind, payload))

    def _row(self, step: int, uploaded: int, up: int, down: int) -> dict:
        probs = self.model.mask(self.U, None, self.cfg.tau)
        edges = (np.abs(probs) > self.cfg.threshold).sum()  # before cycle repair
        last = cast("list[Parts]", self.last)  # all set: aggregate() always follows local_step()
        return {
            "round": self.rounds,
            "outer": self.outer,
            "solve": self.solves,
            "step": step,
            "loss": float(np.mean([p.total for p in last])),
            "mse": float(np.mean([p.mse for p in last])),
            "h_local": float(np.mean([p.h for p in last])),
            "h": acyclicity_value(probs, self.cfg.acyclicity)[0],
            "rho": self.rho,
            "alpha": self.alpha,
            "edges": int(edges),
            "uploaded": uploaded,
            "bytes_up": up,
            "bytes_down": down,
        }

    def h_expected(self) -> float:
        """The server's estimate of ``E h(g_τ(U))``: ``h(σ(U/τ))`` at the noise's median when
        ``h_samples = 0`` (exact for ``"linear"``), else the mean over ``h_samples`` Gumbel draws."""
        m, cfg = self.model, self.cfg
        if cfg.mechanism == "linear" or cfg.h_samples == 0:
            return self.h_mean_graph()
        return float(
            np.mean(
                [
                    acyclicity_value(m.mask(self.U, m.sample_noise(self.h_rng), cfg.tau), cfg.acyclicity)[0]
                    for _ in range(cfg.h_samples)
                ]
            )
        )

    def h_mean_graph(self) -> float:
        """``h`` of the noise-free ``σ(U/τ)`` (or ``W``)."""
        return acyclicity_value(self.model.mask(self.U, None, self.cfg.tau), self.cfg.acyclicity)[0]

    # -------------------------------------------------------------------------- algorithm 2
    def solve(self) -> float:
        """One sub-problem (Algorithm 2) at the current (α, ρ); returns ``E h(U_new)``."""
        cfg = self.cfg
        for i in range(1, cfg.it_in + 1):
            self.local_step()
            if i % cfg.it_fl == 0 or i == cfg.it_in:
                self.aggregate(i)
        self.solves += 1
        return self.h_expected()


def run_fcd(arrays: Sequence[np.ndarray], cfg: FCDConfig, rng: np.random.Generator) -> FCDRun:
    """Run the ALM outer loop around Algorithm 2.

    ``schedule="mcsl"`` (the authors' code, MCSL/NOTEARS style): per outer iteration solve, and while
    ``E h`` has not shrunk below ``γ`` times its previous value, multiply ρ by β and solve again
    (warm start); once ρ reaches ρ_max the run ends with the last solution, without solving at
    that ρ (as the authors' loop does). Otherwise ``α ← α + ρ E h``. Stop when ``E h ≤ h_tol`` and
    ``h(σ(U/τ)) ≤ h_tol`` after more than ``init_iter`` outer iterations.

    ``schedule="printed"`` (Algorithm 1 as printed): one solve per outer iteration, then
    ``α ← α + ρ E h`` and ``ρ ← βρ`` if ``E h > γ E h_prev``; stop at ``E h < h_tol`` or ρ > ρ_max.
    """
    fed = _Federation(arrays, cfg, rng)
    h_prev = np.inf if cfg.schedule == "mcsl" else fed.h_expected()
    for t in range(1, cfg.it_max + 1):
        fed.outer = t
        h_new = fed.solve()
        if cfg.schedule == "mcsl":
            while h_new > cfg.gamma * h_prev:
                fed.rho *= cfg.beta
                if fed.rho >= cfg.rho_max:
                    break
                h_new = fed.solve()
            converged = h_new <= cfg.h_tol and fed.h_mean_graph() <= cfg.h_tol
            if (converged and t > cfg.init_iter) or fed.rho >= cfg.rho_max:
                break
            fed.alpha += fed.rho * h_new
        else:
            fed.alpha += fed.rho * h_new
            if h_new > cfg.gamma * h_prev:
                fed.rho *= cfg.beta
            if h_new < cfg.h_tol or fed.rho > cfg.rho_max:
                break
        h_prev = h_new
    return FCDRun(
        fed.U, fed.thetas, fed.rows, fed.transcript, fed.rounds, fed.solves, fed.bytes_up, fed.bytes_down
    )
