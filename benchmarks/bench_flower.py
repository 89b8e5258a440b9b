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
                 init before it is first sampled is missed too (none did in our runs).
    ru_children  the same interval's ``resource.getrusage(RUSAGE_CHILDREN)`` (user + system), printed
                 for comparison: it only counts children that have been waited for, and grandchildren
                 only through a parent that waited for them, so it misses the Ray workers (children of
                 the raylet, killed at shut-down) and is not the tree's CPU time
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

``--reference`` prints a previous prototype's measurement (45.6 s on Flower vs 4.8 s in process) as
context only; it was not measured by this script.

Environment: before Flower loads the script sets ``FLWR_TELEMETRY_ENABLED=0``, ``FLWR_HOME`` to a fresh
temporary directory and ``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0``, and one BLAS thread
(``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1``, inherited by the Ray workers) unless one of
those is already set. Each Flower run takes about 25 s on 2 cores; the default (3 seeds) about 1.5 min.
"""

from __future__ import annotations

import os
import tempfile

# Flower and Ray read these when they load; BLAS reads its thread count when numpy loads.
os.environ["FLWR_TELEMETRY_ENABLED"] = "0"
os.environ["FLWR_HOME"] = tempfile.mkdtemp(prefix="bench_flower_flwr_home_")
os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if not any(v in os.environ for v in _BLAS_VARS):
    for _v in _BLAS_VARS:
        os.environ[_v] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpbnsl.learners.linear.fed_bnsl import fed_bnsl  # noqa: E402
from dpbnsl.simulation import simulate  # noqa: E402

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

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.root = os.getpid()
        self.seen: dict[tuple[int, int], float] = {}  # (pid, start) -> last utime + stime
        self.base: dict[tuple[int, int], float] = {}  # descendants alive at entry: their CPU then
        self.peak = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        table = _proc_table()
        pids = _descendants(table, self.root)
        self.peak = max(self.peak, len(pids))
        for pid in pids:
            _, start, cpu = table[pid]
            self.seen[(pid, start)] = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> TreeCPU:
        table = _proc_table()
        self.base = {(p, table[p][1]): table[p][2] for p in _descendants(table, self.root)}
        self._self0 = time.process_time()
        self._ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()  # whatever is still alive
        self._stop.set()
        self._thread.join()
        self.self_cpu = time.process_time() - self._self0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.ru_children = (ru.ru_utime - self._ru0.ru_utime) + (ru.ru_stime - self._ru0.ru_stime)
        self.children_cpu = sum(c - self.base.get(k, 0.0) for k, c in self.seen.items())
        self.n_children = len(self.seen)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=20, help="d, the number of variables")
    parser.add_argument("--participants", type=int, default=8, help="P, the number of participants")
    parser.add_argument("--rows", type=int, default=32, help="rows per participant")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. seeds-1")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between /proc samples")
    parser.add_argument("--no-reference", dest="reference", action="store_false")
    args = parser.parse_args()

    from dpbnsl.flower import simulate_on_flower  # after the environment above is set

    import flwr
    import ray

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

        with TreeCPU(args.interval) as cpu_ref:
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
                "n_kids": cpu_fl.n_children,
                "peak_kids": cpu_fl.peak,
                "ok": check["W_raw"] and check["kinds/rounds"] and check["payloads"],
            }
        )
        print(f"seed {seed}: {check}  descendants alive after the run: {cpu_fl.alive_after}")

    head = (
        "seed  rounds  in-proc wall s  in-proc cpu s  flower wall s  server s  flower cpu s "
        "(self + tree)  ru_children s  procs  wall ratio  cpu ratio  overhead/round s  start-up s  "
        "msg/round s  bitwise"
    )
    print()
    print(head)
    for r in rows:
        print(
            f"{r['seed']:>4}  {r['rounds']:>6}  {r['wall_ref']:>14.2f}  {r['cpu_ref']:>13.2f}  "
            f"{r['wall_fl']:>13.2f}  {r['server_fl']:>8.2f}  "
            f"{r['cpu_fl']:>6.2f} ({r['cpu_fl_self']:>5.2f} + {r['cpu_fl_kids']:>5.2f})  "
            f"{r['ru_kids']:>13.2f}  {r['n_kids']:>5}  {r['wall_fl'] / r['wall_ref']:>10.1f}  "
            f"{r['cpu_fl'] / r['cpu_ref']:>9.1f}  {(r['wall_fl'] - r['wall_ref']) / r['rounds']:>16.3f}  "
            f"{r['wall_fl'] - r['server_fl']:>10.2f}  "
            f"{(r['server_fl'] - r['wall_ref']) / r['rounds']:>11.3f}  {'yes' if r['ok'] else 'NO'}"
        )
    if len(rows) > 1:
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k not in ("seed", "ok")}
        rounds = sum(r["rounds"] for r in rows)
        print(
            f"mean  {mean['rounds']:>6.1f}  {mean['wall_ref']:>14.2f}  {mean['cpu_ref']:>13.2f}  "
            f"{mean['wall_fl']:>13.2f}  {mean['server_fl']:>8.2f}  "
            f"{mean['cpu_fl']:>6.2f} ({mean['cpu_fl_self']:>5.2f} + {mean['cpu_fl_kids']:>5.2f})  "
            f"{mean['ru_kids']:>13.2f}  {mean['n_kids']:>5.0f}  "
            f"{mean['wall_fl'] / mean['wall_ref']:>10.1f}  {mean['cpu_fl'] / mean['cpu_ref']:>9.1f}  "
            f"{sum(r['wall_fl'] - r['wall_ref'] for r in rows) / rounds:>16.3f}  "
            f"{mean['wall_fl'] - mean['server_fl']:>10.2f}  "
            f"{sum(r['server_fl'] - r['wall_ref'] for r in rows) / rounds:>11.3f}"
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
    shutil.rmtree(os.environ["FLWR_HOME"], ignore_errors=True)


if __name__ == "__main__":
    main()
