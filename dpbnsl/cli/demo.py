"""``dpbnsl demo``: the package's main job in under a minute, end to end.

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
from typing import TYPE_CHECKING

from ..audits.game_base import MAX_TRIALS, MIN_TRIALS
from .common import COMMANDS, MAX_SEED, add_json_option, count, print_privacy, privacy_json, set_json, table
from .files import check_output_dir, write_files

if TYPE_CHECKING:
    from ..attacks.report import AttackReport

__all__ = ["add_demo_command"]

_ATTACK_COLUMNS = ("participant", "rel_error", "recovered", "membership_auc", "record_error")


def add_demo_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``demo`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "demo",
        formatter_class=formatter,
        help=COMMANDS["demo"],
        description=__doc__.splitlines()[0],
    )
    p.add_argument(
        "--out", type=Path, default=Path("dpbnsl-demo"), help="directory for the curve CSV and PNG"
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite curve.csv and curve.png of an earlier demo in --out"
    )
    p.add_argument(
        "--seed",
        type=count(0, MAX_SEED),
        default=0,
        help="random seed of the simulated data, the attacker's draws and the audits' synthetic "
        "worlds (a fixed default keeps the demo's data reproducible; it exposes no one). The "
        "privacy noise is always fresh entropy",
    )
    p.add_argument(
        "--trials", type=count(MIN_TRIALS, MAX_TRIALS), default=100_000, help="audit runs per world"
    )
    add_json_option(p)
    p.set_defaults(handler=_demo)


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)), flush=True)


def _attack_table(report: AttackReport) -> None:
    rows = [[r[c] for c in _ATTACK_COLUMNS] for r in report.table.to_dict("records")]
    print(table(_ATTACK_COLUMNS, rows))


def _demo(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401

        outputs: tuple[str, ...] = ("curve.csv", "curve.png")
    except ImportError:
        outputs = ("curve.csv",)
    check_output_dir(args.out, "--out", outputs, force=args.force)
    import numpy as np

    from ..attacks.report import attack_report, population_covariance
    from ..audits.verdict import audit
    from ..learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
    from ..learners.linear.fed_bnsl import fed_bnsl
    from ..metrics import count_accuracy
    from ..simulation import simulate, simulated_bounds
    from .accounting import run_noise
    from .audit import audit_json, print_audit

    start = time.perf_counter()
    d, P, n_k, eps = 15, 5, 30, 1.0
    data_rng, attack_rng, audit_rng = np.random.default_rng(args.seed).spawn(3)
    noise_rng = np.random.default_rng()  # the privacy noise: fresh entropy, never the demo's seed
    data = simulate(d, P * n_k, participants=P, rng=data_rng)
    pop = population_covariance(data.W_true)
    _section(
        f"data: {P} participants × {n_k} rows, d = {d}, "
        f"{int(data.B_true.sum())} true edges (linear-Gaussian SEM)"
    )

    _section(f"noise for ε = {eps:g}, δ = 1e-5, T = K = 10 (dpbnsl noise)")
    run_noise(
        argparse.Namespace(
            epsilon=eps,
            delta=1e-5,
            rounds=10,
            local_iters=10,
            method="dp-pgcd",
            calibration="all",
            laplace=False,
            smoothness_d=None,
            json=False,
        )
    )

    _section("Fed-BNSL: the server reconstructs every participant's covariance")
    fed = fed_bnsl(data.participants)
    assert fed.transcript is not None  # a federated learner always has one
    acc = count_accuracy(data.B_true, fed.W)
    print(
        f"SHD {acc.shd}, TPR {acc.tpr:.2f}, FDR {acc.fdr:.2f}, "
        f"{fed.transcript.total_mb:.2f} MB over {len(fed.history)} rounds"
    )
    _attack_table(attack_report(fed, data.participants, population_cov=pop, rng=attack_rng))

    _section(f"DP-Fed-Sparse-BNSL at ε = {eps:g}: the same attack fails")
    bound = simulated_bounds(d)["feature_bound"]  # public: the simulator's scale (see its docs)
    dp = dp_fed_sparse_bnsl(data.participants, epsilon=eps, delta=1e-5, feature_bound=bound, rng=noise_rng)
    assert dp.transcript is not None  # a federated learner always has one
    acc = count_accuracy(data.B_true, dp.W)
    print(f"SHD {acc.shd}, TPR {acc.tpr:.2f}, FDR {acc.fdr:.2f}, communication {dp.communication_text()}")
    print_privacy(dp)
    _attack_table(attack_report(dp, data.participants, population_cov=pop, rng=attack_rng))

    _section(f"audits at ε = {eps:g} ({args.trials} trials per world)")
    audits = [
        audit("gaussian-step", epsilon=eps, trials=args.trials, rng=audit_rng),
        audit("selection", epsilon=eps, trials=args.trials, rng=audit_rng),
        audit("gaussian-step", epsilon=eps, trials=args.trials, broken="noise-halved", rng=audit_rng),
    ]
    print_audit(audits)

    _section("privacy-utility curve")
    from ..audits.tradeoff import sweep

    csv, png = args.out / "curve.csv", args.out / "curve.png"
    # the curve is simulated data: its seeds are the study's, reproducible on purpose
    frame = sweep(
        methods=("fed-sparse-bnsl", "dp-fed-sparse-bnsl"),
        epsilons=(1.0, 5.0, 50.0),
        seeds=(0, 1),
        d=10,
        participants=5,
        n_per_participant=200,
        progress=False,
    ).frame
    print(frame.groupby(["method", "epsilon"])[["shd", "tpr", "fdr"]].mean().round(2).to_string())
    files = [(csv, lambda tmp: frame.to_csv(tmp, index=False))]
    if "curve.png" in outputs:
        from ..audits.plots import plot_tradeoff

        files.append((png, lambda tmp: plot_tradeoff(frame, path=tmp)))
    write_files(files)
    print(f"curve rows written to {csv}")
    if "curve.png" in outputs:
        print(f"curve plot written to {png}")
    else:
        print("no plot: matplotlib is not installed (pip install 'dpbnsl[plot]')")
    seconds = time.perf_counter() - start
    print(f"\ndemo finished in {seconds:.0f} s")
    means = frame.groupby(["method", "epsilon"])[["shd", "tpr", "fdr"]].mean().reset_index()
    set_json(
        args,
        {
            "out": str(args.out),
            "files": [str(p) for p, _ in files],
            "dp_fed_sparse_bnsl": {
                "shd": acc.shd,
                "tpr": acc.tpr,
                "fdr": acc.fdr,
                "mb": dp.communication_mb,
                "privacy": privacy_json(dp),
            },
            "audits": [audit_json(a) for a in audits],
            "curve": means.to_dict("records"),
            "seconds": seconds,
        },
    )
    return 0
