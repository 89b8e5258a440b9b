"""Benchmark FedDBN (``dpbnsl.learners.temporal.fed_dbn``): seconds per round, and where they go.

Run from the repository root::

    python benchmarks/bench_fed_dbn.py                     # d = 10, 20, 50; K = 10; n = 512; lag 1
    python benchmarks/bench_fed_dbn.py --dims 10,20 --participants 64 --lag 2

Setting: ``simulate_temporal(d, n, participants=K, lag=p)`` (FedDBN setting, stationary SVAR),
``fed_dbn`` with its defaults (λ = 0.5, ρ₁ = ρ₂ = 1, ×1.6 / ×1.1, ≤ 200 rounds, stop on h ≤ 1e-8
and RMS consensus gap ≤ 1e-4). Everything runs in one process, so "local" is the sum over the K
participants of their (sequential) local steps.

Columns:
    rounds      rounds run (converged runs stop early)
    s/run       wall time of the ``fed_dbn`` call (includes the one-off Gram matrices and eigh)
    s/round     mean of ``history["seconds"]``
    local       participant side per round (all K ``_Participant.__call__``, timed by a wrapper)
    server      server side per round (``FedDBNServer.__call__``)
    evals/rnd   L-BFGS-B evaluations of the server W-step per round (``_admm._objective`` calls);
                each costs one d×d matrix exponential
    ms/eval     mean wall time of one such evaluation
    eig µs      one local step as implemented (two products with the cached eigenvectors of G_k)
    solve µs    the same step by ``np.linalg.solve(G_k + ρ₂I, ·)``
    MB          ``transcript.total_mb`` (dense ((p+1)d × d) float64 both ways: 2·K·T·(p+1)d²·8 B)
"""

from __future__ import annotations

import os

from dpbnsl.blas import blas_threads, single_thread

single_thread()

import argparse
import contextlib
import importlib
import platform
import time
import timeit
from collections import defaultdict

import numpy as np

from dpbnsl.learners.temporal._temporal import design_gram
from dpbnsl.simulation.temporal import simulate_temporal

admm = importlib.import_module("dpbnsl.learners.admm")
fed = importlib.import_module("dpbnsl.learners.temporal.fed_dbn")
srv = importlib.import_module("dpbnsl.learners.temporal._fed_dbn_server")


@contextlib.contextmanager
def instrumented(probe: dict):
    part, serv, obj = fed._Participant.__call__, srv.FedDBNServer.__call__, admm._objective

    def timed_part(self, t, inbox):
        t0 = time.perf_counter()
        out = part(self, t, inbox)
        probe["local"][t] += time.perf_counter() - t0
        return out

    def timed_server(self, t, uploads):
        probe["round"] = t
        t0 = time.perf_counter()
        out = serv(self, t, uploads)
        probe["server"][t] += time.perf_counter() - t0
        return out

    def counted(W, p):
        t0 = time.perf_counter()
        out = obj(W, p)
        probe["obj_s"] += time.perf_counter() - t0
        probe["evals"][probe["round"]] += 1
        return out

    fed._Participant.__call__, srv.FedDBNServer.__call__, admm._objective = (
        timed_part,
        timed_server,
        counted,
    )
    try:
        yield probe
    finally:
        fed._Participant.__call__, srv.FedDBNServer.__call__, admm._objective = part, serv, obj


def local_step_micro(G: np.ndarray, d: int, rng: np.random.Generator) -> tuple[float, float]:
    q = G.shape[0]
    C, duals, Theta = G[:, :d], rng.standard_normal((q, d)), rng.standard_normal((q, d))
    evals, U = np.linalg.eigh(G)
    eye = np.eye(q)
    eig = lambda: fed.local_step(U, evals, C, duals, Theta, 1.0)
    solve = lambda: np.linalg.solve(G + eye, C - duals + Theta)
    np.testing.assert_allclose(eig(), solve(), rtol=1e-6, atol=1e-8)
    reps = 2000
    return (
        min(timeit.repeat(eig, number=reps, repeat=3)) / reps,
        min(timeit.repeat(solve, number=reps, repeat=3)) / reps,
    )


def run_case(d: int, n: int, K: int, lag: int, seed: int, max_rounds: int) -> dict:
    data = simulate_temporal(d, n, participants=K, lag=lag, rng=seed)
    probe = {
        "local": defaultdict(float),
        "server": defaultdict(float),
        "evals": defaultdict(int),
        "obj_s": 0.0,
        "round": 0,
    }
    with instrumented(probe):
        t0 = time.perf_counter()
        r = fed.fed_dbn(data.series, lag=lag, max_rounds=max_rounds)
        run_s = time.perf_counter() - t0
    T = len(r.history)
    evals = np.array([probe["evals"][t] for t in range(T)])
    G = design_gram(list(data.series[0]), lag, centre=True)[0]
    eig_s, solve_s = local_step_micro(G, d, np.random.default_rng(seed))
    assert r.transcript.total_bytes == 2 * K * T * (lag + 1) * d * d * 8
    return {
        "d": d,
        "rounds": T,
        "run_s": run_s,
        "round_s": r.history["seconds"].mean(),
        "local_s": np.mean([probe["local"][t] for t in range(T)]),
        "server_s": np.mean([probe["server"][t] for t in range(T)]),
        "evals": evals.mean(),
        "ms_eval": 1e3 * probe["obj_s"] / max(evals.sum(), 1),
        "eig_us": 1e6 * eig_s,
        "solve_us": 1e6 * solve_s,
        "mb": r.transcript.total_mb,
        "converged": r.info["converged"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="10,20,50")
    ap.add_argument("--participants", type=int, default=10)
    ap.add_argument("--n", type=int, default=512, help="total design rows")
    ap.add_argument("--lag", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rounds", type=int, default=200)
    a = ap.parse_args()
    print(
        f"FedDBN benchmark: K = {a.participants}, n = {a.n}, lag = {a.lag}, seed {a.seed}; "
        f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"BLAS threads {blas_threads()}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    head = [
        "d",
        "rounds",
        "s/run",
        "s/round",
        "local",
        "server",
        "evals/rnd",
        "ms/eval",
        "eig µs",
        "solve µs",
        "MB",
        "converged",
    ]
    rows = []
    for d in (int(x) for x in a.dims.split(",")):
        r = run_case(d, a.n, a.participants, a.lag, a.seed, a.max_rounds)
        rows.append(
            [
                f"{r['d']}",
                f"{r['rounds']}",
                f"{r['run_s']:.2f}",
                f"{r['round_s']:.4f}",
                f"{r['local_s']:.4f}",
                f"{r['server_s']:.4f}",
                f"{r['evals']:.1f}",
                f"{r['ms_eval']:.3f}",
                f"{r['eig_us']:.1f}",
                f"{r['solve_us']:.1f}",
                f"{r['mb']:.2f}",
                str(r["converged"]),
            ]
        )
        print(f"  d={d} done in {r['run_s']:.1f} s", flush=True)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
