"""The federated protocol of DS-FCD / AS-FCD as a hosted protocol (see :mod:`dpbnsl.federation.protocol`):
Algorithm 2 (sub-problem solver with ``it_in`` local Adam steps and an aggregation every ``it_fl``
steps) inside the augmented-Lagrangian outer loop (Algorithm 1, or the MCSL-style schedule of the
authors' code).

Aggregation (Sec. 4.2): the server draws ``r`` of the ``P`` participants uniformly without
replacement, each uploads its ``U_k`` (and, for AS-FCD, its ``Φ_k``); the server broadcasts the plain
(unweighted) means to **all** participants, who overwrite their copies. Each participant keeps its own
Adam state for the whole run. The ALM coefficients ``α, ρ`` are common and updated by the server
from ``h(U_new)``: by default ``h(σ(U_new/τ))`` (the Gumbel noise at its median 0), or the mean over
``h_samples`` Gumbel draws (a separate stream, so the estimate does not depend on how often the
participants communicated).

Exchanges: the setup ((n_k, d) up; down, P, the row counts and the common initial parameters θ⁰,
drawn by the server); then one round per aggregation. Each request carries, beside the last
broadcast mean, a ``"schedule"`` message per participant: (α, ρ, the number of local Adam steps to
take, whether it is selected to upload). A selected participant uploads its ``U`` (kind ``"U"``,
``"W"`` for the linear variant; and ``"phi"`` for AS-FCD) after its steps; the others send nothing.
The server replies with the means (to every participant). Streams of ``rng.spawn(3 + P)``: child 0
draws θ⁰, child 1 the selections, child 2 the server's ``E h`` draws (all the server's), child
3 + k participant k's Gumbel noise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, check_data_scale, check_int
from ...federation import FLOAT_BYTES, Dense, Payload
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    Upload,
    generator_state,
    read_shapes,
    restore_generator,
    shape_upload,
)
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ._fcd_model import Adam, Model, Parts, Workspace, acyclicity_value, sigmoid

__all__ = ["FCDConfig", "FCDParticipant", "FCDServer"]

#: One aggregation's request: (number of local Adam steps before it, the selected participants).
Request = tuple[int, np.ndarray]


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


def _kinds(cfg: FCDConfig, model: Model) -> list[tuple[str, int, int]]:
    """The shared blocks of θ as (kind, start, stop): U (or W), and Φ for AS-FCD."""
    g = model.n_graph
    kinds = [("W" if cfg.mechanism == "linear" else "U", 0, g)]
    if cfg.share_phi and model.n_phi:
        kinds.append(("phi", g, model.size))
    return kinds


class FCDParticipant(HostedParticipant):
    """Participant ``participant`` of DS-FCD / AS-FCD, holding its data ``X``; ``rng`` is its own
    Gumbel-noise stream. ``config(d, P)`` resolves the public settings into an :class:`FCDConfig`."""

    def __init__(
        self,
        X: Any,
        *,
        config: Callable[[int, int], FCDConfig],
        participant: int,
        rng: np.random.Generator,
    ) -> None:
        self.X = check_data_scale(as_float_matrix(X, "X"), "X")
        self.k = check_int(participant, "participant", low=0)
        self.config, self.rng = config, rng
        self.cfg: FCDConfig | None = None
        self.P = 0
        self.theta: np.ndarray | None = None
        self.opt: Adam | None = None
        self.schedule: np.ndarray | None = None
        self.phi: np.ndarray | None = None
        self.last: Parts | None = None  # diagnostics of this process (not saved)

    def _build(self, P: int) -> None:
        self.P = P
        self.cfg = self.config(self.X.shape[1], P)
        self.model = Model(self.X.shape[1], self.cfg.mechanism, self.cfg.hidden, self.cfg.layers)
        self.ws = Workspace(self.X, self.model, self.cfg.dtype)

    def receive_extra(self, messages: list[tuple[str, Payload]]) -> None:
        for kind, payload in messages:
            if kind == "schedule":
                self.schedule = payload.to_dense().ravel()
            elif kind == "phi":
                self.phi = payload.to_dense().ravel()
            else:
                raise ProtocolError(f"participant {self.k}: unexpected message {kind!r}")

    def respond(self, phase: str, t: int, inbox: Payload | None) -> Upload:
        if t == SETUP_ROUND:
            return shape_upload(self.X)
        if inbox is None or self.schedule is None:
            raise ProtocolError(f"participant {self.k}: a round was requested before the setup exchange")
        v = inbox.to_dense().ravel()
        if self.theta is None:  # the setup reply: P, the P row counts, then θ⁰
            P = int(v[0])
            self._build(P)
            if v.size != 1 + P + self.model.size:
                raise ProtocolError(
                    f"participant {self.k}: a malformed setup reply ({v.size} numbers for P = {P})"
                )
            self.theta = np.array(v[1 + P :])
            self.opt = Adam(self.model.size, self.cfg.lr)  # type: ignore[union-attr]
        else:  # the last means overwrite the shared blocks
            g = self.model.n_graph
            self.theta[:g] = v
            if self.phi is not None:
                self.theta[g : g + self.phi.size] = self.phi
        cfg, m, opt = cast(FCDConfig, self.cfg), self.model, cast(Adam, self.opt)  # set just above
        alpha, rho, steps, selected = self.schedule
        for _ in range(int(steps)):
            G = m.sample_noise(self.rng)
            parts, grad = m.loss_grad(
                self.theta,
                self.ws,
                G,
                tau=cfg.tau,
                lambda1=cfg.lambda1,
                alpha=float(alpha),
                rho=float(rho),
                acyclicity=cfg.acyclicity,
            )
            opt.step(self.theta, grad)
            self.last = parts
        self.schedule, self.phi = None, None
        if not selected:
            return []
        d = self.X.shape[1]
        return [
            (kind, Dense(self.theta[a:b].reshape(d, d) if kind != "phi" else self.theta[a:b]))
            for kind, a, b in _kinds(cfg, m)
        ]

    def state_dict(self) -> dict[str, StateValue]:
        out: dict[str, StateValue] = {"rng": generator_state(self.rng)}
        if self.theta is not None and self.opt is not None:
            out.update(P=self.P, theta=self.theta, m=self.opt.m, v=self.opt.v, t=self.opt.t)
        return out

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        restore_generator(self.rng, state.get("rng"))  # type: ignore[arg-type]
        if "theta" in state:
            self._build(int(state["P"]))  # type: ignore[arg-type]
            self.theta = np.array(state["theta"], dtype=float)
            self.opt = Adam(self.model.size, self.cfg.lr)  # type: ignore[union-attr]
            self.opt.m = np.array(state["m"], dtype=float)
            self.opt.v = np.array(state["v"], dtype=float)
            self.opt.t = int(state["t"])  # type: ignore[arg-type]


class FCDServer(HostedServer):
    """The server: selection, plain averaging, the ALM coefficients and the outer loop.
    ``streams`` are children 0–2 of ``rng.spawn(3 + P)`` (θ⁰, selection, ``E h``);
    ``diagnostics()`` (in process only) gives the participants' mean (loss, mse, h) for the
    history, NaN otherwise."""

    def __init__(
        self,
        *,
        config: Callable[[int, int], FCDConfig],
        n_participants: int,
        streams: Sequence[np.random.Generator],
        diagnostics: Callable[[], tuple[float, float, float]] | None = None,
    ) -> None:
        self.config, self.n_participants = config, check_int(n_participants, "n_participants", low=1)
        self.init_rng, self.select_rng, self.h_rng = streams
        self.diagnostics = diagnostics
        self.rows: list[dict] = []
        self.rounds = self.solves = self.outer = self.bytes_up = self.bytes_down = 0
        self._program: Generator[Request, dict[int, Any], None] | None = None
        self._request: Request | None = None

    # ------------------------------------------------------------------------------ protocol
    def receive(self, phase: str, t: int, uploads: Mapping[int, Any]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t == SETUP_ROUND:
            n, d = read_shapes(ordered)
            self.cfg = self.config(d, self.n_participants)
            self.d, self.model = d, Model(d, self.cfg.mechanism, self.cfg.hidden, self.cfg.layers)
            theta0 = self.model.init(self.init_rng)  # common initialisation
            self.U = theta0[: self.model.n_graph].reshape(d, d).copy()
            self.alpha, self.rho = self.cfg.alpha_init, self.cfg.rho_init
            self._program = self._run()
            self._request = next(self._program, None)  # None: the loop asked for no aggregation
            head = np.array([len(n), *n], dtype=float)  # P, then the row counts
            reply = Dense(np.concatenate([head, theta0]))
            if self._request is None:
                return Reply("n_samples_theta0", reply, None)
            return Reply("n_samples_theta0", reply, ("rounds", 0), self._schedule())
        if self._program is None or self._request is None:
            raise ProtocolError(
                f"round {t}: no aggregation was requested (before the setup, or after the end)"
            )
        means = self._aggregate(t, uploads)
        try:
            self._request = self._program.send(dict(uploads))
        except StopIteration:
            self._request = None
        kinds = _kinds(self.cfg, self.model)
        main = Dense(means[0])
        extra: list[tuple[str, Any]] = [(kind, Dense(v)) for (kind, _, _), v in zip(kinds[1:], means[1:])]
        if self._request is None:
            return Reply(kinds[0][0], main, None, tuple(extra))
        return Reply(kinds[0][0], main, ("rounds", t + 1), (*extra, *self._schedule()))

    def _schedule(self) -> tuple[tuple[str, dict[int, Payload]], ...]:
        assert self._request is not None
        steps, chosen = self._request
        picked = set(int(k) for k in chosen)
        return (
            (
                "schedule",
                {
                    k: Dense(np.array([self.alpha, self.rho, float(steps), float(k in picked)]))
                    for k in range(self.n_participants)
                },
            ),
        )

    def _aggregate(self, t: int, uploads: Mapping[int, Any]) -> list[np.ndarray]:
        """Plain averaging of the selected participants' blocks; a history row."""
        assert self._request is not None
        step_index, chosen = self._last
        kinds, d = _kinds(self.cfg, self.model), self.d
        sent = []
        for k in chosen:
            msgs = dict(uploads[int(k)]) if isinstance(uploads[int(k)], list) else {}
            if set(msgs) != {kind for kind, _, _ in kinds}:
                raise ProtocolError(
                    f"rounds round {t}: participant {int(k)} did not upload {[x for x, _, _ in kinds]}"
                )
            sent.append(np.concatenate([msgs[kind].to_dense().ravel() for kind, _, _ in kinds]))
        new = np.mean(sent, axis=0)
        self.U = new[: self.model.n_graph].reshape(d, d).copy()
        size = FLOAT_BYTES * sum(b - a for _, a, b in kinds)  # dense float64 payloads
        up, down = size * len(chosen), size * self.n_participants
        self.bytes_up += up
        self.bytes_down += down
        self.rows.append(self._row(step_index, len(chosen), up, down))
        self.rounds += 1
        out, pos = [], 0
        for kind, a, b in kinds:
            block = new[pos : pos + b - a]
            out.append(block.reshape(d, d) if kind != "phi" else block)
            pos += b - a
        return out

    # --------------------------------------------------------------------------- algorithm
    def _run(self) -> Generator[Request, dict[int, Any], None]:
        """The ALM outer loop around Algorithm 2 (see :func:`dpbnsl.learners.nonlinear.ds_fcd.ds_fcd`).

        ``schedule="mcsl"`` (the authors' code, MCSL/NOTEARS style): per outer iteration solve, and
        while ``E h`` has not shrunk below ``γ`` times its previous value, multiply ρ by β and solve
        again (warm start); once ρ reaches ρ_max the run ends with the last solution, without
        solving at that ρ (as the authors' loop does). Otherwise ``α ← α + ρ E h``. Stop when
        ``E h ≤ h_tol`` and ``h(σ(U/τ)) ≤ h_tol`` after more than ``init_iter`` outer iterations.

        ``schedule="printed"`` (Algorithm 1 as printed): one solve per outer iteration, then
        ``α ← α + ρ E h`` and ``ρ ← βρ`` if ``E h > γ E h_prev``; stop at ``E h < h_tol`` or
        ρ > ρ_max.
        """
        cfg = self.cfg
        h_prev = np.inf if cfg.schedule == "mcsl" else self.h_expected()
        for t in range(1, cfg.it_max + 1):
            self.outer = t
            h_new = yield from self.solve()
            if cfg.schedule == "mcsl":
                while h_new > cfg.gamma * h_prev:
                    self.rho *= cfg.beta
                    if self.rho >= cfg.rho_max:
                        break
                    h_new = yield from self.solve()
                converged = h_new <= cfg.h_tol and self.h_mean_graph() <= cfg.h_tol
                if (converged and t > cfg.init_iter) or self.rho >= cfg.rho_max:
                    break
                self.alpha += self.rho * h_new
            else:
                self.alpha += self.rho * h_new
                if h_new > cfg.gamma * h_prev:
                    self.rho *= cfg.beta
                if h_new < cfg.h_tol or self.rho > cfg.rho_max:
                    break
            h_prev = h_new

    def solve(self) -> Generator[Request, dict[int, Any], float]:
        """One sub-problem (Algorithm 2) at the current (α, ρ): a request per aggregation (the
        local steps since the last one, and the selected participants); returns ``E h(U_new)``."""
        cfg, P, last = self.cfg, self.n_participants, 0
        for i in range(1, cfg.it_in + 1):
            if i % cfg.it_fl == 0 or i == cfg.it_in:
                if cfg.per_round < P:
                    chosen = np.sort(self.select_rng.choice(P, cfg.per_round, replace=False))
                else:
                    chosen = np.arange(P)
                self._last = (i, chosen)
                yield (i - last, chosen)
                last = i
        self.solves += 1
        return self.h_expected()

    def _row(self, step: int, uploaded: int, up: int, down: int) -> dict:
        probs = self.model.mask(self.U, None, self.cfg.tau)
        edges = (np.abs(probs) > self.cfg.threshold).sum()  # before cycle repair
        loss, mse, h_local = self.diagnostics() if self.diagnostics else (np.nan, np.nan, np.nan)
        return {
            "round": self.rounds,
            "outer": self.outer,
            "solve": self.solves,
            "step": step,
            "loss": loss,
            "mse": mse,
            "h_local": h_local,
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

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        """(the thresholded, cycle-repaired W; the scores σ(U/τ) (linear: W) with a zero
        diagonal; the history)."""
        if not self.rows:
            raise ProtocolError("the server has not run a learning round")
        d = self.d
        scores = sigmoid(self.U / self.cfg.tau) if self.cfg.mechanism == "mlp" else self.U
        W_raw = np.where(np.eye(d, dtype=bool), 0.0, scores)
        W = threshold_to_dag(threshold_weights(W_raw, threshold=self.cfg.threshold))
        return W, W_raw, pd.DataFrame(self.rows)

    def h_mean_graph(self) -> float:
        """``h`` of the noise-free ``σ(U/τ)`` (or ``W``)."""
        return acyclicity_value(self.model.mask(self.U, None, self.cfg.tau), self.cfg.acyclicity)[0]


def config_json(cfg: FCDConfig) -> str:
    """An FCDConfig as JSON (the public settings a deployment sends)."""
    return json.dumps(asdict(cfg))
