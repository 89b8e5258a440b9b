"""Test configuration.

The learners call BLAS on small matrices (d ≤ 100) thousands of times. Multithreaded OpenBLAS is no
faster there and, when another process holds a core, becomes orders of magnitude slower (a 10×10
matrix exponential: ~8 ms instead of ~0.02 ms on a loaded 2-core machine). The suite therefore runs
BLAS single-threaded unless the caller chose otherwise (:func:`dpbnsl.blas.single_thread`).
"""

import signal

import pytest

from dpbnsl.blas import single_thread

single_thread()


@pytest.fixture
def hang_guard():
    """Fail a test that has not answered after 60 s (bad input must be refused at once; a case
    still running then is a hang). Not a timing assertion: normal cases take milliseconds."""

    def fail(*_):
        raise TimeoutError("no answer within 60 s: a hang")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
