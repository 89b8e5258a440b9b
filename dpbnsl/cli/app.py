"""Command-line interface: a thin shell over the importable functions.

Every bad input becomes a one-line ``dpbnsl: error: ...`` on stderr and exit status 2, found
before any work and before any file is written; warnings are one ``dpbnsl: warning: ...`` line
each. An unexpected failure (a bug) is one ``dpbnsl: internal error: ...`` line and status 70
(set ``DPBNSL_DEBUG=1`` for the traceback).

Start-up: :func:`main` builds the options of the command it runs and no other (the rest are
listed by name and help line, from :data:`~dpbnsl.cli.common.COMMANDS`), and each command module
is imported only when its parser is built. Importing a command's module costs up to a second
(the learners, pandas, dp-accounting), so ``dpbnsl --help`` imports none and ``dpbnsl noise`` only
its own.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import NoReturn, TextIO

from .common import COMMANDS, STDIO, CLIError, warn
from .common import formatter as _formatter

__all__ = ["main", "build_parser"]

#: the signature of every ``add_<command>_command`` function
_Adder = Callable[[argparse._SubParsersAction, Callable[..., argparse.HelpFormatter]], None]


class _Parser(argparse.ArgumentParser):
    """Argument errors become one line on stderr and exit status 2 (``--help`` shows the usage); a
    value outside a closed list gets the closest names ("did you mean") instead of the whole list
    when the list is long."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dpbnsl: error: {_suggest(message)} (see `{self.prog} --help`)\n")


#: argparse's message for a value outside ``choices``
_INVALID_CHOICE = re.compile(r"^(argument [^:]+): invalid choice: '(.*)' \(choose from (.*)\)$", flags=re.S)


def _suggest(message: str) -> str:
    """argparse's invalid-choice message with a "did you mean" and, for long lists, no list."""
    match = _INVALID_CHOICE.match(message)
    if match is None:
        return message
    where, value, listed = match.groups()
    choices = [c.strip().strip("'") for c in listed.split(",")]
    close = difflib.get_close_matches(value, choices, n=3, cutoff=0.6)
    if not close:  # a prefix or a part of a name: 'dp' -> dp-fed-bnsl, dp-fed-sparse-bnsl
        close = [c for c in choices if value and value.lower() in c.lower()][:3]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    shown = f" (choose from {', '.join(choices)})" if len(choices) <= 8 or not close else ""
    return f"{where}: invalid choice: {value!r}{hint}{shown}"


class _Version(argparse.Action):
    """``--version``: one line, dpbnsl's version and its dependencies'."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        from ..io.bundle import versions

        v = versions()
        deps = ", ".join(f"{k} {x}" for k, x in v.items() if k != "dpbnsl")
        sys.stdout.write(f"dpbnsl {v['dpbnsl']} ({deps})\n")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, every command's options built (for documentation,
    tests and introspection; :func:`main` builds only the command it runs)."""
    return _parser(COMMANDS)


def _parser(built: Collection[str]) -> argparse.ArgumentParser:
    """The parser of the command line with the options of the commands in ``built``; every other
    command is listed by name and help line only, so ``dpbnsl --help`` and a wrong command name
    read the same whatever is built."""
    parser = _Parser(
        prog="dpbnsl",
        description="Federated and differentially private Bayesian-network structure learning.",
        formatter_class=_formatter,
    )
    parser.add_argument(
        "--version", action=_Version, help="print the versions of dpbnsl and its dependencies"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, line in COMMANDS.items():
        if name in built:
            _adder(name)(sub, _formatter)
        else:
            sub.add_parser(name, help=line)
    return parser


def _adder(command: str) -> _Adder:
    """The function that adds ``command``'s sub-parser, its module imported only now: each
    command module imports what its command runs on, which no other command should pay for."""
    if command == "simulate":
        from .simulate import add_simulate_command

        return add_simulate_command
    if command == "learn":
        from .learn import add_learn_command

        return add_learn_command
    if command == "noise":
        from .accounting import add_noise_command

        return add_noise_command
    if command == "account":
        from .accounting import add_account_command

        return add_account_command
    if command == "attack":
        from .attack import add_attack_command

        return add_attack_command
    if command == "audit":
        from .audit import add_audit_command

        return add_audit_command
    if command == "curve":
        from .curve import add_curve_command

        return add_curve_command
    if command == "demo":
        from .demo import add_demo_command

        return add_demo_command
    if command == "flower-app":
        from .flower_app import add_flower_app_command

        return add_flower_app_command
    if command == "show":
        from .show import add_show_command

        return add_show_command
    raise KeyError(command)  # pragma: no cover - COMMANDS lists only the names above


def _to_build(argv: Sequence[str]) -> tuple[str, ...]:
    """The command whose options ``argv`` needs (none for ``dpbnsl --help``): the one argparse
    will run, which is the first word not starting with '-'.

    The top-level options (``-h``, ``--help``, ``--version``) take no value, so every word before
    the command starts with '-', and no command name does. A word argparse takes as the command
    although it starts with '-' (``-1``, ``-``, anything after ``--``) is refused as an invalid
    choice, whichever command was built."""
    word = next((w for w in argv if not w.startswith("-")), None)
    return (word,) if word in COMMANDS else ()


def _given(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The options the user typed (whatever their value): the same command line parsed again with
    every default suppressed. This changes ``parser``'s defaults: call it after the real parse."""
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.option_strings:
                action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv))) - {"command", "handler"}


def _flags(parser: argparse.ArgumentParser, command: str | None) -> dict[str, str]:
    """The options of ``command`` by the name of their Python parameter (``feature_bound`` →
    ``--feature-bound``), to say in flags what the library says in parameter names."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None or command not in sub.choices:
        return {}
    out = {}
    for action in sub.choices[command]._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in _NOT_FLAGS:
            out[action.dest] = longs[0]
    return out


#: option names that mean something else in the library's messages
_NOT_FLAGS = frozenset(("help", "json", "data", "d"))


_PARAMETER = re.compile(r"`(\w+)`(?: = (?=\S))?")
_ASSIGNED = re.compile(r"\b(\w+)=('[^']*'|\"[^\"]*\"|<[^>]*>|[^\s,;)]+)")
_SPACED = re.compile(r"\b(\w+_\w+) = ([^\s,;)]+)")


def in_flags(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with the Python parameter names of the command's options replaced by its flags:
    `` `epsilon` `` → ``--epsilon``, ``centre='private'`` → ``--centre private``,
    ``clip_norm = 0.01`` → ``--clip-norm 0.01`` (other names are left as they are)."""

    def value(v: str) -> str:
        return v[1:-1] if v[:1] in "'\"" and v[-1:] == v[:1] else v

    text = _PARAMETER.sub(
        lambda m: (
            flags[m.group(1)] + (" " if m.group(0).endswith("= ") else "")
            if m.group(1) in flags
            else m.group(0)
        ),
        text,
    )
    text = _ASSIGNED.sub(
        lambda m: f"{flags[m.group(1)]} {value(m.group(2))}" if m.group(1) in flags else m.group(0), text
    )
    return _SPACED.sub(
        lambda m: f"{flags[m.group(1)]} {m.group(2)}" if m.group(1) in flags else m.group(0), text
    )


def _show_warning(seen: set[str], flags: Mapping[str, str]) -> Callable[..., None]:
    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
        text = in_flags(text, flags)
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
    """Run the command line ``argv`` (default: the process's) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(_to_build(argv))
    try:  # argparse prints its one-line error (or the help) and exits: return its status
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    flags = _flags(parser, getattr(args, "command", None))
    args.given = _given(parser, argv)
    args.argv = ["dpbnsl", *argv]
    import numpy as np  # only now: the help, --version and argument errors never need it

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), _one_blas_thread():
            warnings.simplefilter("always")
            warnings.showwarning = _show_warning(set(), flags)
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
    except Exception as exc:
        if _user_error(exc):
            print(f"dpbnsl: error: {in_flags(_one_line(exc), flags)}", file=sys.stderr)
            return 2
        if os.environ.get("DPBNSL_DEBUG"):  # a bug: one line, not a traceback, unless asked
            raise
        print(
            f"dpbnsl: internal error: {type(exc).__name__}: {_one_line(exc)} (this is a bug; "
            f"set DPBNSL_DEBUG=1 for the traceback and please report it)",
            file=sys.stderr,
        )
        return 70


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """One BLAS thread while the command runs, unless the user chose a count (see
    :mod:`dpbnsl.blas`); the previous limits are restored afterwards.

    The console script limits BLAS before calling :func:`main`, but a limit reaches only the BLAS
    libraries loaded by then (numpy and scipy each load their own), and the commands now load
    theirs when their parser is built, inside :func:`main`: so the limit is set again here."""
    from ..blas import THREAD_VARIABLES, single_thread

    before = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    limiter = single_thread()
    try:
        yield
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
        for name, value in before.items():  # the libraries loaded meanwhile keep one thread
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


#: the exceptions that report bad input (status 2), not a bug (status 70)
_USER_ERRORS = (CLIError, ValueError, TypeError, OSError)


def _user_error(exc: Exception) -> bool:
    """Whether ``exc`` reports bad input. dp-accounting's ``UnsupportedEventError`` (an event or δ
    an accountant cannot represent) does too; its class is looked up among the loaded modules
    rather than imported, since importing dp-accounting costs most of a second and none of its
    exceptions can exist before it is loaded."""
    if isinstance(exc, _USER_ERRORS):
        return True
    unsupported = getattr(sys.modules.get("dp_accounting"), "UnsupportedEventError", None)
    return unsupported is not None and isinstance(exc, unsupported)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename!r}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
