"""Audit games in seeded blocks: the scores depend on the seed and the block size only, never on
the executor that runs the blocks or on how many workers it has."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from dpbnsl.audits.games import run_game
from dpbnsl.audits.parallel import play
from dpbnsl.audits.verdict import audit


def _same(a, b):
    np.testing.assert_array_equal(a.scores0, b.scores0)
    np.testing.assert_array_equal(a.scores1, b.scores1)
    assert (a.claimed_epsilon, a.delta, a.broken) == (b.claimed_epsilon, b.delta, b.broken)


@pytest.mark.parametrize("name", ["gaussian-step", "dp-pgcd", "selection"])
def test_blocks_give_the_same_scores_on_any_executor(name):
    kw = dict(epsilon=1.0, delta=1e-5, trials=250, rng=7, block=60)
    serial = play(name, **kw)
    assert serial.trials == (250, 250) and serial.details["blocks"] == 5
    with ThreadPoolExecutor(3) as threads:
        _same(play(name, executor=threads, **kw), serial)
    with ProcessPoolExecutor(2) as procs:
        _same(play(name, executor=procs, **kw), serial)


def test_block_i_is_the_game_on_stream_i():
    """Block i is exactly the game run with child i of the seed: the blocks are runs of the one
    game (its worlds are fixed designs), concatenated in order."""
    blocks = play("dp-pgcd", epsilon=2.0, delta=1e-5, trials=50, rng=3, block=20)
    streams = np.random.default_rng(3).spawn(3)
    parts = [
        run_game("dp-pgcd", epsilon=2.0, delta=1e-5, trials=n, rng=g) for n, g in zip((20, 20, 10), streams)
    ]
    np.testing.assert_array_equal(blocks.scores0, np.concatenate([p.scores0 for p in parts]))
    np.testing.assert_array_equal(blocks.scores1, np.concatenate([p.scores1 for p in parts]))


def test_without_blocks_the_game_is_unchanged():
    _same(
        play("gaussian-step", epsilon=1.0, delta=1e-5, trials=100, rng=1),
        run_game("gaussian-step", epsilon=1.0, delta=1e-5, trials=100, rng=1),
    )


def test_an_audit_on_blocks_is_the_same_audit_on_any_executor():
    a = audit("dp-pgcd", epsilon=1.0, trials=400, rng=5, block=100)
    with ProcessPoolExecutor(2) as procs:
        b = audit("dp-pgcd", epsilon=1.0, trials=400, rng=5, block=100, executor=procs)
    assert a.bound == b.bound and a.verdict == b.verdict


def test_bad_block_and_executor_are_named():
    with pytest.raises(ValueError, match="`block` must be"):
        play("gaussian-step", epsilon=1.0, delta=1e-5, trials=10, rng=0, block=0)
    with pytest.raises(TypeError, match="`executor` must be a concurrent.futures.Executor; got str"):
        play("gaussian-step", epsilon=1.0, delta=1e-5, trials=10, rng=0, executor="dask")
