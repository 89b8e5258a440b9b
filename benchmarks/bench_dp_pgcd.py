"""DP-PGCD local iterations per second: the incremental solver against a naive full recomputation.

For each (d, n_k) the script runs K iterations of ``dpbnsl.learners.linear.pgcd`` (O(n_k·d) per iteration
after an O(n_k·d²) start) and of ``_pgcd_naive.naive_dp_pgcd`` (O(n_k·d²) per iteration), both with
the same noise (the same ``rng`` seed, drawn in the same order), and prints iterations per CPU
second (start-up excluded for the incremental solver by timing two run lengths) and the ratio.
Target: ≥ 15,000 iterations/s at d = 200, n_k = 200 in the worst case ("dense"), and ≥ 400× the
naive baseline there. Times are CPU seconds of this process (``time.process_time``), which a
loaded machine disturbs far less than wall time; BLAS is pinned to one thread.

An iteration whose update leaves B unchanged (a zero coordinate soft-thresholded back to zero)
costs only O(d), so speed depends on the regime: "sparse" (λ = 0.1, heavy noise, as in a private
run), "dense" (λ = 0, light noise: every iteration changes B, the worst case) and "clipped" (as
"dense" with the clip bound 1 instead of 5: most rows have a per-sample gradient at the clip
bound; every row is clipped in every regime, see ``dpbnsl.mechanisms.ClippedProductSums``). The
``changed`` column is the fraction of iterations that changed B. The clipping runs on the compiled
kernel when numba is installed (the ``fast`` extra); ``DPBNSL_KERNEL=numpy`` times the numpy one.

    python benchmarks/bench_dp_pgcd.py [--dims 20,50,100,200] [--n 100,200,1000] [--regimes ...]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from dpbnsl.blas import blas_threads, single_thread

# numpy first: threadpoolctl limits the BLAS libraries already loaded, and `import dpbnsl` is lazy
single_thread()

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.learners.linear._pgcd_naive import naive_dp_pgcd
from dpbnsl.learners.linear.pgcd import PGCDNoise, pgcd


def _cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


REGIMES = {
    # (λ, clip bound, noise multiplier): "sparse" as in a private run (an ℓ1 weight, heavy noise);
    # "dense": every iteration changes B; "clipped": as dense, with most rows at the clip bound
    "sparse": (0.1, 5.0, 50.0),
    "dense": (0.0, 5.0, 2.0),
    "clipped": (0.0, 1.0, 2.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="20,50,100,200")
    parser.add_argument("--n", default="100,200,1000")
    parser.add_argument("--regimes", default=",".join(REGIMES))
    parser.add_argument("--iters", type=int, default=4000, help="incremental iterations")
    parser.add_argument("--naive-iters", type=int, default=20)
    args = parser.parse_args()
    from dpbnsl.mechanisms import clip_kernel

    compile_s = _cpu(clip_kernel.backend)  # numba compiles its kernel once per process, here
    print(f"BLAS threads: {blas_threads()}; clip kernel: {clip_kernel.backend()} ({compile_s:.2f} s to load)")
    print(
        f"{'regime':>7} {'d':>4} {'n_k':>5} {'start s':>8} {'changed':>8} {'incr it/s':>10} "
        f"{'naive it/s':>11} {'ratio':>8}"
    )
    for regime in args.regimes.split(","):
        lam, clip, mult = REGIMES[regime]
        for d in (int(x) for x in args.dims.split(",")):
            for n in (int(x) for x in args.n.split(",")):
                rng = np.random.default_rng(0)
                X = rng.normal(size=(n, d))
                m = (X**2).mean(axis=0)  # public constants for the benchmark
                Z = np.zeros((d, d))
                kw = dict(lambda1=lam, rho2=1.0, m=m, noise=PGCDNoise(clip=clip, multiplier=mult))

                def incremental(iters: int, out: list | None = None) -> None:
                    r = pgcd(
                        X, Z, Z, Z, iters=iters, rng=np.random.default_rng(1), ledger=PrivacyLedger(), **kw
                    )
                    if out is not None:
                        out.append(r)

                result: list = []
                short = _cpu(lambda: incremental(1))
                long = _cpu(lambda: incremental(args.iters + 1, result))
                changed = result[0].changes / (args.iters + 1)  # iterations that changed B
                incr = args.iters / max(long - short, 1e-9)
                naive = args.naive_iters / max(
                    _cpu(
                        lambda: naive_dp_pgcd(
                            X, Z, Z, Z, iters=args.naive_iters, rng=np.random.default_rng(1), **kw
                        )
                    ),
                    1e-9,
                )
                print(
                    f"{regime:>7} {d:>4} {n:>5} {short:>8.3f} {changed:>8.0%} {incr:>10.0f} "
                    f"{naive:>11.1f} {incr / naive:>8.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
