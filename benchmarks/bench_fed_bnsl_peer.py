"""Fed-BNSL against the authors' NOTEARS-ADMM, and against its own exact-W-step configuration.

Same data for every solver: an ER graph with d edges, Gaussian noise, weights ±[0.5, 2]
(``dpbnsl.simulation.simulate``), split evenly over P participants (the authors' example: d = 20,
P = 8 × 32 rows). Three solvers per data set, CPU seconds of the solve only (imports excluded):

* ``fed_bnsl`` as shipped: inexact W-steps (L-BFGS-B tolerance tied to the consensus gap) and the
  stall-aware stopping rule;
* ``exact``: the same code with every W-step solved to scipy's default tolerance and the earlier
  stopping rule (both ρ saturated, or h ≤ h_tol and gap ≤ gap_tol) — what the package did before;
* the authors' reference code (PyTorch), in a child process, when ``--peer-python`` (an interpreter
  with PyTorch) and ``--peer-repo`` (a checkout holding ``notears_admm/``) are given. It has no early
  stop (197 rounds) and puts the ℓ1 term into L-BFGS-B unsplit.

SHD is computed the same way for all three: |w| ≤ 0.3 removed, then the weakest edges until acyclic.

    python benchmarks/bench_fed_bnsl_peer.py --peer-python PY --peer-repo DIR
    python benchmarks/bench_fed_bnsl_peer.py --dims 20,50 --seeds 0,1,2 --participants 8 --rows 32
    python benchmarks/bench_fed_bnsl_peer.py --dims 100 --participants 10 --rows 30 --seeds 0
    python benchmarks/bench_fed_bnsl_peer.py --private 5 --dims 200 --participants 10 --rows 1000

``--private EPS`` times DP-Fed-BNSL instead (ε = EPS, δ = 10⁻⁵, rows clipped to norm 10, one
covariance release per participant, then the same server): no exact or peer column.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # inherited by the child
    os.environ.setdefault(_var, "1")

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from dpbnsl.graphs import threshold, threshold_to_dag
from dpbnsl.learners.admm import ConsensusServer, PenaltySchedule, converged_stop
from dpbnsl.learners.linear import hosted_fed_bnsl
from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.metrics import count_accuracy
from dpbnsl.simulation import simulate

PEER = Path(__file__).with_name("_notears_admm_peer.py")


def _exact_server(
    P: int, d: int, schedule: PenaltySchedule, *, lambda1: float, h_tol: float, gap_tol: float
) -> ConsensusServer:
    """The server before inexact W-steps and the stall branch of the stopping rule."""

    stop = converged_stop(schedule, h_tol=h_tol, gap_tol=gap_tol)
    return ConsensusServer(P, d, schedule, lambda1=lambda1, stop=stop)


def run_private(parts: list[np.ndarray], *, epsilon: float, seed: int) -> tuple[float, int, np.ndarray]:
    start = time.process_time()
    result = dp_fed_bnsl(parts, epsilon=epsilon, delta=1e-5, clip_norm=10.0, rng=1000 + seed)
    return time.process_time() - start, len(result.history), result.W


def run_ours(parts: list[np.ndarray], *, exact: bool) -> tuple[float, int, np.ndarray]:
    shipped = hosted_fed_bnsl.make_server
    if exact:
        hosted_fed_bnsl.make_server = _exact_server  # type: ignore[assignment]
    try:
        start = time.process_time()
        result = fed_bnsl(parts)
        cpu = time.process_time() - start
    finally:
        hosted_fed_bnsl.make_server = shipped  # type: ignore[assignment]
    return cpu, len(result.history), result.W


def run_peer(python: str, repo: str, parts: list[np.ndarray]) -> tuple[float, np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp, "data.npz"), Path(tmp, "out.npz")
        np.savez(data, Xs=np.stack(parts))
        subprocess.run([python, str(PEER), repo, str(data), str(out)], check=True, stderr=subprocess.DEVNULL)
        got = np.load(out)
        return float(got["cpu"]), threshold_to_dag(threshold(got["W"], threshold=0.3))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="20,50")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--participants", type=int, default=8)
    p.add_argument("--rows", type=int, default=32, help="rows per participant")
    p.add_argument("--peer-python", default=os.environ.get("DPBNSL_PEER_PYTHON"))
    p.add_argument("--peer-repo", default=os.environ.get("DPBNSL_PEER_REPO"))
    p.add_argument("--no-exact", action="store_true", help="skip the exact-W-step configuration")
    p.add_argument("--private", type=float, default=None, metavar="EPS", help="time DP-Fed-BNSL at ε")
    a = p.parse_args()
    if a.private is not None:
        print(f"DP-Fed-BNSL, ε = {a.private}, δ = 1e-5, clip norm 10")
        print(f"{'d':>4} {'seed':>4} | {'CPU s':>7} {'rnds':>4} {'SHD':>4}")
        for d in (int(v) for v in a.dims.split(",")):
            for seed in (int(v) for v in a.seeds.split(",")):
                data = simulate(d, a.participants * a.rows, participants=a.participants, rng=seed)
                with warnings.catch_warnings():  # the clip-norm scale warning: expected here
                    warnings.simplefilter("ignore")
                    cpu, rounds, W = run_private(list(data.participants), epsilon=a.private, seed=seed)
                shd = count_accuracy(W, data.W_true).shd
                print(f"{d:4d} {seed:4d} | {cpu:7.1f} {rounds:4d} {shd:4d}", flush=True)
        return
    peer = bool(a.peer_python and a.peer_repo)
    if not peer:
        print("(no --peer-python/--peer-repo: the authors' code is not run)")
    print(
        f"{'d':>4} {'seed':>4} | {'ours s':>7} {'rnds':>4} {'SHD':>4} | {'exact s':>7} {'rnds':>4} "
        f"{'SHD':>4} {'×':>5} | {'peer s':>7} {'SHD':>4} {'×':>5}"
    )
    ratios: dict[str, list[float]] = {"exact": [], "peer": []}
    for d in (int(v) for v in a.dims.split(",")):
        for seed in (int(v) for v in a.seeds.split(",")):
            data = simulate(d, a.participants * a.rows, participants=a.participants, rng=seed)
            parts = list(data.participants)

            def shd(W: np.ndarray) -> int:
                return count_accuracy(W, data.W_true).shd

            cpu, rounds, W = run_ours(parts, exact=False)
            line = f"{d:4d} {seed:4d} | {cpu:7.2f} {rounds:4d} {shd(W):4d} | "
            if a.no_exact:
                line += f"{'':7} {'':4} {'':4} {'':5} | "
            else:
                cpu_x, rounds_x, W_x = run_ours(parts, exact=True)
                ratios["exact"].append(cpu_x / cpu)
                line += f"{cpu_x:7.2f} {rounds_x:4d} {shd(W_x):4d} {cpu_x / cpu:5.1f} | "
            if peer:
                cpu_p, W_p = run_peer(a.peer_python, a.peer_repo, parts)
                ratios["peer"].append(cpu_p / cpu)
                line += f"{cpu_p:7.2f} {shd(W_p):4d} {cpu_p / cpu:5.1f}"
            print(line, flush=True)
    for name, r in ratios.items():
        if r:
            print(
                f"median ratio {name}/ours: {statistics.median(r):.1f} (min {min(r):.1f}, max {max(r):.1f})"
            )


if __name__ == "__main__":
    sys.exit(main())
