"""Benchmark NOTEARS-MLP-ADMM (``dpbnsl.learners.nonlinear.fed_bnsl_mlp``): time per round and per local step.

Run from the repository root::

    python benchmarks/bench_nonlinear_mlp.py                    # d = 10, 20, 40; P = 8; n = 512
    python benchmarks/bench_nonlinear_mlp.py --dims 10,20 --rounds 5 --ftol 0

Setting: MLP SEM on an ER DAG with d edges, n rows split into P equal shards, model [d, 10, 1]
(``n_params = 10d² + 21d``), λ1 = λ2 = 0.01, the authors' ρ schedule. Everything runs in one
process, so "local" is the sum over the P participants of their sequential local steps.

Table 1 (the first ``--rounds`` rounds of ``fed_bnsl_mlp``; early rounds are the expensive ones,
since later local problems start next to their optimum):
    s/round     wall seconds per round;  cpu s/round  process CPU seconds per round
    local       seconds per round in the P local steps (L-BFGS-B on the local loss + coupling)
    per step    local / P: one participant's local step
    server      seconds per round in the server step (W1 block by L-BFGS-B, one expm per eval)
    MB/round    transcript bytes per round (2·P·n_params·8)

Table 2 (micro-benchmarks, median of repeated calls, participant shard n/P rows):
    loss ms     one ``_mlp.squared_loss`` (value + hand-written gradient, all d networks at once)
    loop ms     the same value and gradient computed node by node in a Python loop (the baseline)
    ratio       loop / loss (> 1: vectorising over nodes pays)
    h ms        one ``_mlp.acyclicity`` (one d×d ``scipy.linalg.expm``)

BLAS threads are pinned to 1 unless already set (small matrices; see bench_fed_bnsl.py).
"""

from __future__ import annotations

import argparse

from dpbnsl.blas import single_thread

single_thread()

import time

import numpy as np

from dpbnsl.learners.nonlinear import _fed_bnsl_mlp_server as srv
from dpbnsl.learners.nonlinear._mlp import MLPLayout, acyclicity, init_params, squared_loss
from dpbnsl.learners.nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
from dpbnsl.simulation.nonlinear import simulate_nonlinear


def _median_ms(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def loop_loss(theta: np.ndarray, X: np.ndarray, layout: MLPLayout):
    """Reference: the same loss and gradient, one node network at a time."""
    W1, b1, W2, b2 = layout.unpack(theta)
    n = X.shape[0]
    gW1, gb1, gW2, gb2 = (np.zeros_like(a) for a in (W1, b1, W2, b2))
    value = 0.0
    for j in range(layout.d):
        S = 1.0 / (1.0 + np.exp(-(X @ W1[j].T + b1[j])))
        r = (S @ W2[j] + b2[j] - X[:, j]) / n
        value += 0.5 * n * float(r @ r)
        gW2[j], gb2[j] = S.T @ r, r.sum()
        G = r[:, None] * W2[j] * S * (1 - S)
        gb1[j], gW1[j] = G.sum(axis=0), G.T @ X
    return value, np.concatenate([a.ravel() for a in (gW1, gb1, gW2, gb2)])


def _timed(fn, acc: list):
    """Wrap a method so that its wall time adds up in ``acc[0]`` (a function stays a descriptor)."""

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[0] += time.perf_counter() - t

    return wrapper


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="10,20,40")
    p.add_argument("--participants", type=int, default=8)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ftol", type=float, default=1e-6, help="L-BFGS-B ftol (0 = scipy's default 2.2e-9)")
    p.add_argument("--repeat", type=int, default=50)
    a = p.parse_args(argv)
    opts = {"ftol": a.ftol} if a.ftol > 0 else None
    P = a.participants
    print(
        f"P = {P}, n = {a.n} (n_k = {a.n // P}), first {a.rounds} rounds, "
        f"L-BFGS-B ftol = {a.ftol if a.ftol > 0 else 'default'}\n"
    )
    print("| d | n_params | s/round | cpu s/round | local | per step | server | MB/round |")
    print("|---|---|---|---|---|---|---|---|")
    micro = []
    for d in (int(v) for v in a.dims.split(",")):
        sim = simulate_nonlinear(d, a.n, participants=P, rng=0)
        layout = MLPLayout(d, 10)
        local, server = [0.0], [0.0]
        orig = srv.MLPParticipant.__call__, srv.MLPServer.__call__
        srv.MLPParticipant.__call__ = _timed(orig[0], local)
        srv.MLPServer.__call__ = _timed(orig[1], server)
        try:
            w, c = time.perf_counter(), time.process_time()
            res = fed_bnsl_mlp(
                sim.participants, lambda1=0.01, max_rounds=a.rounds, solver_options=opts, rng=0
            )
            wall, cpu = time.perf_counter() - w, time.process_time() - c
        finally:
            srv.MLPParticipant.__call__, srv.MLPServer.__call__ = orig
        T = len(res.history)
        print(
            f"| {d} | {layout.n_params} | {wall / T:.2f} | {cpu / T:.2f} | {local[0] / T:.2f} "
            f"| {local[0] / T / P:.3f} | {server[0] / T:.2f} "
            f"| {res.transcript.total_mb / T:.3f} |",
            flush=True,
        )
        X = sim.participants[0]
        theta = init_params(layout, np.random.default_rng(0))
        np.testing.assert_allclose(
            loop_loss(theta, X, layout)[1], squared_loss(theta, X, layout)[1], rtol=1e-9, atol=1e-12
        )
        vec = _median_ms(lambda: squared_loss(theta, X, layout), a.repeat)
        loop = _median_ms(lambda: loop_loss(theta, X, layout), a.repeat)
        h = _median_ms(lambda: acyclicity(theta, layout), a.repeat)
        micro.append((d, X.shape[0], vec, loop, h))
    print("\n| d | n_k | loss ms | loop ms | ratio | h ms |")
    print("|---|---|---|---|---|---|")
    for d, nk, vec, loop, h in micro:
        print(f"| {d} | {nk} | {vec:.3f} | {loop:.3f} | {loop / vec:.1f} | {h:.3f} |")


if __name__ == "__main__":
    main()
