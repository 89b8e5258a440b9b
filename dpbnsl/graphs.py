"""Directed graphs as weighted adjacency matrices.

Convention: ``W[i, j] != 0`` means the edge ``i -> j``. A CPDAG is returned as a 0/1 matrix in which an
undirected edge ``i - j`` has both ``[i, j]`` and ``[j, i]`` set.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ._validation import ArrayLike, as_square_matrix, check_real

__all__ = [
    "is_dag",
    "acyclicity",
    "threshold",
    "threshold_to_dag",
    "topological_order",
    "v_structures",
    "dag_to_cpdag",
]


def _support(W: np.ndarray) -> np.ndarray:
    return W != 0


def _kahn(A: np.ndarray) -> list[int]:
    """Kahn's algorithm on a boolean adjacency; returns the (possibly partial) order it reaches."""
    indeg = A.sum(axis=0).astype(int)
    stack = [int(i) for i in np.flatnonzero(indeg == 0)][::-1]
    order: list[int] = []
    while stack:
        i = stack.pop()
        order.append(i)
        for j in np.flatnonzero(A[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                stack.append(int(j))
    return order


def is_dag(W: ArrayLike) -> bool:
    """Return True when the support of ``W`` has no directed cycle (self-loops count as cycles).

    Examples
    --------
    >>> is_dag([[0, 1], [0, 0]]), is_dag([[0, 1], [1, 0]])
    (True, False)
    """
    A = _support(as_square_matrix(W, "W"))
    return len(_kahn(A)) == A.shape[0]


def topological_order(W: ArrayLike) -> list[int]:
    """Return the nodes of the DAG ``W`` in a topological order (parents before children).

    Raises ``ValueError`` when ``W`` has a cycle.
    """
    A = _support(as_square_matrix(W, "W"))
    order = _kahn(A)
    if len(order) != A.shape[0]:
        rest = sorted(set(range(A.shape[0])) - set(order))
        raise ValueError(f"`W` is not a DAG: nodes {rest} lie on or after a directed cycle")
    return order


def acyclicity(W: ArrayLike) -> tuple[float, np.ndarray]:
    """NOTEARS acyclicity ``h(W) = tr(exp(W∘W)) − d`` and its gradient ``2 W ∘ exp(W∘W)ᵀ``.

    ``h(W) >= 0`` with equality exactly when ``W`` is a DAG (Zheng et al. 2018, Thm 1). One matrix
    exponential per call. Where exp(W∘W) overflows (entries beyond about 26 on a cycle, or huge
    ones anywhere) the result is settled exactly from the support: h = 0 with a zero gradient for
    a DAG, h = +∞ with ±∞ on the cycles' edges otherwise. A non-finite entry is a ``ValueError``.

    Examples
    --------
    >>> acyclicity([[0.0, 1e200], [0.0, 0.0]])[0], acyclicity([[0.0, 1e200], [1.0, 0.0]])[0]
    (0.0, inf)

    Returns
    -------
    h : float
    grad : array of shape (d, d)
    """
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"`W` must be a square matrix; got shape {W.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        E = scipy.linalg.expm(W * W)
        h = float(np.trace(E) - W.shape[0])
        grad = 2.0 * W * E.T
    if np.isfinite(h) and np.isfinite(grad).all():
        return h, grad
    if not np.isfinite(W).all():
        i, j = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(f"`W` has a non-finite entry {float(W[i, j])!r} at ({i}, {j})")
    return _acyclicity_overflowed(W)


def _acyclicity_overflowed(W: np.ndarray) -> tuple[float, np.ndarray]:
    """``h`` and its gradient where exp(W∘W) overflows, settled exactly from the support: for a
    DAG, h = 0 and the gradient is 0 (an edge i → j and a path j ⇝ i would make a cycle); else
    h = +∞, and the gradient is ±∞ on the edges that lie on a cycle (2 w_ij · ∞), 0 elsewhere."""
    A = _support(W)
    if len(_kahn(A)) == A.shape[0]:
        return 0.0, np.zeros_like(W)
    reach = A | np.eye(A.shape[0], dtype=bool)  # reach[j, i]: a path from j to i (transitive closure)
    for k in range(A.shape[0]):
        reach |= reach[:, [k]] & reach[[k], :]
    on_cycle = A & reach.T
    with np.errstate(invalid="ignore"):
        grad = np.where(on_cycle, np.sign(W) * np.inf, 0.0)
    return math.inf, grad


def threshold(W: ArrayLike, *, threshold: float = 0.3) -> np.ndarray:
    """Return a copy of ``W`` with every entry of absolute value ``<= threshold`` set to 0."""
    W = as_square_matrix(W, "W")
    t = check_real(threshold, "threshold", low=0.0)
    W[np.abs(W) <= t] = 0.0
    return W


def threshold_to_dag(W: ArrayLike) -> np.ndarray:
    """Remove the weakest edges of ``W`` (smallest ``|w|`` first) until the rest is a DAG.

    Returns a new matrix; a DAG is returned unchanged. Equivalent to deleting edges one by one in
    ascending order of ``|w|`` (ties in row-major order) and stopping at the first acyclic graph; the
    number of deletions is found by bisection because acyclicity is monotone under deletion.
    """
    W = as_square_matrix(W, "W")
    if is_dag(W):
        return W
    rows, cols = np.nonzero(W)
    order = np.argsort(np.abs(W[rows, cols]), kind="stable")
    rows, cols = rows[order], cols[order]
    d = W.shape[0]

    def acyclic_after(k: int) -> bool:
        A = _support(W)
        A[rows[:k], cols[:k]] = False
        return len(_kahn(A)) == d

    lo, hi = 0, len(rows)  # acyclic_after(lo) is False, acyclic_after(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if acyclic_after(mid):
            hi = mid
        else:
            lo = mid
    W[rows[:hi], cols[:hi]] = 0.0
    return W


def v_structures(W: ArrayLike) -> set[tuple[int, int, int]]:
    """Return the v-structures ``a -> c <- b`` of a DAG as triples ``(a, c, b)`` with ``a < b``.

    Only unshielded colliders count: ``a`` and ``b`` must be non-adjacent.
    """
    A = _support(as_square_matrix(W, "W"))
    adjacent = A | A.T
    out = set()
    for c in range(A.shape[0]):
        parents = np.flatnonzero(A[:, c])
        for i, a in enumerate(parents):
            for b in parents[i + 1 :]:
                if not adjacent[a, b]:
                    out.add((int(a), int(c), int(b)))
    return out


def apply_meek(directed: np.ndarray, undirected: np.ndarray) -> None:
    """Orient undirected edges in place by Meek's rules R1–R3 until nothing changes."""
    d = directed.shape[0]
    changed = True
    while changed:
        changed = False
        adjacent = directed | directed.T | undirected
        for a, b in zip(*np.nonzero(np.triu(undirected))):
            for x, y in ((a, b), (b, a)):
                # R1: z -> x, x - y, z and y non-adjacent  =>  x -> y
                r1 = np.any(directed[:, x] & ~adjacent[:, y] & (np.arange(d) != y))
                # R2: x -> z -> y and x - y  =>  x -> y
                r2 = np.any(directed[x, :] & directed[:, y])
                # R3: x - z1, x - z2, z1 -> y, z2 -> y, z1 and z2 non-adjacent  =>  x -> y
                zs = np.flatnonzero(undirected[x, :] & directed[:, y])
                r3 = any(not adjacent[z1, z2] for i, z1 in enumerate(zs) for z2 in zs[i + 1 :])
                if r1 or r2 or r3:
                    undirected[x, y] = undirected[y, x] = False
                    directed[x, y] = True
                    changed = True
                    break
            if changed:
                break


def dag_to_cpdag(W: ArrayLike) -> np.ndarray:
    """Return the CPDAG (essential graph) of the DAG ``W`` as a 0/1 integer matrix.

    Directed edges of the CPDAG are the compelled ones (shared by every DAG in the Markov equivalence
    class); an undirected edge ``i - j`` has both ``[i, j]`` and ``[j, i]`` equal to 1. Built from the
    skeleton and the v-structures, then closed under Meek's rules R1–R3 (Meek 1995), which are
    complete for this case.
    """
    W = as_square_matrix(W, "W")
    if not is_dag(W):
        raise ValueError("`W` must be a DAG to have a CPDAG; it has a directed cycle")
    A = _support(W)
    directed = np.zeros_like(A)
    for a, c, b in v_structures(W):
        directed[a, c] = directed[b, c] = True
    undirected = (A | A.T) & ~(directed | directed.T)
    apply_meek(directed, undirected)
    return (directed | undirected).astype(int)
