"""The one engine behind every batch of independent runs (privacy–utility sweeps, the experiment
scripts, audit blocks): run a function on each task in this process, in local worker processes, or
on any ``concurrent.futures`` executor (a Dask cluster's included), one BLAS thread per worker."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from ._validation import check_int
from .blas import single_thread

__all__ = ["run_all"]

T = TypeVar("T")


def _in_worker(fn: Callable[[T], Any], task: T, caller: int) -> Any:
    """``fn(task)`` with one BLAS thread in a worker process (the learners' many small products
    only contend with more); the caller's own process (a thread pool) keeps its settings."""
    if os.getpid() != caller:
        single_thread()
    return fn(task)


def run_all(
    fn: Callable[[T], Any],
    tasks: Sequence[T],
    record: Callable[[T, Any], None],
    *,
    jobs: int = 1,
    executor: Executor | None = None,
) -> None:
    """Call ``record(task, fn(task))`` for every task, as each finishes: in this process
    (``jobs=1``), in ``jobs`` spawned worker processes, or on ``executor`` (owned by the caller:
    not shut down). ``fn`` and the tasks must pickle for the last two. On an error (or an
    interrupt) the tasks not yet started are cancelled before it propagates."""
    jobs = check_int(jobs, "jobs", low=1)
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"`executor` must be a concurrent.futures.Executor; got {type(executor).__name__}")
    if executor is None and (jobs == 1 or len(tasks) <= 1):
        for task in tasks:
            record(task, fn(task))
        return
    if executor is not None:
        _drain(executor, fn, tasks, record)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx) as pool:
        _drain(pool, fn, tasks, record)


def _drain(
    pool: Executor, fn: Callable[[T], Any], tasks: Sequence[T], record: Callable[[T, Any], None]
) -> None:
    futures = {pool.submit(_in_worker, fn, t, os.getpid()): t for t in tasks}
    try:
        for future in as_completed(futures):
            record(futures[future], future.result())
    except BaseException:
        for future in futures:
            future.cancel()
        raise
