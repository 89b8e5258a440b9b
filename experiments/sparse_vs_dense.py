"""Seed 001 Table 1 analogue: communication, SHD, TPR, FDR of Fed-Sparse-BNSL against Fed-BNSL.

Linear-Gaussian ER graphs with s0 = d edges, 10 participants × ``--n-per-participant`` rows,
d ∈ {20, 100}; mean ± std over the seeds. The issue's target is ≥ 10× less communication with an
SHD no worse than Fed-BNSL's. Results go to ``experiments/results/sparse_vs_dense.csv`` (resumable).

    python experiments/sparse_vs_dense.py [--dims 20,100] [--seeds 5] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _runner import RESULTS, mean_spread, print_table, run_tasks
from dpbnsl import count_accuracy, fed_bnsl, fed_sparse_bnsl, simulate


def run_one(d: int, seed: int, n_per_participant: int, lambda1: float, rounds: int,
            local_iters: int) -> list[dict]:
    data = simulate(d, 10 * n_per_participant, participants=10, rng=seed)
    rows = []
    for method, fit in (
        ("Fed-BNSL", lambda: fed_bnsl(data.participants)),
        ("Fed-Sparse-BNSL", lambda: fed_sparse_bnsl(data.participants, lambda1=lambda1,
                                                    rounds=rounds, local_iters=local_iters)),
    ):
        t = time.perf_counter()
        r = fit()
        acc = count_accuracy(data.B_true, r.W)
        rows.append(dict(d=d, seed=seed, method=method, mb=r.transcript.total_mb, shd=acc.shd,
                         tpr=acc.tpr, fdr=acc.fdr, rounds=len(r.history),
                         seconds=time.perf_counter() - t))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="20,100")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--n-per-participant", type=int, default=200)
    p.add_argument("--lambda1", type=float, default=0.1)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--local-iters", type=int, default=20)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--csv", default=str(RESULTS / "sparse_vs_dense.csv"))
    a = p.parse_args()
    tasks = [dict(d=int(d), seed=s, n_per_participant=a.n_per_participant, lambda1=a.lambda1,
                  rounds=a.rounds, local_iters=a.local_iters)
             for d in a.dims.split(",") for s in range(a.seeds)]
    df = run_tasks(run_one, tasks, Path(a.csv), key=("d", "seed"), jobs=a.jobs)
    table = df.groupby(["d", "method"], sort=False).agg(
        mb=("mb", lambda x: mean_spread(x, "std")), shd=("shd", lambda x: mean_spread(x, "std")),
        tpr=("tpr", lambda x: mean_spread(x, "std")), fdr=("fdr", lambda x: mean_spread(x, "std")),
        runs=("seed", "count")).reset_index()
    print_table(table)


if __name__ == "__main__":
    main()
