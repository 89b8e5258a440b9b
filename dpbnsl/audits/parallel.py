"""Audit games in independently seeded blocks of trials, on any ``concurrent.futures`` executor (a
process pool, or a Dask cluster's ``Client.get_executor()``).

The whole-protocol games (:data:`SEED_BLOCKS`: ``dp-pgcd``, ``dp-fed-sparse-bnsl``, whose trials
are runs of a protocol, milliseconds each) draw their trials in blocks of a fixed size: block i
comes from its own stream, child i of the audit's seed (:meth:`numpy.random.Generator.spawn`).
Every game's worlds are fixed designs (the same in every block), so the blocks are runs of one game
and their scores are concatenated in block order. A task runs ``chunk`` consecutive blocks; the
result depends on the seed only — never on the executor, the number of workers or ``chunk``.
The other games are vectorised (all trials in one draw, well under a second for 10⁶): they run in
one piece, in this process.
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

__all__ = ["play", "SEED_BLOCKS"]

#: Trials per seeded block of the whole-protocol games: about 2 s per block for
#: ``dp-fed-sparse-bnsl`` at its default size (about 10 ms per trial,
#: ``benchmarks/bench_audit_scaleout.py``), so 10⁵ trials make 500 tasks to spread.
SEED_BLOCKS: dict[str, int] = {
    "dp-pgcd": 200,
    "dp-pgcd-transcript": 200,
    "dp-pgcd-worst": 1000,
    "dp-fed-sparse-bnsl": 200,
    "dp-fed-sparse-bnsl-transcript": 200,
    "dp-fed-sparse-bnsl-worst": 200,
}


def _blocks(
    name: str, options: dict[str, Any], task: tuple[int, list[tuple[int, np.random.Generator]]]
) -> tuple:
    """Task ``(i, [(trials, stream), ...])``: consecutive blocks of game ``name`` (module level,
    so a process or cluster worker can run it); plain arrays and a dict come back (the result's
    read-only mapping does not pickle)."""
    _, blocks = task
    games = [run_game(name, trials=n, rng=g, **options) for n, g in blocks]
    s0 = np.concatenate([g.scores0 for g in games])
    s1 = np.concatenate([g.scores1 for g in games])
    g = games[0]
    return s0, s1, g.claimed_epsilon, g.delta, g.broken, dict(g.details)


def play(
    name: str,
    *,
    trials: int,
    rng: np.random.Generator | int | None = None,
    executor: Executor | None = None,
    chunk: int = 1,
    **options: Any,
) -> GameResult:
    """Run game ``name`` with ``trials`` trials per world: a whole-protocol game in seeded blocks
    (see the module docstring), ``chunk`` blocks per task, on ``executor`` (None: one after the
    other, in this process); any other game in one piece, in this process."""
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"`executor` must be a concurrent.futures.Executor; got {type(executor).__name__}")
    chunk = check_int(chunk, "chunk", low=1)
    if name not in SEED_BLOCKS:
        return run_game(name, trials=trials, rng=rng, **options)
    trials, size = check_trials(trials), SEED_BLOCKS[name]
    sizes = [size] * (trials // size) + ([trials % size] if trials % size else [])
    blocks = list(zip(sizes, as_generator(rng).spawn(len(sizes))))
    tasks = [(i, blocks[i : i + chunk]) for i in range(0, len(blocks), chunk)]
    done: dict[int, tuple] = {}
    run_all(
        functools.partial(_blocks, name, dict(options)),
        tasks,
        lambda task, out: done.__setitem__(task[0], out),
        executor=executor,
    )
    parts = [done[i] for i, _ in tasks]
    s0 = np.concatenate([p[0] for p in parts])
    s1 = np.concatenate([p[1] for p in parts])
    _, _, claimed, delta, broken, details = parts[0]
    return GameResult(name, s0, s1, claimed, delta, broken, {**details, "block": size, "blocks": len(sizes)})
