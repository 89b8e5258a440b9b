"""The ``curve`` command of the CLI: a resumable privacy–utility sweep, to CSV and optionally PNG/SVG.

Bad input (unknown methods, ε ≤ 0, δ outside (0, 1), a CSV whose columns do not match) exits with
status 2 and leaves an existing CSV untouched.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ._cli_common import CLIError
from .audits.tradeoff import METHODS, summarize, sweep

__all__ = ["add_curve_command"]


def _floats(text: str, flag: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"{flag} must be comma-separated numbers; got {text!r}") from None


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"{flag} must be comma-separated integers; got {text!r}") from None


def add_curve_command(sub, formatter: Callable[[str], argparse.HelpFormatter]) -> None:
    """Add ``curve`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "curve", formatter_class=formatter, help="privacy-utility sweep on simulated data",
        description="Run methods × ε × seeds (× d or × participants) on simulated data; append "
                    "one row per run to --out (a re-run skips finished rows) and draw mean ± std "
                    "bands with the non-private methods dashed.")
    p.add_argument("--methods", default="fed-sparse-bnsl,dp-fed-sparse-bnsl",
                   help=f"comma-separated, from {', '.join(METHODS)}")
    p.add_argument("--epsilons", default="0.5,1,2,5,25,50", help="ε grid of the private methods")
    p.add_argument("--delta", type=float, default=1e-5, help="δ")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    p.add_argument("--d", default="20", help="dimension(s), comma-separated")
    p.add_argument("--participants", default="10", help="participant count(s), comma-separated")
    p.add_argument("--n-per-participant", type=int, default=200, help="rows per participant")
    p.add_argument("--jobs", type=int, default=1, help="parallel processes")
    p.add_argument("--out", type=Path, required=True, help="CSV of results (appended, resumable)")
    p.add_argument("--plot", type=Path, default=None, help="PNG or SVG to draw (needs matplotlib)")
    p.set_defaults(handler=_curve)


def _curve(args) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    ds, ps = _ints(args.d, "--d"), _ints(args.participants, "--participants")
    if len(ds) > 1 and len(ps) > 1:
        raise CLIError("give several values to --d or to --participants, not both")
    if args.seeds < 1:
        raise CLIError(f"--seeds must be at least 1; got {args.seeds}")
    result = sweep(methods=methods, epsilons=_floats(args.epsilons, "--epsilons"),
                   seeds=list(range(args.seeds)), d=ds if len(ds) > 1 else ds[0],
                   participants=ps if len(ps) > 1 else ps[0],
                   n_per_participant=args.n_per_participant, delta=args.delta, csv=args.out,
                   jobs=args.jobs)
    print(f"{result.computed} runs computed, {result.skipped} already in {args.out}")
    by = ["method", "epsilon"] + (["d"] if len(ds) > 1 else ["P"] if len(ps) > 1 else [])
    print(summarize(result.frame, by=tuple(by)).round(3).to_string(index=False))
    if args.plot is not None:
        from .audits.plots import plot_tradeoff

        x = "d" if len(ds) > 1 else "P" if len(ps) > 1 else "epsilon"
        frame = result.frame
        if x != "epsilon":  # one ε per private line would clutter: keep the ε grid's median
            eps = sorted(e for e in frame.epsilon.unique() if e != float("inf"))
            keep = eps[len(eps) // 2] if eps else None
            frame = frame[(frame.epsilon == keep) | (frame.epsilon == float("inf"))]
        print(f"plot written to {plot_tradeoff(frame, path=args.plot, x=x, log_x=x == 'epsilon')}")
    return 0
