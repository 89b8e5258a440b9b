"""What does the server learn? Every attack against every participant of four protocols.

d = 20, 10 participants × 20 rows (the issue's membership setting), ER graph with 20 edges;
Fed-BNSL and Fed-Sparse-BNSL with their defaults, DP-Fed-BNSL (R = 10) and DP-Fed-Sparse-BNSL
(C = 30, T = K = 10, private smoothness with bound 30) at ε = 1, δ = 1e-5. Per run the report has one
row per participant (``dpbnsl.attacks.attack_report``); membership is pooled over participants and
seeds (each participant: its 20 rows against 20 rows of the others), so 5 seeds give 2,000 targets.
Per-participant rows go to ``experiments/results/attacks.csv`` and the membership scores to
``experiments/results/attack_scores.csv`` (resumable).

    python experiments/attack_table.py [--seeds 5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
from _runner import RESULTS, print_table, run_tasks

from dpbnsl import dp_fed_bnsl, dp_fed_sparse_bnsl, fed_bnsl, fed_sparse_bnsl, simulate
from dpbnsl.attacks import attack_report, population_covariance, roc_auc, tpr_at_fpr

SCORES = RESULTS / "attack_scores.csv"
FIT = {
    "fed-bnsl": lambda P, s: fed_bnsl(P),
    "fed-sparse-bnsl": lambda P, s: fed_sparse_bnsl(P),
    "dp-fed-bnsl": lambda P, s: dp_fed_bnsl(P, epsilon=1.0, delta=1e-5, clip_norm=10.0, rng=s),
    # the settings of the recorded table (before the clipping study): C = 30, T = K = 10
    "dp-fed-sparse-bnsl": lambda P, s: dp_fed_sparse_bnsl(
        P,
        epsilon=1.0,
        delta=1e-5,
        feature_bound=30.0,
        clip=30.0,
        clip_scheme="coordinates",
        rounds=10,
        local_iters=10,
        rng=s,
    ),
}


def run_one(method: str, seed: int) -> list[dict]:
    data = simulate(20, 10 * 20, participants=10, rng=seed)
    result = FIT[method](data.participants, seed)
    rep = attack_report(
        result, data.participants, population_cov=population_covariance(data.W_true), rng=seed
    )
    scores = rep.scores.assign(method=method, seed=seed)
    scores.to_csv(SCORES, mode="a", header=not SCORES.is_file(), index=False)
    rows = rep.table[rep.table.participant != "all"].assign(seed=seed)
    return rows.to_dict("records")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--csv", default=str(RESULTS / "attacks.csv"))
    a = p.parse_args()
    tasks = [dict(method=m, seed=s) for m in FIT for s in range(a.seeds)]
    df = run_tasks(run_one, tasks, Path(a.csv), key=("method", "seed"), jobs=1)
    sc = pd.read_csv(SCORES).drop_duplicates(["method", "seed", "participant", "member", "score"])
    rows = []
    for method, g in df.groupby("method", sort=False):
        s = sc[sc.method == method]
        rows.append(
            dict(
                method=method,
                runs=g.seed.nunique(),
                targets=len(s),
                rel_error=f"{g.rel_error.median():.2g}",
                recovered=f"{g.recovered.mean():.3f}",
                membership_auc=f"{roc_auc(s.score, s.member):.3f}",
                tpr_at_1pct_fpr=f"{tpr_at_fpr(s.score, s.member, 0.01):.3f}",
                attribute_gain=f"{g.attribute_gain.median():.2f}",
                record_error=f"{g.record_error.median():.2g}",
            )
        )
    print_table(pd.DataFrame(rows))


if __name__ == "__main__":
    main()
