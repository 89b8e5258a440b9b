"""Benchmark start-up: CPU seconds of ``import dpbnsl`` (lazy since the exported names load on first
use) against importing what the package's ``__init__`` used to load eagerly (its learners, metrics,
simulation), and of two whole commands, each in a fresh interpreter.

Run from the repository root::

    python benchmarks/bench_import.py            # 5 repeats each, the median and the minimum
    python benchmarks/bench_import.py --repeats 9

CPU seconds (user + system of the child process), because wall times on a shared machine move
several-fold. The "eager" row imports ``dpbnsl.learners``, ``dpbnsl.metrics``,
``dpbnsl.simulation`` and ``dpbnsl.datasets``: the modules ``import dpbnsl`` loaded before.
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

CASES = {
    "python -c pass (interpreter only)": [sys.executable, "-c", "pass"],
    "import dpbnsl (lazy)": [sys.executable, "-c", "import dpbnsl"],
    "import the former eager set": [
        sys.executable,
        "-c",
        "import dpbnsl.learners, dpbnsl.metrics, dpbnsl.simulation, dpbnsl.datasets",
    ],
    "dpbnsl --help": [sys.executable, "-m", "dpbnsl", "--help"],
    "dpbnsl noise --epsilon 1": [sys.executable, "-m", "dpbnsl", "noise", "--epsilon", "1"],
}


def cpu_seconds(cmd: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    print(f"{'what':40s} {'median CPU s':>13s} {'min CPU s':>10s}")
    for name, cmd in CASES.items():
        times = [cpu_seconds(cmd) for _ in range(args.repeats)]
        print(f"{name:40s} {statistics.median(times):13.3f} {min(times):10.3f}")


if __name__ == "__main__":
    main()
