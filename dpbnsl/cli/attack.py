"""The ``attack`` command of the CLI: run a protocol, attack every participant, print the table.

Registered by :func:`dpbnsl.cli.build_parser`; errors reach :func:`dpbnsl.cli.main`, which prints
them as one line and exits with status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..learners.registry import names
from .common import (
    COMMANDS,
    MAX_COUNT,
    MAX_SEED,
    CLIError,
    add_bundle_options,
    add_json_option,
    check_bundle_options,
    count,
    print_privacy,
    privacy_json,
    private_methods,
    refuse_no_noise,
    refuse_unused,
    seed_warning,
    set_json,
    table,
    write_run_bundle,
)
from .files import check_input_files, distinct_files, read_csv, same_columns

if TYPE_CHECKING:
    from ..attacks.report import AttackReport
    from ..learners.result import LearnResult

#: the protocols whose messages the attacks read (dense, then sparse)
ATTACKABLE = names(messages="dense") + names(messages="sparse")

__all__ = ["add_attack_command", "run_attack"]

_COLUMNS = (
    "participant",
    "n_k",
    "rel_error",
    "recovered",
    "membership_auc",
    "membership_tpr",
    "attribute_gain",
    "record_error",
)


def add_attack_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``attack`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "attack",
        formatter_class=formatter,
        help=COMMANDS["attack"],
        description="Run a federated protocol, reconstruct every participant's covariance from "
        "the messages alone, and use it for membership inference, attribute "
        "inference and record reconstruction. Without --data the participants are "
        "simulated (linear-Gaussian SEM, ER graph with d edges).",
    )
    p.add_argument("--method", required=True, choices=ATTACKABLE, help="protocol to attack")
    p.add_argument(
        "--data",
        nargs="+",
        type=Path,
        default=None,
        metavar="CSV",
        help="one CSV per participant (default: simulated participants)",
    )
    p.add_argument("--d", type=count(2, 10_000), default=20, help="simulated: number of variables")
    p.add_argument("--participants", type=count(1, 100_000), default=10, help="simulated: participants")
    p.add_argument("--n-per-participant", type=count(2, 10**6), default=20, help="simulated: rows each")
    p.add_argument(
        "--seed",
        type=count(0, MAX_SEED),
        default=None,
        help="random seed of the simulated data, the privacy noise and the attacker's "
        "non-members (default: fresh entropy; with a DP method a seed makes the "
        "run NOT private against anyone who knows it)",
    )
    p.add_argument(
        "--epsilon", type=float, default=None, help="ε per participant (DP methods, required there)"
    )
    p.add_argument("--delta", type=float, default=1e-5, help="δ per participant (DP methods)")
    p.add_argument(
        "--rounds",
        type=count(1, MAX_COUNT),
        default=None,
        help="rounds (default: Fed-BNSL 200 at most; sparse 100; private sparse: "
        "chosen from public quantities)",
    )
    p.add_argument(
        "--clip",
        type=float,
        default=1.0,
        help="dp-fed-sparse-bnsl: clip bound (relative to each parent's scale)",
    )
    p.add_argument(
        "--feature-bound",
        type=float,
        default=None,
        help="dp-fed-sparse-bnsl: public bound on x_ia² (private smoothness); default on simulated "
        "participants: the simulator's scale, max(30, 5d); required with --data",
    )
    p.add_argument(
        "--clip-norm",
        type=float,
        default=None,
        help="dp-fed-bnsl: row-norm clip bound R; default on simulated participants: the "
        "simulator's scale, 4√d; required with --data",
    )
    p.add_argument(
        "--target",
        type=count(0, 10_000),
        default=None,
        help="hidden column of attribute inference (default: the last)",
    )
    p.add_argument(
        "--secagg",
        action="store_true",
        help="fed-bnsl, dp-fed-bnsl: run over secure aggregation (the plain secure sum; the jointly "
        "noised release) and read each participant as the server, a coalition of the server and "
        "the others, and two sums one participant apart can",
    )
    p.add_argument(
        "--dropouts",
        type=count(0, 100_000),
        default=0,
        help="dp-fed-bnsl --secagg: t, the missing or colluding participants the noise allows for",
    )
    add_bundle_options(p, "the attack: its summary, the per-participant table and the membership scores")
    add_json_option(p)
    p.set_defaults(handler=_attack)


#: the private protocols
_PRIVATE = private_methods()

#: options of `attack` that only some methods (or only simulated data) read
_USERS = {
    "epsilon": _PRIVATE,
    "delta": _PRIVATE,
    "clip": ("dp-fed-sparse-bnsl",),
    "feature_bound": ("dp-fed-sparse-bnsl",),
    "clip_norm": ("dp-fed-bnsl", "fed-bnsl"),
    "secagg": ("dp-fed-bnsl", "fed-bnsl"),
    "dropouts": ("dp-fed-bnsl",),
}
_SIMULATED = ("d", "participants", "n_per_participant")


def run_attack(args: argparse.Namespace) -> tuple[LearnResult, AttackReport]:
    """Fit ``args.method`` on the participants and attack them; returns (result, report)."""
    private = args.method in _PRIVATE
    if private and args.epsilon is None:
        raise CLIError(f"--method {args.method} needs --epsilon")
    given: set[str] = getattr(args, "given", set())
    refuse_unused(argparse.Namespace(given=given), _USERS, args.method)
    refuse_no_noise(args)
    secagg = bool(getattr(args, "secagg", False))
    if "clip_norm" in given and args.method == "fed-bnsl" and not secagg:
        raise CLIError("--clip-norm applies to fed-bnsl with --secagg only (the plain secure sum's grid)")
    if "dropouts" in given and not secagg:
        raise CLIError("--dropouts applies with --secagg only")
    bound = {"dp-fed-sparse-bnsl": "feature_bound", "dp-fed-bnsl": "clip_norm"}.get(args.method)
    if secagg and args.method == "fed-bnsl":
        bound = "clip_norm"
    if args.data is not None:
        extra = [n for n in _SIMULATED if n in given]
        if extra:
            raise CLIError(
                f"--{extra[0].replace('_', '-')} applies to simulated participants only, not with --data"
            )
        if bound is not None and getattr(args, bound) is None:
            flag = "--" + bound.replace("_", "-")
            raise CLIError(
                f"--method {args.method} with --data needs {flag}, a public bound in your data's units "
                f"(from the measurement's known range, not from the data)"
            )
        check_input_files(args.data, "--data")
        distinct_files(args.data, "--data")
    import numpy as np

    from ..attacks.report import attack_report, population_covariance
    from ..learners.linear.dp_fed_bnsl import dp_fed_bnsl
    from ..learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
    from ..learners.linear.fed_bnsl import fed_bnsl
    from ..learners.linear.fed_sparse_bnsl import fed_sparse_bnsl
    from ..scores import centre
    from ..simulation import simulate, simulated_bounds

    if args.data is None and bound is not None and getattr(args, bound) is None:
        setattr(args, bound, simulated_bounds(args.d)[bound])  # public: the simulator's design
    if args.data is not None:
        frames = [read_csv(p, "--data", participant=k) for k, p in enumerate(args.data)]
        same_columns(frames, args.data, "--data")
        if not private:  # the private protocols clip every record; the others square the data
            from .learn import check_scale

            check_scale(frames, args.data)
        participants = [f.to_numpy(dtype=float) for f in frames]
        # the adversary's population statistics: the pooled covariance (it includes the members,
        # which slightly favours the baseline and the membership reference, not the attack)
        pooled = np.concatenate([centre(X) for X in participants])
        population = pooled.T @ pooled / len(pooled)
    if args.target is not None:
        d = participants[0].shape[1] if args.data is not None else args.d
        if args.target >= d:
            raise CLIError(f"--target {args.target} is not a column index (the data have {d})")
    if private and args.seed is not None:
        seed_warning()
    rng = np.random.default_rng(args.seed)  # one stream: data, noise and non-members
    data_rng, noise_rng, attack_rng = rng.spawn(3)
    if args.data is None:
        data = simulate(
            args.d, args.participants * args.n_per_participant, participants=args.participants, rng=data_rng
        )
        participants = list(data.participants)
        population = population_covariance(data.W_true)
    if secagg:
        from .attack_secagg import run_secagg_attack

        fresh = None
        if args.data is None:  # non-members: fresh rows of the same SEM
            from ..simulation.linear import simulate_linear_sem

            fresh = [simulate_linear_sem(data.W_true, len(X), rng=attack_rng) for X in participants]
        seed = int(noise_rng.integers(2**63))  # one stream for the run and the colluders' replay
        return run_secagg_attack(args, participants, population, seed, fresh)  # type: ignore[return-value]
    rounds = args.rounds
    fit = {
        "fed-bnsl": lambda: fed_bnsl(participants, max_rounds=rounds or 200),
        "fed-sparse-bnsl": lambda: fed_sparse_bnsl(participants, rounds=rounds or 100),
        "dp-fed-bnsl": lambda: dp_fed_bnsl(
            participants,
            epsilon=args.epsilon,
            delta=args.delta,
            clip_norm=args.clip_norm,
            max_rounds=rounds or 200,
            rng=noise_rng,
        ),
        "dp-fed-sparse-bnsl": lambda: dp_fed_sparse_bnsl(
            participants,
            epsilon=args.epsilon,
            delta=args.delta,
            clip=args.clip,
            feature_bound=args.feature_bound,
            rounds=rounds,
            rng=noise_rng,
        ),
    }
    result = fit[args.method]()
    report = attack_report(
        result, participants, population_cov=population, target=args.target, rng=attack_rng
    )
    return result, report


def _attack(args: argparse.Namespace) -> int:
    check_bundle_options(args)
    if getattr(args, "secagg", False):
        return _attack_secagg(args)
    result, report = run_attack(args)
    assert result.transcript is not None  # every attackable protocol is federated
    d = result.W.shape[0]
    print(
        f"{result.method}: {len(report.table) - 1} participants, d = {d}, "
        f"{len(result.history)} rounds, communication {result.communication_text()}"
    )
    print_privacy(result)
    from ..attacks.report import ALL_ROW

    rows = [[r[c] for c in _COLUMNS] for r in report.table.to_dict("records")]
    print(table(_COLUMNS, rows))
    print(
        f"rel_error: ‖Ĉ − C‖_F/‖C‖_F of the server's covariance estimate; recovered: entries "
        f"within {report.rtol:g}·√(C_ii C_jj); membership: AUC and TPR at FPR = {report.fpr:g} "
        f"(members vs other participants' rows); attribute_gain: baseline MSE / attack MSE; "
        f"record_error: relative error of the last row rebuilt from the others; {ALL_ROW}."
    )
    doc = {
        "method": result.method,
        "participants": len(report.table) - 1,
        "d": d,
        "rounds": len(result.history),
        "communication_mb": result.communication_mb,
        "privacy": privacy_json(result),
        "rtol": report.rtol,
        "fpr": report.fpr,
        "table": report.table.to_dict("records"),
    }
    write_run_bundle(
        args,
        "attack",
        tables={"participants": report.table, "membership_scores": report.scores},
        summary={k: v for k, v in doc.items() if k != "table"},
    )
    set_json(args, doc)
    return 0


def _attack_secagg(args: argparse.Namespace) -> int:
    from .attack_secagg import SECAGG_COLUMNS

    result, tab, info = run_attack(args)  # type: ignore[misc]
    d = result.W.shape[0]
    print(
        f"{result.method} over secure aggregation: {len(tab)} participants, d = {d}, "
        f"communication {result.communication_text()}; the sum holds participants "
        f"{info['contributors']}"
    )
    print_privacy(result)
    rows = [[r[c] for c in SECAGG_COLUMNS] for r in tab.to_dict("records")]
    print(table(SECAGG_COLUMNS, rows))
    print(
        "errors: ‖Ĉ − C_k‖_F/‖C_k‖_F of participant k's covariance (its rows clipped to R) read by the "
        "server from the sum alone (the pooled covariance), by the server with the other "
        "participants (their shares subtracted), and from two sums one participant apart; auc: "
        "membership of its rows against fresh rows on that view (simulated data only)."
    )
    if "epsilon_against_coalition" in info:
        print(
            f"against a coalition of the server and all {len(tab) - 1} other participants each "
            f"participant keeps ε = {info['epsilon_against_coalition']:.3g} (one noise share; the "
            f"claim covers up to t = {args.dropouts})"
        )
    doc = {
        "method": result.method,
        "aggregation": "secure",
        "participants": len(tab),
        "d": d,
        "privacy": privacy_json(result),
        "table": tab.to_dict("records"),
        **{k: v for k, v in info.items() if k != "settings"},
    }
    write_run_bundle(
        args, "attack", tables={"participants": tab}, summary={k: v for k, v in doc.items() if k != "table"}
    )
    set_json(args, doc)
    return 0
