"""The varsortability and R²-sortability of every simulated benchmark on the results pages.

Each row draws a benchmark's data exactly as its script does (the same generator and settings) for
seeds 0–4 and reports the mean (min–max) of the two sortabilities of the pooled sample against the
true DAG (Reisach et al. 2021, 2023): 1 = sorting by marginal variance (or R²) recovers the causal
order, 0.5 = chance. Time series use the contemporaneous graph and the stacked series; discrete
benchmarks (PC and FedPC) are left out: variances of state codes carry no causal order.

    python experiments/sortability_table.py

Rows go to ``docs/results/sortability.csv``; a Markdown table to stdout.
"""

from __future__ import annotations

from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread)
import _runner
import numpy as np
import pandas as pd

from dpbnsl.metrics import r2_sortability, varsortability
from dpbnsl.simulation import (
    simulate,
    simulate_dag,
    simulate_heterogeneous,
    simulate_noniid,
    simulate_nonlinear,
    simulate_temporal,
    simulate_weights,
)

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
SEEDS = range(5)


def _linear(d: int, n: int, P: int, **kw):
    return lambda seed: (lambda s: (s.X, s.B_true))(simulate(d, n, participants=P, rng=seed, **kw))


def _heterogeneous(seed: int):
    W = simulate_weights(simulate_dag(20, s0=20, rng=seed), rng=seed + 1000)
    het = simulate_heterogeneous(W, [500] * 10, tau=0.3, rng=seed + 2000)
    return np.vstack(het.participants), (W != 0).astype(int)


def _nonlinear(kind: str, d: int, n: int, P: int, s0: int | None = None):
    def draw(seed: int):
        sim = simulate_nonlinear(d, n, participants=P, kind=kind, s0=s0, rng=seed)
        return sim.X, sim.B_true

    return draw


def _noniid(seed: int):
    sim = simulate_noniid(10, 600, participants=10, s0=20, rng=seed)
    return np.vstack(sim.participants), sim.B_true


def _temporal(d: int):
    def draw(seed: int):
        sim = simulate_temporal(d, 512, participants=10, lag=1, rng=seed)
        return np.vstack(sim.pooled), sim.B_true

    return draw


#: (page, benchmark, draw(seed) -> (X, B))
BENCHMARKS = [
    ("Fed-BNSL vs baselines", "ER d = 10, n = 256, 10 participants", _linear(10, 256, 10)),
    ("Fed-BNSL vs baselines", "ER d = 20, n = 256", _linear(20, 256, 10)),
    ("Fed-Sparse-BNSL", "ER d = 20, 10 × 200 rows", _linear(20, 2000, 10)),
    ("Fed-Sparse-BNSL", "ER d = 100, 10 × 200 rows", _linear(100, 2000, 10)),
    (
        "privacy–utility (Fig. 3), DP sanity, secure vs local, four defences",
        "ER d = 20, 10 × 1000",
        _linear(20, 10_000, 10),
    ),
    (
        "privacy–utility (Fig. 4), secure vs local, clipping study",
        "ER d = 50, 10 × 1000",
        _linear(50, 10_000, 10),
    ),
    (
        "privacy–utility (Fig. 4), secure vs local, four defences, clipping",
        "ER d = 100, 10 × 1000",
        _linear(100, 10_000, 10),
    ),
    (
        "privacy–utility (Fig. 4), secure vs local, clipping study",
        "ER d = 200, 10 × 1000",
        _linear(200, 10_000, 10),
    ),
    ("attacks", "ER d = 20, 10 × 20 rows", _linear(20, 200, 10)),
    ("PC agreement (Gaussian)", "ER d = 20, 40 edges, n = 1000", _linear(20, 1000, 1, s0=40)),
    ("personalisation", "ER d = 20, heterogeneous weights τ = 0.3, 10 × 500", _heterogeneous),
    ("NOTEARS-MLP-ADMM", "MLP SEM d = 20, n = 512", _nonlinear("mlp", 20, 512, 8)),
    ("DS-FCD (Table 2)", "GP SEM d = 10, 20 edges, 10 × 600", _nonlinear("gp", 10, 6000, 10, s0=20)),
    ("DS-FCD (Table 3)", "non-IID d = 10, 20 edges, 10 × 600", _noniid),
    ("FedDBN", "SVAR(1) d = 10, 512 design rows, 10 participants (contemporaneous graph)", _temporal(10)),
    ("FedDBN", "SVAR(1) d = 20", _temporal(20)),
]


def main() -> None:
    rows = []
    for page, bench, draw in BENCHMARKS:
        for seed in SEEDS:
            X, B = draw(seed)
            rows.append(
                dict(
                    page=page,
                    benchmark=bench,
                    seed=seed,
                    varsortability=varsortability(X, B),
                    r2_sortability=r2_sortability(X, B),
                )
            )
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(OUT / "sortability.csv", index=False)

    def cell(x: pd.Series) -> str:
        return f"{x.mean():.2f} ({x.min():.2f}–{x.max():.2f})"

    table = df.groupby(["page", "benchmark"], sort=False).agg(
        varsortability=("varsortability", cell), r2_sortability=("r2_sortability", cell)
    )
    _runner.print_table(table.reset_index())


if __name__ == "__main__":
    main()
