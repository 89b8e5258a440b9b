"""Fed-Sparse-BNSL Fig. 2 analogue: consensus vs personalised NMSE per participant on
heterogeneous data.

A shared ER DAG (d = 20, 20 edges); participant weights N(w_ij, τ²) around the global ones
(τ = 0.3); 10 participants × 500 rows. Fed-Sparse-BNSL learns W; each participant then refits the
weights of supp(W) on its own data (:func:`dpbnsl.learners.linear.personalize`). Prints, per participant,
the median NMSE over the seeds with and without personalisation. Results:
``experiments/results/personalisation.csv`` (resumable).

    python experiments/personalisation.py [--seeds 5] [--jobs 2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _runner import RESULTS, print_table, run_tasks

from dpbnsl import fed_sparse_bnsl, simulate_dag, simulate_heterogeneous, simulate_weights
from dpbnsl.learners import personalize, personalized_nmse


def run_one(seed: int, tau: float) -> list[dict]:
    W = simulate_weights(simulate_dag(20, s0=20, rng=seed), rng=seed + 1000)
    het = simulate_heterogeneous(W, [500] * 10, tau=tau, rng=seed + 2000)
    learned = fed_sparse_bnsl(list(het.participants)).W
    mine = personalized_nmse(het.weights, personalize(list(het.participants), learned))
    shared = personalized_nmse(het.weights, [learned] * 10)
    return [
        dict(seed=seed, participant=k, tau=tau, personalised=float(mine[k]), consensus=float(shared[k]))
        for k in range(10)
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--tau", type=float, default=0.3)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--csv", default=str(RESULTS / "personalisation.csv"))
    a = p.parse_args()
    tasks = [dict(seed=s, tau=a.tau) for s in range(a.seeds)]
    df = run_tasks(run_one, tasks, Path(a.csv), key=("seed", "tau"), jobs=a.jobs)
    table = df.groupby("participant")[["consensus", "personalised"]].median().reset_index()
    print_table(table.round(4))


if __name__ == "__main__":
    main()
