"""The ``curve`` command of the CLI: a resumable privacy–utility sweep, to CSV and optionally PNG/SVG.

Bad input (unknown methods, ε ≤ 0, δ outside (0, 1), a CSV whose columns do not match) exits with
status 2 and leaves an existing CSV untouched.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING

from ..learners.registry import names
from .common import COMMANDS, CLIError, add_json_option, count, set_json
from .executors import add_executor_options, executor
from .files import check_output_file, write_files

if TYPE_CHECKING:
    from ..audits.tradeoff import SweepResult

__all__ = ["add_curve_command"]

#: the methods a sweep runs: the linear learners that need no true graph
METHODS = names(family="linear", oracle=False) + names(family="constraint", oracle=False)  # as the sweep's
#: the public bounds a private method needs, settable here (default: the simulator's scale)
_BOUNDS = {"feature_bound": "dp-fed-sparse-bnsl", "clip_norm": "dp-fed-bnsl"}


def _floats(text: str, flag: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"{flag} must be comma-separated numbers; got {text!r}") from None


def _ints(text: str, flag: str, low: int, high: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"{flag} must be comma-separated integers; got {text!r}") from None
    if not values:
        raise CLIError(f"{flag} must list at least one integer; got {text!r}")
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise CLIError(f"{flag} values must lie between {low} and {high:,}; got {bad[0]:,}")
    return values


def add_curve_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``curve`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "curve",
        formatter_class=formatter,
        help=COMMANDS["curve"],
        description="Run methods × ε × seeds (× d or × participants) on simulated data; append "
        "one row per run to --out (a re-run skips finished rows) and draw the median over seeds "
        "with a 25th-75th percentile band, the non-private methods dashed.",
    )
    p.add_argument(
        "--methods",
        default="fed-sparse-bnsl,dp-fed-sparse-bnsl",
        help=f"comma-separated, from {', '.join(METHODS)}",
    )
    p.add_argument("--epsilons", default="0.5,1,2,5,25,50", help="ε grid of the private methods")
    p.add_argument("--delta", type=float, default=1e-5, help="δ")
    p.add_argument(
        "--seeds",
        type=count(1, 10_000),
        default=3,
        help="seeds 0 .. N-1 (of the simulated data and their noise: a curve is a "
        "simulation study, reproducible on purpose)",
    )
    p.add_argument("--d", default="20", help="dimension(s), comma-separated")
    p.add_argument("--participants", default="10", help="participant count(s), comma-separated")
    p.add_argument("--n-per-participant", type=count(2, 10**6), default=200, help="rows per participant")
    p.add_argument(
        "--feature-bound",
        type=float,
        default=None,
        help="dp-fed-sparse-bnsl: public bound on x_ia² (default: the simulator's scale for each "
        "d, max(30, 5d))",
    )
    p.add_argument(
        "--clip-norm",
        type=float,
        default=None,
        help="dp-fed-bnsl: row-norm clip bound R (default: the simulator's scale for each d, 4√d)",
    )
    add_executor_options(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="CSV of results (appended, resumable: finished rows are skipped)",
    )
    p.add_argument("--plot", type=Path, default=None, help="PNG or SVG to draw (needs matplotlib)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    add_json_option(p)
    p.set_defaults(handler=_curve)


def _check_csv_path(path: Path) -> None:
    """--out is resumed when it exists: it must then be a regular file; else creatable."""
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise CLIError(f"--out {str(path)!r} is a directory; give a CSV file name")
        if not path.is_file():
            raise CLIError(f"--out {str(path)!r} is not a regular file")
    else:
        check_output_file(path, "--out", force=False)


def _methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise CLIError(f"--methods must name at least one method, from {', '.join(METHODS)}")
    for m in methods:
        if m not in METHODS:
            close = difflib.get_close_matches(m, METHODS, n=2, cutoff=0.6)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise CLIError(f"--methods: unknown method {m!r}; {hint}choose from {', '.join(METHODS)}")
    return methods


def _curve(args: argparse.Namespace) -> int:
    methods = _methods(args.methods)
    for bound, method in _BOUNDS.items():
        if getattr(args, bound) is not None and method not in methods:
            raise CLIError(f"--{bound.replace('_', '-')} applies to {method}, which --methods does not run")
    ds = _ints(args.d, "--d", 2, 10_000)
    ps = _ints(args.participants, "--participants", 1, 100_000)
    if len(ds) > 1 and len(ps) > 1:
        raise CLIError("give several values to --d or to --participants, not both")
    x = "d" if len(ds) > 1 else "P" if len(ps) > 1 else "epsilon"
    _check_csv_path(args.out)
    if args.force and args.plot is None:
        raise CLIError("--force applies only with --plot (it allows overwriting that file)")
    if args.plot is not None:  # everything the plot needs is checked before the sweep
        if args.plot.suffix.lower() not in (".png", ".svg"):
            raise CLIError(f"--plot {str(args.plot)!r} must end in .png or .svg")
        check_output_file(args.plot, "--plot", force=args.force)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CLIError("--plot needs matplotlib: pip install 'dpbnsl[plot]'") from None
        if x == "epsilon" and not any(m.startswith("dp-") for m in methods):
            raise CLIError("--plot against ε needs a private method (dp-...) in --methods")
    from ..audits.tradeoff import summarize

    with executor(args) as pool:
        result = _sweep(args, methods, ds, ps, pool)
    print(f"{result.computed} runs computed, {result.skipped} already in {args.out}")
    by = ["method", "epsilon"] + (["d"] if len(ds) > 1 else ["P"] if len(ps) > 1 else [])
    print(summarize(result.frame, by=tuple(by)).round(3).to_string(index=False))
    if args.plot is not None:
        from ..audits.plots import plot_tradeoff

        frame = result.frame
        if x != "epsilon":  # one ε per private line would clutter: keep the ε grid's median
            eps = sorted(e for e in frame.epsilon.unique() if e != float("inf"))
            keep = eps[len(eps) // 2] if eps else None
            frame = frame[(frame.epsilon == keep) | (frame.epsilon == float("inf"))]
        write_files([(args.plot, lambda tmp: plot_tradeoff(frame, path=tmp, x=x, log_x=x == "epsilon"))])
        print(f"plot written to {args.plot}")
    set_json(
        args,
        {
            "out": str(args.out),
            "plot": None if args.plot is None else str(args.plot),
            "computed": result.computed,
            "skipped": result.skipped,
            "x": x,
            "summary": summarize(result.frame, by=tuple(by)).to_dict("records"),
        },
    )
    return 0


def _sweep(
    args: argparse.Namespace, methods: list[str], ds: list[int], ps: list[int], pool: Executor | None
) -> SweepResult:
    from ..audits.tradeoff import sweep

    options = {
        method: {bound: getattr(args, bound)}
        for bound, method in _BOUNDS.items()
        if getattr(args, bound) is not None
    }
    return sweep(
        methods=methods,
        epsilons=_floats(args.epsilons, "--epsilons"),
        seeds=list(range(args.seeds)),
        d=ds if len(ds) > 1 else ds[0],
        participants=ps if len(ps) > 1 else ps[0],
        n_per_participant=args.n_per_participant,
        delta=args.delta,
        csv=args.out,
        executor=pool,  # local processes (--jobs) or a Dask cluster (--scheduler)
        method_options=options,
    )
