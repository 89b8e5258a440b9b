"""Priv-PC: the package's implementation against the authors' code, same data, same ε.

For each network (alarm, child, insurance: the bnlearn networks shipped with the package), each
seed s (a fresh sample of n = 100,000 rows, ``sample_network(name, n, rng=s)``) and each per-round
ε of the authors' grid (``numpy.logspace(-2, 1.5, 21)``, their ``eval.py``):

* the authors' ``estimate_skeleton_probe_examine`` with their ``discondKendall`` test, α = 0.1
  (their one-sided p-value), δ = 10⁻³, their ``max_reach``, in a child process
  (``_priv_pc_peer.py``; needs ``--peer-python``, an interpreter with numpy, scipy, networkx and
  gsq, and ``--peer-src``, the ``src/`` directory of their repository). Their code takes ε per round
  and reports after the run the ε its rounds composed to (advanced composition, data-dependent);
* ``dpbnsl``'s :func:`~dpbnsl.learners.constraint.priv_pc.priv_pc` at the ε the authors' run
  reported for the same seed and data (capped at the package's ε ≤ 100), δ = 10⁻³, α = 0.2 (the
  same z threshold on a two-sided p-value), every other option at its default: calibrated before
  the run, with its rounds capped; and, as an ablation, the same learner with ``scale="p-value"``
  (it compares p-values with α as the authors' code does; column ``f1_p``).

Skeleton F1 against the network's true skeleton (both directions of an edge count once), and CPU
seconds of the skeleton search and orientation (imports and sampling excluded; ours: the z-scale
run), one BLAS thread.

    python benchmarks/bench_priv_pc_peer.py --peer-python PY --peer-src DIR --networks alarm --seeds 0,1,2,3,4
    python benchmarks/bench_priv_pc_peer.py --networks child --grid 0:8 --out results.csv

``--grid A:B`` runs the grid points A..B−1 only. ``--peer-results FILE`` reads the authors' runs
from a JSON the child process wrote (its jobs named the same samples) instead of running them.
Without the peer, ours runs at the grid's ε read as a total (no pairing).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # inherited by the child
    os.environ.setdefault(_var, "1")

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpbnsl.io.networks import sample_network
from dpbnsl.learners.constraint.priv_pc import priv_pc

PEER = Path(__file__).with_name("_priv_pc_peer.py")
GRID = np.logspace(-2, 1.5, num=21, base=10)
N = 100_000
DELTA = 1e-3


def skeleton_f1(edges: np.ndarray, truth: np.ndarray) -> float:
    """F1 of the undirected edge sets of two adjacency matrices."""
    a, b = (edges + edges.T) > 0, (truth + truth.T) > 0
    iu = np.triu_indices(len(a), 1)
    a, b = a[iu], b[iu]
    tp = int((a & b).sum())
    return 1.0 if a.sum() + b.sum() == 0 else 2.0 * tp / (a.sum() + b.sum())


def run_peer(python: str, src: str, jobs: list[dict], out: Path) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "jobs.json")
        path.write_text(json.dumps(jobs))
        subprocess.run([python, str(PEER), src, str(path), str(out)], check=True, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default="alarm")
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--grid", default="0:21", help="grid points A:B of the authors' 21")
    p.add_argument("--peer-python", default=os.environ.get("DPBNSL_PEER_PYTHON"))
    p.add_argument("--peer-src", default=os.environ.get("DPBNSL_PEER_SRC"))
    p.add_argument("--peer-results", help="the authors' runs, as _priv_pc_peer.py wrote them")
    p.add_argument("--out", help="write the per-run rows to this CSV")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    lo, hi = (int(v) for v in a.grid.split(":"))
    grid = [float(e) for e in GRID[lo:hi]]
    peer = bool(a.peer_python and a.peer_src) or bool(a.peer_results)
    if not peer:
        print("(no --peer-python/--peer-src: the authors' code is not run)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.networks.split(","):
            samples = {}
            for s in seeds:
                sample = sample_network(name, N, rng=s)
                path = Path(tmp, f"{name}_{s}.npy")
                np.save(path, sample.X.astype(np.int64))
                samples[s] = (sample, path)
            jobs = [
                dict(data=str(samples[s][1]), epsilon=e, delta=DELTA, alpha=0.1, seed=s, network=name)
                for e in grid
                for s in seeds
            ]
            if a.peer_results:
                wanted = {(j["seed"], round(j["epsilon"], 12)) for j in jobs}
                results = [
                    r
                    for r in json.loads(Path(a.peer_results).read_text())
                    if r.get("network") == name and (r["seed"], round(r["epsilon"], 12)) in wanted
                ]
            elif peer:
                results = run_peer(a.peer_python, a.peer_src, jobs, Path(tmp, "peer.json"))
            else:
                results = jobs
            for res in results:
                sample = samples[res["seed"]][0]
                truth = sample.B_true
                d = truth.shape[0]
                row = dict(network=name, seed=res["seed"], round_epsilon=res["epsilon"])
                if peer:
                    A = np.zeros((d, d), int)
                    for i, j in res["edges"]:
                        A[i, j] = 1
                    row.update(
                        peer_epsilon=res["reported_epsilon"],
                        peer_f1=skeleton_f1(A, truth),
                        peer_edges=len(res["edges"]),
                        peer_cpu=res["cpu"],
                        peer_tests=res["tests"],
                    )
                target = min(res.get("reported_epsilon", res["epsilon"]), 100.0)
                start = time.process_time()
                r = priv_pc(
                    sample.X, epsilon=target, delta=DELTA, rng=np.random.default_rng([res["seed"], 7])
                )
                cpu = time.process_time() - start
                row.update(
                    epsilon=target,
                    f1=skeleton_f1(r.info["skeleton"], truth),
                    edges=int(r.info["skeleton"].sum() // 2),
                    cpu=cpu,
                    examinations=r.info["examinations"],
                    exhausted=r.info["exhausted"],
                )
                # the ablation: the same learner comparing p-values, as the authors' code does
                r = priv_pc(
                    sample.X,
                    epsilon=target,
                    delta=DELTA,
                    scale="p-value",
                    rng=np.random.default_rng([res["seed"], 7]),
                )
                row.update(f1_p=skeleton_f1(r.info["skeleton"], truth))
                rows.append(row)
                print(
                    " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                    flush=True,
                )
    df = pd.DataFrame(rows)
    if a.out:
        df.to_csv(a.out, index=False)
    cols = ["f1", "f1_p", "cpu"] + (["peer_f1", "peer_cpu", "peer_epsilon"] if peer else [])
    summary = df.groupby(["network", "round_epsilon"])[cols].agg(["mean", "std"])
    print(summary.to_string(float_format=lambda v: f"{v:.3g}"))
    if peer:
        ratio = df["peer_cpu"].sum() / df["cpu"].sum()
        print(
            f"CPU seconds: ours {df['cpu'].sum():.1f}, the authors' {df['peer_cpu'].sum():.1f} ({ratio:.1f}×)"
        )
        print("F1 mean ours − theirs:", statistics.mean(df["f1"] - df["peer_f1"]))


if __name__ == "__main__":
    main()
