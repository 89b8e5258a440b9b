"""The best audit of every private learner's releases against its claim, with its cost.

Two-world games at claimed ε = 4 (δ = 10⁻⁵), seed 1: the vectorised games at 10⁶ runs per world;
with ``--heavy``, the worst-case DP-PGCD pair (10⁶ runs per world) and the worst-case whole
DP-Fed-Sparse-BNSL run (``--whole-trials``, default 100,000 per world), in seeded blocks on
``--jobs`` processes (the result does not depend on the number of processes). ``--games`` runs a
subset. One-run audits with isolated canaries come from ``experiments/isolated_canaries.py``.

Prints one line per audit: the Clopper–Pearson bound (assumes nothing), the μ-GDP bound where
the game's release is Gaussian, the bounded-range bound of the selection, and the CPU seconds of
the game and bounds (this process and its finished workers). Rows are merged by game into
``docs/results/audit_table.csv``.

    python experiments/audit_table.py [--heavy] [--games G1,G2] [--jobs 2] [--whole-trials N]
                                      [--controls-only]
"""

from __future__ import annotations

import argparse
import resource
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import _runner  # noqa: F401  (one BLAS thread, before numpy)
import pandas as pd

from dpbnsl.audits import audit, clopper_pearson_bound, gdp_lower_bound
from dpbnsl.audits.parallel import play

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "audit_table.csv"

#: (learners, game): the release each learner makes, and the game that audits it
CHEAP = (
    ("DP-Fed-BNSL, DP-SortnRegress, PC on a private covariance (local)", "covariance"),
    ("the same learners, secure aggregation", "secure-covariance"),
    ("DP-Fed-Sparse-BNSL: one DP-PGCD gradient release", "gaussian-step"),
    ("DP-Fed-Sparse-BNSL: one DP-PGCD selection", "selection"),
    ("Priv-PC, local DP-FedPC: the sieve (sparse vector)", "sparse-vector"),
    ("Priv-PC, local DP-FedPC: the examination", "priv-pc-examine"),
    ("DP-FedPC over secure aggregation: one test", "secure-kendall"),
)
#: (learners, game, game options, seed): the worst-case pairs, scored by their privacy loss; the
#: μ-GDP bound is printed beside Clopper–Pearson for them too, as evidence (their loss is not
#: exactly Gaussian), and the 20 % noise deficit is their negative control
HEAVY = (
    ("DP-Fed-Sparse-BNSL: a DP-PGCD local run (K = 3), worst-case pair", "dp-pgcd-worst", {}, 1),
    (
        "the same, 20 % noise deficit (negative control)",
        "dp-pgcd-worst",
        {"noise_deficit": 0.2},
        2,
    ),
    ("DP-Fed-Sparse-BNSL: a whole run (T = 5, K = 3), worst-case pair", "dp-fed-sparse-bnsl-worst", {}, 1),
    (
        "the same, 20 % noise deficit (negative control)",
        "dp-fed-sparse-bnsl-worst",
        {"noise_deficit": 0.2},
        2,
    ),
)


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def heavy_row(learners: str, game: str, options: dict, seed: int, trials: int, jobs: int) -> dict:
    start = cpu()
    kw = dict(epsilon=4.0, delta=1e-5, trials=trials, rng=seed, **options)
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:  # workers reaped on exit: their CPU is counted
            g = play(game, executor=pool, chunk=5, **kw)
    else:
        g = play(game, **kw)
    cp = clopper_pearson_bound(g.scores0, g.scores1, delta=1e-5)
    gdp = gdp_lower_bound(g.scores0, g.scores1, delta=1e-5)
    out = dict(
        learners=learners,
        game=game + (f" ({options})" if options else ""),
        trials=g.trials[0],
        claimed=round(g.claimed_epsilon, 3),
        cp_lb=round(cp.epsilon_lb, 3),
        cp_ratio=round(cp.epsilon_lb / g.claimed_epsilon, 3),
        gdp_lb=round(gdp.epsilon_lb, 3),
        br_lb=None,
        claimed_eps0=None,
        flagged=cp.violates(g.claimed_epsilon),
        cpu_s=round(cpu() - start, 1),
    )
    print(out, flush=True)
    return out


def row(learners: str, game: str, trials: int) -> dict:
    start = cpu()
    a = audit(game, epsilon=4.0, delta=1e-5, trials=trials, rng=1)
    out = dict(
        learners=learners,
        game=game,
        trials=a.trials[0],
        claimed=round(a.claimed_epsilon, 3),
        cp_lb=round(a.bound.epsilon_lb, 3),
        cp_ratio=round(a.bound.epsilon_lb / a.claimed_epsilon, 3),
        gdp_lb=None if a.gdp is None else round(a.gdp.epsilon_lb, 3),
        br_lb=None if a.bounded_range is None else round(a.bounded_range.epsilon0_lb, 3),
        claimed_eps0=a.claimed_epsilon0,
        flagged=a.flagged,
        cpu_s=round(cpu() - start, 1),
    )
    print(out, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heavy", action="store_true")
    ap.add_argument("--games", default="")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--whole-trials", type=int, default=100_000)
    ap.add_argument("--controls-only", action="store_true", help="the heavy rows' negative controls only")
    args = ap.parse_args()
    wanted = set(args.games.split(",")) if args.games else None
    rows = []
    for learners, game in CHEAP:
        if wanted is None or game in wanted:
            rows.append(row(learners, game, 10**6))
    for learners, game, options, seed in HEAVY:
        if args.controls_only and not options:
            continue
        if (wanted is None and args.heavy) or (wanted is not None and game in wanted):
            trials = args.whole_trials if game == "dp-fed-sparse-bnsl-worst" else 10**6
            rows.append(heavy_row(learners, game, options, seed, trials, args.jobs))
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    if OUT.exists():  # merge by game: the rows of the games not run are kept
        old = pd.read_csv(OUT)
        df = pd.concat([old[~old["game"].isin(df["game"])], df])
        order = [g for _, g in CHEAP] + [h[1] for h in HEAVY]
        df = df.sort_values(
            "game", key=lambda s: s.map(lambda g: order.index(g.split(" (")[0])), kind="stable"
        )
    df.to_csv(OUT, index=False)


if __name__ == "__main__":
    main()
