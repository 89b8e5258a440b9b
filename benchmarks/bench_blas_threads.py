"""The learners with BLAS's own thread count against one BLAS thread, in CPU seconds and wall time.

Each learner runs twice on the same data in the same process: inside ``learner_threads(None)``
(BLAS as it is: OpenBLAS uses every core by default) and inside ``learner_threads(1)`` (what the
learners do by default since they limit BLAS while they run). CPU seconds are the process's
(``time.process_time``, all threads), which a loaded machine disturbs far less than wall time; the
ratio is multithreaded over one-thread CPU. Run it without a thread count in the environment:

    env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS python benchmarks/bench_blas_threads.py [--dims 10,50]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import dpbnsl
from dpbnsl.blas import blas_threads, learner_threads, user_chose_threads


def _measure(fn: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="10,50")
    args = parser.parse_args()
    if user_chose_threads():
        raise SystemExit("unset OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS first")
    print(f"BLAS threads by default: {blas_threads()}")
    head = ("learner", "d", "many CPU-s", "one CPU-s", "ratio", "many wall", "one wall")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (14, 4, 11, 10, 6, 10, 9))))
    for d in (int(x) for x in args.dims.split(",")):
        data = dpbnsl.simulate(d, 10 * 200, participants=10, rng=1)
        pooled = np.vstack(data.participants)
        cases: dict[str, Callable[[], object]] = {
            "fed_bnsl": lambda: dpbnsl.fed_bnsl(data.participants, max_rounds=60),
            "dp_fed_bnsl": lambda: dpbnsl.dp_fed_bnsl(
                data.participants, epsilon=5.0, delta=1e-5, clip_norm=4 * d**0.5, max_rounds=60, rng=0
            ),
            "fed_sparse": lambda: dpbnsl.fed_sparse_bnsl(data.participants, rounds=20),
            "notears": lambda: dpbnsl.notears(pooled),
        }
        for name, fn in cases.items():
            with learner_threads(None):
                many = _measure(fn)
            with learner_threads(1):
                one = _measure(fn)
            print(
                f"{name:>14} {d:>4} {many[0]:>11.2f} {one[0]:>10.2f} {many[0] / one[0]:>6.2f} "
                f"{many[1]:>10.2f} {one[1]:>9.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
