"""Shared plumbing of the experiment scripts: resumable runs appended to a CSV, and summaries.

Importing it limits BLAS to one thread (:func:`dpbnsl.blas.single_thread`, in the worker processes
too). Each task is a tuple of keyword arguments; a task whose
key is already in the CSV is skipped, so a long sweep can be stopped and resumed. Tasks run in
``jobs`` processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from dpbnsl.blas import single_thread

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
        with ProcessPoolExecutor(max_workers=jobs, initializer=single_thread) as pool:
            for task, rows in zip(todo, pool.map(_call, [(run_one, t) for t in todo])):
                pd.DataFrame(rows).to_csv(csv, mode="a", index=False, header=not csv.is_file())
                print(f"# {task} done after {time.perf_counter() - start:.0f} s", flush=True)
    return pd.read_csv(csv)


def _call(args):
    fn, task = args
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
