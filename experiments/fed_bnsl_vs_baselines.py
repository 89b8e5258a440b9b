"""Fed-BNSL against NOTEARS-Voting, NOTEARS-Best (oracle) and NOTEARS-Avg on the Fed-BNSL setting.

Linear-Gaussian SEM on an ER DAG with s0 = d edges, weights U(±[0.5, 2]), 10 participants with equal
shards of n total samples, n ∈ {3d, 256}, d ∈ {10, 20}. Every method uses λ = 0.01 (the Fed-BNSL
authors' default) and threshold 0.3; the baselines share one set of local NOTEARS fits per seed.
Prints mean ± standard error of SHD, TPR and FDR over the seeds (Ng & Zhang used 30; default 10).

Each finished (d, n, seed) is appended to ``--csv`` (default: the committed
``experiments/results/fed_bnsl_vs_baselines.csv``) and skipped when the script is run again, so a
long run can be resumed. ``--jobs`` runs seeds in parallel processes. With fewer rows than samples
(n_k < d) local NOTEARS is slow (its augmented Lagrangian runs to ρ = 1e16): about a minute per
participant at d = 20, n_k = 6.

    python experiments/fed_bnsl_vs_baselines.py [--seeds 10] [--dims 10,20] [--jobs 2]
    python experiments/fed_bnsl_vs_baselines.py --summary-only    # table from the CSV
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
from _runner import RESULTS, mean_spread, print_table, run_tasks

from dpbnsl import count_accuracy, fed_bnsl, simulate
from dpbnsl.learners import notears_average, notears_best, notears_local, notears_voting


def run_one(d: int, n: int, participants: int, seed: int) -> list[dict]:
    data = simulate(d, n, participants=participants, rng=seed)
    rows = []

    def record(method, result, seconds):
        acc = count_accuracy(data.B_true, result.W)
        rows.append(
            dict(
                d=d,
                n=n,
                seed=seed,
                method=method,
                shd=acc.shd,
                tpr=acc.tpr,
                fdr=acc.fdr,
                nnz=acc.nnz,
                seconds=seconds,
            )
        )

    t = time.perf_counter()
    record("Fed-BNSL", fed_bnsl(data.participants, lambda1=0.01), time.perf_counter() - t)
    t = time.perf_counter()
    fits = notears_local(data.participants, lambda1=0.01)
    local_seconds = time.perf_counter() - t
    record("NOTEARS-Voting", notears_voting(local=fits), local_seconds)
    record("NOTEARS-Best (oracle)", notears_best(local=fits, B_true=data.B_true), local_seconds)
    record("NOTEARS-Avg", notears_average(local=fits), local_seconds)
    return rows


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    out = (
        df.groupby(["d", "n", "method"], sort=False)
        .agg(
            shd=("shd", mean_spread),
            tpr=("tpr", mean_spread),
            fdr=("fdr", mean_spread),
            seconds=("seconds", "mean"),
            runs=("seed", "count"),
        )
        .reset_index()
    )
    out["seconds"] = out["seconds"].round(1)
    return out.sort_values(["d", "n"], kind="stable").reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--dims", default="10,20")
    parser.add_argument("--participants", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes")
    parser.add_argument(
        "--csv",
        type=Path,
        default=RESULTS / "fed_bnsl_vs_baselines.csv",
        help="per-run rows (appended; finished runs are skipped)",
    )
    parser.add_argument("--summary-only", action="store_true", help="only print the table")
    args = parser.parse_args()
    tasks = [
        dict(d=d, n=n, participants=args.participants, seed=seed)
        for d in (int(x) for x in args.dims.split(","))
        for n in (3 * d, 256)
        for seed in range(args.seeds)
    ]
    if args.summary_only:
        df = pd.read_csv(args.csv)
    else:
        df = run_tasks(run_one, tasks, args.csv, key=("d", "n", "seed"), jobs=args.jobs)
    print_table(summarise(df))


if __name__ == "__main__":
    main()
