"""The ``audit`` command of the CLI: run a distinguishing game and print claimed ε, ε_lb, verdict.

Exit status: 0 when the outcome is the expected one (the real mechanism passes, a ``--broken``
variant is flagged), 1 when it is not (a privacy bug, or an audit too weak to catch the bug), 2 on
bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..audits.game_base import BROKEN, GAME_NAMES, MAX_TRIALS, MIN_TRIALS
from .common import (
    COMMANDS,
    MAX_SEED,
    add_bundle_options,
    add_json_option,
    check_bundle_options,
    count,
    set_json,
    table,
    warn,
    write_run_bundle,
)
from .executors import add_executor_options, executor

if TYPE_CHECKING:
    from ..audits.verdict import Audit

__all__ = ["add_audit_command", "print_audit", "audit_json"]


def add_audit_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``audit`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "audit",
        formatter_class=formatter,
        help=COMMANDS["audit"],
        description="Run a mechanism many times on worst-case neighbouring datasets and bound its "
        "ε from below (Clopper-Pearson, failure probability --alpha; for Gaussian releases also "
        "from the whole trade-off curve). A correct mechanism must stay below its claimed ε; a "
        "--broken variant must be flagged.",
    )
    p.add_argument("--mechanism", required=True, choices=GAME_NAMES, help="what to audit")
    p.add_argument("--epsilon", type=float, default=1.0, help="the ε the release is calibrated to")
    p.add_argument("--delta", type=float, default=1e-5, help="δ")
    p.add_argument("--trials", type=count(MIN_TRIALS, MAX_TRIALS), default=100_000, help="runs per world")
    p.add_argument(
        "--broken",
        default=None,
        choices=tuple(BROKEN),
        help="audit a deliberately broken variant instead (a negative control)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="failure probability of the bound")
    p.add_argument(
        "--seed",
        type=count(0, MAX_SEED),
        default=None,
        help="random seed of the game (default: fresh entropy; give one to reproduce "
        "an audit: the worlds are synthetic, so a seed exposes no one's data)",
    )
    add_executor_options(
        p,
        jobs_help="parallel processes (for the whole-protocol games' seeded blocks "
        "of trials; the result does not depend on it)",
    )
    add_bundle_options(p, "the audit")
    add_json_option(p)
    p.set_defaults(handler=_audit)


def print_audit(results: Iterable[Audit]) -> None:
    """One table row per :class:`~dpbnsl.audits.verdict.Audit`."""
    header = (
        "mechanism",
        "variant",
        "trials",
        "claimed ε",
        "ε_lb",
        "ε_lb (GDP)",
        "ε₀_lb (BR) / ε₀",
        "estimate",
        "verdict",
    )
    rows = [
        [
            a.mechanism,
            a.broken or "correct",
            a.trials[0],
            a.claimed_epsilon,
            a.bound.epsilon_lb,
            "-" if a.gdp is None else a.gdp.epsilon_lb,
            "-"
            if a.bounded_range is None
            else f"{a.bounded_range.epsilon0_lb:.4g} / {a.claimed_epsilon0:.4g}",
            "-" if a.estimate is None else a.estimate.epsilon,
            a.verdict,
        ]
        for a in results
    ]
    print(table(header, rows))


def audit_json(a: Audit) -> dict[str, Any]:
    """One audit as JSON-ready data."""
    return {
        "mechanism": a.mechanism,
        "variant": a.broken or "correct",
        "trials": list(a.trials),
        "claimed_epsilon": a.claimed_epsilon,
        "delta": a.delta,
        "epsilon_lb": a.bound.epsilon_lb,
        "alpha": a.bound.alpha,
        "threshold_rule": a.bound.threshold_rule,
        "fpr": a.bound.fpr,
        "fnr": a.bound.fnr,
        "estimate": None if a.estimate is None else a.estimate.epsilon,
        "epsilon_lb_gdp": None if a.gdp is None else a.gdp.epsilon_lb,
        "mu_lb_gdp": None if a.gdp is None else a.gdp.mu_lb,
        "flagged_gdp": a.gdp_flagged,
        "epsilon0_lb_bounded_range": None if a.bounded_range is None else a.bounded_range.epsilon0_lb,
        "claimed_epsilon0": a.claimed_epsilon0,
        "flagged_bounded_range": a.bounded_range_flagged,
        "flagged": a.flagged,
        "expected": a.expected,
        "verdict": a.verdict,
    }


def _audit(args: argparse.Namespace) -> int:
    check_bundle_options(args)
    import pandas as pd

    from ..audits.power import audit_power
    from ..audits.verdict import audit

    with executor(args) as pool:
        result = audit(
            args.mechanism,
            epsilon=args.epsilon,
            delta=args.delta,
            trials=args.trials,
            broken=args.broken,
            alpha=args.alpha,
            rng=args.seed,
            executor=pool,
        )
    power = audit_power(args.epsilon, delta=args.delta, trials=min(result.trials), alpha=args.alpha)
    print_audit([result])
    print(
        f"ε_lb: Clopper-Pearson lower bound, wrong with probability ≤ {args.alpha:g} "
        f"({result.bound.threshold_rule} threshold rule); ε_lb (GDP): lower bound from the whole "
        f"trade-off, for Gaussian releases (assumes their Gaussian trade-off curve; wrong with "
        f"probability ≤ {args.alpha:g}); ε₀_lb (BR): lower bound on a selection's bounded-range "
        f"parameter against the ε₀ its accounting records (assumes nothing; wrong with probability "
        f"≤ {args.alpha:g}); estimate: Gaussian-DP point estimate (not a bound). The verdict uses "
        f"the Clopper-Pearson bound."
    )
    if result.gdp is not None and result.gdp_flagged:
        print(
            f"ε_lb (GDP) = {result.gdp.epsilon_lb:.3g} exceeds the claimed ε: the release is not "
            f"μ-GDP for the μ its claim assumes."
        )
    if result.bounded_range is not None and result.bounded_range_flagged:
        print(
            f"ε₀_lb (BR) = {result.bounded_range.epsilon0_lb:.3g} exceeds the claimed ε₀ = "
            f"{result.claimed_epsilon0:.3g}: the selection's privacy loss spans more than its "
            f"accounting records."
        )
    if not power.sufficient and not result.flagged:
        needed = f"about {power.trials_needed:,}" if power.trials_needed else "more than 10^9"
        warn(
            f"too few trials to test the claim: with {power.trials:,} runs per world a release "
            f"spending twice the claimed ε would be bounded at about {power.expected_lb:.2g} "
            f"(expected), not above the claim, and would pass; {needed} runs per world would catch "
            f"it (--trials)"
        )
    wanted = "FLAGGED (a broken variant)" if args.broken else "pass (the real mechanism)"
    print(f"exit status {0 if result.expected else 1}: the expected verdict is {wanted}")
    doc = audit_json(result)
    doc["power"] = {
        "factor": power.factor,
        "expected_epsilon_lb": power.expected_lb,
        "sufficient": power.sufficient,
        "trials_needed": power.trials_needed,
    }
    write_run_bundle(args, "audit", tables={"audit": pd.DataFrame([audit_json(result)])}, summary=doc)
    set_json(args, doc)
    return 0 if result.expected else 1
