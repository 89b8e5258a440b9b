"""Nonlinear federated learners: seconds per round and per local step at d ∈ {10, 20, 40}.

One entry point for the two nonlinear protocols; each part is its own script with its own options
and column definitions in its docstring:

* **NOTEARS-MLP-ADMM** (``bench_nonlinear_mlp.py``): P = 8 participants, n = 512 rows, the first
  rounds of ``fed_bnsl_mlp``, split into local and server time; baseline in the same run: the
  loss and gradient computed node by node in a Python loop.
* **DS-FCD** (``bench_ds_fcd.py``): 10 participants × 600 rows, Table 6's ``it_fl = 200`` local
  Adam steps per round; baseline in the same run: a per-node float64 implementation.

Run from the repository root::

    python benchmarks/bench_nonlinear.py                   # both, d = 10, 20, 40 (~2 min idle)
    python benchmarks/bench_nonlinear.py --dims 10 --only fcd
    python benchmarks/bench_nonlinear.py --measure-round   # also time one real DS-FCD round

BLAS threads are pinned to 1 unless already set (the two parts set it the same way).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

from dpbnsl.blas import blas_threads, single_thread

single_thread()

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_ds_fcd
import bench_nonlinear_mlp


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="10,20,40")
    p.add_argument("--only", choices=("admm", "fcd"), default=None, help="run one of the two parts")
    p.add_argument("--rounds", type=int, default=3, help="NOTEARS-MLP-ADMM rounds timed")
    p.add_argument("--steps", type=int, default=10, help="DS-FCD local steps timed")
    p.add_argument(
        "--measure-round",
        action="store_true",
        help="DS-FCD: time one real round (200 steps) besides the extrapolation",
    )
    a = p.parse_args(argv)
    print(
        f"# Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}, BLAS threads {blas_threads()}"
    )
    if a.only in (None, "admm"):
        print("\n## NOTEARS-MLP-ADMM (fed_bnsl_mlp)\n", flush=True)
        bench_nonlinear_mlp.main(["--dims", a.dims, "--rounds", str(a.rounds)])
    if a.only in (None, "fcd"):
        print("\n## DS-FCD (ds_fcd)\n", flush=True)
        bench_ds_fcd.main(
            ["--dims", a.dims, "--steps", str(a.steps)] + (["--measure-round"] if a.measure_round else [])
        )


if __name__ == "__main__":
    main()
