"""Overhead of running Fed-BNSL on Flower's simulation engine against the same run in process.

Run from the repository root, in an environment with the ``flower`` extra (Flower + Ray)::

    python benchmarks/bench_flower.py                   # d = 20, 8 participants × 32 rows, seeds 0,1,2
    python benchmarks/bench_flower.py --seeds 1 --dims 10 --rows 64

For each seed the data are ``simulate(d, P·m, participants=P, rng=seed)`` and the script runs, in
this order and in the same process:

    in process   ``fed_bnsl(data.participants)`` (the baseline)
    Flower       ``simulate_on_flower("fed-bnsl", data.participants)``: Ray starts, one ClientApp actor
                 per CPU serves the P virtual nodes, the ServerApp drives the protocol, Ray shuts down

and prints, for both:

    wall s       ``time.perf_counter`` around the call (Flower: includes Ray start-up and shut-down)
    cpu s        CPU seconds (user + system) of the whole process tree: this process
                 (``time.process_time``) plus every descendant process (Ray's GCS, raylet, agents and
                 ClientApp workers), sampled from ``/proc/<pid>/stat`` every ``--interval`` seconds by a
                 thread while the call runs; each descendant counts with the last value seen.
                 Limits: CPU a descendant spends after its last sample (at most one interval's worth
                 per process) and processes living shorter than one interval are missed, so the
                 figure is a slight under-estimate; a process that leaves the tree by re-parenting to
                 init before it is first sampled is missed too (none did in our runs). The sampling
                 thread's own CPU time (``time.thread_time``, column ``sampler``) is left out of this
                 process's figure. The in-process baseline runs without the thread (nothing to sample).
    ru_children  the same interval's ``resource.getrusage(RUSAGE_CHILDREN)`` (user + system), printed
                 for comparison: it only counts children that have been waited for, and grandchildren
                 only through a parent that waited for them, so it misses the Ray workers (children of
                 the raylet, killed at shut-down) and is not the tree's CPU time
    procs        descendant processes seen during the call
    others       CPU seconds the rest of the machine used meanwhile (busy ticks of ``/proc/stat`` minus
                 cpu s): on a shared machine, how much of the cores other jobs took
    rounds       ``len(history)``
    server s     Flower only: ``run.seconds``, the ServerApp's own wall time from its first message to
                 the end

and the checks that the Flower run reproduced the in-process one bit for bit: ``np.array_equal`` of
``W_raw`` (and identical bytes and dtype), and of every message of the transcript (``to_dense()``), with
the same number of messages, the same kinds, rounds, senders and receivers in the same order. Then:

    overhead/round    (Flower wall − in-process wall) / rounds
    start-up          Flower wall − run.seconds (Ray start, node registration, shut-down)
    msg/round         (run.seconds − in-process wall) / rounds: the per-round cost of the Flower
                      messaging inside the ServerApp, start-up excluded

The script also prints a previous prototype's measurement (45.6 s on Flower vs 4.8 s in process) as
context only (``--no-reference`` drops it); it was not measured by this script.

Environment: before Flower loads the script sets ``FLWR_TELEMETRY_ENABLED=0``, ``FLWR_HOME`` to a fresh
temporary directory and ``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0``, and one BLAS thread
(``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1``, inherited by the Ray workers) unless one of
those is already set. Each Flower run takes about 23 s on 2 idle cores; the default (3 seeds) about 1.3 min.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Flower and Ray read these when they load; BLAS reads its thread count when numpy loads.
os.environ["FLWR_TELEMETRY_ENABLED"] = "0"
os.environ["FLWR_HOME"] = tempfile.mkdtemp(prefix="bench_flower_flwr_home_")
atexit.register(shutil.rmtree, os.environ["FLWR_HOME"], ignore_errors=True)
os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if not any(v in os.environ for v in _BLAS_VARS):
    for _v in _BLAS_VARS:
        os.environ[_v] = "1"

import argparse
import platform
import resource
import threading
import time

import numpy as np

from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.simulation import simulate

_TICK = os.sysconf("SC_CLK_TCK")
PROTOTYPE = (45.6, 4.8)  # a previous prototype's Flower / in-process seconds (context only)


def _proc_table() -> dict[int, tuple[int, int, float]]:
    """pid -> (ppid, start time in ticks, utime + stime in seconds) of every readable process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:  # gone since listdir
            continue
        rest = raw[raw.rindex(b")") + 2 :].split()  # the command name may hold spaces and ')'
        # rest[0] = state (field 3), so field k is rest[k - 3]
        table[int(name)] = (int(rest[1]), int(rest[19]), (int(rest[11]) + int(rest[12])) / _TICK)
    return table


def _machine_busy() -> float:
    """CPU seconds all processes on the machine have used since boot (/proc/stat: all but idle, iowait)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return f"{pid}:{fh.read().strip()}"
    except OSError:
        return f"{pid}:?"


def _descendants(table: dict[int, tuple[int, int, float]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


class TreeCPU:
    """CPU seconds of this process and its descendants over a ``with`` block (see the docstring)."""

    def __init__(self, interval: float | None) -> None:
        self.interval = interval  # None: no sampling thread (only the reads at entry and exit)
        self.root = os.getpid()
        self.seen: dict[tuple[int, int], float] = {}  # (pid, start) -> last utime + stime
        self.base: dict[tuple[int, int], float] = {}  # descendants alive at entry: their CPU then
        self.peak = 0
        self.sampler_cpu = 0.0  # the sampling's own CPU time (thread_time), left out of self_cpu
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        table = _proc_table()
        pids = _descendants(table, self.root)
        self.peak = max(self.peak, len(pids))
        for pid in pids:
            _, start, cpu = table[pid]
            self.seen[(pid, start)] = cpu

    def _loop(self) -> None:
        t0 = time.thread_time()
        while not self._stop.wait(self.interval):
            self._sample()
        self._loop_cpu = time.thread_time() - t0

    def __enter__(self) -> TreeCPU:
        table = _proc_table()
        self.base = {(p, table[p][1]): table[p][2] for p in _descendants(table, self.root)}
        self._self0 = time.process_time()
        self._ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._busy0 = _machine_busy()
        if self.interval is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        t0 = time.thread_time()
        self._sample()  # whatever is still alive
        self.sampler_cpu = time.thread_time() - t0
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.sampler_cpu += self._loop_cpu
        self.self_cpu = time.process_time() - self._self0 - self.sampler_cpu
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.ru_children = (ru.ru_utime - self._ru0.ru_utime) + (ru.ru_stime - self._ru0.ru_stime)
        self.children_cpu = sum(c - self.base.get(k, 0.0) for k, c in self.seen.items())
        self.n_children = len(self.seen)
        self.others = _machine_busy() - self._busy0 - self.total - self.sampler_cpu
        self.alive_after = [_comm(p) for p in _descendants(_proc_table(), self.root)]

    @property
    def total(self) -> float:
        return self.self_cpu + self.children_cpu


def _bitwise(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.array_equal(a, b) and a.dtype == b.dtype and a.tobytes() == b.tobytes())


def compare(ref, run) -> dict[str, object]:
    """Checks that the Flower run reproduced the in-process one."""
    t0, t1 = list(ref.transcript), list(run.transcript)
    same_meta = len(t0) == len(t1) and all(
        (a.round, a.kind, a.sender, a.receiver) == (b.round, b.kind, b.sender, b.receiver)
        for a, b in zip(t0, t1)
    )
    same_payloads = len(t0) == len(t1) and all(_bitwise(a.to_dense(), b.to_dense()) for a, b in zip(t0, t1))
    return {
        "W_raw": _bitwise(ref.W_raw, run.W_raw),
        "messages": (len(t0), len(t1)),
        "kinds/rounds": same_meta,
        "payloads": same_payloads,
        "rounds": (len(ref.history), len(run.history)),
    }


def _table(title: str, rows: list[dict], columns: list[tuple[str, str, str]]) -> None:
    cells = [[fmt.format(r[key]) for _, key, fmt in columns] for r in rows]
    widths = [max(len(head), *(len(c[i]) for c in cells)) for i, (head, _, _) in enumerate(columns)]
    print(f"\n{title}")
    print("  ".join(head.rjust(w) for (head, _, _), w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(x.rjust(w) for x, w in zip(c, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=20, help="d, the number of variables")
    parser.add_argument("--participants", type=int, default=8, help="P, the number of participants")
    parser.add_argument("--rows", type=int, default=32, help="rows per participant")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. seeds-1")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between /proc samples")
    parser.add_argument("--no-reference", dest="reference", action="store_false")
    args = parser.parse_args()

    import flwr
    import ray

    from dpbnsl.flower import simulate_on_flower  # after the environment above is set

    d, P, m = args.dims, args.participants, args.rows
    print(
        f"# Fed-BNSL on Flower's simulation engine vs in process: d = {d}, {P} participants × {m} rows; "
        f"python {platform.python_version()}, numpy {np.__version__}, flwr {flwr.__version__}, "
        f"ray {ray.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
        f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    rows, checks = [], []
    t_all = time.perf_counter()
    for seed in range(args.seeds):
        data = simulate(d, P * m, participants=P, rng=seed)

        with TreeCPU(None) as cpu_ref:  # in process: no descendants to sample
            t = time.perf_counter()
            ref = fed_bnsl(data.participants)
            wall_ref = time.perf_counter() - t
        with TreeCPU(args.interval) as cpu_fl:
            t = time.perf_counter()
            run = simulate_on_flower("fed-bnsl", data.participants)
            wall_fl = time.perf_counter() - t

        check = compare(ref, run)
        checks.append(check)
        rounds = len(ref.history)
        rows.append(
            {
                "seed": seed,
                "rounds": rounds,
                "wall_ref": wall_ref,
                "cpu_ref": cpu_ref.total,
                "wall_fl": wall_fl,
                "server_fl": run.seconds,
                "cpu_fl_self": cpu_fl.self_cpu,
                "cpu_fl_kids": cpu_fl.children_cpu,
                "cpu_fl": cpu_fl.total,
                "ru_kids": cpu_fl.ru_children,
                "sampler": cpu_fl.sampler_cpu,
                "others_ref": cpu_ref.others,
                "others_fl": cpu_fl.others,
                "n_kids": cpu_fl.n_children,
                "peak_kids": cpu_fl.peak,
                "ok": check["W_raw"] and check["kinds/rounds"] and check["payloads"],
            }
        )
        print(f"seed {seed}: {check}  descendants alive after the run: {cpu_fl.alive_after}")

    rounds_all = sum(r["rounds"] for r in rows)
    if len(rows) > 1:  # means; the per-round figures of the mean row are totals over all rounds
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k not in ("seed", "ok")}
        mean.update(seed="mean", ok=all(r["ok"] for r in rows), rounds=rounds_all / len(rows))
        rows.append(mean)
    for r in rows:
        r["wall_ratio"] = r["wall_fl"] / r["wall_ref"]
        r["cpu_ratio"] = r["cpu_fl"] / r["cpu_ref"]
        r["overhead"] = (r["wall_fl"] - r["wall_ref"]) / r["rounds"]
        r["startup"] = r["wall_fl"] - r["server_fl"]
        r["msg"] = (r["server_fl"] - r["wall_ref"]) / r["rounds"]
        r["bitwise"] = "yes" if r["ok"] else "NO"
    _table(
        "Table 1 — seconds (cpu: this process + its descendants; others: the rest of the machine meanwhile)",
        rows,
        [
            ("seed", "seed", "{}"),
            ("rounds", "rounds", "{:.0f}"),
            ("in-proc wall", "wall_ref", "{:.2f}"),
            ("in-proc cpu", "cpu_ref", "{:.2f}"),
            ("others", "others_ref", "{:.2f}"),
            ("flower wall", "wall_fl", "{:.2f}"),
            ("server", "server_fl", "{:.2f}"),
            ("flower cpu", "cpu_fl", "{:.2f}"),
            ("= self", "cpu_fl_self", "{:.2f}"),
            ("+ tree", "cpu_fl_kids", "{:.2f}"),
            ("ru_children", "ru_kids", "{:.2f}"),
            ("procs", "n_kids", "{:.0f}"),
            ("sampler", "sampler", "{:.2f}"),
            ("others", "others_fl", "{:.2f}"),
        ],
    )
    _table(
        "Table 2 — Flower against in process",
        rows,
        [
            ("seed", "seed", "{}"),
            ("wall ratio", "wall_ratio", "{:.1f}×"),
            ("cpu ratio", "cpu_ratio", "{:.1f}×"),
            ("overhead/round s", "overhead", "{:.3f}"),
            ("start-up s", "startup", "{:.2f}"),
            ("msg/round s", "msg", "{:.3f}"),
            ("bitwise equal", "bitwise", "{}"),
        ],
    )
    print()
    print(
        "bitwise equal (W_raw, every message's to_dense(), kinds, rounds, senders, receivers): "
        + ("all seeds" if all(r["ok"] for r in rows) else "NO — see the per-seed checks above")
    )
    if args.reference:
        print(
            f"context (not measured here): a previous prototype took {PROTOTYPE[0]} s on Flower vs "
            f"{PROTOTYPE[1]} s in process ({PROTOTYPE[0] / PROTOTYPE[1]:.1f}×)"
        )
    print(
        f"total benchmark time: {time.perf_counter() - t_all:.1f} s wall; load average "
        f"{os.getloadavg()[0]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
