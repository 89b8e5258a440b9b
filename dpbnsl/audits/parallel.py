"""Audit games in independently seeded blocks of trials, on any ``concurrent.futures`` executor (a
process pool, or a Dask cluster's ``Client.get_executor()``).

With ``block = B``, the trials are cut into blocks of B (the last one shorter) and block i draws from
its own stream, child i of the audit's seed (:meth:`numpy.random.Generator.spawn`). Every game's
worlds are fixed designs (the same in every block), so the blocks are runs of one game and their
scores are concatenated in block order: the result depends on the seed and on B, never on the
executor or on how many workers run the blocks.
"""

from __future__ import annotations

import functools
from concurrent.futures import Executor
from typing import Any

import numpy as np

from .._validation import as_generator, check_int
from ..tasks import run_all
from .game_base import GameResult, check_trials
from .games import run_game

__all__ = ["play", "DEFAULT_BLOCK"]

#: Trials per block when an executor is given without ``block``: about 2 s per block for the
#: whole-protocol ``dp-fed-sparse-bnsl`` game at its default size (about 10 ms per trial,
#: ``benchmarks/bench_audit_scaleout.py``), milliseconds for the vectorised games.
DEFAULT_BLOCK = 200


def _block(name: str, options: dict[str, Any], task: tuple[int, int, np.random.Generator]) -> tuple:
    """Block ``task = (i, trials, stream)`` of game ``name`` (module level, so a process or cluster
    worker can run it); a plain tuple comes back (the result's read-only mapping does not pickle)."""
    _, trials, rng = task
    g = run_game(name, trials=trials, rng=rng, **options)
    return g.scores0.copy(), g.scores1.copy(), g.claimed_epsilon, g.delta, g.broken, dict(g.details)


def play(
    name: str,
    *,
    trials: int,
    rng: np.random.Generator | int | None = None,
    block: int | None = None,
    executor: Executor | None = None,
    **options: Any,
) -> GameResult:
    """Run game ``name`` with ``trials`` trials per world, in blocks of ``block`` trials (see the
    module docstring) on ``executor`` (None: one after the other, in this process). With neither
    ``block`` nor ``executor`` the game draws all its trials from one stream (``run_game``)."""
    if block is None and executor is None:
        return run_game(name, trials=trials, rng=rng, **options)
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"`executor` must be a concurrent.futures.Executor; got {type(executor).__name__}")
    trials = check_trials(trials)
    size = check_int(DEFAULT_BLOCK if block is None else block, "block", low=1)
    sizes = [size] * (trials // size) + ([trials % size] if trials % size else [])
    streams = as_generator(rng).spawn(len(sizes))
    done: dict[int, tuple] = {}
    run_all(
        functools.partial(_block, name, dict(options)),
        [(i, n, g) for i, (n, g) in enumerate(zip(sizes, streams))],
        lambda task, out: done.__setitem__(task[0], out),
        executor=executor,
    )
    parts = [done[i] for i in range(len(sizes))]
    s0 = np.concatenate([p[0] for p in parts])
    s1 = np.concatenate([p[1] for p in parts])
    _, _, claimed, delta, broken, details = parts[0]
    return GameResult(name, s0, s1, claimed, delta, broken, {**details, "block": size, "blocks": len(sizes)})
