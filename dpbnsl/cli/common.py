"""Pieces shared by the CLI modules: the table of commands, the user-error type, the help
formatter, plain-text tables.

Every command imports this module, ``dpbnsl --help`` included, so it imports nothing beyond the
standard library at the top: numpy, the learners and the accounting load inside the functions that
use them, and only the commands that call those functions pay for them.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..accounting.summary import PrivacySummary
    from ..learners.result import LearnResult

__all__ = [
    "COMMANDS",
    "CLIError",
    "MAX_COUNT",
    "private_methods",
    "formatter",
    "table",
    "warn",
    "seed_warning",
    "count",
    "MAX_SEED",
    "refuse_unused",
    "refuse_no_noise",
    "print_privacy",
    "add_json_option",
    "set_json",
    "jsonable",
    "privacy_json",
    "STDIO",
    "add_bundle_options",
    "check_bundle_options",
    "write_run_bundle",
    "format_accuracy",
]

#: Every command: its name and its line in ``dpbnsl --help``, in the order listed there. The
#: parser lists the commands it does not build from this table alone (see
#: :func:`dpbnsl.cli.app.main`), and each command module takes its own ``help`` from here, so the
#: two cannot differ.
COMMANDS: dict[str, str] = {
    "simulate": "simulate a linear SEM and write one CSV per participant",
    "learn": "learn a DAG from one or several CSV files",
    "noise": "noise multipliers of DP-PGCD for a target (ε, δ)",
    "account": "ε(δ) of a given noise (ρ-zCDP, or N Gaussian releases / DP-PGCD steps)",
    "attack": "show what the server learns about each participant",
    "audit": "empirical lower bound on a mechanism's ε",
    "curve": "privacy-utility sweep on simulated data",
    "demo": "the whole package in under a minute",
    "flower-app": "write the Flower App project of a study on separate machines",
    "show": "print a run bundle (learn/attack/audit --out-dir), or write it as an HTML report",
}

#: The largest count of rounds or iterations an option accepts: the learners' bound
#: (``dpbnsl.learners.admm.MAX_COUNT``), repeated here so that the commands that run no learner
#: (``noise``) need not import them to build their parser; tests/cli/test_cli_startup.py checks
#: that the two agree.
MAX_COUNT = 10**6

#: the file name that means standard input (where a file is read) or output (where one is written)
STDIO = "-"


def add_bundle_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out-dir DIR`` (a bundle of ``what``, read with ``dpbnsl show``) and ``--force``."""
    from pathlib import Path

    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help=f"write a bundle of {what} here (read it with `dpbnsl show`)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --out-dir bundle")


def check_bundle_options(args: argparse.Namespace) -> None:
    """Refuse ``--force`` without ``--out-dir``, and an unusable ``--out-dir``, before any work."""
    if args.force and args.out_dir is None:
        raise CLIError("--force applies only with --out-dir (it allows replacing that bundle)")
    if args.out_dir is not None:
        from ..io.bundle import check_bundle_dir

        check_bundle_dir(args.out_dir, overwrite=args.force, what="--out-dir")


def write_run_bundle(args: argparse.Namespace, kind: str, **parts: Any) -> None:
    """Write the bundle of ``--out-dir`` (when given) with the command line, and say where."""
    from ..io.bundle import write_bundle

    if args.out_dir is not None:
        write_bundle(args.out_dir, kind, command=args.argv, overwrite=args.force, **parts)
        print(f"{kind} bundle written to {args.out_dir}")


def format_accuracy(accuracy: Mapping[str, Any]) -> str:
    """``shd=3  tpr=0.875  …``: the metrics of ``count_accuracy(...).as_dict()`` on one line."""
    return "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in accuracy.items())


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json``: the command's result as one JSON document on stdout (human text on stderr)."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document on stdout; the human-readable text goes to stderr",
    )


def set_json(args: argparse.Namespace, document: Mapping[str, Any]) -> None:
    """The JSON document the command prints with ``--json`` (``main`` prints it on success)."""
    args.json_document = jsonable(dict(document))


def jsonable(value: Any) -> Any:
    """``value`` with numpy numbers and arrays as Python ones, tuples as lists, and non-finite
    floats as the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (strict JSON has no such numbers)."""
    import numpy as np  # here, not at the top: see the module docstring

    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def privacy_json(result: LearnResult) -> dict[str, Any] | None:
    """The privacy statement of a result as JSON-ready data (None for a non-private run)."""
    p = getattr(result, "privacy", None)
    if p is None:
        return None
    return {
        "statement": str(p),
        "epsilon": p.epsilon,
        "delta": p.delta,
        "target_epsilon": p.target_epsilon,
        "neighbouring": p.neighbouring,
        "accountant": p.accountant,
        "calibration": p.calibration,
        "bounds": dict(p.bounds),
        "spent": [g.epsilon(p.delta, accountant=p.accountant) for g in result.ledger or ()],
    }


def private_methods() -> tuple[str, ...]:
    """The private learners (they need --epsilon and accept the privacy options).

    A function rather than a constant so that importing this module does not import the learner
    registry (every learner, scipy, pandas): only ``learn`` and ``attack`` need it."""
    from ..learners.registry import names

    return names(private=True)


class CLIError(Exception):
    """A user error found by the CLI itself (bad file, wrong combination of options)."""


def refuse_unused(args: argparse.Namespace, users: dict, method: str, what: str | None = None) -> None:
    """Refuse every option the user gave (even at its default value) that ``method`` does not
    read; ``users`` maps option dest to the methods that read it."""
    for name, readers in users.items():
        if name in args.given and method not in readers:
            flag = "--" + name.replace("_", "-")
            raise CLIError(
                f"{flag} does not apply to {what or '--method ' + method} (it is used "
                f"by {', '.join(readers)})"
            )


def refuse_no_noise(args: argparse.Namespace) -> None:
    """A private method with --epsilon inf would run without noise: name the non-private twin."""
    eps = getattr(args, "epsilon", None)
    if eps is not None and eps == float("inf"):
        twin = {"dp-fed-bnsl": "fed-bnsl", "dp-fed-sparse-bnsl": "fed-sparse-bnsl"}
        raise CLIError(
            f"--epsilon inf would switch the noise off: run --method "
            f"{twin.get(args.method, 'without privacy')} instead (ε must lie in "
            f"[1e-6, 100])"
        )


def print_privacy(result: LearnResult) -> None:
    """The guarantee line of a private run, and the looser bounds labelled as such."""
    if getattr(result, "privacy", None) is None:
        return
    print(f"privacy: {result.privacy}")
    looser = cast("PrivacySummary", result.privacy).describe_looser()  # not None: checked above
    if looser:
        print(f"  {looser}")


def warn(message: str) -> None:
    """One warning line on stderr (the CLI's only way to warn: no Python warning text)."""
    print(f"dpbnsl: warning: {message}", file=sys.stderr, flush=True)


def seed_warning() -> None:
    """The warning printed when a private run is given --seed."""
    warn(
        "--seed makes the privacy noise reproducible: this run is NOT private against anyone "
        "who knows the seed (they can regenerate the noise and subtract it)"
    )


#: Seeds are non-negative integers below 2**63 (numpy's SeedSequence takes any, but a CLI seed
#: beyond this is a typo).
MAX_SEED = 2**63 - 1


def count(low: int, high: int, what: str = "") -> Callable[[str], int]:
    """An argparse ``type`` for an integer in [low, high]; the message names the allowed range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high:,}{what}; got {value:,}")
        return value

    parse.__name__ = "integer"
    return parse


class _DefaultsFormatter(argparse.HelpFormatter):
    """Append ``(default: …)`` to every option that has a non-None default and no stated one
    (flags such as ``--json`` excepted)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            action.default not in (None, argparse.SUPPRESS)
            and "default" not in text
            and action.option_strings
            and action.nargs != 0
        ):
            text += " (default: %(default)s)"
        return text


def formatter(prog: str) -> argparse.HelpFormatter:
    return _DefaultsFormatter(prog, max_help_position=32)


def _num(x: float) -> str:
    return f"{x:.6g}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]], *, round_up: bool = False) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned; floats to 6 digits,
    rounded to nearest, or up with ``round_up`` (privacy costs and noise multipliers: a value
    copied from the table then never means less noise or less privacy loss than computed)."""
    from ..accounting.summary import format_up

    fmt = format_up if round_up else _num
    cells = [list(header)] + [[fmt(v) if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in cells
    )
