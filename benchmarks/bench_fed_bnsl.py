"""Benchmark Fed-BNSL (``dpbnsl.learners.linear.fed_bnsl``): where the time of a run goes.

Run from the repository root::

    python benchmarks/bench_fed_bnsl.py                      # defaults: d = 10,20,50,100, P = 10, n = 3d
    python benchmarks/bench_fed_bnsl.py --dims 10,20 --seeds 3
    python benchmarks/bench_fed_bnsl.py --cap 100:20          # quick: d = 100 capped at 20 rounds
    python benchmarks/bench_fed_bnsl.py --n-per-participant 50 --blas-threads 0

Setting (Fed-BNSL §6.1): ER graph with d edges, weights ±[0.5, 2], Gaussian noise, ``n = 3d`` samples
in total split evenly over ``P = 10`` participants (``--n`` for a fixed total, ``--n-per-participant``
for ``P·m`` in total). Everything runs in one process, so "participant time" is the sum over the P
participants of their (sequential) local steps.

Table 1 (end-to-end run of ``fed_bnsl`` with its default parameters):
    rounds      rounds run (the default schedule saturates after 197 rounds unless h and the
                consensus gap reach their tolerances earlier; ``--max-rounds`` and ``--cap`` bound it)
    s/run       wall time of the ``fed_bnsl(...)`` call
    cpu s/run   process CPU time of that call (wall >> CPU means the machine was busy with other work)
    s/round     mean of ``result.history["seconds"]`` (round-loop time per round)
    local       participant side per round: all P ``CovarianceParticipant.__call__`` (timed by a wrapper)
    server      server side per round: ``_Server.__call__`` (timed by a wrapper)
    other       s/round − local − server (message records, transcript appends, payload copies)
    evals/rnd   calls of ``_admm._objective`` per round (counted by a wrapper) = L-BFGS-B
                function+gradient evaluations of the server W-step; each costs one expm
    ms/eval     mean wall time of one ``_objective`` call inside the run
    obj%        share of the server time spent inside ``_objective``
    MB          ``result.transcript.total_mb`` (dense d×d float64 both ways: 2·P·T·d²·8 bytes)

Table 2 (micro-benchmarks at each d, same process, median of repeated timings):
    eigh ms     one-off ``np.linalg.eigh(S_k)`` a participant does before round 0
    eig-step    the local step as implemented: ``Q @ ((Qᵀ M) / (Λ + ρ₂)[:, None])`` with
                ``M = ρ₂W − β + S_k`` (two matrix products)
    solve-step  the naive local step ``np.linalg.solve(S_k + ρ₂I, ρ₂W − β + S_k)``
    ratio       solve-step / eig-step (> 1: the implemented step is faster per round)
    break-even  rounds after which the eigendecomposition has paid for itself
    h(W) ms     one ``dpbnsl.graphs.acyclicity`` call (one ``scipy.linalg.expm``) at the run's final W
    evals/rnd   repeated from table 1; ``expm s/rnd`` = evals/rnd × h(W) ms, the server's expm cost

Table 3 (BLAS threading check, child processes): ms per ``acyclicity`` call and seconds of a short
``fed_bnsl`` run with 1 BLAS thread and with the BLAS library's default (OpenBLAS: one thread per
CPU). Skipped with ``--no-blas-check``.

BLAS threads: this script runs with ``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1`` unless
one of them is already set or ``--blas-threads`` says otherwise (``--blas-threads 0`` leaves the
environment alone). The matrices here are at most 100×100, too small to gain from threads, and on a
2-core machine whose other core is busy a threaded OpenBLAS spends milliseconds per call waiting for
its second thread (table 3 measures this).

Runtime: with 1 BLAS thread the default (full schedule at d = 10, 20, 50, 100) takes about 8 minutes on
2 cores, most of it d = 100 (~5 min). ``--cap 100:20`` caps d = 100 at 20 rounds; a capped run
measures the *first* rounds only, which are much cheaper than the average round (few L-BFGS-B
evaluations while ρ is small), so compare capped runs with the ``s/rnd first R`` column of the others
(R = the smallest cap, else 20), never with their full-run s/round. A note is printed for capped d.
"""

from __future__ import annotations

import argparse
import os
import sys

_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _blas_threads_arg(argv) -> int | None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--blas-threads", type=int, default=None)
    return pre.parse_known_args(argv)[0].blas_threads


# BLAS threads are fixed when numpy loads, so --blas-threads must act before the imports below.
if __name__ == "__main__" and "numpy" not in sys.modules:
    _bt = _blas_threads_arg(sys.argv[1:])
    if _bt is None and not any(v in os.environ for v in _BLAS_VARS):
        _bt = 1
    if _bt:
        for _v in _BLAS_VARS:
            os.environ[_v] = str(_bt)

import contextlib
import functools
import importlib
import platform
import statistics
import subprocess
import time
from collections import defaultdict

import numpy as np
import scipy

from dpbnsl.graphs import acyclicity
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl, local_statistics
from dpbnsl.simulation import simulate

# The modules whose functions get wrapped (``dpbnsl.learners.linear.fed_bnsl`` as an attribute of
# ``dpbnsl.learners`` is the function, not the module, hence import_module).
admm = importlib.import_module("dpbnsl.learners.admm")
fed_module = importlib.import_module("dpbnsl.learners.linear.fed_bnsl")


# --------------------------------------------------------------------------------------------------
# timing wrappers around the package's step functions (patched in for one run, then restored)
# --------------------------------------------------------------------------------------------------


class Probe:
    """Accumulates per-round participant time, server time, objective calls and objective time."""

    def __init__(self) -> None:
        self.local = defaultdict(float)  # round -> seconds summed over participants
        self.server = defaultdict(float)  # round -> seconds
        self.evals = defaultdict(int)  # round -> _objective calls
        self.obj_seconds = 0.0
        self.round = 0


@contextlib.contextmanager
def instrumented(probe: Probe):
    part_call = fed_module.CovarianceParticipant.__call__
    serv_call = fed_module._Server.__call__
    objective = admm._objective

    @functools.wraps(part_call)
    def timed_participant(self, t, inbox):
        t0 = time.perf_counter()
        out = part_call(self, t, inbox)
        probe.local[t] += time.perf_counter() - t0
        return out

    @functools.wraps(serv_call)
    def timed_server(self, t, uploads):
        probe.round = t
        t0 = time.perf_counter()
        out = serv_call(self, t, uploads)
        probe.server[t] += time.perf_counter() - t0
        return out

    @functools.wraps(objective)
    def counted_objective(W, p):
        t0 = time.perf_counter()
        out = objective(W, p)
        probe.obj_seconds += time.perf_counter() - t0
        probe.evals[probe.round] += 1
        return out

    fed_module.CovarianceParticipant.__call__ = timed_participant
    fed_module._Server.__call__ = timed_server
    admm._objective = counted_objective  # solve_server looks it up in the module at call time
    try:
        yield probe
    finally:
        fed_module.CovarianceParticipant.__call__ = part_call
        fed_module._Server.__call__ = serv_call
        admm._objective = objective


# --------------------------------------------------------------------------------------------------
# micro-benchmarks
# --------------------------------------------------------------------------------------------------


def per_call(fn, *, min_time: float = 0.1, repeat: int = 5) -> float:
    """Median seconds per call of ``fn()`` over ``repeat`` batches of at least ``min_time`` each."""
    fn()  # warm up
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        el = time.perf_counter() - t0
        if el >= min_time or number >= 1 << 20:
            break
        number *= 2 if el <= 0 else max(2, min(10, int(min_time / el) + 1))
    times = [el / number]
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def local_step_bench(S: np.ndarray, rng: np.random.Generator, rho2: float = 1.0) -> dict:
    """Implemented (eigh once + two products) vs naive (solve) local step on one participant's S_k."""
    d = S.shape[0]
    W = rng.standard_normal((d, d)) * 0.3
    beta = rng.standard_normal((d, d)) * 0.1
    eye = np.eye(d)
    evals, Q = np.linalg.eigh(S)

    def eig_step():
        M = rho2 * W - beta + S
        return Q @ ((Q.T @ M) / (evals + rho2)[:, None])

    def solve_step():
        return np.linalg.solve(S + rho2 * eye, rho2 * W - beta + S)

    a, b = eig_step(), solve_step()
    rel = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
    t_eigh = per_call(lambda: np.linalg.eigh(S))
    t_eig = per_call(eig_step)
    t_solve = per_call(solve_step)
    gain = t_solve - t_eig
    return {
        "eigh": t_eigh,
        "eig_step": t_eig,
        "solve_step": t_solve,
        "ratio": t_solve / t_eig,
        "break_even": t_eigh / gain if gain > 0 else float("inf"),
        "max_rel_diff": rel,
    }


_CHILD = r"""
import json, sys, time
import numpy as np
from dpbnsl.graphs import acyclicity
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.simulation import simulate, simulate_dag, simulate_weights
out = {}
for d in map(int, sys.argv[1].split(",")):
    W = simulate_weights(simulate_dag(d, s0=d, rng=0), rng=0)
    acyclicity(W)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        acyclicity(W); reps += 1
    h_ms = 1e3 * (time.perf_counter() - t0) / reps
    sim = simulate(d, 3 * d, participants=10, rng=0)
    t0 = time.perf_counter()
    res = fed_bnsl(sim.participants, max_rounds=int(sys.argv[2]))
    out[d] = {"h_ms": h_ms, "run_s": time.perf_counter() - t0, "rounds": len(res.history)}
print(json.dumps(out))
"""


def blas_check(dims: list[int], rounds: int) -> dict:
    """Same measurements in child processes with 1 BLAS thread and with the BLAS default."""
    import json

    results = {}
    for label, threads in (("1", "1"), ("default", None)):
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
        if threads is not None:
            env.update({v: threads for v in _BLAS_VARS})
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, ",".join(map(str, dims)), str(rounds)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        results[label] = {int(k): v for k, v in json.loads(proc.stdout).items()}
    return results


# --------------------------------------------------------------------------------------------------
# one benchmark case
# --------------------------------------------------------------------------------------------------


def run_case(d: int, n: int, P: int, seed: int, max_rounds: int, early: int) -> dict:
    sim = simulate(d, n, participants=P, rng=seed)
    probe = Probe()
    with instrumented(probe):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fed_bnsl(sim.participants, max_rounds=max_rounds)
        run_seconds = time.perf_counter() - t0
        cpu_seconds = time.process_time() - c0
    hist = result.history
    T = len(hist)
    local = np.array([probe.local[t] for t in range(T)])
    server = np.array([probe.server[t] for t in range(T)])
    evals = np.array([probe.evals[t] for t in range(T)])
    per_round = hist["seconds"].to_numpy()
    expected_bytes = 2 * P * T * d * d * 8
    assert result.transcript.total_bytes == expected_bytes, "transcript size != 2·P·T·d²·8"

    S0 = local_statistics([np.asarray(X) for X in sim.participants], normalize="global", centre=True)[0]
    micro = local_step_bench(S0, np.random.default_rng(seed))
    W_final = result.W_raw
    t_h = per_call(lambda: acyclicity(W_final))
    return {
        "d": d,
        "n": n,
        "rounds": T,
        "run_s": run_seconds,
        "cpu_s": cpu_seconds,
        "round_s": per_round.mean(),
        "local_s": local.mean(),
        "server_s": server.mean(),
        "other_s": per_round.mean() - local.mean() - server.mean(),
        "early_s": per_round[:early].mean(),
        "evals": evals.mean(),
        "obj_ms": 1e3 * probe.obj_seconds / max(evals.sum(), 1),
        "obj_share": probe.obj_seconds / server.sum(),
        "mb": result.transcript.total_mb,
        "eigh_ms": 1e3 * micro["eigh"],
        "eig_us": 1e6 * micro["eig_step"],
        "solve_us": 1e6 * micro["solve_step"],
        "ratio": micro["ratio"],
        "break_even": micro["break_even"],
        "rel_diff": micro["max_rel_diff"],
        "h_ms": 1e3 * t_h,
        "saturated_or_converged": T < max_rounds,
    }


def mean_over_seeds(rows: list[dict]) -> dict:
    out = {}
    for key, val in rows[0].items():
        if isinstance(val, bool):
            out[key] = all(r[key] for r in rows)
        elif isinstance(val, (int, float, np.floating, np.integer)):
            out[key] = float(np.mean([r[key] for r in rows]))
        else:
            out[key] = val
    return out


# --------------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join([line, sep, *body])


def fmt(x: float, spec: str) -> str:
    return "inf" if np.isinf(x) else format(x, spec)


def parse_caps(text: str) -> dict[int, int]:
    if text.strip().lower() in ("", "none"):
        return {}
    caps = {}
    for item in text.split(","):
        d, r = item.split(":")
        caps[int(d)] = int(r)
    return caps


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dims", default="10,20,50,100", help="comma-separated d (default 10,20,50,100)")
    ap.add_argument("--participants", type=int, default=10, help="P (default 10)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--n", type=int, default=None, help="total samples (default 3·d, Fed-BNSL §6.1)")
    g.add_argument("--n-per-participant", type=int, default=None, help="samples per participant (total P·m)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..S-1, averaged (default 1)")
    ap.add_argument("--max-rounds", type=int, default=200, help="fed_bnsl max_rounds (default 200)")
    ap.add_argument(
        "--cap",
        default="none",
        help="per-d round caps 'd:rounds,...' below --max-rounds, e.g. 100:20 "
        "(default none: the full schedule at every d)",
    )
    ap.add_argument(
        "--early",
        type=int,
        default=None,
        help="R of the 's/rnd first R' column (default: the smallest cap, else 20)",
    )
    ap.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="BLAS threads for this process (set before numpy loads; default 1 unless "
        "OPENBLAS_NUM_THREADS/OMP_NUM_THREADS/MKL_NUM_THREADS is set; 0 = leave "
        "the environment alone)",
    )
    ap.add_argument(
        "--no-blas-check",
        action="store_true",
        help="skip table 3 (1 BLAS thread vs the BLAS default, in child processes)",
    )
    ap.add_argument(
        "--blas-check-rounds",
        type=int,
        default=10,
        help="rounds of the short fed_bnsl run in table 3 (default 10)",
    )
    args = ap.parse_args(argv)

    dims = [int(x) for x in args.dims.split(",") if x.strip()]
    P = args.participants
    caps = parse_caps(args.cap)
    early = args.early or (min(caps.values()) if caps else 20)

    def n_for(d: int) -> int:
        if args.n is not None:
            return args.n
        if args.n_per_participant is not None:
            return P * args.n_per_participant
        return 3 * d

    print("Fed-BNSL benchmark (dpbnsl.learners.linear.fed_bnsl, default parameters)")
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs; python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}"
    )
    print(
        f"data: simulate(d, n, participants={P}) — ER, s0 = d, Gaussian; n = "
        + (
            f"{args.n}"
            if args.n is not None
            else f"{P}·{args.n_per_participant}"
            if args.n_per_participant is not None
            else "3·d"
        )
        + f"; seeds 0..{args.seeds - 1} (means shown); max_rounds = {args.max_rounds}"
    )
    blas = {v: os.environ[v] for v in _BLAS_VARS if v in os.environ}
    print(
        f"BLAS threads: {blas or 'library default (OpenBLAS: one per CPU)'}; "
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("measured: wall time of fed_bnsl; per round, the participants' local steps (sum over P,")
    print(
        "  sequential in-process) and the server step, timed by wrappers around "
        "CovarianceParticipant.__call__"
    )
    print("  and _Server.__call__; server objective evaluations counted by wrapping _admm._objective;")
    print("  micro-benchmarks of the local step (eigh+products vs solve) and of one acyclicity() call.")
    notes = []
    for d in dims:
        r = min(args.max_rounds, caps.get(d, args.max_rounds))
        if r < args.max_rounds:
            notes.append(
                f"NOTE: d = {d} is capped at {r} rounds (the full schedule runs up to 197): its "
                f"per-round figures are for the first {r} rounds only; compare them with the "
                f"'s/rnd first {early}' column, not with the full-run s/round of smaller d."
            )
    for note in notes:
        print(note)
    print(flush=True)

    results = []
    t_all = time.perf_counter()
    for d in dims:
        rounds = min(args.max_rounds, caps.get(d, args.max_rounds))
        n = n_for(d)
        rows = []
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            rows.append(run_case(d, n, P, seed, rounds, early))
            print(
                f"  d={d} seed={seed}: {rows[-1]['rounds']} rounds, "
                f"{rows[-1]['run_s']:.2f} s run, {time.perf_counter() - t0:.2f} s with micro-benchmarks",
                file=sys.stderr,
                flush=True,
            )
        res = mean_over_seeds(rows)
        res["cap"] = rounds if rounds < args.max_rounds else None
        results.append(res)
    check = None
    if not args.no_blas_check:
        t0 = time.perf_counter()
        check = blas_check(dims, args.blas_check_rounds)
        print(f"  BLAS check: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    total = time.perf_counter() - t_all

    print("Table 1 — end-to-end runs (seconds per round split into participant-side and server-side)")
    h1 = [
        "d",
        "n",
        "rounds",
        "s/run",
        "cpu s/run",
        "s/round",
        "local",
        "server",
        "other",
        f"s/rnd first {early}",
        "evals/rnd",
        "ms/eval",
        "obj%",
        "MB",
    ]
    b1 = []
    for r in results:
        b1.append(
            [
                f"{int(r['d'])}",
                f"{int(r['n'])}",
                f"{r['rounds']:.0f}" + (" (cap)" if r["cap"] else ""),
                f"{r['run_s']:.2f}",
                f"{r['cpu_s']:.2f}",
                f"{r['round_s']:.4f}",
                f"{r['local_s']:.4f}",
                f"{r['server_s']:.4f}",
                f"{r['other_s']:.4f}",
                f"{r['early_s']:.4f}",
                f"{r['evals']:.1f}",
                f"{r['obj_ms']:.3f}",
                f"{100 * r['obj_share']:.0f}",
                f"{r['mb']:.1f}",
            ]
        )
    print(table(h1, b1))
    print()
    print("Table 2 — micro-benchmarks (median per call)")
    h2 = [
        "d",
        "eigh ms",
        "eig-step µs",
        "solve-step µs",
        "ratio solve/eig",
        "break-even rnds",
        "h(W) ms",
        "evals/rnd",
        "expm s/rnd",
    ]
    b2 = []
    for r in results:
        b2.append(
            [
                f"{int(r['d'])}",
                f"{r['eigh_ms']:.3f}",
                f"{r['eig_us']:.1f}",
                f"{r['solve_us']:.1f}",
                f"{r['ratio']:.2f}",
                fmt(r["break_even"], ".1f"),
                f"{r['h_ms']:.3f}",
                f"{r['evals']:.1f}",
                f"{r['evals'] * r['h_ms'] / 1e3:.4f}",
            ]
        )
    print(table(h2, b2))
    print()
    worst = max(r["rel_diff"] for r in results)
    print(
        f"eig-step and solve-step agree to max relative difference {worst:.1e} (ρ₂ = 1 in the "
        f"micro-benchmark)."
    )
    for note in notes:
        print(note)
    if check is not None:
        print()
        R = args.blas_check_rounds
        print(
            f"Table 3 — BLAS threading (child processes, n = 3·d, P = 10): ms per acyclicity() at "
            f"the true W, and seconds of fed_bnsl(max_rounds={R})"
        )
        h3 = [
            "d",
            "h(W) ms 1 thr",
            "h(W) ms default",
            "default/1",
            f"{R}-rnd s 1 thr",
            f"{R}-rnd s default",
            "default/1",
        ]
        b3 = []
        for d in dims:
            one, dflt = check["1"][d], check["default"][d]
            b3.append(
                [
                    f"{d}",
                    f"{one['h_ms']:.3f}",
                    f"{dflt['h_ms']:.3f}",
                    f"{dflt['h_ms'] / one['h_ms']:.1f}",
                    f"{one['run_s']:.2f}",
                    f"{dflt['run_s']:.2f}",
                    f"{dflt['run_s'] / one['run_s']:.1f}",
                ]
            )
        print(table(h3, b3))
    print()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"total benchmark time: {total:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
