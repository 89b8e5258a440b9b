"""Privacy–utility sweeps: methods × ε × seeds × (d, P, n_k) grids → one tidy, resumable table.

A task simulates ``simulate(d, P·n_k, participants=P, rng=seed)`` (an ER or SF DAG with
``edges_per_node·d`` edges, P equal shards), runs one learner and scores it with
:func:`~dpbnsl.metrics.count_accuracy`. A private method runs once per ε; a non-private one once
per (d, P, n_k, seed), recorded as ε = ∞, δ = 0 (no guarantee; reused whatever δ). A private
learner's ``rng`` derives from the seed *and* the task's key, so a row depends neither on the rest
of the grid nor on ``jobs``. With ``csv=``, rows are appended as tasks finish and finished tasks are
skipped. The key is (method, epsilon, delta, d, P, n_k, seed, graph, edges_per_node, options), where
``options`` is the learner's effective keyword arguments (the sweep's defaults updated by
``method_options``) as canonical JSON: one file can hold several settings, and a row is reused only
for the setting that produced it.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import sys
import time
import zlib
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_epsilon, check_int, check_real
from ..learners import notears
from ..learners.registry import LEARNERS, Learner, names
from ..metrics import count_accuracy
from ..simulation import simulate
from ..tasks import run_all

__all__ = ["COLUMNS", "KEY", "METRICS", "METHODS", "SweepResult", "summarize", "sweep"]

COLUMNS = (
    "method",
    "epsilon",
    "delta",
    "d",
    "P",
    "n_k",
    "seed",
    "graph",
    "edges_per_node",
    "options",
    "shd",
    "tpr",
    "fdr",
    "f1",
    "nnz",
    "comm_mb",
    "seconds",
    "versions",
)
KEY, METRICS = COLUMNS[:10], COLUMNS[10:-1]
_DTYPES = {
    "epsilon": float,
    "delta": float,
    "d": int,
    "P": int,
    "n_k": int,
    "seed": int,
    "edges_per_node": int,
    "shd": int,
    "tpr": float,
    "fdr": float,
    "f1": float,
    "nnz": int,
    "comm_mb": float,
    "seconds": float,
}
_TEXT = {"method": str, "graph": str, "options": str, "versions": str}  # read back as text, never as numbers
_SETTING = ("graph", "edges_per_node", "options")  # what CSVs of earlier versions lack
_RESERVED = ("epsilon", "delta", "rng", "local")
#: The learners a sweep runs: the linear and the constraint-based families', except the oracles (the
#: sweep simulates linear-Gaussian SEMs, which PC's Fisher-z tests fit). Their settings come from
#: the learner registry (defaults, then simulation settings).
METHODS = names(family="linear", oracle=False) + names(family="constraint", oracle=False)


def _entry(method: str) -> Learner:
    return LEARNERS[method]


# the first ten fields are the key (KEY); ``kwargs`` is the options dict that ``options`` encodes
_Task = namedtuple("_Task", "method epsilon delta d P n_k seed graph edges options kwargs")


@dataclass(frozen=True)
class SweepResult:
    """Output of :func:`sweep`: ``frame`` (columns :data:`COLUMNS`, one row per requested task,
    read back from ``csv`` when given, ordered by method as requested, d, P, n_k, ε, seed), the
    number of tasks ``computed`` by this call and ``skipped`` (already in ``csv``), and ``csv``."""

    frame: pd.DataFrame
    computed: int
    skipped: int
    csv: Path | None


def _key(
    method: Any,
    epsilon: Any,
    delta: Any,
    d: Any,
    P: Any,
    n_k: Any,
    seed: Any,
    graph: Any,
    edges: Any,
    options: Any,
    *_: Any,
) -> tuple:
    """Canonical task key: floats by their exact hex form, so "1", "1.0" and 1.0 all match."""
    return (
        str(method),
        float(epsilon).hex(),
        float(delta).hex(),
        int(d),
        int(P),
        int(n_k),
        int(seed),
        str(graph),
        int(edges),
        str(options),
    )


def _options_text(options: Mapping) -> str:
    """Canonical JSON of a learner's keyword arguments (sorted keys, numpy scalars as Python)."""
    return json.dumps(dict(options), sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(value: object) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{value!r} of type {type(value).__name__} is not JSON")


def _grid(value: Any, name: str, low: int) -> list[int]:
    values = [value] if np.ndim(value) == 0 else list(value)
    if not values:
        raise ValueError(f"`{name}` must not be empty")
    return list(dict.fromkeys(check_int(v, name, low=low) for v in values))


def _check_options(method_options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict]:
    if not isinstance(method_options, (Mapping, type(None))):
        raise TypeError(f"`method_options` must map method names to dicts; got {method_options!r}")
    out = {}
    for method, opts in (method_options or {}).items():
        check_choice(method, "method_options", METHODS)
        if not isinstance(opts, Mapping):
            raise TypeError(f"`method_options[{method!r}]` must be a dict; got {opts!r}")
        allowed = set()
        fn0 = _entry(method).function
        forwards = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn0).parameters.values())
        for fn in (fn0, notears) if forwards else (fn0,):  # baselines forward **kwargs to notears
            allowed |= {
                p.name
                for p in inspect.signature(fn).parameters.values()
                if p.kind is p.KEYWORD_ONLY and p.name not in _RESERVED
            }
        for name in opts:
            if name in _RESERVED:
                raise ValueError(
                    f"`method_options[{method!r}]` must not set {name!r}: the sweep "
                    "sets epsilon, delta and rng itself"
                )
            if name not in allowed:
                raise ValueError(
                    f"`method_options[{method!r}]` has unknown option {name!r}; "
                    f"allowed: {', '.join(sorted(allowed))}"
                )
            try:
                _options_text({name: opts[name]})
            except (TypeError, ValueError) as exc:  # ValueError: a circular list
                raise TypeError(
                    f"`method_options[{method!r}][{name!r}]` must be a number, string, "
                    f"bool, None or a list of them (it is written to the CSV); got "
                    f"{opts[name]!r}"
                ) from exc
        out[method] = dict(opts)
    return out


@functools.cache
def _versions() -> str:
    """The versions a row was computed with, e.g. ``"dpbnsl 0.1.0; numpy 2.4.6; …"``."""
    from ..io.bundle import versions

    return "; ".join(f"{k} {v}" for k, v in versions().items())


def _run_task(task: _Task) -> dict:
    """Simulate the data of ``task``, run its learner, return its row (runs in worker processes)."""
    entry = _entry(task.method)
    s0 = min(task.edges * task.d, task.d * (task.d - 1) // 2)
    sim = simulate(
        task.d, task.P * task.n_k, participants=task.P, s0=s0, graph_type=task.graph, rng=task.seed
    )
    kwargs = dict(task.kwargs)
    if entry.private:
        tag = zlib.crc32(repr(_key(*task)[:6]).encode())
        kwargs.update(
            epsilon=task.epsilon,
            delta=task.delta,
            rng=np.random.default_rng(np.random.SeedSequence(task.seed, spawn_key=(0x5EE9, tag))),
        )
    start = time.perf_counter()
    result = entry.function(sim.X if entry.stacked else sim.participants, **kwargs)
    seconds = time.perf_counter() - start
    acc = count_accuracy(sim.B_true, result.W)
    mb = result.communication_mb  # every phase, the warm start's included
    comm = math.nan if mb is None else mb
    return dict(
        zip(KEY, task[:10]),
        shd=acc.shd,
        tpr=acc.tpr,
        fdr=acc.fdr,
        f1=acc.f1,
        nnz=acc.nnz,
        comm_mb=comm,
        seconds=seconds,
        versions=_versions(),
    )


def _read_csv(path: Path) -> pd.DataFrame | None:
    """Rows of an existing sweep CSV (None if absent or empty); raise if it is not one."""
    if path.is_dir():
        raise ValueError(f"`csv` {str(path)!r} is a directory; give the path of a CSV file")
    if path.exists() and not path.is_file():
        raise ValueError(f"`csv` {str(path)!r} is not a regular file; give the path of a CSV file")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise ValueError(f"`csv` {str(path)!r} is not readable and writable (permission denied)")
    if not path.exists():
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"`csv` {str(path)!r}: {str(parent)!r} is not a directory")
        return None
    if path.stat().st_size == 0:
        return None
    kept = "the file was left unchanged"
    try:
        header = tuple(pd.read_csv(path, nrows=0).columns)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"`csv` {str(path)!r} is not a sweep CSV ({exc}); {kept}") from exc
    if header != COLUMNS:
        missing, extra = [c for c in COLUMNS if c not in header], [c for c in header if c not in COLUMNS]
        what = f"missing {missing}, unexpected {extra}" if missing or extra else "another order"
        if missing == ["versions"] and not extra:
            what += (
                ": a CSV from before rows recorded the package versions; add an empty "
                "'versions' column, or start a new CSV"
            )
        if set(missing) - {"versions"} == set(_SETTING) and not extra:
            what += (
                ": a CSV from before the sweep recorded its setting; add these columns with "
                "the values that produced its rows"
            )
        raise ValueError(
            f"`csv` {str(path)!r} has columns {list(header)}, expected "
            f"{list(COLUMNS)} ({what}); {kept}: pass another path or fix it"
        )
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            raise ValueError(
                f"`csv` {str(path)!r} ends with an incomplete row (an interrupted "
                f"write?); {kept}: delete its last line"
            )
    return pd.read_csv(path, dtype=_TEXT)


def _append(path: Path, row: dict) -> None:
    header = not path.exists() or path.stat().st_size == 0
    text = pd.DataFrame([row], columns=list(COLUMNS)).to_csv(index=False, header=header, lineterminator="\n")
    with open(path, "a", newline="") as f:  # one write per finished task
        f.write(text)


def _progress(enabled: bool, total: int, skipped: int) -> Callable[[], None]:
    start, done = time.perf_counter(), 0

    def write(text: str, last: bool) -> None:
        if enabled:
            print(f"\r{text:<72}", end="\n" if last else "", file=sys.stderr, flush=True)

    def step() -> None:
        nonlocal done
        done += 1
        elapsed = time.perf_counter() - start
        write(
            f"sweep: {done}/{total} done, {elapsed:.0f} s elapsed, "
            f"~{elapsed / done * (total - done):.0f} s left",
            done == total,
        )

    write(f"sweep: {total} task(s) to run, {skipped} already in the CSV", total == 0)
    return step


def sweep(
    *,
    methods: str | Sequence[str],
    epsilons: Sequence[float],
    seeds: int | Sequence[int],
    d: int | Sequence[int] = 20,
    participants: int | Sequence[int] = 10,
    n_per_participant: int | Sequence[int] = 200,
    delta: float = 1e-5,
    csv: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    progress: bool = True,
    method_options: Mapping[str, Mapping[str, Any]] | None = None,
    graph: str = "ER",
    edges_per_node: int = 1,
    executor: Executor | None = None,
) -> SweepResult:
    """Run a privacy–utility sweep (resumable) and return its tidy table.

    Parameters
    ----------
    methods : str or sequence of str
        Learners among :data:`METHODS`; ``"notears"`` runs centrally on the pooled data (a
        reference), ``"notears-average"`` averages local NOTEARS fits.
    epsilons : sequence of finite float > 0
        ε grid of the private methods (may be empty if none is requested).
    seeds : int or sequence of int >= 0
        One simulated dataset per seed (and per d, P, n_k). A bare int is *one* seed, not a
        count: pass ``range(5)`` for five seeds.
    d, participants, n_per_participant : int or sequence of int
        Grids of nodes (>= 2), participants P (>= 1) and rows per participant n_k (>= 2); the sweep
        runs their Cartesian product.
    delta : float in (0, 1), default 1e-5
    csv : path, optional
        Resume from and append to this file (created, with its folder, if needed). A file whose
        header is not :data:`COLUMNS` raises ``ValueError`` before any work and is never modified.
    jobs : int >= 1, default 1
        Worker processes ("spawn", single-threaded BLAS). With ``jobs > 1`` a calling script needs
        the usual ``if __name__ == "__main__":`` guard.
    executor : concurrent.futures.Executor, optional
        Run the tasks on this executor instead (a thread or process pool, or a cluster's, e.g.
        ``distributed.Client(...).get_executor()``); the caller owns it (it is not shut down).
        Tasks in worker processes run BLAS on one thread (the caller's own process keeps its
        settings). Rows do not depend on the executor,
        the job count or the order tasks finish in (each task's noise is seeded from its key),
        except the measured ``seconds``. Give ``jobs`` or ``executor``, not both.
    progress : bool, default True
        Report progress on one stderr line.
    method_options : dict, optional
        Method name → keyword arguments of its learner, over the learner registry's defaults and
        simulation settings (the public bounds at the simulator's scale for each d,
        :func:`~dpbnsl.simulation.simulated_bounds`: e.g. ``feature_bound=100.0`` for
        dp-fed-sparse-bnsl at d = 20). Values must be JSON-like
        (numbers, strings, bools, None, lists): the result is the row's ``options`` column.
    graph : {"ER", "SF"}, edges_per_node : int >= 0
        Random DAG family with ``edges_per_node·d`` edges (at most d(d−1)/2).

    Returns
    -------
    SweepResult
        ``comm_mb`` is the transcript's size (NaN without one), ``seconds`` the learner's wall time
        (simulation excluded).

    Examples
    --------
    >>> res = sweep(methods="fed-sparse-bnsl", epsilons=[], seeds=[0], d=5, participants=2,
    ...             n_per_participant=50, progress=False)
    >>> res.computed, float(res.frame["epsilon"].iloc[0]), list(res.frame.columns) == list(COLUMNS)
    (1, inf, True)
    """
    methods = [methods] if isinstance(methods, str) else list(methods)
    if not methods:
        raise ValueError(f"`methods` must not be empty; allowed: {', '.join(METHODS)}")
    methods = list(dict.fromkeys(check_choice(m, "methods", METHODS) for m in methods))
    eps = list(
        dict.fromkeys(
            check_epsilon(e, "epsilons") for e in ([epsilons] if np.ndim(epsilons) == 0 else epsilons)
        )
    )
    if not eps and any(_entry(m).private for m in methods):
        raise ValueError(
            "`epsilons` must not be empty when a private method is requested "
            "(the non-private methods give the ε = ∞ reference)"
        )
    delta = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    seed_list = _grid(seeds, "seeds", 0)
    ds, Ps = _grid(d, "d", 2), _grid(participants, "participants", 1)
    nks = _grid(n_per_participant, "n_per_participant", 2)
    jobs = check_int(jobs, "jobs", low=1)
    if executor is not None:
        if not isinstance(executor, Executor):
            raise TypeError(
                f"`executor` must be a concurrent.futures.Executor; got {type(executor).__name__}"
            )
        if jobs != 1:
            raise ValueError(f"give `jobs` or `executor`, not both; got jobs={jobs} and an executor")
    options = _check_options(method_options)
    graph = check_choice(graph, "graph", ("ER", "SF"))
    edges = check_int(edges_per_node, "edges_per_node", low=0)
    path = None if csv is None else Path(csv)
    existing = None if path is None else _read_csv(path)

    kwargs = {
        (m, dd): {**_entry(m).defaults, **_entry(m).simulation_settings(dd), **options.get(m, {})}
        for m in methods
        for dd in ds
    }
    texts = {key: _options_text(kw) for key, kw in kwargs.items()}
    for m in methods:  # every private setting is validated and calibrated before any run
        plan = _entry(m).plan
        if plan is not None:
            for e in eps:
                for dd in ds:
                    for nk in nks:
                        plan(dd, (nk,), epsilon=e, delta=delta, **kwargs[m, dd])
    tasks = [
        _Task(m, e, delta if e < math.inf else 0.0, dd, P, nk, s, graph, edges, texts[m, dd], kwargs[m, dd])
        for s in seed_list
        for dd in ds
        for P in Ps
        for nk in nks
        for m in methods
        for e in (eps if _entry(m).private else [math.inf])
    ]
    done = set() if existing is None else set(map(_key, *existing[list(KEY)].T.to_numpy()))
    todo = [t for t in tasks if _key(*t) not in done]
    rows: dict[tuple, dict] = {}
    step = _progress(bool(progress), len(todo), len(tasks) - len(todo))
    if path is not None and todo:
        path.parent.mkdir(parents=True, exist_ok=True)

    def record(row: dict) -> None:
        rows[_key(*row.values())] = row
        if path is not None:
            _append(path, row)
        step()

    run_all(_run_task, todo, lambda _task, row: record(row), jobs=jobs, executor=executor)

    if path is not None:  # the returned rows are exactly what a later resume would read
        stored = _read_csv(path)
        records = [] if stored is None else stored.to_dict("records")
        rows = {}
        for r in records:
            rows.setdefault(_key(*r.values()), r)  # a duplicated key: the first row wins
    order = {m: i for i, m in enumerate(methods)}
    tasks.sort(key=lambda t: (order[t.method], t.d, t.P, t.n_k, t.epsilon, t.seed))
    frame = pd.DataFrame([rows[_key(*t)] for t in tasks], columns=list(COLUMNS))
    return SweepResult(frame.astype(_DTYPES), len(todo), len(tasks) - len(todo), path)


def summarize(
    frame: pd.DataFrame | SweepResult,
    *,
    by: str | Sequence[str] = ("method", "epsilon"),
    metrics: str | Sequence[str] = ("shd", "tpr", "fdr", "f1"),
) -> pd.DataFrame:
    """Per group of ``by``: ``<metric>_mean``, ``<metric>_std`` (ddof 1, NaN for one run), ``runs``.

    ``frame`` is a :class:`SweepResult` or its frame; groups keep their order of appearance.
    """
    frame = frame.frame if isinstance(frame, SweepResult) else frame
    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    for name, cols in (("by", by), ("metrics", metrics)):
        for c in cols:
            check_choice(c, name, COLUMNS)
    grouped = frame.groupby(by, sort=False)
    out = grouped[metrics].agg(["mean", "std"])
    out.columns = [f"{m}_{stat}" for m, stat in out.columns]
    out["runs"] = grouped.size()
    return out.reset_index()
