"""Where the CLI's parallel work runs: local processes (``--jobs``) or a running Dask cluster
(``--scheduler ADDRESS``, the ``dask`` extra)."""

from __future__ import annotations

import argparse
import contextlib
import warnings
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor

from .common import CLIError, count

__all__ = ["add_executor_options", "executor"]


def add_executor_options(p: argparse.ArgumentParser, *, jobs_help: str = "parallel processes") -> None:
    p.add_argument("--jobs", type=count(1, 256), default=1, help=jobs_help)
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on a Dask cluster instead: the address of its scheduler, e.g. tcp://10.0.0.5:8786 "
        "(needs the dask extra: pip install 'dpbnsl[dask]')",
    )


@contextlib.contextmanager
def executor(args: argparse.Namespace, *, timeout: float = 20.0) -> Iterator[Executor | None]:
    """The executor the options ask for (None: run in this process); a Dask client is connected
    before any work and closed at the end; an unreachable scheduler is a one-line error."""
    if args.scheduler is None:
        if args.jobs == 1:
            yield None
            return
        with ProcessPoolExecutor(args.jobs) as pool:
            yield pool
        return
    if args.jobs != 1:
        raise CLIError("give --jobs or --scheduler, not both (the cluster's workers set the parallelism)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from distributed import Client
    except ImportError:
        raise CLIError("--scheduler needs Dask: pip install 'dpbnsl[dask]'") from None
    try:
        client = Client(args.scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CLIError(f"could not reach the Dask scheduler at {args.scheduler!r}: {exc}") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
