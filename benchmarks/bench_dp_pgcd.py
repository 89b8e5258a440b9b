"""DP-PGCD local iterations per second: the incremental solver against a naive full recomputation.

For each (d, n_k) the script runs K iterations of ``dpbnsl.learners.linear.pgcd`` (O(n_k·d) per iteration
after an O(n_k·d²) start) and of ``_pgcd_naive.naive_dp_pgcd`` (O(n_k·d²) per iteration), both with
the same noise, and prints iterations per second (start-up excluded for the incremental solver by
timing two run lengths) and the ratio. Issue target: ≥ 5,000 iterations/s at d = 200, n_k = 200 on
one core, and ≥ 100× the naive baseline there. An iteration whose update leaves B unchanged (a
zero coordinate soft-thresholded back to zero) costs only O(d), so speed depends on the regime:
"sparse" (λ = 0.1, heavy noise, as in a private run) and "dense" (λ = 0, light noise: every
iteration changes B, the worst case). The ``changed`` column is the fraction that changed B.
BLAS is pinned to one thread.

    python benchmarks/bench_dp_pgcd.py [--dims 20,50,100,200] [--n 100,200,1000]
"""

from __future__ import annotations

import argparse
import time

from dpbnsl.blas import single_thread

single_thread()

import numpy as np

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.learners.linear._pgcd_naive import naive_dp_pgcd
from dpbnsl.learners.linear.pgcd import PGCDNoise, pgcd


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


REGIMES = {
    # λ and noise multiplier: "sparse" as in a private run (most selected coordinates are
    # soft-thresholded back to zero, so B does not change); "dense": every iteration changes B
    "sparse": (0.1, 50.0),
    "dense": (0.0, 2.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="20,50,100,200")
    parser.add_argument("--n", default="100,200,1000")
    parser.add_argument("--iters", type=int, default=4000, help="incremental iterations")
    parser.add_argument("--naive-iters", type=int, default=20)
    args = parser.parse_args()
    print(
        f"{'regime':>7} {'d':>4} {'n_k':>5} {'start s':>8} {'changed':>8} {'incr it/s':>10} "
        f"{'naive it/s':>11} {'ratio':>8}"
    )
    for regime, (lam, mult) in REGIMES.items():
        for d in (int(x) for x in args.dims.split(",")):
            for n in (int(x) for x in args.n.split(",")):
                rng = np.random.default_rng(0)
                X = rng.normal(size=(n, d))
                m = (X**2).mean(axis=0)  # public constants for the benchmark
                Z = np.zeros((d, d))
                kw = dict(lambda1=lam, rho2=1.0, m=m, noise=PGCDNoise(clip=5.0, multiplier=mult))
                short = _time(
                    lambda: pgcd(
                        X, Z, Z, Z, iters=1, rng=np.random.default_rng(1), ledger=PrivacyLedger(), **kw
                    )
                )
                result = []
                long = _time(
                    lambda: result.append(
                        pgcd(
                            X,
                            Z,
                            Z,
                            Z,
                            iters=args.iters + 1,
                            rng=np.random.default_rng(1),
                            ledger=PrivacyLedger(),
                            **kw,
                        )
                    )
                )
                changed = result[0].changes / (args.iters + 1)  # iterations that changed B
                incr = args.iters / max(long - short, 1e-9)
                naive = args.naive_iters / _time(
                    lambda: naive_dp_pgcd(
                        X, Z, Z, Z, iters=args.naive_iters, rng=np.random.default_rng(1), **kw
                    )
                )
                print(
                    f"{regime:>7} {d:>4} {n:>5} {short:>8.3f} {changed:>8.0%} {incr:>10.0f} "
                    f"{naive:>11.1f} {incr / naive:>8.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
