"""DP-PGCD local iterations per second: the incremental solver against a naive full recomputation.

For each (d, n_k) the script runs K iterations of ``dpbnsl.learners.pgcd`` (O(n_k·d) per iteration
after an O(n_k·d²) start) and of ``_pgcd_naive.naive_dp_pgcd`` (O(n_k·d²) per iteration), both with
the same noise, and prints iterations per second (start-up excluded for the incremental solver by
timing two run lengths) and the ratio. Issue target: ≥ 5,000 iterations/s at d = 200, n_k = 200 on
one core, and ≥ 100× the naive baseline there. BLAS is pinned to one thread.

    python benchmarks/bench_dp_pgcd.py [--dims 20,50,100,200] [--n 100,200,1000]
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from dpbnsl.accounting import PrivacyLedger  # noqa: E402
from dpbnsl.learners._pgcd_naive import naive_dp_pgcd  # noqa: E402
from dpbnsl.learners.pgcd import PGCDNoise, pgcd  # noqa: E402


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="20,50,100,200")
    parser.add_argument("--n", default="100,200,1000")
    parser.add_argument("--iters", type=int, default=4000, help="incremental iterations")
    parser.add_argument("--naive-iters", type=int, default=20)
    args = parser.parse_args()
    print(f"{'d':>4} {'n_k':>5} {'start s':>8} {'incr it/s':>10} {'naive it/s':>11} {'ratio':>8}")
    for d in (int(x) for x in args.dims.split(",")):
        for n in (int(x) for x in args.n.split(",")):
            rng = np.random.default_rng(0)
            X = rng.normal(size=(n, d))
            m = (X ** 2).mean(axis=0)  # public constants for the benchmark
            Z = np.zeros((d, d))
            noise = PGCDNoise(clip=5.0, multiplier=50.0)
            kw = dict(lambda1=0.1, rho2=1.0, m=m, noise=noise)
            short = _time(lambda: pgcd(X, Z, Z, Z, iters=1, rng=np.random.default_rng(1),
                                       ledger=PrivacyLedger(), **kw))
            long = _time(lambda: pgcd(X, Z, Z, Z, iters=args.iters + 1,
                                      rng=np.random.default_rng(1), ledger=PrivacyLedger(), **kw))
            incr = args.iters / max(long - short, 1e-9)
            naive = args.naive_iters / _time(lambda: naive_dp_pgcd(
                X, Z, Z, Z, iters=args.naive_iters, rng=np.random.default_rng(1), **kw))
            print(f"{d:>4} {n:>5} {short:>8.3f} {incr:>10.0f} {naive:>11.1f} {incr / naive:>8.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
