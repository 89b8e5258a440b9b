"""Benchmark FedPC (``dpbnsl.learners.constraint.fed_pc``): seconds per run as the dimension grows.

Run from the repository root::

    python benchmarks/bench_fed_pc.py                        # d = 10, 50, 100; P = 10; n = 5000
    python benchmarks/bench_fed_pc.py --dims 10,50 --test g2 # discrete networks, G² test
    python benchmarks/bench_fed_pc.py --participants 3 --n 2000 --seeds 3

Setting: ER DAG with d edges; ``--test fisher-z`` (default): linear-Gaussian SEM, weights ±[0.5, 2];
``--test g2``: random discrete network with 2–4 states per node and Dirichlet(1) CPTs. n rows in
total, split evenly over P participants; FedPC with its defaults (α = 0.01, vote > 30%, no layer
cap, union candidate sets with |Z| ≤ 3). Everything runs in one process, participants one after
the other, so "seconds" is the sum of all participants' and the server's work (no network).

Columns:
    s/run       wall time of the ``fed_pc(...)`` call (median over seeds)
    skeleton s  FedSkele rounds (sum of the history's "skeleton" rows)
    orient s    FedOrien round
    layers      FedSkele layers run
    tests       CI tests computed, summed over participants (cache misses)
    µs/test     s/run / tests
    MB          transcript size (dense float64 payloads)
    PC-All s    PC on the pooled rows in the same process (in-run baseline)
    ratio       s/run / PC-All s
    skel F1     skeleton F1 of FedPC against the true DAG (context, not a speed figure)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dpbnsl.blas import blas_threads, single_thread

single_thread()

import numpy as np

from dpbnsl.learners.constraint.fed_pc import fed_pc, pc_all
from dpbnsl.metrics import skeleton_scores
from dpbnsl.simulation import simulate
from dpbnsl.simulation.discrete import simulate_discrete
from dpbnsl.simulation.partition import split


def case(d: int, n: int, P: int, seed: int, test: str) -> dict:
    if test == "g2":
        rng = np.random.default_rng(seed)
        sim = simulate_discrete(d, n, s0=d, levels=list(rng.integers(2, 5, d)), rng=rng)
        X, B = sim.X, sim.B_true
    else:
        sim = simulate(d, n, participants=1, rng=seed)
        X, B = sim.X, sim.B_true
    parts = split(X, P)
    t0 = time.perf_counter()
    r = fed_pc(parts, test=test)
    run = time.perf_counter() - t0
    t0 = time.perf_counter()
    pc_all(parts, test=test, variant="original")
    base = time.perf_counter() - t0
    h = r.history
    return dict(
        run=run,
        skel=float(h.loc[h.phase == "skeleton", "seconds"].sum()),
        orient=float(h.loc[h.phase == "orient", "seconds"].sum()),
        layers=r.info["layers"],
        tests=sum(r.info["ci_tests"]),
        mb=r.transcript.total_mb,
        base=base,
        f1=skeleton_scores(B, r.W).f1,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="10,50,100")
    p.add_argument("--n", type=int, default=5000, help="rows in total")
    p.add_argument("--participants", type=int, default=10)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--test", choices=("fisher-z", "g2"), default="fisher-z")
    a = p.parse_args()
    head = [
        "d",
        "s/run",
        "skeleton s",
        "orient s",
        "layers",
        "tests",
        "µs/test",
        "MB",
        "PC-All s",
        "ratio",
        "skel F1",
    ]
    print(
        f"FedPC, {a.test}, n = {a.n}, P = {a.participants}, seeds = {a.seeds}, "
        f"BLAS threads = {blas_threads()}"
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    start = time.perf_counter()
    for d in (int(v) for v in a.dims.split(",")):
        runs = [case(d, a.n, a.participants, s, a.test) for s in range(a.seeds)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        cells = [
            d,
            f"{med['run']:.2f}",
            f"{med['skel']:.2f}",
            f"{med['orient']:.2f}",
            f"{med['layers']:.0f}",
            f"{med['tests']:.0f}",
            f"{1e6 * med['run'] / max(med['tests'], 1):.0f}",
            f"{med['mb']:.2f}",
            f"{med['base']:.2f}",
            f"{med['run'] / med['base']:.1f}",
            f"{med['f1']:.2f}",
        ]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    print(
        f"total {time.perf_counter() - start:.1f} s; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
