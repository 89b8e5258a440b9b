"""DP sanity check: DP-Fed-Sparse-BNSL at ε ∈ {1, 5, 50} (δ = 1e-5) beside the non-private run.

d = 20, 10 participants × 1000 rows, ER graphs with 20 edges; T, K and C per ε from
Fed-Sparse-BNSL's Table 5 (ε = 1: C 10, T 10, K 10; ε = 5: C 5, T 100, K 20; ε = 50: C 5, T 100,
K 50), with Table 5's clip bound C and with the learner's default C = 30 (``--clips``).
Smoothness constants estimated privately with ``--feature-bound``. Prints mean ± std of
SHD/TPR/FDR and the ε spent (tight accountant). Results: ``experiments/results/dp_sanity.csv``
(resumable).

    python experiments/dp_sanity.py [--seeds 5] [--clips table5,30] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _runner import RESULTS, mean_spread, print_table, run_tasks

from dpbnsl import count_accuracy, dp_fed_sparse_bnsl, fed_sparse_bnsl, simulate

TABLE5 = {1.0: (10, 10, 10), 5.0: (5, 100, 20), 50.0: (5, 100, 50)}  # ε: (C, T, K)


def run_one(seed: int, epsilon: float, clip: float, feature_bound: float) -> list[dict]:
    data = simulate(20, 10 * 1000, participants=10, rng=seed)
    t = time.perf_counter()
    if epsilon == float("inf"):
        r = fed_sparse_bnsl(data.participants)
        spent = float("inf")
    else:
        _, T, K = TABLE5[epsilon]
        r = dp_fed_sparse_bnsl(
            data.participants,
            epsilon=epsilon,
            delta=1e-5,
            rounds=T,
            local_iters=K,
            clip=clip,
            clip_scheme="coordinates",
            feature_bound=feature_bound,
            rng=seed,
        )
        spent = r.info["epsilon"]["rdp"]
    acc = count_accuracy(data.B_true, r.W)
    return [
        dict(
            seed=seed,
            epsilon=epsilon,
            clip=clip,
            spent=spent,
            shd=acc.shd,
            tpr=acc.tpr,
            fdr=acc.fdr,
            mb=r.transcript.total_mb,
            seconds=time.perf_counter() - t,
        )
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument(
        "--clips",
        default="table5,30",
        help="clip bounds C to run: numbers, or 'table5' for Table 5's C per ε",
    )
    p.add_argument("--feature-bound", type=float, default=100.0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--csv", default=str(RESULTS / "dp_sanity.csv"))
    a = p.parse_args()
    clips = [c for c in a.clips.split(",")]
    tasks = [
        dict(
            seed=s,
            epsilon=e,
            clip=float(TABLE5[e][0]) if c == "table5" else float(c),
            feature_bound=a.feature_bound,
        )
        for e in TABLE5
        for c in clips
        for s in range(a.seeds)
    ]
    tasks += [
        dict(seed=s, epsilon=float("inf"), clip=float("nan"), feature_bound=a.feature_bound)
        for s in range(a.seeds)
    ]
    df = run_tasks(run_one, tasks, Path(a.csv), key=("seed", "epsilon", "clip"), jobs=a.jobs)
    stats = {c: (c, lambda x: mean_spread(x, "std")) for c in ("shd", "tpr", "fdr")}
    table = (
        df.groupby(["epsilon", "clip"], dropna=False)
        .agg(**stats, max_spent=("spent", "max"), runs=("seed", "count"))
        .reset_index()
    )
    print_table(table)


if __name__ == "__main__":
    main()
