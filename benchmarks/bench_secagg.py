"""Secure aggregation on Flower's SecAgg+ against the plain Flower run and the in-process run.

Run from the repository root, in an environment with the ``flower`` extra::

    python benchmarks/bench_secagg.py                  # d = 20 and 200, 10 participants × 1000 rows
    python benchmarks/bench_secagg.py --dims 20 --seeds 2

Per d and seed, data ``simulate(d, 10·1000, participants=10, rng=seed)``, ε = 1, δ = 1e-5, R = 10,
in this order in one process:

    in process    ``dp_fed_bnsl(..., aggregation="secure", rng=seed)``: the setup, every
                  participant's share, the modular sum, the server's NOTEARS fit (the baseline)
    Flower plain  ``simulate_on_flower("dp-fed-bnsl", ..., max_rounds=1)`` with local releases: the
                  same study's transport without secure aggregation (the setup, one d×d upload per
                  participant in the clear, one reply), Ray start-up included
    SecAgg+       ``simulate_on_flower("dp-fed-bnsl", ..., aggregation="secure")``: the request,
                  Flower's four SecAgg+ stages, the same fit

and prints wall seconds, CPU seconds of the whole process tree (``TreeCPU`` of
``bench_flower.py``: this process and Ray's), the server's own wall time (``run.seconds``), the
secure round's wall time (the request plus SecAgg+, ``run.secure_seconds``), the fit's CPU time
(measured in process on the same release), and whether the SecAgg+ run equals the in-process one
bit for bit (``W_raw`` and every message of the transcript), and the bytes: the transcript's (the
shares as the server accounts them, ⌈b/8⌉ bytes per residue, and the setup) and SecAgg+'s own
messages in each direction (``run.secure_bytes``: records only, without Flower's framing). The
Flower columns include Ray's start-up and shut-down (about 10 s on 2 cores); ``secure s`` does
not. The plain run fits one
ADMM round, the others the whole NOTEARS fit (35 CPU-s at d = 200): the columns "− fit" take the
fit's CPU out, so that what remains compares transport with transport.
"""

from __future__ import annotations

import argparse
import os
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread
    os.environ.setdefault(_v, "1")

import bench_flower  # noqa: F401  (sets Flower's environment before it loads)
import numpy as np
from bench_flower import TreeCPU, _table

from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
from dpbnsl.learners.linear.secure_covariance import fit_release
from dpbnsl.simulation import simulate

SETTINGS = dict(epsilon=1.0, delta=1e-5, clip_norm=10.0)


def same(ref, run) -> bool:
    a, b = list(ref.transcript), list(run.transcript)
    meta = len(a) == len(b) and all(
        (x.round, x.kind, x.sender, x.receiver) == (y.round, y.kind, y.sender, y.receiver)
        for x, y in zip(a, b)
    )
    payloads = all(
        (x.payload.size, x.payload.bits) == (y.payload.size, y.payload.bits)
        if x.kind == "secure_share"
        else np.array_equal(x.to_dense(), y.to_dense())
        for x, y in zip(a, b)
    )
    return bool(meta and payloads and np.array_equal(ref.W_raw, run.W_raw))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="20,200")
    p.add_argument("--participants", type=int, default=10)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--interval", type=float, default=0.1)
    a = p.parse_args()
    import flwr

    from dpbnsl.flower import simulate_on_flower

    P, m = a.participants, a.rows
    print(
        f"# SecAgg+ vs plain Flower vs in process: {P} participants × {m} rows, flwr {flwr.__version__}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"
    )
    rows = []
    for d in (int(v) for v in a.dims.split(",")):
        for seed in range(a.seeds):
            data = simulate(d, P * m, participants=P, rng=seed).participants
            with TreeCPU(None) as c_ref:
                t = time.perf_counter()
                ref = dp_fed_bnsl(data, aggregation="secure", rng=seed, **SETTINGS)
                w_ref = time.perf_counter() - t
            t = time.process_time()
            fit_release(ref.info["release"], threshold=0.3)
            fit_cpu = time.process_time() - t
            with TreeCPU(a.interval) as c_plain:
                t = time.perf_counter()
                plain = simulate_on_flower(
                    "dp-fed-bnsl", data, settings=dict(SETTINGS, max_rounds=1), seed=seed
                )
                w_plain = time.perf_counter() - t
            with TreeCPU(a.interval) as c_sec:
                t = time.perf_counter()
                run = simulate_on_flower(
                    "dp-fed-bnsl", data, settings=dict(SETTINGS, aggregation="secure"), seed=seed
                )
                w_sec = time.perf_counter() - t
            rows.append(
                {
                    "d": d,
                    "seed": seed,
                    "entries": d * (d + 1) // 2,
                    "w_ref": w_ref,
                    "c_ref": c_ref.total,
                    "fit": fit_cpu,
                    "w_plain": w_plain,
                    "c_plain": c_plain.total,
                    "s_plain": plain.seconds,
                    "w_sec": w_sec,
                    "c_sec": c_sec.total,
                    "s_sec": run.seconds,
                    "secure": sum(run.secure_seconds.values()),
                    "kb_up": sum(w["up"] for w in run.secure_bytes.values()) / 1e3,
                    "kb_down": sum(w["down"] for w in run.secure_bytes.values()) / 1e3,
                    "kb_shares": run.transcript.total_bytes / 1e3,
                    "bitwise": "yes" if same(ref, run) else "NO",
                    "others": c_sec.others,
                }
            )
            print(f"d = {d}, seed {seed} done", flush=True)
    for r in rows:  # without the fit (the same work in every column that runs it)
        r["t_ref"] = r["c_ref"] - r["fit"]
        r["t_sec"] = r["c_sec"] - r["fit"]
        r["cpu_ratio_plain"] = r["t_sec"] / r["c_plain"]
    _table(
        "Seconds (c: CPU of the process tree; s: the ServerApp's own wall time; secure: the secure round's)",
        rows,
        [
            ("d", "d", "{}"),
            ("seed", "seed", "{}"),
            ("entries", "entries", "{}"),
            ("in-proc wall", "w_ref", "{:.2f}"),
            ("in-proc cpu", "c_ref", "{:.2f}"),
            ("fit cpu", "fit", "{:.2f}"),
            ("plain wall", "w_plain", "{:.2f}"),
            ("plain cpu", "c_plain", "{:.2f}"),
            ("plain server", "s_plain", "{:.2f}"),
            ("secagg wall", "w_sec", "{:.2f}"),
            ("secagg cpu", "c_sec", "{:.2f}"),
            ("secagg server", "s_sec", "{:.2f}"),
            ("secure s", "secure", "{:.2f}"),
            ("in-proc − fit", "t_ref", "{:.2f}"),
            ("secagg − fit", "t_sec", "{:.2f}"),
            ("(secagg − fit)/plain", "cpu_ratio_plain", "{:.2f}×"),
            ("bitwise", "bitwise", "{}"),
            ("transcript kB", "kb_shares", "{:.0f}"),
            ("secagg+ kB up", "kb_up", "{:.0f}"),
            ("secagg+ kB down", "kb_down", "{:.0f}"),
            ("others", "others", "{:.1f}"),
        ],
    )


if __name__ == "__main__":
    main()
