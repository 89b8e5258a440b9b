"""Command-line interface: a thin shell over the importable functions.

Every bad input becomes a one-line ``dpbnsl: error: ...`` on stderr and exit status 2, found
before any work and before any file is written; warnings are one ``dpbnsl: warning: ...`` line
each. An unexpected failure (a bug) is one ``dpbnsl: internal error: ...`` line and status 70
(set ``DPBNSL_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

import numpy as np
from dp_accounting import UnsupportedEventError

from .accounting import add_accounting_commands
from .attack import add_attack_command
from .audit import add_audit_command
from .common import STDIO, CLIError, warn
from .common import formatter as _formatter
from .curve import add_curve_command
from .demo import add_demo_command
from .flower_app import add_flower_app_command
from .learn import add_learn_command
from .show import add_show_command
from .simulate import add_simulate_command

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """Argument errors become one line on stderr and exit status 2 (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dpbnsl: error: {message} (see `{self.prog} --help`)\n")


class _Version(argparse.Action):
    """``--version``: one line, dpbnsl's version and its dependencies'."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        from ..bundle import versions

        v = versions()
        deps = ", ".join(f"{k} {x}" for k, x in v.items() if k != "dpbnsl")
        sys.stdout.write(f"dpbnsl {v['dpbnsl']} ({deps})\n")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dpbnsl",
        description="Federated and differentially private Bayesian-network structure learning.",
        formatter_class=_formatter,
    )
    parser.add_argument(
        "--version", action=_Version, help="print the versions of dpbnsl and its dependencies"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_simulate_command(sub, _formatter)
    add_learn_command(sub, _formatter)
    add_accounting_commands(sub, _formatter)
    add_attack_command(sub, _formatter)
    add_audit_command(sub, _formatter)
    add_curve_command(sub, _formatter)
    add_demo_command(sub, _formatter)
    add_flower_app_command(sub, _formatter)
    add_show_command(sub, _formatter)
    return parser


def _given(argv: Sequence[str]) -> set[str]:
    """The options the user typed (whatever their value): the same command line parsed with every
    default suppressed."""
    parser = build_parser()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.option_strings:
                action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv))) - {"command", "handler"}


def _show_warning(
    seen: set[str],
) -> Callable[..., None]:
    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
        if text not in seen:
            seen.add(text)
            warn(text)

    return show


#: options whose value ``-`` means standard output
_STDOUT_OPTIONS = ("out", "html")


def _run(args: argparse.Namespace) -> int:
    """Run the command. When its result goes to stdout (``--json``, or an output file ``-``), the
    human-readable text goes to stderr instead, and the JSON document is printed last."""
    stdout = sys.stdout
    args.stdout = stdout
    taken = getattr(args, "json", False) or any(
        str(getattr(args, name, None)) == STDIO for name in _STDOUT_OPTIONS
    )
    if getattr(args, "json", False) and any(str(getattr(args, n, None)) == STDIO for n in _STDOUT_OPTIONS):
        raise CLIError("--json prints on stdout: write the other output to a file, not to '-'")
    with contextlib.redirect_stdout(sys.stderr if taken else stdout):
        status = args.handler(args)
    if getattr(args, "json", False):
        document = getattr(args, "json_document", None)
        if document is None:  # pragma: no cover - every command sets one
            raise RuntimeError(f"the {args.command!r} command set no JSON document")
        stdout.write(json.dumps(document, ensure_ascii=False, allow_nan=False) + "\n")
        stdout.flush()
    return int(status)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:  # argparse prints its one-line error (or the help) and exits: return its status
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    args.given = _given(argv)
    args.argv = ["dpbnsl", *argv]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("always")
            warnings.showwarning = _show_warning(set())
            return _run(args)
    except KeyboardInterrupt:
        print("dpbnsl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `dpbnsl ... | head`: stop quietly
        sys.stderr.close()
        return 141
    except MemoryError:
        print(
            "dpbnsl: error: out of memory (reduce the problem size: --d, --n, --trials, ...)", file=sys.stderr
        )
        return 2
    except (CLIError, ValueError, TypeError, UnsupportedEventError, OSError) as exc:
        print(f"dpbnsl: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, not a traceback (DPBNSL_DEBUG=1 shows it)
        if os.environ.get("DPBNSL_DEBUG"):
            raise
        print(
            f"dpbnsl: internal error: {type(exc).__name__}: {_one_line(exc)} (this is a bug; "
            f"set DPBNSL_DEBUG=1 for the traceback and please report it)",
            file=sys.stderr,
        )
        return 70


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename!r}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
