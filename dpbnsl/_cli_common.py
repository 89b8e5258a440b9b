"""Pieces shared by the CLI modules: the user-error type, the help formatter, plain-text tables."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["CLIError", "PRIVATE", "formatter", "table"]

#: The private learners (they need --epsilon and accept the privacy options).
PRIVATE = ("dp-fed-sparse-bnsl", "dp-fed-bnsl")


class CLIError(Exception):
    """A user error found by the CLI itself (bad file, wrong combination of options)."""


class _DefaultsFormatter(argparse.HelpFormatter):
    """Append ``(default: …)`` to every option that has a non-None default and no stated one
    (flags such as ``--json`` excepted)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.default not in (None, argparse.SUPPRESS) and "default" not in text
                and action.option_strings and action.nargs != 0):
            text += " (default: %(default)s)"
        return text


def formatter(prog: str) -> argparse.HelpFormatter:
    return _DefaultsFormatter(prog, max_help_position=32)


def _num(x: float) -> str:
    return f"{x:.6g}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned; floats to 6 digits."""
    cells = [list(header)] + [[_num(v) if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in cells)
