"""``dpbnsl demo``: the package's main job in a few minutes, end to end.

Simulate federated data; print the DP-PGCD noise for ε = 1; run Fed-BNSL and show the server
reconstructing every participant's covariance; run DP-Fed-Sparse-BNSL at ε = 1 and show its
metrics, megabytes and the same attack failing; audit the Gaussian step and the selection step
(pass) and a broken variant (flagged); write a small privacy–utility curve (CSV, and PNG when
matplotlib is installed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from ._cli_accounting import _noise
from ._cli_audit import print_audit
from ._cli_common import table
from .attacks.report import attack_report, population_covariance
from .audits.audit import audit
from .learners.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from .learners.fed_bnsl import fed_bnsl
from .metrics import count_accuracy
from .simulate import simulate

__all__ = ["add_demo_command"]

_ATTACK_COLUMNS = ("participant", "rel_error", "recovered", "membership_auc", "record_error")


def add_demo_command(sub, formatter: Callable[[str], argparse.HelpFormatter]) -> None:
    """Add ``demo`` to the sub-parsers ``sub``."""
    p = sub.add_parser("demo", formatter_class=formatter, help="the whole package in a few minutes",
                       description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("dpbnsl-demo"),
                   help="directory for the curve CSV and PNG")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--trials", type=int, default=100_000, help="audit runs per world")
    p.set_defaults(handler=_demo)


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)), flush=True)


def _attack_table(report) -> None:
    rows = [[r[c] for c in _ATTACK_COLUMNS] for r in report.table.to_dict("records")]
    print(table(_ATTACK_COLUMNS, rows))


def _demo(args) -> int:
    start = time.perf_counter()
    d, P, n_k, eps = 15, 5, 30, 1.0
    data = simulate(d, P * n_k, participants=P, rng=args.seed)
    pop = population_covariance(data.W_true)
    _section(f"data: {P} participants × {n_k} rows, d = {d}, "
             f"{int(data.B_true.sum())} true edges (linear-Gaussian SEM)")

    _section(f"noise for ε = {eps:g}, δ = 1e-5, T = K = 10 (dpbnsl noise)")
    _noise(argparse.Namespace(epsilon=eps, delta=1e-5, rounds=10, local_iters=10,
                              method="all", laplace=False, smoothness_d=None, json=False))

    _section("Fed-BNSL: the server reconstructs every participant's covariance")
    fed = fed_bnsl(data.participants)
    acc = count_accuracy(data.B_true, fed.W)
    print(f"SHD {acc.shd}, TPR {acc.tpr:.2f}, FDR {acc.fdr:.2f}, "
          f"{fed.transcript.total_mb:.2f} MB over {len(fed.history)} rounds")
    _attack_table(attack_report(fed, data.participants, population_cov=pop, rng=args.seed))

    _section(f"DP-Fed-Sparse-BNSL at ε = {eps:g}: the same attack fails")
    dp = dp_fed_sparse_bnsl(data.participants, epsilon=eps, delta=1e-5, feature_bound=30.0,
                            rng=args.seed)
    acc = count_accuracy(data.B_true, dp.W)
    spent = ", ".join(f"{v:.4g} ({k})" for k, v in dp.info["epsilon"].items())
    print(f"SHD {acc.shd}, TPR {acc.tpr:.2f}, FDR {acc.fdr:.2f}, "
          f"{dp.transcript.total_mb:.3f} MB; ε spent per participant: {spent}")
    _attack_table(attack_report(dp, data.participants, population_cov=pop, rng=args.seed))

    _section(f"audits at ε = {eps:g} ({args.trials} trials per world)")
    print_audit([audit("gaussian-step", epsilon=eps, trials=args.trials, rng=args.seed),
                 audit("selection", epsilon=eps, trials=args.trials, rng=args.seed),
                 audit("gaussian-step", epsilon=eps, trials=args.trials, broken="noise-halved",
                       rng=args.seed)])

    _section("privacy-utility curve")
    from .audits.tradeoff import sweep

    args.out.mkdir(parents=True, exist_ok=True)
    csv = args.out / "curve.csv"
    csv.unlink(missing_ok=True)  # the demo's own file, recomputed every run (a CSV from an
    # earlier version of the sweep would otherwise be refused)
    frame = sweep(methods=("fed-sparse-bnsl", "dp-fed-sparse-bnsl"), epsilons=(1.0, 5.0, 50.0),
                  seeds=(0, 1), d=10, participants=5, n_per_participant=200, csv=csv,
                  progress=False).frame
    print(frame.groupby(["method", "epsilon"])[["shd", "tpr", "fdr"]].mean().round(2)
          .to_string())
    print(f"curve rows written to {csv}")
    try:
        from .audits.plots import plot_tradeoff

        png = plot_tradeoff(frame, path=args.out / "curve.png")
        print(f"curve plot written to {png}")
    except ImportError as exc:
        print(f"no plot: {exc}")
    print(f"\ndemo finished in {time.perf_counter() - start:.0f} s")
    return 0
