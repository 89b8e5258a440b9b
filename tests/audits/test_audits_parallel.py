"""Audit games in seeded blocks: the scores depend on the seed only, never on the executor that runs
the blocks, on how many workers it has, or on how many blocks a task holds."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from dpbnsl.audits.games import run_game
from dpbnsl.audits.parallel import SEED_BLOCKS, play
from dpbnsl.audits.verdict import audit


def _same(a, b):
    np.testing.assert_array_equal(a.scores0, b.scores0)
    np.testing.assert_array_equal(a.scores1, b.scores1)
    assert (a.claimed_epsilon, a.delta, a.broken) == (b.claimed_epsilon, b.delta, b.broken)


def test_blocks_give_the_same_scores_on_any_executor_and_chunking():
    kw = dict(epsilon=1.0, delta=1e-5, trials=2 * SEED_BLOCKS["dp-pgcd"] + 50, rng=7)
    serial = play("dp-pgcd", **kw)
    assert serial.trials == (450, 450) and serial.details["blocks"] == 3
    _same(play("dp-pgcd", chunk=2, **kw), serial)
    with ThreadPoolExecutor(3) as threads:
        _same(play("dp-pgcd", executor=threads, **kw), serial)
    with ProcessPoolExecutor(2) as procs:
        _same(play("dp-pgcd", executor=procs, chunk=2, **kw), serial)


def test_block_i_is_the_game_on_stream_i():
    """Block i is exactly the game run with child i of the seed: the blocks are runs of the one
    game (its worlds are fixed designs), concatenated in order."""
    blocks = play("dp-pgcd", epsilon=2.0, delta=1e-5, trials=250, rng=3)
    streams = np.random.default_rng(3).spawn(2)
    parts = [
        run_game("dp-pgcd", epsilon=2.0, delta=1e-5, trials=n, rng=g) for n, g in zip((200, 50), streams)
    ]
    np.testing.assert_array_equal(blocks.scores0, np.concatenate([p.scores0 for p in parts]))
    np.testing.assert_array_equal(blocks.scores1, np.concatenate([p.scores1 for p in parts]))


def test_vectorised_games_run_in_one_piece():
    with ThreadPoolExecutor(2) as threads:
        _same(
            play("gaussian-step", epsilon=1.0, delta=1e-5, trials=100, rng=1, executor=threads),
            run_game("gaussian-step", epsilon=1.0, delta=1e-5, trials=100, rng=1),
        )


def test_an_audit_is_the_same_on_any_executor():
    a = audit("dp-pgcd", epsilon=1.0, trials=500, rng=5)
    with ProcessPoolExecutor(2) as procs:
        b = audit("dp-pgcd", epsilon=1.0, trials=500, rng=5, executor=procs)
    assert a.bound == b.bound and a.verdict == b.verdict


def test_bad_chunk_and_executor_are_named():
    with pytest.raises(ValueError, match="`chunk` must be"):
        play("dp-pgcd", epsilon=1.0, delta=1e-5, trials=10, rng=0, chunk=0)
    with pytest.raises(TypeError, match="`executor` must be a concurrent.futures.Executor; got str"):
        play("dp-pgcd", epsilon=1.0, delta=1e-5, trials=10, rng=0, executor="dask")


def test_the_sparse_game_is_the_same_in_any_chunking(monkeypatch):
    """``dp-fed-sparse-bnsl`` (set-up cached per process, lean runs) in blocks of 4: the scores do
    not depend on the chunking or the executor, and block i is the game on child i of the seed."""
    monkeypatch.setitem(SEED_BLOCKS, "dp-fed-sparse-bnsl", 4)
    kw = dict(epsilon=1.0, delta=1e-5, trials=10, rng=11)
    serial = play("dp-fed-sparse-bnsl", **kw)
    assert serial.trials == (10, 10) and serial.details["blocks"] == 3
    _same(play("dp-fed-sparse-bnsl", chunk=2, **kw), serial)
    with ProcessPoolExecutor(2) as procs:
        _same(play("dp-fed-sparse-bnsl", executor=procs, chunk=2, **kw), serial)
    streams = np.random.default_rng(11).spawn(3)
    parts = [
        run_game("dp-fed-sparse-bnsl", epsilon=1.0, delta=1e-5, trials=n, rng=g)
        for n, g in zip((4, 4, 2), streams)
    ]
    np.testing.assert_array_equal(serial.scores0, np.concatenate([p.scores0 for p in parts]))
    np.testing.assert_array_equal(serial.scores1, np.concatenate([p.scores1 for p in parts]))
