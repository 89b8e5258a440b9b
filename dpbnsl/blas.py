"""One BLAS thread for the learners' many small matrix products.

The learners call BLAS thousands of times on matrices of at most a few hundred rows; a
multithreaded BLAS gains nothing there and, on a machine whose other cores are busy, loses badly
(each call waits for threads that are not scheduled). :func:`single_thread` limits BLAS to one
thread in two ways, because numpy and scipy each load their own BLAS library, and since ``import
dpbnsl`` is lazy either may load after the call: the libraries already loaded are limited through
threadpoolctl, and the thread variables are set to 1 in the environment, which OpenBLAS (and MKL)
read when a library loads, for the libraries loaded later in this process and in its children. It
therefore works whenever it is called, before or after numpy is imported. The library never calls
it on import; the command line, the sweeps' worker processes, the experiment scripts and the test
suite do.

Called from Python, every learner of the package limits BLAS to one thread *while it runs* and
restores the previous limits on return (:func:`one_blas_thread`): one thread was as fast or faster
in CPU time at every size measured (``benchmarks/bench_blas_threads.py``) and much faster on a busy
machine. Opt out with :func:`learner_threads` (``learner_threads(None)`` leaves BLAS alone) or the
environment variable ``DPBNSL_LEARNER_THREADS`` (``keep``, or a thread count); a thread count set
in the environment (``OPENBLAS_NUM_THREADS`` …) is respected as well.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

__all__ = [
    "THREAD_VARIABLES",
    "blas_threads",
    "single_thread",
    "user_chose_threads",
    "one_blas_thread",
    "learner_threads",
    "LEARNER_THREADS_VARIABLE",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The environment variable that sets the learners' BLAS threads: ``keep`` (leave BLAS alone) or a
#: thread count (default 1).
LEARNER_THREADS_VARIABLE = "DPBNSL_LEARNER_THREADS"

_STATE = threading.local()  # per thread: the limit in force (`limit`) and whether one is active
_DEFAULT: list[int | None] = [1]

#: Environment variables by which a user chooses the BLAS thread count.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def user_chose_threads() -> bool:
    """Whether the environment sets a BLAS thread count (then it is left alone)."""
    return any(v in os.environ for v in THREAD_VARIABLES)


def single_thread() -> threadpool_limits | None:
    """Limit BLAS to one thread in this process from now on (the libraries loaded and those still
    to load), unless the user chose a count in the environment. Returns the threadpoolctl limiter
    (``.restore_original_limits()`` undoes it for the libraries loaded before the call), or None
    when the user's choice stands. The environment keeps the thread variables at 1."""
    if user_chose_threads():
        return None
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    return threadpool_limits(limits=1, user_api="blas")


def blas_threads() -> int:
    """The largest thread count of the BLAS libraries loaded in this process (0 if none)."""
    from threadpoolctl import threadpool_info

    return max((int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"), default=0)


def _wanted() -> int | None:
    """The BLAS thread count a learner runs with (None: leave BLAS as it is)."""
    limit = getattr(_STATE, "limit", _DEFAULT[0])
    text = os.environ.get(LEARNER_THREADS_VARIABLE)
    if text is not None:
        text = text.strip().lower()
        if text == "keep":
            return None
        if text.isdigit() and int(text) >= 1:
            limit = int(text)
    if limit is None or user_chose_threads():
        return None
    return limit


def one_blas_thread(fn: F) -> F:
    """Decorate a learner: while it runs, BLAS uses :func:`learner_threads`'s count (one by
    default); the previous limits come back on return, also after an exception. Nested learners
    (a warm start inside a learner) keep the outer limit without touching it again."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        limit = None if getattr(_STATE, "active", False) else _wanted()
        if limit is None:
            return fn(*args, **kwargs)
        _STATE.active = True
        try:
            with threadpool_limits(limits=limit, user_api="blas"):
                return fn(*args, **kwargs)
        finally:
            _STATE.active = False

    return run  # type: ignore[return-value]


@contextlib.contextmanager
def learner_threads(limit: int | None) -> Iterator[None]:
    """The BLAS threads the package's learners use inside the ``with`` block (in this thread):
    ``None`` leaves BLAS alone (the learners then run with whatever BLAS does by default), an
    int limits it to that many threads. The default outside any block is 1.

    Examples
    --------
    >>> import dpbnsl
    >>> from dpbnsl.blas import learner_threads
    >>> data = dpbnsl.simulate(5, 200, participants=2, rng=0)
    >>> with learner_threads(None):  # BLAS's own thread count, e.g. for one very large d
    ...     result = dpbnsl.fed_bnsl(data.participants, max_rounds=5)
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"`limit` must be None or a positive int; got {limit!r}")
    before = getattr(_STATE, "limit", _DEFAULT[0])
    _STATE.limit = limit
    try:
        yield
    finally:
        _STATE.limit = before
