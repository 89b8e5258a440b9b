"""Progress of a run, for whoever is watching: the round drivers report every round done, and a
caller that wants to show it installs a reporter for the duration of a call (:func:`reporting`).

Nothing is reported unless a reporter is installed (the library prints nothing by itself); the
command line installs :class:`StderrProgress` around a learner, which draws one line on a terminal
once a run has lasted a couple of seconds: the phase, the rounds done of the most planned, the time
elapsed and (with a planned count) the time left at most.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TextIO

__all__ = ["Reporter", "reporting", "round_done", "StderrProgress"]

#: ``report(phase, rounds_done, planned)``: ``planned`` is the most rounds the phase may run (None
#: when the driver cannot know it)
Reporter = Callable[[str, int, "int | None"], None]

_REPORTER: ContextVar[Reporter | None] = ContextVar("dpbnsl_progress", default=None)


@contextlib.contextmanager
def reporting(report: Reporter | None) -> Iterator[None]:
    """Send every round done inside the block to ``report`` (None: to nobody)."""
    token = _REPORTER.set(report)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def round_done(phase: str, done: int, planned: int | None = None) -> None:
    """Tell the installed reporter, if any, that ``done`` rounds of ``phase`` have run."""
    report = _REPORTER.get()
    if report is not None:
        report(phase, done, planned)


class StderrProgress:
    """A one-line progress display: ``label: phase 12/40 rounds, 14 s elapsed, ≤ 33 s left``,
    redrawn at most every ``every`` seconds once ``after`` seconds have passed, on a terminal only
    (a log or a pipe gets nothing). Use as a reporter inside ``with`` (the line is ended on exit)."""

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO | None = None,
        after: float = 2.0,
        every: float = 0.5,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.label, self.stream, self.after, self.every, self.clock = label, stream, after, every, clock
        self.start = clock()
        self.last = -float("inf")
        self.shown = False

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def __call__(self, phase: str, done: int, planned: int | None) -> None:
        now = self.clock()
        elapsed = now - self.start
        out = self._out()
        if elapsed < self.after or now - self.last < self.every or not out.isatty():
            return
        self.last = now
        text = f"{self.label}: {phase} {done}" + (f"/{planned}" if planned else "") + " rounds"
        text += f", {elapsed:.0f} s elapsed"
        if planned and 0 < done < planned:
            text += f", ≤ {elapsed / done * (planned - done):.0f} s left (at most {planned} rounds)"
        out.write(f"\r{text:<78}")
        out.flush()
        self.shown = True

    def __enter__(self) -> StderrProgress:
        self._context = reporting(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)
        if self.shown:
            self._out().write("\n")
            self._out().flush()
