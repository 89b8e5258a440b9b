"""DS-FCD cost: seconds per local step and per communication round at d ∈ {10, 20, 40}.

Setting: 10 participants × 600 rows, the paper's network (4 hidden layers × 16 LeakyReLU units per
node), Table 6's ``it_fl = 200`` local steps per communication round. A local step is one
full-batch Adam step of *every* participant; a round is ``it_fl`` local steps plus one aggregation.
Rounds are extrapolated from the measured step and aggregation times (a real d = 40 round takes
minutes); ``--measure-round`` times one real round instead.

Baseline in the same process: the straightforward per-node implementation (for each node j, form
the masked input ``X ∘ M[:, j]`` and run its MLP forward and backward in float64), which shows the
gain of the batched (node, unit, sample) layout, the unmasked first-layer product and float32.

    python benchmarks/bench_ds_fcd.py [--dims 10,20,40] [--steps 10] [--measure-round]
"""

from __future__ import annotations

import argparse
import time

from dpbnsl.blas import single_thread

single_thread()

import numpy as np

from dpbnsl.federation import Dense
from dpbnsl.learners.nonlinear._fcd_model import SLOPE, Model, acyclicity_value
from dpbnsl.learners.nonlinear._fcd_protocol import FCDConfig, FCDParticipant, FCDServer
from dpbnsl.learners.nonlinear.ds_fcd import fcd_defaults


def config(d: int, dtype: str = "float32") -> FCDConfig:
    dflt = fcd_defaults(d)
    return FCDConfig(
        mechanism="mlp",
        share_phi=False,
        lambda1=dflt["lambda1"],
        rho_init=dflt["rho_init"],
        beta=dflt["beta"],
        alpha_init=0.0,
        gamma=0.25,
        h_tol=dflt["h_tol"],
        rho_max=dflt["rho_max"],
        it_max=1,
        it_in=dflt["it_in"],
        it_fl=dflt["it_fl"],
        lr=dflt["lr"],
        tau=0.2,
        hidden=16,
        layers=4,
        per_round=10,
        schedule="mcsl",
        init_iter=3,
        acyclicity="exp-sq",
        h_samples=0,
        dtype=dtype,
        record_transcript=True,
        threshold=dflt["threshold"],
    )


def naive_loss_grad(model: Model, theta, X, G, tau, lambda1, rho):
    """Reference: one node at a time, masked inputs formed explicitly, float64."""
    n, d = X.shape
    grad = np.zeros_like(theta)
    U, phi = model.views(theta)
    gU, gphi = model.views(grad)
    M = model.mask(U, G, tau)
    dM = np.full((d, d), lambda1)
    for j in range(d):
        Zin = X * M[:, j]
        acts, pre = [Zin], []
        for k in range(model.layers):
            z = acts[-1] @ phi[2 * k][j] + phi[2 * k + 1][j]
            pre.append(z)
            acts.append(np.where(z > 0, z, SLOPE * z))
        out = acts[-1] @ phi[-2][j] + phi[-1][j]
        dout = -(X[:, j] - out) / n
        gphi[-1][j] = dout.sum()
        gphi[-2][j] = acts[-1].T @ dout
        dh = np.outer(dout, phi[-2][j])
        for k in range(model.layers - 1, -1, -1):
            dz = dh * np.where(pre[k] > 0, 1.0, SLOPE)
            gphi[2 * k][j] = acts[k].T @ dz
            gphi[2 * k + 1][j] = dz.sum(axis=0)
            dh = dz @ phi[2 * k][j].T
        dM[:, j] += (dh * X).sum(axis=0)
    h, dh_ = acyclicity_value(M, "exp-sq")
    dM += rho * h * dh_
    gU[...] = np.where(model.offdiag, dM * M * (1 - M) / tau, 0.0)
    return grad


class Federation:
    """The hosted DS-FCD objects driven step by step: ``local_step()`` is one Adam step of every
    participant, ``aggregate()`` one server round (the selected participants' uploads averaged)."""

    def __init__(self, arrays: list, cfg: FCDConfig, seed: int) -> None:
        P = len(arrays)
        streams = np.random.default_rng(seed).spawn(3 + P)
        config = lambda d, P: cfg
        self.parts = [
            FCDParticipant(X, config=config, participant=k, rng=g)
            for k, (X, g) in enumerate(zip(arrays, streams[3:]))
        ]
        self.server = FCDServer(config=config, n_participants=P, streams=streams[:3])
        setup = {k: p.respond("rounds", -1, None)[1] for k, p in enumerate(self.parts)}
        self.reply = self.server.receive("rounds", -1, setup)
        self.t, self.uploads = 0, {}

    def local_step(self) -> None:
        for k, p in enumerate(self.parts):
            inbox = self.reply.for_participant(k) if self.t == 0 else Dense(self.server.U)
            p.receive_extra([("schedule", Dense(np.array([0.0, self.server.rho, 1.0, 1.0])))])
            self.uploads[k] = p.respond("rounds", self.t, inbox)
        self.t += 1

    def aggregate(self) -> None:
        self.server.receive("rounds", self.t, self.uploads)

    @property
    def model(self) -> Model:
        return self.server.model

    def theta(self, k: int) -> np.ndarray:
        return np.array(self.parts[k].theta)


def bench(d: int, steps: int, measure_round: bool) -> dict:
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(600, d)) for _ in range(10)]
    fed = Federation(arrays, config(d), 1)
    fed.local_step()  # warm-up (buffers, BLAS)
    t = time.perf_counter()
    for _ in range(steps):
        fed.local_step()
    step = (time.perf_counter() - t) / steps
    t = time.perf_counter()
    for _ in range(steps):
        fed.aggregate()
    agg = (time.perf_counter() - t) / steps
    fed64 = Federation(arrays, config(d, "float64"), 1)
    t = time.perf_counter()
    for _ in range(max(steps // 2, 1)):
        fed64.local_step()
    step64 = (time.perf_counter() - t) / max(steps // 2, 1)
    m, theta = fed.model, fed.theta(0)
    t = time.perf_counter()
    for X in arrays:
        naive_loss_grad(m, theta, X, rng.logistic(size=(d, d)), 0.2, 0.01, 6e-3)
    naive = time.perf_counter() - t
    out = dict(d=d, step=step, step64=step64, naive=naive, agg=agg, round=200 * step + agg)
    if measure_round:
        t = time.perf_counter()
        for _ in range(200):
            fed.local_step()
        fed.aggregate()
        out["round_measured"] = time.perf_counter() - t
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="10,20,40")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--measure-round", action="store_true")
    a = p.parse_args(argv)
    print(
        "| d | s / local step (10 participants, float32) | float64 | naive per-node float64 | "
        "speed-up vs naive | s / aggregation | s / round (it_fl = 200) | s / sub-problem "
        "(1000 steps) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for d in (int(v) for v in a.dims.split(",")):
        r = bench(d, a.steps, a.measure_round)
        extra = f" (measured {r['round_measured']:.1f})" if "round_measured" in r else ""
        print(
            f"| {d} | {r['step']:.4f} | {r['step64']:.4f} | {r['naive']:.4f} | "
            f"{r['naive'] / r['step']:.1f}× | {r['agg']:.5f} | {r['round']:.1f}{extra} | "
            f"{5 * r['round']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
