"""Fig. 3 analogue (DP-Fed-Sparse-BNSL paper): DP-Fed-Sparse-BNSL against ε, non-private dashed.

ε ∈ {0.5, 1, 2, 5, 25, 50}, δ = 1e-5; d = 20, ER graphs with 20 edges, 10 participants × 1000 rows
(the paper's homogeneous setting is not stated), private smoothness, data declared centred, seeds
0 .. N−1 (held out: the clipping study tuned on seeds 100 and up). Curves (``--curves``):

- ``public``: the learner's defaults, which depend on public quantities only (relative clipping
  with c = 1, (T, K) from d, n_k, ε, δ, and at this d the covariance warm start), feature bound
  100; beside it the covariance baseline DP-Fed-BNSL (rows clipped to the public norm R = 10, one
  covariance release per participant);
- ``cold``: the same defaults without the warm start (``warm_start="none"``);
- ``table5`` / ``c30``: Table 5's (T, K) per ε with Table 5's C or C = 30, under the clip scheme
  the package used before the clipping study (``coordinates``), kept for comparison.

Rows and plots go to ``docs/results/`` (resumable).

    python experiments/fig3_privacy_utility.py [--seeds 5] [--curves public] [--jobs 2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner  # noqa: F401
import pandas as pd

from dpbnsl.audits import summarize, sweep
from dpbnsl.audits.plots import plot_tradeoff

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
TABLE5 = {
    0.5: (10, 10, 10),
    1.0: (10, 10, 10),
    2.0: (5, 100, 10),
    5.0: (5, 100, 20),
    25.0: (7, 100, 30),
    50.0: (5, 100, 50),
}  # ε: (C, T, K)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--curves", default="public", help="comma-separated: public, cold, table5, c30")
    a = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in a.curves.split(","):
        clip = {"public": None, "cold": None, "table5": None, "c30": 30.0}[name]
        csv = OUT / f"fig3_{name}.csv"
        for eps, (C, T, K) in TABLE5.items():
            options = {
                "dp-fed-sparse-bnsl": dict(feature_bound=100.0)
                if name == "public"
                else dict(feature_bound=100.0, warm_start="none")
                if name == "cold"
                else dict(
                    clip=C if clip is None else clip,
                    clip_scheme="coordinates",
                    rounds=T,
                    local_iters=K,
                    feature_bound=30.0,
                )
            }
            methods = ("fed-sparse-bnsl", "dp-fed-sparse-bnsl")
            if name == "public":
                methods += ("dp-fed-bnsl",)
                options["dp-fed-bnsl"] = dict(clip_norm=10.0)
            sweep(
                methods=methods,
                epsilons=(eps,),
                seeds=list(range(a.seeds)),
                d=20,
                participants=10,
                n_per_participant=1000,
                csv=csv,
                jobs=a.jobs,
                method_options=options,
            )
        frame = pd.read_csv(csv)
        label = (
            "public defaults"
            if name == "public"
            else "public defaults, no warm start"
            if name == "cold"
            else f"(T, K) of Table 5, C = {'Table 5' if clip is None else f'{clip:g}'}"
        )
        print(f"\n{name}: {label}")
        print(summarize(frame).round(2).to_string(index=False))
        plot_tradeoff(frame, path=OUT / f"fig3_{name}.png", title=f"d = 20, 10 × 1000 rows, {label}")


if __name__ == "__main__":
    main()
