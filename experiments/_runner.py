"""Shared plumbing of the experiment scripts: resumable runs appended to a CSV, and summaries.

Import it before numpy, pandas or dpbnsl: it pins BLAS to one thread, which OpenBLAS reads only
when it loads (every script here does so). Each task is a tuple of keyword arguments; a task whose
key is already in the CSV is skipped, so a long sweep can be stopped and resumed. Tasks run in
``jobs`` processes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# the learners make many small BLAS calls, which multithreaded BLAS only slows down
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if "numpy" in sys.modules:  # the limit is read once, when numpy loads OpenBLAS
    print("_runner: numpy was imported before _runner; BLAS may run multithreaded",
          file=sys.stderr)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def run_tasks(run_one: Callable[..., list[dict]], tasks: Sequence[dict], csv: Path, *,
              key: Sequence[str], jobs: int = 1) -> pd.DataFrame:
    """Run every task not yet in ``csv`` (matched on ``key``), appending its rows; return all rows."""
    done = pd.read_csv(csv) if csv.is_file() else pd.DataFrame(columns=list(key))
    finished = set(map(tuple, done[list(key)].apply(lambda c: c.map(str)).to_numpy()))
    todo = [t for t in tasks if tuple(str(t[k]) for k in key) not in finished]
    if todo:
        csv.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
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
    cells = [[str(c) for c in df.columns]] + [[str(v) for v in row]
                                              for row in df.itertuples(index=False)]
    print("| " + " | ".join(cells[0]) + " |")
    print("|" + "---|" * len(cells[0]))
    for row in cells[1:]:
        print("| " + " | ".join(row) + " |")
