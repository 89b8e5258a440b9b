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
"""

from __future__ import annotations

import os

from threadpoolctl import threadpool_limits

__all__ = ["THREAD_VARIABLES", "blas_threads", "single_thread", "user_chose_threads"]

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
