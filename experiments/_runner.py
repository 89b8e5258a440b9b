"""Shared plumbing of the experiment scripts: resumable runs appended to a CSV, and summaries.

Importing it limits BLAS to one thread (:func:`dpbnsl.blas.single_thread`, in the worker processes
too). Each task is a tuple of keyword arguments; a task whose
key is already in the CSV is skipped, so a long sweep can be stopped and resumed. Tasks run in
``jobs`` processes, by the package's task engine (:func:`dpbnsl.tasks.run_all`, which the sweeps use
too).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpbnsl.blas import single_thread
from dpbnsl.tasks import run_all

# the learners make many small BLAS calls, which multithreaded BLAS only slows down: one thread
# here and in every worker process (threadpoolctl: effective whenever it is called)
single_thread()

RESULTS = Path(__file__).resolve().parent / "results"


def run_tasks(
    run_one: Callable[..., list[dict]], tasks: Sequence[dict], csv: Path, *, key: Sequence[str], jobs: int = 1
) -> pd.DataFrame:
    """Run every task not yet in ``csv`` (matched on ``key``), appending its rows; return all rows."""
    done = pd.read_csv(csv) if csv.is_file() else pd.DataFrame(columns=list(key))
    finished = set(map(tuple, done[list(key)].apply(lambda c: c.map(str)).to_numpy()))
    todo = [t for t in tasks if tuple(str(t[k]) for k in key) not in finished]
    if todo:
        csv.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()

        def record(task: dict, rows: list[dict]) -> None:
            pd.DataFrame(rows).to_csv(csv, mode="a", index=False, header=not csv.is_file())
            print(f"# {task} done after {time.perf_counter() - start:.0f} s", flush=True)

        run_all(functools.partial(_call, run_one), todo, record, jobs=jobs)
    return pd.read_csv(csv)


def _call(fn: Callable[..., list[dict]], task: dict) -> list[dict]:
    return fn(**task)


def mean_spread(x: pd.Series, spread: str = "se") -> str:
    """'mean ± s.e.' (or ± std with ``spread="std"``) of a column, two decimals."""
    s = x.std(ddof=1) if len(x) > 1 else float("nan")
    if spread == "se":
        s = s / np.sqrt(len(x))
    return f"{x.mean():.2f} ± {s:.2f}"


def print_table(df: pd.DataFrame) -> None:
    """Print ``df`` as a Markdown table (no optional dependency needed)."""
    cells = [[str(c) for c in df.columns]] + [[str(v) for v in row] for row in df.itertuples(index=False)]
    print("| " + " | ".join(cells[0]) + " |")
    print("|" + "---|" * len(cells[0]))
    for row in cells[1:]:
        print("| " + " | ".join(row) + " |")
