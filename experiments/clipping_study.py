"""Clipping study for DP-Fed-Sparse-BNSL: clip schemes × the published hyperparameters, then the
public-defaults rule, on tuning seeds only (the curves in docs/results use other seeds).

DP-PGCD clips each per-sample gradient coordinate x_ia·r_ib at C_a = c·√M_a; the schemes differ in
how the global bound C becomes c (``dpbnsl.learners.linear.pgcd.clip_bounds``):

- ``coordinates``: c = C/√((d−1)Σ_a M_a), the DP-CD normalisation over all d(d−1) coordinates;
- ``parents``: c = C/√(Σ_a M_a), over the d distinct smoothness constants;
- ``relative``: c = C, a multiple of each parent's own scale (needs no normalisation).

Every scheme has the same sensitivity proof (gradient 2C_a/n_k, score 2c/n_k) and is checked by
the neighbouring-dataset tests of ``tests/learners/linear/test_pgcd.py``.

Phases (``--phase``):

- ``table5``: d = 20, ε ∈ {0.5, 1, 2, 5, 25, 50} with Table 5's (C, T, K), each scheme: does the
  curve rise with ε and approach the non-private method (Fig. 3)?
- ``table7``: ε = 5, d ∈ {20, 50, 100, 200} with Table 7's (C, T, K, λ), each scheme: does the
  method stay useful as d grows (Fig. 4)?
- ``relative``: the relative scheme over c ∈ {0.5, 1, 2} and T·K ∈ {100, …, 2000} at d ∈ {20, 50,
  100, 200}, ε ∈ {1, 5}: where is the best T·K, and does it follow a public rule?
- ``split``: the relative scheme with c = 1 at ε = 5: how T·K ∈ {1000, 3000} steps are best split
  between rounds T ∈ {20, 50, 100, 200} and local iterations K;
- ``reference``: non-private Fed-Sparse-BNSL at each d (T = 100, K = 100 at d ≥ 100).

All runs: 10 participants × 1000 rows, ER graphs with d edges, δ = 1e-5, private smoothness with
the public bound ``--feature-bound`` (10% of the budget), data declared centred, tight calibration,
tuning seeds 100 .. 100 + seeds − 1. Results: ``experiments/results/clipping_study.csv``
(resumable); ``--report`` prints the Markdown tables of ``docs/results/clipping_study.md``.

    python experiments/clipping_study.py --phase table7 [--seeds 5] [--jobs 1]
    python experiments/clipping_study.py --report
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

from _runner import RESULTS, run_tasks

from dpbnsl import count_accuracy, dp_fed_sparse_bnsl, fed_sparse_bnsl, simulate

CSV = RESULTS / "clipping_study.csv"
SEED0 = 100  # tuning seeds; reported curves use seeds 0 .. 4
TABLE5 = {
    0.5: (10, 10, 10),
    1.0: (10, 10, 10),
    2.0: (5, 100, 10),
    5.0: (5, 100, 20),
    25.0: (7, 100, 30),
    50.0: (5, 100, 50),
}  # ε: (C, T, K)
TABLE7 = {
    20: (10, 100, 30, 0.1),
    50: (5, 50, 50, 0.1),
    100: (30, 100, 50, 0.1),
    200: (30, 100, 100, 0.1),
}  # d: (C, T, K, λ)
KEY = ("phase", "scheme", "d", "epsilon", "clip", "rounds", "local_iters", "lambda1", "seed")


def run_one(phase, scheme, d, epsilon, clip, rounds, local_iters, lambda1, seed, feature_bound):
    data = simulate(d, 10 * 1000, participants=10, rng=seed)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scale warnings are the subject of the study
        if math.isinf(epsilon):
            r = fed_sparse_bnsl(data.participants, rounds=rounds, local_iters=local_iters, lambda1=lambda1)
            m = spent = math.nan
        else:
            r = dp_fed_sparse_bnsl(
                data.participants,
                epsilon=epsilon,
                delta=1e-5,
                rounds=rounds,
                local_iters=local_iters,
                clip=clip,
                clip_scheme=scheme,
                lambda1=lambda1,
                feature_bound=feature_bound,
            )
            m, spent = r.info["noise"].gumbel_multiplier, r.privacy.epsilon
    acc = count_accuracy(data.B_true, r.W)
    return [
        dict(
            phase=phase,
            scheme=scheme,
            d=d,
            epsilon=epsilon,
            clip=clip,
            rounds=rounds,
            local_iters=local_iters,
            lambda1=lambda1,
            seed=seed,
            multiplier=m,
            spent=spent,
            shd=acc.shd,
            tpr=acc.tpr,
            fdr=acc.fdr,
            nnz=acc.nnz,
            cpu_s=time.process_time() - start,
        )
    ]


def tasks(phase: str, seeds: int, feature_bound: float) -> list[dict]:
    out = []

    def add(**kw):
        for s in range(SEED0, SEED0 + seeds):
            out.append(dict(phase=phase, seed=s, feature_bound=feature_bound, **kw))

    if phase == "table5":
        for eps, (C, T, K) in TABLE5.items():
            for scheme in ("coordinates", "parents"):
                add(scheme=scheme, d=20, epsilon=eps, clip=float(C), rounds=T, local_iters=K, lambda1=0.1)
    elif phase == "table7":
        for d, (C, T, K, lam) in TABLE7.items():
            for scheme in ("coordinates", "parents"):
                add(scheme=scheme, d=d, epsilon=5.0, clip=float(C), rounds=T, local_iters=K, lambda1=lam)
    elif phase == "relative":
        for d in (20, 50, 100, 200):
            for eps in (1.0, 5.0):
                for c in (0.5, 1.0, 2.0):
                    for steps in (100, 250, 500, 1000, 2000):
                        K = min(50, steps // 5)
                        add(
                            scheme="relative",
                            d=d,
                            epsilon=eps,
                            clip=c,
                            rounds=steps // K,
                            local_iters=K,
                            lambda1=0.1,
                        )
    elif phase == "split":
        for d in (20, 50, 100, 200):
            for steps in (1000, 3000):
                for T in (20, 50, 100, 200):
                    add(
                        scheme="relative",
                        d=d,
                        epsilon=5.0,
                        clip=1.0,
                        rounds=T,
                        local_iters=max(1, steps // T),
                        lambda1=0.1,
                    )
    elif phase == "reference":
        for d in (20, 50, 100, 200):
            T, K = (100, 20) if d < 100 else (100, 100)
            add(scheme="none", d=d, epsilon=math.inf, clip=math.nan, rounds=T, local_iters=K, lambda1=0.1)
    else:
        raise SystemExit(f"unknown phase {phase!r}")
    return out


def report(csv: Path) -> None:
    import pandas as pd
    from _runner import mean_spread, print_table

    df = pd.read_csv(csv)
    agg = {c: (c, lambda x: mean_spread(x, "std")) for c in ("shd", "tpr", "fdr")}
    ref = df[df.phase == "reference"].groupby("d").agg(**agg, runs=("seed", "count"))
    for phase, by in (
        ("table5", ["epsilon", "scheme", "clip", "rounds", "local_iters"]),
        ("table7", ["d", "scheme", "clip", "rounds", "local_iters"]),
        ("relative", ["d", "epsilon", "clip", "rounds", "local_iters"]),
        ("split", ["d", "rounds", "local_iters"]),
    ):
        part = df[df.phase == phase]
        if part.empty:
            continue
        print(f"\n### {phase}\n")
        table = (
            part.groupby(by)
            .agg(**agg, multiplier=("multiplier", "first"), runs=("seed", "count"))
            .reset_index()
        )
        table["multiplier"] = table["multiplier"].round(1)
        print_table(table)
    if len(ref):
        print("\n### reference (non-private Fed-Sparse-BNSL)\n")
        print_table(ref.reset_index())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--phase", action="append", default=[], choices=("table5", "table7", "relative", "split", "reference")
    )
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--feature-bound", type=float, default=100.0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--csv", default=str(CSV))
    p.add_argument("--report", action="store_true")
    a = p.parse_args()
    for phase in a.phase:
        run_tasks(run_one, tasks(phase, a.seeds, a.feature_bound), Path(a.csv), key=KEY, jobs=a.jobs)
    if a.report:
        report(Path(a.csv))


if __name__ == "__main__":
    main()
