"""Benchmark start-up: CPU seconds of ``import dpbnsl`` and of whole ``dpbnsl`` commands, each in a
fresh interpreter, against baselines measured in the same run.

Run from the repository root::

    python benchmarks/bench_import.py            # 5 repeats each, the median and the minimum
    python benchmarks/bench_import.py --repeats 9

CPU seconds (user + system of the child process), because wall times on a shared machine move
several-fold; the repeats go round all the rows in turn, so that a change of load touches every row
alike. Every row has one BLAS thread (the variables below, inherited by the children).

The last column divides a row's median by those of its baseline rows:

* ``import dpbnsl`` against the modules it loaded eagerly before (learners, metrics, simulation,
  data);
* ``dpbnsl --help`` and ``dpbnsl noise --help`` against building every command's parser, which is
  what every command paid at start-up before ``main`` built only the one it runs;
* ``dpbnsl noise`` against the same run after building every parser (the former cost), and
  ``dpbnsl noise`` and ``dpbnsl account`` against importing :mod:`dpbnsl.accounting`, the floor of
  both: their computations need it, and with it dp-accounting (whose package initialisation alone
  imports ``scipy.stats`` and ``scipy.signal``) and pandas;
* a usage error or a bad path (``dpbnsl learn --data missing.csv``, a mistyped option, a
  mistyped method) and ``dpbnsl --version`` against what ``learn`` imported before it looked at its
  arguments (every learner, ``scipy.stats`` through the metrics, pandas). Target: ≤ 0.3 CPU-s.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # inherited by the children
    os.environ.setdefault(_var, "1")

import argparse
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One row: a command line run in a fresh interpreter, and the rows it is compared with."""

    name: str
    argv: tuple[str, ...]
    baselines: tuple[str, ...] = ()
    status: int = 0  # the exit status the command must give (2: a usage error)


def _python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def _dpbnsl(*args: str) -> tuple[str, ...]:
    """The ``dpbnsl`` console script's command line: its wrapper is these two statements."""
    return (sys.executable, "-c", "import sys; from dpbnsl._entry import main; sys.exit(main())", *args)


EAGER = "import the former eager set"
ALL_PARSERS = "build every command's parser (former start-up)"
ACCOUNTING = "import dpbnsl.accounting (floor of noise)"
NOISE = ("noise", "--epsilon", "1", "--delta", "1e-5", "--rounds", "100", "--local-iters", "10")
FORMER_NOISE = "noise after building every parser (former)"
LEARN_BEFORE_ALL = "import what learn loaded before its arguments"

CASES = (
    Case("python -c pass (interpreter only)", _python("pass")),
    Case("import dpbnsl (lazy)", _python("import dpbnsl"), (EAGER,)),
    Case(EAGER, _python("import dpbnsl.learners, dpbnsl.metrics, dpbnsl.simulation, dpbnsl.io.datasets")),
    Case("import numpy, scipy, pandas, dp_accounting", _python("import numpy, scipy, pandas, dp_accounting")),
    Case(ALL_PARSERS, _python("from dpbnsl.cli import build_parser; build_parser().format_help()")),
    Case("dpbnsl --help", _dpbnsl("--help"), (ALL_PARSERS,)),
    Case("dpbnsl noise --help", _dpbnsl("noise", "--help"), (ALL_PARSERS,)),
    Case(ACCOUNTING, _python("import dpbnsl.accounting")),
    Case(
        FORMER_NOISE,
        _python(f"from dpbnsl.cli import build_parser, main; build_parser(); main({list(NOISE)!r})"),
    ),
    Case("dpbnsl noise --epsilon 1 (T=100, K=10)", _dpbnsl(*NOISE), (FORMER_NOISE, ACCOUNTING)),
    Case("dpbnsl account --rho 1", _dpbnsl("account", "--rho", "1"), (ACCOUNTING,)),
    Case(
        LEARN_BEFORE_ALL,
        _python(
            "import dpbnsl.learners.linear.notears, dpbnsl.learners.combiners, dpbnsl.metrics, "
            "dpbnsl.learners.nonlinear.ds_fcd, dpbnsl.learners.temporal.fed_dbn, pandas, scipy.stats"
        ),
    ),
    Case("dpbnsl --version", _dpbnsl("--version"), (LEARN_BEFORE_ALL,)),
    Case(
        "dpbnsl learn --data missing.csv", _dpbnsl("learn", "--data", "missing.csv"), (LEARN_BEFORE_ALL,), 2
    ),
    Case("dpbnsl learn --bogus", _dpbnsl("learn", "--bogus"), (LEARN_BEFORE_ALL,), 2),
    Case(
        "dpbnsl learn --method fedbnsl --data x.csv",
        _dpbnsl("learn", "--method", "fedbnsl", "--data", "x.csv"),
        (LEARN_BEFORE_ALL,),
        2,
    ),
    Case("dpbnsl audit --mechanism gausian-step", _dpbnsl("audit", "--mechanism", "gausian-step"), (), 2),
    Case("dpbnsl show missing-bundle", _dpbnsl("show", "missing-bundle"), (), 2),
)


def cpu_seconds(argv: tuple[str, ...], status: int = 0) -> float:
    """User + system CPU seconds of one run of ``argv`` (a child process, waited for), which must
    exit with ``status``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if done.returncode != status:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}, not {status}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeats: int) -> dict[str, list[float]]:
    """CPU seconds of every case, ``repeats`` times, going round all the cases in turn."""
    times: dict[str, list[float]] = {case.name: [] for case in CASES}
    for _ in range(repeats):
        for case in CASES:
            times[case.name].append(cpu_seconds(case.argv, case.status))
    return times


def report(times: dict[str, list[float]]) -> str:
    """The table: median and minimum CPU seconds, and the ratios of medians to the baseline rows."""
    median = {name: statistics.median(t) for name, t in times.items()}
    lines = [f"{'what':48s} {'median CPU s':>12s} {'min CPU s':>10s}  ratio to baseline"]
    for case in CASES:
        ratios = ", ".join(f"{median[case.name] / median[b]:.2f} x [{b}]" for b in case.baselines)
        lines.append(f"{case.name:48s} {median[case.name]:12.3f} {min(times[case.name]):10.3f}  {ratios}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    print(report(measure(args.repeats)))


if __name__ == "__main__":
    main()
