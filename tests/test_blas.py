"""The learners run BLAS on one thread while they run (restored on return), unless the user opts
out: ``learner_threads(None)``, ``DPBNSL_LEARNER_THREADS=keep``, or a count in the environment."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from dpbnsl.blas import (
    LEARNER_THREADS_VARIABLE,
    THREAD_VARIABLES,
    blas_threads,
    learner_threads,
    one_blas_thread,
)
from dpbnsl.learners.registry import LEARNERS


@pytest.fixture
def two_threads(monkeypatch):
    """BLAS at two threads and no thread count in the environment (the suite sets one)."""
    for name in (*THREAD_VARIABLES, LEARNER_THREADS_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() < 2:
            pytest.skip("this BLAS cannot use two threads here")
        yield


@one_blas_thread
def _inside(nested: bool = False) -> int:
    return _inside() if nested else blas_threads()


def test_a_learner_runs_on_one_thread_and_restores_the_limits(two_threads):
    assert _inside() == 1 and _inside(nested=True) == 1
    assert blas_threads() == 2


def test_the_limits_come_back_after_an_exception(two_threads):
    @one_blas_thread
    def fails():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fails()
    assert blas_threads() == 2


def test_opting_out(two_threads, monkeypatch):
    with learner_threads(None):
        assert _inside() == 2
    with learner_threads(2):
        assert _inside() == 2
    assert _inside() == 1
    monkeypatch.setenv(LEARNER_THREADS_VARIABLE, "keep")
    assert _inside() == 2
    monkeypatch.setenv(LEARNER_THREADS_VARIABLE, "1")
    assert _inside() == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # the user's own count stands
    assert _inside() == 2


def test_learner_threads_validates():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="`limit` must be None or a positive int"):
            with learner_threads(bad):
                pass


@pytest.mark.parametrize("name", list(LEARNERS))
def test_every_registered_learner_limits_blas(name):
    fn = LEARNERS[name].function
    while hasattr(fn, "func"):  # functools.partial
        fn = fn.func
    assert hasattr(fn, "__wrapped__"), name


def test_a_real_learner_on_one_thread(two_threads, monkeypatch):
    import dpbnsl
    import dpbnsl.learners.linear.fed_bnsl as module

    seen = []
    real = module.run_protocol

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "run_protocol", spy)
    data = dpbnsl.simulate(4, 100, participants=2, rng=0)
    dpbnsl.fed_bnsl(data.participants, max_rounds=2)
    assert seen == [1] and blas_threads() == 2
    assert np.isfinite(dpbnsl.fed_bnsl(data.participants, max_rounds=2).W_raw).all()
