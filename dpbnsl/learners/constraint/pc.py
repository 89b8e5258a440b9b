"""The PC algorithm (Spirtes, Glymour & Scheines 2000) and the orientation steps FedPC shares.

1. Skeleton: start from the complete graph; at level ℓ = 0, 1, ... visit the ordered adjacent pairs
   (i, j) in row-major order and delete ``i − j`` at the first ``Z ⊆ adj(i) \\ {j}``, ``|Z| = ℓ``
   (lexicographic order), with ``p(X_i ⊥ X_j | X_Z) > α``; ``Z`` is saved as the separating set.
   ``variant="stable"`` (Colombo & Maathuis 2014) takes ``adj(i)`` from the graph as it was at the
   start of the level (order-independent skeleton); ``"original"`` from the live graph. The levels
   stop when no adjacent pair has ``|adj(i) \\ {j}| ≥ ℓ`` (or at ``max_cond_size``).
2. V-structures: each unshielded triple ``i − k − j`` (i, j non-adjacent) becomes ``i → k ← j`` iff
   ``k ∉ sepset(i, j)``.
3. Meek's rules R1–R3 until nothing changes (:func:`dpbnsl.graphs.apply_meek`), giving a CPDAG.
4. A DAG in the class: Dor & Tarsi's (1992) consistent extension of the PDAG (:func:`pdag_to_dag`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import ArrayLike, as_float_matrix, check_choice, check_data_scale, check_int
from ...blas import one_blas_thread
from ...graphs import apply_meek, threshold_to_dag
from ..result import LearnResult
from .citests import CITest, check_alpha, make_ci_test, subsets

__all__ = [
    "pc",
    "pc_skeleton",
    "run_pc",
    "skeleton_level",
    "orient_pdag",
    "pdag_to_dag",
    "orient_skeleton",
    "best_separating_set",
    "VARIANTS",
    "CONFLICTS",
    "EXTENSIONS",
]

VARIANTS = ("stable", "original")
CONFLICTS = ("first", "last")
EXTENSIONS = ("dor-tarsi", "max-parents")
NO_SEPSET = ("orient", "skip")


def skeleton_level(
    ci: CITest, adj: np.ndarray, level: int, *, alpha: float, variant: str, sepsets: dict | None = None
) -> int:
    """Run PC level ``level`` in place on the boolean symmetric ``adj``; return the tests requested.

    Found separating sets go to ``sepsets[(min(i, j), max(i, j))]`` when a dict is given.
    """
    frozen = adj.copy() if variant == "stable" else adj
    calls = 0
    for i, j in zip(*np.nonzero(adj.copy())):
        if not adj[i, j]:
            continue
        cands = [int(k) for k in np.flatnonzero(frozen[i]) if k != j]
        if len(cands) < level:
            continue
        for Z in subsets(cands, level):
            calls += 1
            if ci.test(i, j, Z) > alpha:
                adj[i, j] = adj[j, i] = False
                if sepsets is not None:
                    sepsets[(int(min(i, j)), int(max(i, j)))] = Z
                break
    return calls


def needs_level(adj: np.ndarray, level: int, max_cond_size: int | None) -> bool:
    """Whether some adjacent pair (i, j) still has ``|adj(i) \\ {j}| >= level`` (within the cap)."""
    if max_cond_size is not None and level > max_cond_size:
        return False
    deg = adj.sum(axis=1)
    return bool(np.any(deg[deg > 0] - 1 >= level))


def pc_skeleton(
    ci: CITest, *, alpha: float, variant: str = "stable", max_cond_size: int | None = None
) -> tuple[np.ndarray, dict, list[dict]]:
    """PC's skeleton phase. Returns the boolean adjacency, the separating sets (keyed by ``(i, j)``,
    ``i < j``) and one history row per level (level, edges, tests computed, seconds)."""
    d = ci.d
    adj = ~np.eye(d, dtype=bool)
    sepsets: dict = {}
    rows, level = [], 0
    while needs_level(adj, level, max_cond_size):
        t0, before = time.perf_counter(), ci.n_computed
        skeleton_level(ci, adj, level, alpha=alpha, variant=variant, sepsets=sepsets)
        rows.append(
            dict(
                level=level,
                edges=int(adj.sum() // 2),
                ci_tests=ci.n_computed - before,
                seconds=time.perf_counter() - t0,
            )
        )
        level += 1
    return adj, sepsets, rows


def best_separating_set(
    ci: CITest,
    i: int,
    j: int,
    candidates: Iterable[int],
    *,
    alpha: float,
    max_size: int | None = 3,
    criterion: str = "max-p",
) -> tuple[tuple[int, ...], float] | None:
    """The best ``Z ⊆ candidates`` (``|Z| ≤ max_size``) with ``p(X_i ⊥ X_j | X_Z) > α``, or None.

    Subsets are visited by size, then lexicographically. ``criterion="max-p"``: the largest
    p-value; ``"min-r"``: the smallest ``|statistic|`` (Fisher-z: partial correlation). Ties go to
    the first visited. Returns ``(Z, value)`` with ``value`` the p-value or ``|r|``.
    """
    cands = sorted(int(c) for c in candidates)
    top = len(cands) if max_size is None else min(max_size, len(cands))
    best_value: Any  # a float whenever best is not None (they are set together)
    best, best_value = None, None
    for size in range(top + 1):
        for Z in subsets(cands, size):
            res = ci.result(i, j, Z)
            if not res.p_value > alpha:
                continue
            value = res.p_value if criterion == "max-p" else abs(res.statistic)
            if best is None or (value > best_value if criterion == "max-p" else value < best_value):
                best, best_value = Z, value
    return None if best is None else (best, float(best_value))


def _set_arrow(
    directed: np.ndarray, undirected: np.ndarray, a: int | np.integer, b: int | np.integer
) -> bool:
    """Orient ``a → b`` (reversing an existing ``b → a``); return True when it reversed one."""
    if directed[b, a]:
        directed[b, a] = False
        directed[a, b] = True
        return True
    directed[a, b] = True
    undirected[a, b] = undirected[b, a] = False
    return False


def orient_pdag(
    adj: np.ndarray, sepsets: dict, *, conflict: str = "first", no_sepset: str = "orient"
) -> tuple[np.ndarray, np.ndarray, list, int]:
    """V-structures from ``sepsets`` (``(i, j) → tuple``, ``i < j``; None or missing = none
    found), then Meek R1–R3.

    Triples ``(i, k, j)`` are visited by ``(i, j)`` then ``k``. A pair without a separating set is
    oriented as a collider (``no_sepset="orient"``, FedPC reference code: Z = ∅) or skipped
    (``"skip"``). A collider whose edges an earlier collider already oriented out of ``k`` is
    skipped whole (``conflict="first"``, causal-learn's ``uc_priority=2``) or overwrites them
    (``"last"``, FedPC reference code).

    Returns
    -------
    directed, undirected : boolean (d, d) arrays (undirected is symmetric)
    v_structures : list of ``(i, k, j)`` triples declared colliders
    conflicts : int, colliders skipped (``"first"``) or arrows reversed (``"last"``)
    """
    d = adj.shape[0]
    directed = np.zeros((d, d), dtype=bool)
    undirected = adj.copy()
    found, conflicts = [], 0
    for i in range(d):
        for j in range(i + 1, d):
            if adj[i, j]:
                continue
            common = np.flatnonzero(adj[i] & adj[j])
            if common.size == 0:
                continue
            Z = sepsets.get((i, j))
            if Z is None and no_sepset == "skip":
                continue
            for k in common:
                if Z is not None and k in Z:
                    continue
                if conflict == "first" and (directed[k, i] or directed[k, j]):
                    conflicts += 1  # an earlier triple oriented an edge out of k: skip this one
                    continue
                found.append((i, int(k), j))
                conflicts += _set_arrow(directed, undirected, i, k)
                conflicts += _set_arrow(directed, undirected, j, k)
    apply_meek(directed, undirected)
    return directed, undirected, found, conflicts


def pdag_to_dag(
    directed: np.ndarray, undirected: np.ndarray, *, method: str = "dor-tarsi"
) -> tuple[np.ndarray, int]:
    """A DAG extending the PDAG (directed arrows kept, undirected edges oriented).

    ``"dor-tarsi"`` (Dor & Tarsi 1992): repeatedly take the lowest-index node x with no outgoing
    arrow whose undirected neighbours are each adjacent to all other neighbours of x, orient its
    undirected edges into x and remove x. When no node qualifies (the PDAG has no consistent
    extension) the first node without outgoing arrows is taken anyway, or, if every node has one
    (a directed cycle), the node with the fewest, whose outgoing arrows are then reversed; each
    such step is counted in ``forced``. The result is always acyclic. ``"max-parents"`` (FedPC
    reference code, after Chickering 2002): repeatedly orient every undirected edge of the node
    with the most parents away from it; remaining cycles are broken by
    :func:`dpbnsl.graphs.threshold_to_dag` (each removed edge counts in ``forced``).

    Returns
    -------
    dag : int array of shape (d, d)
    forced : int
    """
    d = directed.shape[0]
    D, U = directed.copy(), undirected.copy()
    if method == "max-parents":
        while U.any():
            parents = D.sum(axis=0) * U.any(axis=1) - (~U.any(axis=1))
            v = int(np.argmax(parents))
            D[v, U[v]] = True
            U[v, :] = U[:, v] = False
        dag = threshold_to_dag(D.astype(float))
        return (dag != 0).astype(int), int(D.sum() - (dag != 0).sum())
    alive = np.ones(d, dtype=bool)
    forced = 0
    while alive.any():
        adjacent = (D | D.T | U) & alive[None, :]
        sinks = [x for x in np.flatnonzero(alive) if not (D[x] & alive).any()]
        pick: int | np.integer | None = next(
            (
                x
                for x in sinks
                if all(
                    np.all(adjacent[y, adjacent[x]] | (np.flatnonzero(adjacent[x]) == y))
                    for y in np.flatnonzero(U[x] & alive)
                )
            ),
            None,
        )
        if pick is None:
            forced += 1
            if sinks:
                pick = sinks[0]
            else:
                nodes = np.flatnonzero(alive)
                pick = int(nodes[np.argmin((D[nodes] & alive).sum(axis=1))])
                out = np.flatnonzero(D[pick] & alive)
                D[pick, out], D[out, pick] = False, True
        ys = np.flatnonzero(U[pick] & alive)
        D[ys, pick] = True
        U[pick, ys] = U[ys, pick] = False
        alive[pick] = False
    return D.astype(int), forced


def cpdag_matrix(directed: np.ndarray, undirected: np.ndarray) -> np.ndarray:
    """0/1 int matrix with ``[i, j] = 1`` for ``i → j`` and both entries for ``i − j``."""
    return (directed | undirected).astype(int)


def check_pc_options(
    *,
    alpha: float,
    variant: str,
    max_cond_size: int | None,
    conflict: str,
    extension: str,
    no_sepset: str = "orient",
) -> dict:
    """Validate the options PC and FedPC share; return them normalised."""
    return dict(
        alpha=check_alpha(alpha),
        variant=check_choice(variant, "variant", VARIANTS),
        max_cond_size=None if max_cond_size is None else check_int(max_cond_size, "max_cond_size", low=0),
        conflict=check_choice(conflict, "conflict", CONFLICTS),
        extension=check_choice(extension, "extension", EXTENSIONS),
        no_sepset=check_choice(no_sepset, "no_sepset", NO_SEPSET),
    )


@one_blas_thread
def pc(
    X: ArrayLike,
    *,
    alpha: float = 0.01,
    test: str = "fisher-z",
    variant: str = "stable",
    max_cond_size: int | None = None,
    sepset: str = "skeleton",
    max_sepset_size: int | None = 3,
    conflict: str = "first",
    extension: str = "dor-tarsi",
    levels: Sequence[int] | np.ndarray | None = None,
    min_samples_per_cell: float = 5.0,
    dof: str = "adjusted",
) -> LearnResult:
    """Learn a CPDAG with the PC algorithm and return it with one DAG of its class.

    Parameters
    ----------
    X : array or DataFrame of shape (n, d)
        Samples in rows (integer category codes for ``test="g2"``).
    alpha : float in (0, 1), default 0.01
        Significance level: independent iff ``p > alpha``.
    test : {"fisher-z", "g2", "auto"}, default "fisher-z"
        CI test (:mod:`dpbnsl.learners.constraint.citests`).
    variant : {"stable", "original"}, default "stable"
        Adjacency sets frozen per level (PC-stable) or live (original, order-dependent).
    max_cond_size : int >= 0, optional
        Largest conditioning set in the skeleton phase (default: no limit).
    sepset : {"skeleton", "max-p"}, default "skeleton"
        Separating sets for the v-structures: the first found in the skeleton phase, or (as FedPC
        with one participant) re-searched per unshielded pair over subsets of
        ``adj(i) ∪ adj(j)`` of size ≤ ``max_sepset_size``, keeping the largest p-value.
    conflict : {"first", "last"}, default "first"
        Conflicting v-structures: skip a collider whose edges an earlier one oriented out of its
        middle node, or let the last collider overwrite (see :func:`orient_pdag`).
    extension : {"dor-tarsi", "max-parents"}, default "dor-tarsi"
        PDAG → DAG (:func:`pdag_to_dag`).
    levels, min_samples_per_cell, dof
        G² options (:class:`dpbnsl.learners.constraint.citests.GSquare`).

    Returns
    -------
    LearnResult
        ``W``: a 0/1 DAG in the learned class; ``W_raw`` and ``info["cpdag"]``: the CPDAG
        (undirected edges set both ways); ``info``: ``skeleton``, ``sepsets``, ``v_structures``,
        ``conflicts``, ``forced`` (extension steps without a consistent choice), ``ci_tests``;
        ``history``: one row per level.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 2000, participants=1, rng=0)
    >>> r = pc(data.X)
    >>> r.is_dag, r.info["cpdag"].shape
    (True, (5, 5))
    """
    opts = check_pc_options(
        alpha=alpha, variant=variant, max_cond_size=max_cond_size, conflict=conflict, extension=extension
    )
    check_choice(sepset, "sepset", ("skeleton", "max-p"))
    if max_sepset_size is not None:
        max_sepset_size = check_int(max_sepset_size, "max_sepset_size", low=0)
    columns = tuple(str(c) for c in X.columns) if isinstance(X, pd.DataFrame) else None
    arr = check_data_scale(as_float_matrix(X, "X", min_cols=1), "X")
    if arr.shape[0] < 2:
        raise ValueError(f"`X` has {arr.shape[0]} rows; at least 2 are required")
    ci = make_ci_test(arr, test=test, levels=levels, min_samples_per_cell=min_samples_per_cell, dof=dof)
    dag, cpdag, history, info = run_pc(ci, opts, sepset=sepset, max_sepset_size=max_sepset_size)
    params = dict(
        opts,
        test=ci.name,
        sepset=sepset,
        max_sepset_size=max_sepset_size,
        levels=None if levels is None else tuple(int(v) for v in levels),
        min_samples_per_cell=min_samples_per_cell,
        dof=dof,
    )
    params.pop("no_sepset")
    return LearnResult("pc", dag, cpdag, history, columns, params=params, info=info)


def orient_skeleton(adj: np.ndarray, sepsets: dict, opts: dict) -> tuple[np.ndarray, np.ndarray, dict]:
    """PC's steps 2–4 on a skeleton and its separating sets, with validated options: (DAG, CPDAG,
    info with ``cpdag``, ``skeleton``, ``sepsets``, ``v_structures``, ``conflicts``, ``forced``)."""
    directed, undirected, vs, conflicts = orient_pdag(adj, sepsets, conflict=opts["conflict"])
    dag, forced = pdag_to_dag(directed, undirected, method=opts["extension"])
    cpdag = cpdag_matrix(directed, undirected)
    info = dict(
        cpdag=cpdag,
        skeleton=adj.astype(int),
        sepsets=sepsets,
        v_structures=vs,
        conflicts=conflicts,
        forced=forced,
    )
    return dag, cpdag, info


def run_pc(
    ci: CITest, opts: dict, *, sepset: str, max_sepset_size: int | None
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, dict]:
    """PC on a ready CI test with validated options (:func:`check_pc_options`): the skeleton, the
    separating sets (``sepset``), the orientation and the extension. Returns (DAG, CPDAG, history
    with one row per level, info as :func:`pc` documents it)."""
    t0 = time.perf_counter()
    adj, sepsets, rows = pc_skeleton(
        ci, alpha=opts["alpha"], variant=opts["variant"], max_cond_size=opts["max_cond_size"]
    )
    if sepset == "max-p":
        sepsets = {}
        for i, j in zip(*np.nonzero(np.triu(~adj & ~np.eye(ci.d, dtype=bool)))):
            if (adj[i] & adj[j]).any():
                best = best_separating_set(
                    ci, i, j, np.flatnonzero(adj[i] | adj[j]), alpha=opts["alpha"], max_size=max_sepset_size
                )
                sepsets[(int(i), int(j))] = None if best is None else best[0]
    dag, cpdag, info = orient_skeleton(adj, sepsets, opts)
    info.update(ci_tests=ci.n_computed, seconds=time.perf_counter() - t0)
    history = pd.DataFrame(rows, columns=["level", "edges", "ci_tests", "seconds"])
    return dag, cpdag, history, info
