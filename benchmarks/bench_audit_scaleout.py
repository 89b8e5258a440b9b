"""Scale-out of the whole-protocol audit game: ``dp-fed-sparse-bnsl`` in seeded blocks on 1 and 2 worker
processes, against the same blocks run one after the other in this process.

Run from the repository root::

    python benchmarks/bench_audit_scaleout.py                 # N = 2000 per world, 1,2 workers
    python benchmarks/bench_audit_scaleout.py --trials 400 --chunk 2 --workers 1,2,4
    python benchmarks/bench_audit_scaleout.py --dask          # also on a dask LocalCluster
                                                              # (needs dask[distributed])

Every configuration calls ``dpbnsl.audits.parallel.play("dp-fed-sparse-bnsl", epsilon, delta,
trials=N, rng=seed, executor=..., chunk=C)``, which cuts the N trials per world into the game's
seeded blocks of B = 200 (``SEED_BLOCKS``), each drawing from its own child stream of the seed, and
runs C blocks per task, so the scores must not depend on the executor or on C:

    serial       ``executor=None``: the same blocks in this process (the baseline)
    pool w       ``concurrent.futures.ProcessPoolExecutor(w)`` (start method ``--start-method``, default
                 fork), created and warmed up (one trivial task per worker) before the clock starts
    dask w       ``distributed.LocalCluster(n_workers=w, threads_per_worker=1, processes=True)`` through
                 ``Client.get_executor()``; cluster started and every worker warmed up (one 1-trial
                 game each) before the clock starts

Before anything is timed this process plays one 1-trial game, so the game's per-process set-up (noise
calibration and the accountant for the claimed ε, cached afterwards) is not in the serial figure; the
fork-started pools inherit that cache, the dask workers build theirs in their warm-up game.

Columns:

    wall s         ``time.perf_counter`` around the ``play`` call
    ms/trial       wall s / N × 1000 (one trial = one run of the protocol in each of the two worlds)
    cpu s          CPU seconds (user + system) over the same interval of this process
                   (``time.process_time``) plus every worker process, read from ``/proc/<pid>/stat``
                   before and after (the workers are alive at both reads, so nothing is missed)
    cpu/wall       cores kept busy on average
    others cpu s   CPU seconds the rest of the machine used meanwhile (busy ticks of /proc/stat minus
                   cpu s, so it includes the dask scheduler and nanny processes): on a shared machine,
                   how much of the 2 cores other jobs took
    vs serial      serial wall / wall
    vs 1 worker    the same executor's 1-worker wall / wall (the scale-out speed-up)
    10^5 trials    projected wall time of 10^5 trials per world at the measured rate (wall / N × 10^5)
    identical      scores0 and scores1 bitwise equal (same dtype, same bytes) to the serial run's

BLAS is pinned to one thread in this process (``dpbnsl.blas.single_thread``); worker processes pin
themselves (``dpbnsl.tasks``). The default takes about 1 minute on 2 idle cores (serial and the
1-worker pool about 21 s each, the 2-worker pool about 11 s), plus about 40 s with ``--dask``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, wait

from dpbnsl.blas import single_thread

single_thread()

import numpy as np

from dpbnsl.audits.parallel import SEED_BLOCKS, play

GAME = "dp-fed-sparse-bnsl"
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pids) -> float:
    """utime + stime in seconds summed over ``pids`` (from /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        rest = raw[raw.rindex(b")") + 2 :].split()  # rest[k - 3] is field k of proc(5)
        total += int(rest[11]) + int(rest[12])
    return total / _TICK


def _machine_busy() -> float:
    """CPU seconds all processes on the machine have used since boot (/proc/stat: all but idle, iowait)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def _noop() -> int:
    return os.getpid()


def _warm(epsilon: float, delta: float) -> int:
    """One 1-trial game: the per-process set-up of the game (calibration, accountant) happens here."""
    play(GAME, epsilon=epsilon, delta=delta, trials=1, rng=12345)
    return os.getpid()


def _timed(args, executor, pids) -> dict:
    cpu0, kids0, busy0 = time.process_time(), _cpu_of(pids), _machine_busy()
    t = time.perf_counter()
    g = play(
        GAME,
        epsilon=args.epsilon,
        delta=args.delta,
        trials=args.trials,
        rng=args.seed,
        executor=executor,
        chunk=args.chunk,
    )
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu0 + _cpu_of(pids) - kids0
    others = _machine_busy() - busy0 - cpu
    scores = (g.scores0, g.scores1)
    return {"wall": wall, "cpu": cpu, "others": others, "scores": scores, "blocks": g.details["blocks"]}


def _same(a, b) -> bool:
    return all(
        x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y) and x.tobytes() == y.tobytes()
        for x, y in zip(a, b)
    )


def run_pool(args, w: int) -> dict:
    ctx = multiprocessing.get_context(args.start_method)
    with ProcessPoolExecutor(w, mp_context=ctx) as pool:
        wait([pool.submit(_noop) for _ in range(w)])  # fork: all w workers start on the first submit
        pids = list(pool._processes)  # the workers (alive until the pool shuts down)
        assert len(pids) == w, pids
        return _timed(args, pool, pids)


def run_dask(args, w: int) -> dict:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=w,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(w)
        pids = list(client.run(_warm, args.epsilon, args.delta).values())
        return _timed(args, client.get_executor(), pids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="N, trials per world")
    parser.add_argument("--chunk", type=int, default=1, help="C, seeded blocks per task")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-method", default="fork", choices=("fork", "spawn", "forkserver"))
    parser.add_argument("--dask", action="store_true", help="also run on a distributed.LocalCluster")
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    if args.dask:
        import distributed  # noqa: F401  (fail before the long runs if it is missing)

    print(
        f"# audit game {GAME!r} in blocks: N = {args.trials} trials per world, "
        f"B = {SEED_BLOCKS[GAME]}, C = {args.chunk}, "
        f"ε = {args.epsilon}, δ = {args.delta:g}, seed {args.seed}; python {platform.python_version()}, "
        f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"
    )
    t_all = time.perf_counter()
    _warm(args.epsilon, args.delta)
    rows = [("serial", 0, _timed(args, None, []))]
    for w in workers:
        rows.append(("pool", w, run_pool(args, w)))
    if args.dask:
        for w in workers:
            rows.append(("dask", w, run_dask(args, w)))

    ref = rows[0][2]
    one = {kind: r["wall"] for kind, w, r in rows if w == 1}
    n = args.trials
    table = []
    for kind, w, r in rows:
        table.append(
            [
                kind,
                str(w) if w else "-",
                str(r["blocks"]),
                f"{r['wall']:.2f}",
                f"{r['wall'] / n * 1e3:.2f}",
                f"{r['cpu']:.2f}",
                f"{r['cpu'] / r['wall']:.2f}",
                f"{r['others']:.2f}",
                f"{ref['wall'] / r['wall']:.2f}×",
                f"{one[kind] / r['wall']:.2f}×" if kind in one else "-",
                f"{r['wall'] / n * 1e5 / 60:.1f} min",
                "yes" if _same(r["scores"], ref["scores"]) else "NO",
            ]
        )
    heads = [
        "executor",
        "workers",
        "blocks",
        "wall s",
        "ms/trial",
        "cpu s",
        "cpu/wall",
        "others cpu s",
        "vs serial",
        "vs 1 worker",
        "10^5 trials",
        "identical",
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(heads)]
    print()
    print("  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print("  ".join(x.rjust(w) for x, w in zip(row, widths)))
    same = all(_same(r["scores"], ref["scores"]) for _, _, r in rows)
    print(f"\nscores0/scores1 bitwise identical across all executors: {'yes' if same else 'NO'}")
    print(
        f"total benchmark time: {time.perf_counter() - t_all:.1f} s wall; load average "
        f"{os.getloadavg()[0]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
