"""Secure DP-FedPC against the local one and against Priv-PC on the pooled rows, on discrete data.

The bnlearn networks alarm (d = 37), child (d = 20) and insurance (d = 27), n = 100,000 rows split
over P = 5 participants (20,000 each); ε = 1, 5, 20; δ = 10⁻³ (the Priv-PC comparison's); held-out
seeds 0 … ``--seeds``−1. Three learners on the same rows, each with its registry defaults:

* ``priv-pc``: Priv-PC on the pooled rows (one data holder: central DP, the reference);
* ``dp-fed-pc``: FedPC's vote over participants each running Priv-PC's tests on its own rows (local DP);
* ``dp-fed-pc (secure)``: PC on the pooled rows with every test one jointly noised Kendall
  statistic summed by secure aggregation (distributed DP, t = 0).

Skeleton F1, precision, recall and CPU seconds per run.

    python experiments/secure_fed_pc.py [--seeds 5] [--epsilons 1,5,20] [--jobs 1]

Rows go to ``docs/results/secure_fed_pc.csv`` (resumable).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import _runner  # one BLAS thread, before numpy
import numpy as np
import pandas as pd

from dpbnsl.io.networks import sample_network
from dpbnsl.learners.registry import LEARNERS
from dpbnsl.metrics import skeleton_scores

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
CSV = OUT / "secure_fed_pc.csv"
P = 5
N = 100_000
DELTA = 1e-3
NETWORKS = ("alarm", "child", "insurance")
METHODS = {
    "priv-pc": ("priv-pc", {}),
    "dp-fed-pc": ("dp-fed-pc", {}),
    "dp-fed-pc (secure)": ("dp-fed-pc", {"aggregation": "secure"}),
}


def run_one(network: str, seed: int, epsilon: float) -> list[dict]:
    s = sample_network(network, N, participants=P, rng=np.random.default_rng([seed, 1000]))
    rows = []
    for label, (name, options) in METHODS.items():
        start = time.process_time()
        r = LEARNERS[name].run(
            list(s.participants),
            epsilon=epsilon,
            delta=DELTA,
            rng=np.random.default_rng([seed, 7]),
            **options,
        )
        cpu = time.process_time() - start
        sk = skeleton_scores(s.B_true, r.W != 0)
        rows.append(
            dict(
                network=network,
                seed=seed,
                epsilon=epsilon,
                method=label,
                skeleton_f1=sk.f1,
                skeleton_precision=sk.precision,
                skeleton_recall=sk.recall,
                spent=r.privacy.epsilon,
                cpu_s=round(cpu, 2),
            )
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epsilons", default="1,5,20")
    p.add_argument("--networks", default=",".join(NETWORKS))
    p.add_argument("--jobs", type=int, default=1)
    a = p.parse_args()
    tasks = [
        dict(network=net, seed=s, epsilon=float(e))
        for e in a.epsilons.split(",")
        for net in a.networks.split(",")
        for s in range(a.seeds)
    ]
    _runner.run_tasks(run_one, tasks, CSV, key=("network", "seed", "epsilon"), jobs=a.jobs)
    df = pd.read_csv(CSV)
    for col in ("skeleton_f1", "cpu_s"):
        table = df.groupby(["network", "epsilon", "method"])[col].agg(_runner.mean_spread).unstack()
        print(col)
        _runner.print_table(table.reset_index())


if __name__ == "__main__":
    main()
