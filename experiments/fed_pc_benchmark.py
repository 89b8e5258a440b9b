"""FedPC against PC-All, PC-Avg, PC-Best (oracle) and FedPC-Simple-I/II (FedPC §4).

Data sets (α = 0.01, voting ratio 0.3, all PCs in the "original" order-dependent variant as in the
authors' code, FedOrien with the union candidate set and |Z| ≤ 3):

- ``fedpc10``: the FedPC authors' 10-node linear-Gaussian benchmark (5000 rows, 15 edges) with
  their released partitions (consecutive row blocks) for N = 3, 5, 10, 15; Fisher-z. One run each
  (the partitions are fixed), so ``--seeds`` does not apply.
- ``sachs``: the cdt copy of the Sachs data packaged with dpbnsl, all nine conditions and cdt's
  18-edge graph (``load_sachs(condition="all", truth="cdt-18")``: 7466 rows, 11 proteins,
  log-transformed by default), rows shuffled and split unevenly (each participant ≥ n/(2N) rows)
  per seed; Fisher-z. SHD/F1 use the paper's per-pair counts (``pair_metrics``), which suit this
  cyclic reference graph (as does :func:`dpbnsl.count_accuracy`, by edges rather than pairs).
- ``discrete``: a random discrete network (20 nodes, 20 edges, 2–4 states, Dirichlet(1) CPTs),
  5000 forward samples, split as for Sachs; G² with the reference code's df and reliability rules.

Methods: FedPC (paper profile: vote c > 0.3N, max p-value sepsets, Dor–Tarsi extension),
FedPC-code (reference-code profile: vote c ≥ round(0.3N), layers ≤ 3, last-wins conflicts,
min-|r| sepsets for Fisher-z, max-parents extension), PC-All, PC-Avg (mean over participants),
PC-Best (oracle, lowest SHD), FedPC-Simple-I, FedPC-Simple-II. Metrics on the output DAG: SHD
(extra + missing + reversed), F1 of directed edges, skeleton F1, seconds.

    python experiments/fed_pc_benchmark.py [--datasets fedpc10,sachs,discrete] [--seeds 5] [--quick]
    python experiments/fed_pc_benchmark.py --summary-only
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
from _runner import mean_spread, print_table, run_tasks

from dpbnsl.graphs import dag_to_cpdag, is_dag
from dpbnsl.io.datasets import load_sachs
from dpbnsl.learners.constraint.fed_pc import fed_pc, fed_pc_simple_i, fed_pc_simple_ii, pc_all, pc_local
from dpbnsl.metrics import skeleton_scores
from dpbnsl.simulation.discrete import simulate_discrete
from dpbnsl.simulation.partition import split

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "results"
SHARED = ROOT.parent / "shared" / "data"
CLIENTS = (3, 5, 10, 15)


def pair_metrics(T: np.ndarray, A: np.ndarray) -> dict:
    """SHD and F1 per unordered pair (FedPC §4.1.2 and its ``evaluate.m``); works for a cyclic
    truth without 2-cycles. Correct: an estimated arrow that the truth has; reversed: an estimated
    edge with the truth's opposite direction; extra / missing: an edge on one side only."""
    T, A = T != 0, A != 0
    iu = np.triu_indices(T.shape[0], 1)
    t_any, a_any = (T | T.T)[iu], (A | A.T)[iu]
    correct = ((A & T) | (A.T & T.T))[iu]
    tp = int(correct.sum())
    reverse = int((t_any & a_any & ~correct).sum())
    extra, missing = int((a_any & ~t_any).sum()), int((t_any & ~a_any).sum())
    precision, recall = tp / max(int(a_any.sum()), 1), tp / max(int(t_any.sum()), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return dict(
        shd=reverse + extra + missing,
        f1=f1,
        skeleton_f1=skeleton_scores(T.astype(int), A.astype(int)).f1,
        nnz=int(A.sum()),
    )


def cpdag_shd(T: np.ndarray, cpdag: np.ndarray) -> float:
    """Pairs whose status (absent, i → j, j → i, undirected) differs between the true DAG's CPDAG
    and the estimated CPDAG; ``nan`` when the truth is cyclic (Sachs)."""
    if not is_dag(T):
        return float("nan")
    diff = dag_to_cpdag(T) != (np.asarray(cpdag) != 0)
    return float(np.triu(diff | diff.T, 1).sum())


def _uneven_split(X, N: int, rng: np.random.Generator):
    """Shuffle, then sizes n/(2N) + a Dirichlet-multinomial share of the rest (FedPC §4.1.1)."""
    n = X.shape[0]
    return split(X, N, uneven=True, min_size=n // (2 * N), shuffle=True, rng=rng)


def load(dataset: str, N: int, seed: int, sachs_transform: str):
    """Participants, truth and PC options for one task."""
    if dataset == "fedpc10":
        X = np.loadtxt(SHARED / "fedpc" / "10nodes_5000.txt")
        B = np.loadtxt(SHARED / "fedpc" / "10_DAG.txt").astype(int)
        sizes = np.loadtxt(SHARED / "fedpc" / f"10nodes_{N}clients_partition.txt").astype(int)
        return split(X, sizes=list(sizes)), B, dict(test="fisher-z")
    rng = np.random.default_rng(seed)
    if dataset == "sachs":
        # all nine conditions pooled (not the default observational block) and cdt's cyclic graph
        data, truth = load_sachs(condition="all", truth="cdt-18")
        X = np.log(data.to_numpy()) if sachs_transform == "log" else data.to_numpy()
        return _uneven_split(X, N, rng), truth.to_numpy(), dict(test="fisher-z")
    sim = simulate_discrete(20, 5000, s0=20, levels=list(rng.integers(2, 5, size=20)), rng=rng)
    return _uneven_split(sim.X, N, rng), sim.B_true, dict(test="g2")


def run_one(dataset: str, participants: int, seed: int, sachs_transform: str = "log") -> list[dict]:
    parts, B, opts = load(dataset, participants, seed, sachs_transform)
    base = dict(dataset=dataset, participants=participants, seed=seed)
    rows = []

    def metrics(res):
        cpdag = res.info.get("cpdag")
        if cpdag is None:  # Simple-I returns a DAG only: score the class of that DAG
            cpdag = dag_to_cpdag(res.W)
        return dict(pair_metrics(B, res.W), cpdag_shd=cpdag_shd(B, cpdag))

    def record(method, res, seconds):
        rows.append(dict(base, method=method, **metrics(res), seconds=seconds))

    t = time.perf_counter()
    record("FedPC", fed_pc(parts, **opts), time.perf_counter() - t)
    code = dict(
        vote_rule="code",
        max_cond_size=3,
        conflict="last",
        extension="max-parents",
        sepset_criterion="min-r" if opts["test"] == "fisher-z" else "max-p",
    )
    t = time.perf_counter()
    record("FedPC-code", fed_pc(parts, **opts, **code), time.perf_counter() - t)
    t = time.perf_counter()
    record("PC-All", pc_all(parts, variant="original", **opts), time.perf_counter() - t)
    t = time.perf_counter()
    local = pc_local(parts, variant="original", **opts)
    local_s = time.perf_counter() - t
    per = pd.DataFrame([metrics(res) for res in local.results])
    rows.append(dict(base, method="PC-Avg", **per.mean().to_dict(), seconds=local_s))
    best = int(np.argmin(per["shd"].to_numpy()))
    rows.append(dict(base, method="PC-Best (oracle)", **per.iloc[best].to_dict(), seconds=local_s))
    record("FedPC-Simple-I", fed_pc_simple_i(local=local), local_s)
    record("FedPC-Simple-II", fed_pc_simple_ii(local=local), local_s)
    return rows


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    out = (
        df.groupby(["dataset", "participants", "method"], sort=False)
        .agg(
            shd=("shd", mean_spread),
            f1=("f1", mean_spread),
            skeleton_f1=("skeleton_f1", mean_spread),
            cpdag_shd=("cpdag_shd", mean_spread),
            seconds=("seconds", "mean"),
            runs=("seed", "count"),
        )
        .reset_index()
    )
    out["seconds"] = out["seconds"].round(2)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="fedpc10,sachs,discrete")
    p.add_argument("--clients", default=",".join(map(str, CLIENTS)))
    p.add_argument("--seeds", type=int, default=5, help="random splits / networks (not fedpc10)")
    p.add_argument("--sachs-transform", choices=("log", "raw"), default="log")
    p.add_argument("--quick", action="store_true", help="N = 3, 10 and one seed")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--csv", type=Path, default=OUT / "fed_pc.csv")
    p.add_argument("--summary-only", action="store_true")
    a = p.parse_args()
    clients = (3, 10) if a.quick else tuple(int(c) for c in a.clients.split(","))
    seeds = 1 if a.quick else a.seeds
    tasks = [
        dict(dataset=ds, participants=N, seed=s, sachs_transform=a.sachs_transform)
        for ds in a.datasets.split(",")
        for N in clients
        for s in (range(1) if ds == "fedpc10" else range(seeds))
    ]
    if a.summary_only:
        df = pd.read_csv(a.csv)
    else:
        df = run_tasks(run_one, tasks, a.csv, key=("dataset", "participants", "seed"), jobs=a.jobs)
    print_table(summarise(df))


if __name__ == "__main__":
    main()
