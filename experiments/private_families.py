"""Constraint-based against score-based private learners, on the same data at the same ε.

Gaussian data — the package's simulator (ER graphs with d edges, weights U(±[0.5, 2]), unit noise;
d = 10, 20, 50) and the bnlearn network ecoli70 (d = 46), 10 participants × 1000 rows:

* constraint-based: Priv-PC on the pooled rows (continuous: Kendall's τ, conditioning variables in 4
  public bins of ±√B), DP-FedPC (Priv-PC's tests per participant, FedPC's vote), PC on one private
  covariance (dp-cov-pc, each participant's own release);
* score-based: DP-Fed-BNSL, DP-Fed-Sparse-BNSL, private SortnRegress (dp-sortnregress).

Discrete data — the bnlearn networks alarm (d = 37) and child (d = 20), 10 × 10,000 rows: the two
constraint-based learners that test discrete data (Priv-PC, DP-FedPC); the package has no private
score-based learner for discrete data.

Every learner runs with its registry defaults and public bounds from the data-generating parameters
only (the simulator's rule, :meth:`~dpbnsl.io.networks.GaussianNetwork.public_bounds` for
ecoli70): B = the feature bound, R = the clip norm. δ = 10⁻⁵; held-out seeds 0 … ``--seeds``−1.
Skeleton F1 is the common measure (the constraint-based learners return an equivalence class).

    python experiments/private_families.py [--seeds 2] [--epsilons 1,5,20] [--jobs 1]
    python experiments/private_families.py --plot

Rows go to ``docs/results/private_families.csv`` (resumable); ``--plot`` draws
``docs/results/private_families.png``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner
import numpy as np
import pandas as pd

from dpbnsl.io.networks import GaussianNetwork, load_network, sample_network
from dpbnsl.learners.registry import LEARNERS
from dpbnsl.metrics import count_accuracy, skeleton_scores
from dpbnsl.simulation import simulate, simulated_bounds, split

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
CSV = OUT / "private_families.csv"
P = 10
DELTA = 1e-5
CONSTRAINT = ("priv-pc", "dp-fed-pc", "dp-cov-pc")
SCORE = ("dp-fed-bnsl", "dp-fed-sparse-bnsl", "dp-sortnregress")
DISCRETE = ("priv-pc", "dp-fed-pc")
DATASETS = ("sim-er10", "sim-er20", "sim-er50", "ecoli70", "child", "alarm")


def _gaussian(dataset: str, seed: int) -> tuple[list[np.ndarray], np.ndarray, dict]:
    """Participants' rows, the true graph and the public bounds of a Gaussian data set."""
    rng = np.random.default_rng([seed, 1000])
    if dataset.startswith("sim-er"):
        d = int(dataset[6:])
        data = simulate(d, P * 1000, participants=P, rng=rng)
        return list(data.participants), data.B_true, simulated_bounds(d)
    net = load_network(dataset)
    assert isinstance(net, GaussianNetwork)
    X = net.sample(P * 1000, rng=rng)
    return split(X, P), net.B, net.public_bounds()


def run_one(dataset: str, seed: int, epsilon: float) -> list[dict]:
    """Every learner of the comparison on one sample at one ε."""
    discrete = dataset in ("child", "alarm")
    if discrete:
        s = sample_network(dataset, P * 10_000, participants=P, rng=np.random.default_rng([seed, 1000]))
        parts, B, methods = list(s.participants), s.B_true, DISCRETE
        options: dict[str, dict] = {m: {} for m in methods}
    else:
        parts, B, bounds = _gaussian(dataset, seed)
        methods = CONSTRAINT + SCORE
        b = math.sqrt(bounds["feature_bound"])
        options = {m: {} for m in methods}
        for m in ("priv-pc", "dp-fed-pc"):
            options[m] = dict(data="continuous", bounds=(-b, b))
        for m in ("dp-cov-pc", "dp-fed-bnsl", "dp-sortnregress"):
            options[m] = dict(clip_norm=bounds["clip_norm"])
        options["dp-fed-sparse-bnsl"] = dict(feature_bound=bounds["feature_bound"])
    rows = []
    for method in methods:
        start = time.process_time()
        r = LEARNERS[method].run(
            parts, epsilon=epsilon, delta=DELTA, rng=np.random.default_rng([seed, 7]), **options[method]
        )
        cpu = time.process_time() - start
        skel, acc = skeleton_scores(B, r.W != 0), count_accuracy(B, r.W != 0)
        rows.append(
            dict(
                dataset=dataset,
                d=B.shape[0],
                seed=seed,
                epsilon=epsilon,
                method=method,
                family="constraint" if method in CONSTRAINT else "score",
                skeleton_f1=skel.f1,
                skeleton_precision=skel.precision,
                skeleton_recall=skel.recall,
                shd=acc.shd,
                cpu_s=round(cpu, 2),
            )
        )
        print(rows[-1], flush=True)
    return rows


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {m: f"C{k}" for k, m in enumerate(CONSTRAINT + SCORE)}
    panels = [
        ("sim-er20", "simulator, d = 20"),
        ("ecoli70", "ecoli70 (d = 46)"),
        ("alarm", "alarm (discrete)"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2))

    def curves(ax: Any, block: pd.DataFrame, x: str, title: str) -> None:
        """Mean ± sd of skeleton F1 over seeds against ``x``, one curve per method."""
        for method, g in block.groupby("method"):
            m = g.groupby(x)["skeleton_f1"].agg(["mean", "std"]).reset_index()
            style = "-o" if method in CONSTRAINT else "--s"
            ax.errorbar(
                m[x],
                m["mean"],
                yerr=m["std"].fillna(0),
                fmt=style,
                capsize=3,
                label=method,
                color=colours[method],
            )
        ax.set_title(title)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)

    for ax, (name, title) in zip(axes, panels):
        curves(ax, df[df["dataset"] == name], "epsilon", title)
        ax.set_xscale("log")
        ax.set_xlabel("ε (δ = 1e-5)")
    axes[0].set_ylabel("skeleton F1")
    sims = df[df["dataset"].str.startswith("sim-er") & (df["epsilon"] == 5.0)]
    curves(axes[3], sims, "d", "simulator, ε = 5: against d")
    axes[3].set_xlabel("d")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--epsilons", default="1,5,20")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--plot", action="store_true")
    a = p.parse_args()
    if not a.plot:
        tasks = [
            dict(dataset=name, seed=s, epsilon=float(e))
            for e in a.epsilons.split(",")
            for name in a.datasets.split(",")
            for s in range(a.seeds)
        ]
        _runner.run_tasks(run_one, tasks, CSV, key=("dataset", "seed", "epsilon"), jobs=a.jobs)
    df = pd.read_csv(CSV)
    table = df.groupby(["dataset", "epsilon", "method"])["skeleton_f1"].agg(_runner.mean_spread).unstack()
    _runner.print_table(table.reset_index())
    if a.plot:
        plot(df, OUT / "private_families.png")


if __name__ == "__main__":
    main()
