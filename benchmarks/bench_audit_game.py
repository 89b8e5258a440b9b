"""Whole-protocol audit games: CPU milliseconds per trial of ``dp-fed-sparse-bnsl`` and ``dp-pgcd``
at their default sizes, against the per-trial reference path measured in the same run.

One trial = one run of the protocol in each of the two worlds (D and D′). For each game:

    reference      the games' previous implementation, rebuilt here from the package's pieces: per
                   game call, the noise calibration (``calibrate_dp_pgcd``) and the design; per trial,
                   ``dp-fed-sparse-bnsl`` runs ``sparse_run`` (the learner's protocol through
                   ``run_sparse_admm`` and ``run_rounds``: transcript, per-participant ledgers, every
                   participant's step and the server's reply in every round) and reads participant
                   0's uploads from the transcript; ``dp-pgcd`` builds its DP-PGCD state with
                   ``new_state`` and records every release in a ledger
    game           ``run_game(name, ...)`` as it is now; "cold" is the first call in this process
                   (calibration and set-up included), "warm" a later call (they are cached per
                   process, as in the seeded blocks of ``dpbnsl.audits.parallel.play``)

Columns: ``ref`` and ``ref loop`` are the reference's ms per trial with and without its per-call
set-up (calibration, design) spread over the call's trials; ``cold``/``warm`` the game's. ``ratio``
= ref / warm (what a block of ``--trials`` trials of ``play`` costs before and after) and ``loop
ratio`` = ref loop / warm (the per-trial path alone). ``identical`` says whether the game's scores
are bitwise equal to the reference's for the same seed. CPU time (``time.process_time``) of this
process, the best of ``--repeats`` interleaved repeats; BLAS is pinned to one thread.

    python benchmarks/bench_audit_game.py [--trials 200] [--pgcd-trials 2000] [--repeats 3]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import math
import platform
import time

import numpy as np

from dpbnsl.accounting import PrivacyLedger, calibrate_dp_pgcd
from dpbnsl.audits._pgcd_games import _design, _learner_hyper, sparse_run
from dpbnsl.audits.games import run_game
from dpbnsl.learners.linear.pgcd import PGCDNoise, new_state, run_iterations
from dpbnsl.simulation import simulate

EPSILON, DELTA = 1.0, 1e-5


def reference_sparse(trials: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """``dp-fed-sparse-bnsl`` at its defaults (d = 5, n = 200, P = 2, T = 5, K = 3, C = 5), the
    previous way; returns both worlds' scores and the seconds of its per-call set-up."""
    t0 = time.process_time()
    d, n, P, C = 5, 200, 2, 5.0
    hyper = _learner_hyper(5, 3)
    sim = simulate(d, n * P, participants=P, rng=0)
    D = [np.array(X) for X in sim.participants]
    p = int(np.argmax(sim.B_true.sum(axis=1)))
    m0 = np.mean([(X * X).mean(axis=0) for X in D], axis=0)
    noise = calibrate_dp_pgcd(EPSILON, DELTA, rounds=hyper["rounds"], local_iters=hyper["local_iters"])
    pgcd_noise = PGCDNoise(C, noise.gumbel_multiplier)
    D1 = [X.copy() for X in D]
    D1[0][0, p] = math.sqrt(100.0 * n * float(np.max(m0 + hyper["rho2"])))
    setup = time.process_time() - t0
    scores = []
    for data in (D, D1):
        out = np.empty(trials)
        for t in range(trials):
            transcript, _ = sparse_run(data, m0, hyper=hyper, noise=pgcd_noise, rng=rng)
            ups = transcript.payloads(participant=0, direction="up")
            out[t] = -np.abs(ups[:, p, :] - 0.0).sum()
        scores.append(out)
    return scores[0], scores[1], setup


def reference_pgcd(trials: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """``dp-pgcd`` at its defaults (d = 6, n = 50, K = 3, C = 1), the previous way."""
    t0 = time.process_time()
    d, K, C = 6, 3, 1.0
    noise = calibrate_dp_pgcd(EPSILON, DELTA, rounds=1, local_iters=K)
    pgcd_noise = PGCDNoise(C, noise.gumbel_multiplier)
    design = _design(d=d, n=50, clip=C, multiplier=pgcd_noise.multiplier, top=10.0)
    (a, b), weight = design.canary, float(design.m[design.canary[0]] + 1.0)
    setup = time.process_time() - t0
    ledger, zero, scores = PrivacyLedger(), np.zeros((d, d)), []
    for X in design.worlds:
        M = design.m + 1.0
        out = np.empty(trials)
        for t in range(trials):
            state = new_state(X, zero.copy(), zero, design.beta, M=M, lambda1=0.0, rho2=1.0, noise=pgcd_noise)
            run_iterations(state, K, noise=pgcd_noise, rng=rng, ledger=ledger)
            out[t] = -weight * state.B[a, b]
        scores.append(out)
    return scores[0], scores[1], setup


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def measure(name: str, reference, trials: int, repeats: int, seed: int) -> dict:
    cold, game = _cpu(
        lambda: run_game(name, epsilon=EPSILON, delta=DELTA, trials=trials, rng=np.random.default_rng(seed))
    )
    ref, ref_loop, warm = [], [], []
    for _ in range(repeats):  # interleaved, so that a change in the machine's load hits both
        total, (s0, s1, setup) = _cpu(lambda: reference(trials, np.random.default_rng(seed)))
        ref.append(total)
        ref_loop.append(total - setup)
        w, game = _cpu(
            lambda: run_game(
                name, epsilon=EPSILON, delta=DELTA, trials=trials, rng=np.random.default_rng(seed)
            )
        )
        warm.append(w)
    same = s0.tobytes() == game.scores0.tobytes() and s1.tobytes() == game.scores1.tobytes()
    ms = 1000.0 / trials
    return dict(
        game=name,
        trials=trials,
        ref=min(ref) * ms,
        ref_loop=min(ref_loop) * ms,
        cold=cold * ms,
        warm=min(warm) * ms,
        identical=same,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per world of dp-fed-sparse-bnsl")
    parser.add_argument("--pgcd-trials", type=int, default=2000, help="trials per world of dp-pgcd")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f} at the start; CPU ms per trial (both worlds), best of {args.repeats}"
    )
    rows = [
        measure("dp-fed-sparse-bnsl", reference_sparse, args.trials, args.repeats, args.seed),
        measure("dp-pgcd", reference_pgcd, args.pgcd_trials, args.repeats, args.seed),
    ]
    head = (
        f"{'game':<19} {'trials':>6} {'ref':>8} {'ref loop':>8} {'cold':>8} {'warm':>8} "
        f"{'ratio':>6} {'loop ratio':>10} {'identical':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['game']:<19} {r['trials']:>6} {r['ref']:>8.3f} {r['ref_loop']:>8.3f} {r['cold']:>8.3f} "
            f"{r['warm']:>8.3f} {r['ref'] / r['warm']:>5.2f}x {r['ref_loop'] / r['warm']:>9.2f}x "
            f"{'yes' if r['identical'] else 'NO':>9}"
        )
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end" if hasattr(os, "getloadavg") else "")


if __name__ == "__main__":
    main()
