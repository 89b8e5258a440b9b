"""Audit throughput: the vectorised Gaussian-step game against a per-trial loop.

Times ``dpbnsl.audits.games.run_game("gaussian-step", ...)`` with ``--trials`` trials per world
(all noise of a world drawn in one call of ``gaussian_mechanism``) and the Clopper–Pearson lower
bound on its scores (``clopper_pearson_bound``, Bonferroni rule, as ``audit`` uses), next to a
baseline measured in the same run: a Python loop calling ``dpbnsl.mechanisms.gaussian_mechanism``
once per trial on the same two pre-noise gradients, sensitivity and multiplier, for
``--baseline-trials`` trials per world, extrapolated linearly to ``--trials``. Issue target:
10⁶ Gaussian-step trials per world in under 10 s (game + bound). Each stage is timed
``--repeats`` times and the fastest run is reported; the game's first call is shown too (it
also calibrates the noise and runs the PLD accountant for the claimed ε, cached afterwards).
The target line uses the first call. BLAS is pinned to one thread (the environment variables,
set before numpy is imported). The whole-protocol games are timed by ``bench_audit_game.py``.

    python benchmarks/bench_audit.py [--trials 1000000] [--baseline-trials 10000] [--repeats 3]
"""

from __future__ import annotations

import os

# one BLAS thread, set before numpy loads (OpenBLAS reads it once, at load)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time

import numpy as np

from dpbnsl.audits.bounds import clopper_pearson_bound
from dpbnsl.audits.games import run_game
from dpbnsl.mechanisms import gaussian_mechanism


def _best(fn, repeats: int):
    """(fastest wall time, first call's wall time, last result) of ``repeats`` calls of ``fn``."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), times[0], out


def _loop(means, sensitivity: float, multiplier: float, trials: int, seed: int):
    rng = np.random.default_rng(seed)
    return [
        np.array(
            [
                gaussian_mechanism(g, sensitivity=sensitivity, multiplier=multiplier, rng=rng).value
                for _ in range(trials)
            ]
        )
        for g in means
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10**6, help="trials per world")
    parser.add_argument(
        "--baseline-trials",
        type=int,
        default=10**4,
        help="trials per world of the per-trial loop (extrapolated)",
    )
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n, nb = args.trials, args.baseline_trials

    def game_run():
        return run_game("gaussian-step", epsilon=args.epsilon, delta=args.delta, trials=n, rng=args.seed)

    t_game, t_cold, game = _best(game_run, args.repeats)
    t_bound, _, bound = _best(
        lambda: clopper_pearson_bound(game.scores0, game.scores1, delta=game.delta), args.repeats
    )
    d = game.details  # the baseline releases the same pre-noise gradients with the same noise
    t_loop, _, loop = _best(
        lambda: _loop(d["means"], d["sensitivity"], d["multiplier_used"], nb, args.seed + 1), args.repeats
    )
    t_loop_ext = t_loop * n / nb

    rows = [
        ("game, first call (cold)", n, t_cold, t_loop_ext / t_cold),
        ("game (vectorised)", n, t_game, t_loop_ext / t_game),
        ("Clopper-Pearson bound", n, t_bound, None),
        ("game + bound", n, t_game + t_bound, (t_loop_ext + t_bound) / (t_game + t_bound)),
        ("per-trial loop (measured)", nb, t_loop, None),
        ("per-trial loop (extrapolated)", n, t_loop_ext, 1.0),
        ("loop + bound (extrapolated)", n, t_loop_ext + t_bound, None),
    ]
    print(
        f"{'stage':<30} {'trials/world':>12} {'seconds':>9} {'trials/world/s':>15} {'speed-up vs loop':>17}"
    )
    for stage, trials, seconds, ratio in rows:
        rate = trials / seconds
        r = "" if ratio is None else f"{ratio:.0f}x"
        print(f"{stage:<30} {trials:>12,} {seconds:>9.3f} {rate:>15,.0f} {r:>17}")
    print(
        f"\ntarget: {n:,} trials per world (game + bound) in under 10 s -> "
        f"{'met' if t_cold + t_bound < 10 else 'NOT met'} "
        f"({t_cold + t_bound:.2f} s with the cold game call)"
    )
    print(
        f"claimed epsilon {game.claimed_epsilon:.4f}, epsilon_lb {bound.epsilon_lb:.4f} "
        f"(alpha {bound.alpha}); loop means {loop[0].mean():.4f} / {loop[1].mean():.4f}, "
        f"game means {game.scores0.mean():.4f} / {game.scores1.mean():.4f}"
    )


if __name__ == "__main__":
    main()
