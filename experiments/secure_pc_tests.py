"""How many tests secure DP-FedPC should reserve by default, and how many conditioning sets per edge
and level it should try: skeleton F1 on simulated discrete networks.

Random DAGs with 1.25·d edges, 2–4 states per node, Dirichlet(0.5) CPTs, n = 100,000 rows split
over 5 participants; d = 20 and 37; seeds 100–102 (kept apart from every reported result); K = 2,
3, 4, 6 and 8 tests per pair of variables; at most 1, 2 or 4 sets per edge and level, or all;
ε = 1 and 10, δ = 10⁻³. Prints one line per run and the mean F1 per setting.

    python experiments/secure_pc_tests.py
"""

from __future__ import annotations

import _runner  # noqa: F401  (one BLAS thread, before numpy)
import numpy as np
import pandas as pd
from priv_pc_rounds import skeleton_f1

from dpbnsl.learners.constraint.dp_fed_pc import dp_fed_pc
from dpbnsl.simulation.discrete import simulate_discrete

PER_PAIR = (2, 3, 4, 6, 8)
MAX_SETS = (1, 2, 4, None)


def main() -> None:
    rows = []
    for d in (20, 37):
        for seed in (100, 101, 102):
            levels = list(np.random.default_rng(seed).integers(2, 5, d))
            sim = simulate_discrete(d, 100_000, s0=int(1.25 * d), levels=levels, concentration=0.5, rng=seed)
            parts = np.array_split(sim.X, 5)
            for eps in (1.0, 10.0):
                for per_pair in PER_PAIR:
                    for max_sets in MAX_SETS:
                        r = dp_fed_pc(
                            parts,
                            epsilon=eps,
                            delta=1e-3,
                            aggregation="secure",
                            max_examinations=per_pair * d * (d - 1) // 2,
                            max_sets=max_sets,
                            rng=seed + 1000,
                        )
                        row = dict(
                            d=d,
                            seed=seed,
                            epsilon=eps,
                            per_pair=per_pair,
                            max_sets=str(max_sets),
                            f1=skeleton_f1(r.info["skeleton"], sim.B_true),
                            exhausted=r.info["exhausted"],
                        )
                        print(row, flush=True)
                        rows.append(row)
    df = pd.DataFrame(rows)
    print(df.groupby(["d", "epsilon", "per_pair", "max_sets"])["f1"].mean().unstack().round(3).to_string())
    print("mean over d and ε")
    print(df.groupby(["per_pair", "max_sets"])["f1"].mean().unstack().round(3).to_string())


if __name__ == "__main__":
    main()
