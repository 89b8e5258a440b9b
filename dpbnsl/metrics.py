"""Accuracy of learned graphs against a ground truth.

Convention: ``B[i, j] != 0`` means the edge ``i -> j``; only the support matters except in
:func:`auroc_aupr` and :func:`nmse`, which use the weights. A boolean array (e.g. ``W != 0``) is
accepted as a 0/1 matrix. Graph metrics take ``(truth, estimate)`` in that order. The reference
(truth) graph may be cyclic wherever the metric is defined for it, as is cdt's 18-edge Sachs graph:
:func:`count_accuracy` needs only a reference without self-loops or 2-cycles, and
:func:`skeleton_scores` and :func:`auroc_aupr` take any graph. The v-structure metrics and
:func:`shd_cpdag` need a DAG; their error names the cyclic graph and its cycle, and when only the
reference fails a check the estimate passes, it adds that the arguments may be swapped. A ratio
with a zero denominator follows NOTEARS (Zheng et al. 2018): the denominator is floored at 1, so
an empty ratio is 0.

:func:`varsortability`, :func:`r2_sortability` and :func:`sortability` measure a *data set*
against its DAG: how far sorting the variables by marginal variance (or by R²) recovers the causal
order (Reisach et al. 2021, 2023).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from ._sortability import r2_sortability, sortability, varsortability
from ._validation import ArrayLike, as_float_matrix, as_square_matrix
from .graphs import dag_to_cpdag, v_structures

__all__ = [
    "LagAccuracy",
    "lag_accuracy",
    "Accuracy",
    "SkeletonScores",
    "VStructureCounts",
    "RankingScores",
    "count_accuracy",
    "skeleton_scores",
    "v_structure_counts",
    "v_structure_recall",
    "shd_cpdag",
    "auroc_aupr",
    "nmse",
    "sortability",
    "varsortability",
    "r2_sortability",
]


@dataclass(frozen=True)
class Accuracy:
    """Edge-level accuracy of an estimated graph (see :func:`count_accuracy`)."""

    shd: int
    tpr: float
    fdr: float
    fpr: float
    precision: float
    recall: float
    f1: float
    nnz: int
    reversed: int
    extra: int
    missing: int
    true_positive: int
    n_true_edges: int

    def as_dict(self) -> dict[str, float | int]:
        """Return the fields as a plain ``dict`` (e.g. one row of a results table)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SkeletonScores:
    """Precision, recall and F1 on undirected node pairs (see :func:`skeleton_scores`)."""

    precision: float
    recall: float
    f1: float
    true_positive: int
    n_true: int
    n_predicted: int


@dataclass(frozen=True)
class VStructureCounts:
    """True v-structures found in the estimate, v-structures of the truth and of the estimate."""

    found: int
    n_true: int
    n_est: int


@dataclass(frozen=True)
class RankingScores:
    """Threshold-free scores of an edge ranking (see :func:`auroc_aupr`)."""

    auroc: float
    aupr: float


def _a_cycle(A: np.ndarray) -> list[int]:
    """The nodes, in order, of one directed cycle of the support of ``A`` (``[i]`` for a self-loop);
    ``[]`` if it is acyclic. Depth-first search: an edge back to a node on the current path closes
    a cycle."""
    S = A != 0
    state = np.zeros(S.shape[0], dtype=np.int8)  # 0 unvisited, 1 on the current path, 2 finished
    for root in range(S.shape[0]):
        if state[root]:
            continue
        state[root] = 1
        path, stack = [root], [iter(np.flatnonzero(S[root]).tolist())]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt) :]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(np.flatnonzero(S[nxt]).tolist()))
    return []


def _dag_problem(A: np.ndarray, labels: list[str]) -> str | None:
    """How ``A`` fails to be a DAG (None if it is one)."""
    cycle = _a_cycle(A)
    if not cycle:
        return None
    if len(cycle) == 1:
        return f"has a self-loop at node {labels[cycle[0]]}"
    return "has a directed cycle " + " -> ".join(labels[i] for i in [*cycle, cycle[0]])


def _simple_problem(A: np.ndarray, labels: list[str]) -> str | None:
    """How ``A`` fails to have at most one edge per pair of distinct nodes and no self-loop."""
    S = A != 0
    loops = np.flatnonzero(np.diag(S))
    if loops.size:
        return f"has a self-loop at node {labels[int(loops[0])]}"
    both = np.argwhere(np.triu(S & S.T, 1))
    if both.size:
        i, j = (int(k) for k in both[0])
        return f"has edges in both directions between nodes {labels[i]} and {labels[j]} (a 2-cycle)"
    return None


_PROBLEM = {"dag": _dag_problem, "simple": _simple_problem}


def _labels(M: ArrayLike, d: int) -> list[str]:
    """Node labels for messages: a DataFrame's column names, else the indices."""
    if isinstance(M, pd.DataFrame) and M.shape[1] == d:
        return [str(c) for c in M.columns]
    return [str(i) for i in range(d)]


def _pair(
    A: ArrayLike,
    B: ArrayLike,
    name_a: str,
    name_b: str,
    *,
    truth_must: str | None = None,
    est_must: str | None = None,
    why: str = "",
    why_est: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """Validate two same-shape square matrices, the reference ``A`` and the estimate ``B``.

    ``truth_must`` / ``est_must`` is ``"dag"`` (acyclic, no self-loop), ``"simple"`` (no self-loop
    or 2-cycle) or None; ``why`` / ``why_est`` say which metric needs it and why, for the error
    messages. A boolean array (e.g. ``W != 0``) is accepted as a 0/1 adjacency matrix.
    """
    originals = A, B
    A, B = (M.astype(float) if isinstance(M, np.ndarray) and M.dtype == bool else M for M in (A, B))
    a, b = as_square_matrix(A, name_a), as_square_matrix(B, name_b)
    if a.shape[0] == 0:
        raise ValueError(f"`{name_a}` must have at least one node; got shape {a.shape}")
    if a.shape != b.shape:
        raise ValueError(f"`{name_a}` and `{name_b}` must have the same shape; got {a.shape} and {b.shape}")
    d = a.shape[0]
    if truth_must is not None:
        problem = _PROBLEM[truth_must](a, _labels(originals[0], d))
        if problem is not None:
            msg = f"`{name_a}` (the reference graph) {problem}; {why}"
            if _PROBLEM[truth_must](b, _labels(originals[1], d)) is None:
                msg += (
                    f". If `{name_a}` is in fact your estimate, swap the arguments: the order is "
                    "(truth, estimate)"
                )
            raise ValueError(msg)
    if est_must is not None:
        problem = _PROBLEM[est_must](b, _labels(originals[1], d))
        if problem is not None:
            raise ValueError(f"`{name_b}` (the estimate) {problem}; {why_est}")
    return a, b


def _ratio(num: int, den: int) -> float:
    return num / max(den, 1)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


_OTHERS = "score a cyclic reference with count_accuracy, skeleton_scores or auroc_aupr"
_WHY_V = f"the v-structure metrics need a DAG reference (they compare Markov equivalence classes); {_OTHERS}"
_WHY_CPDAG = "shd_cpdag needs two DAGs (only a DAG has a CPDAG)"


def count_accuracy(B_true: ArrayLike, B_est: ArrayLike) -> Accuracy:
    """Compare the edges of an estimated graph with a reference graph (NOTEARS convention).

    Each non-zero entry of ``B_est`` is a predicted edge (``nnz`` of them, self-loops included)
    and is exactly one of: *true positive* (``B_true`` has the same edge), *reversed* (``B_true``
    has the opposite edge and ``B_est`` lacks the true one) or *extra* (all others, self-loops
    included). ``missing`` counts true adjacent pairs with neither direction predicted. So a 2-cycle
    ``i <-> j`` with ``i -> j`` true is one true positive plus one extra edge, and a 2-cycle absent
    from the truth is two extra edges. Then ``shd = extra + missing + reversed`` is the least number
    of edge additions, deletions and reversals turning ``B_est`` into ``B_true``; it equals NOTEARS'
    SHD whenever ``B_est`` has no 2-cycle (NOTEARS counts a spurious 2-cycle once).

    None of this needs the truth to be acyclic, only that each true pair has one orientation, so
    the reference may have cycles of length 3 or more (cdt's 18-edge Sachs graph has
    ``plcg -> PIP2 -> PIP3 -> plcg``). A reference with a self-loop or a 2-cycle is refused: there a
    "reversed" edge would also be a true one.

    Parameters
    ----------
    B_true : array or DataFrame of shape (d, d)
        Reference graph: a DAG, or any directed graph without self-loops or 2-cycles.
    B_est : array or DataFrame of shape (d, d)
        Estimated graph; may be cyclic (e.g. a voting baseline). Weights are ignored.

    Returns
    -------
    Accuracy
        ``tpr = recall = true_positive / n_true_edges``, ``fdr = (reversed + extra) / nnz``,
        ``fpr = (reversed + extra) / (d(d-1)/2 - n_true_edges)``, ``precision = true_positive /
        nnz``, ``f1`` their harmonic mean. Zero denominators are floored at 1 (an empty estimate
        has ``fdr = precision = 0``, an empty truth ``tpr = 0``, and ``fpr`` is the plain count of
        false edges when the truth is complete or ``d = 1``); ``f1 = 0`` if ``precision + recall
        = 0``. As in NOTEARS, ``fpr`` can exceed 1: reversed edges and 2-cycles count in its
        numerator but not in its denominator.

    Examples
    --------
    >>> truth = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]      # 0 -> 1 -> 2
    >>> est = [[0, 0.7, 0], [0, 0, 0], [0, -1.2, 0]]   # 0 -> 1 <- 2
    >>> acc = count_accuracy(truth, est)
    >>> acc.shd, acc.true_positive, acc.reversed, acc.tpr, acc.fdr
    (1, 1, 1, 0.5, 0.5)
    >>> cyclic = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]      # 0 -> 1 -> 2 -> 0
    >>> count_accuracy(cyclic, truth).shd                # 2 -> 0 is missing
    1
    """
    T, E = _pair(
        B_true,
        B_est,
        "B_true",
        "B_est",
        truth_must="simple",
        why="count_accuracy needs a reference graph without self-loops or 2-cycles, so that each "
        "true pair has one orientation (longer cycles are fine)",
    )
    d = T.shape[0]
    T, E = T != 0, E != 0
    n_tp, n_rev, nnz = int((E & T).sum()), int((E & T.T & ~E.T).sum()), int(E.sum())
    n_extra, n_true = nnz - n_tp - n_rev, int(T.sum())
    missing = int(np.triu((T | T.T) & ~(E | E.T)).sum())
    precision, recall = _ratio(n_tp, nnz), _ratio(n_tp, n_true)
    return Accuracy(
        shd=n_extra + missing + n_rev,
        tpr=recall,
        fdr=_ratio(n_rev + n_extra, nnz),
        fpr=_ratio(n_rev + n_extra, d * (d - 1) // 2 - n_true),
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        nnz=nnz,
        reversed=n_rev,
        extra=n_extra,
        missing=missing,
        true_positive=n_tp,
        n_true_edges=n_true,
    )


def skeleton_scores(B_true: ArrayLike, B_est: ArrayLike) -> SkeletonScores:
    """Precision, recall and F1 of the estimated skeleton (unordered pairs ``{i, j}``, i ≠ j).

    A pair is in a skeleton when either direction is non-zero; orientation, weights and the
    diagonal are ignored, so either graph may be a DAG, a CPDAG or cyclic. Zero denominators are
    floored at 1 as in :func:`count_accuracy`.

    Parameters
    ----------
    B_true, B_est : array or DataFrame of shape (d, d)
        True and estimated graphs, in that order.

    Returns
    -------
    SkeletonScores

    Examples
    --------
    >>> s = skeleton_scores([[0, 1, 0], [0, 0, 1], [0, 0, 0]], [[0, 0, 0], [1, 0, 0], [1, 0, 0]])
    >>> s.true_positive, s.precision, s.recall
    (1, 0.5, 0.5)
    """
    T, E = _pair(B_true, B_est, "B_true", "B_est")
    upper = np.triu(np.ones(T.shape, dtype=bool), 1)
    st, se = ((T != 0) | (T.T != 0)) & upper, ((E != 0) | (E.T != 0)) & upper
    n_tp, n_true, n_pred = int((st & se).sum()), int(st.sum()), int(se.sum())
    p, r = _ratio(n_tp, n_pred), _ratio(n_tp, n_true)
    return SkeletonScores(p, r, _f1(p, r), n_tp, n_true, n_pred)


def v_structure_counts(B_true: ArrayLike, B_est: ArrayLike) -> VStructureCounts:
    """Count the v-structures of the true DAG that the estimate reproduces.

    A true v-structure ``a -> c <- b`` (``a``, ``b`` non-adjacent; see
    :func:`dpbnsl.graphs.v_structures`) is *found* when ``B_est`` orients both edges into ``c``
    (``B_est[a, c] != 0 == B_est[c, a]``, likewise for ``b``) and has no edge between ``a`` and
    ``b``. A pair set in both directions counts as undirected, so ``B_est`` may be a CPDAG (e.g.
    from PC) or cyclic; ``n_est`` counts the estimate's v-structures by the same rule.

    Parameters
    ----------
    B_true : array or DataFrame of shape (d, d)
        True graph; must be a DAG (its v-structures define its Markov equivalence class).
    B_est : array or DataFrame of shape (d, d)
        Estimated graph: DAG, CPDAG or cyclic.

    Returns
    -------
    VStructureCounts

    Examples
    --------
    >>> collider = [[0, 1, 0], [0, 0, 0], [0, 1, 0]]   # 0 -> 1 <- 2
    >>> v_structure_counts(collider, collider)
    VStructureCounts(found=1, n_true=1, n_est=1)
    >>> v_structure_counts(collider, [[0, 1, 0], [1, 0, 0], [0, 1, 0]])  # 0 - 1 undirected
    VStructureCounts(found=0, n_true=1, n_est=0)
    """
    T, E = _pair(B_true, B_est, "B_true", "B_est", truth_must="dag", why=_WHY_V)
    A = E != 0
    adjacent = A | A.T
    # v_structures checks non-adjacency within its argument only: re-check on the full skeleton.
    oriented = v_structures((A & ~A.T).astype(float))
    est = {(a, c, b) for a, c, b in oriented if not adjacent[a, b]}
    true = v_structures(T)
    return VStructureCounts(found=len(true & est), n_true=len(true), n_est=len(est))


def v_structure_recall(B_true: ArrayLike, B_est: ArrayLike) -> float:
    """Fraction of the true DAG's v-structures found in ``B_est`` (rule of
    :func:`v_structure_counts`, same parameters); ``nan`` when ``B_true`` has no v-structure.

    Examples
    --------
    >>> v_structure_recall([[0, 1, 0], [0, 0, 0], [0, 1, 0]], [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    0.0
    """
    c = v_structure_counts(B_true, B_est)
    return c.found / c.n_true if c.n_true else float("nan")


def shd_cpdag(B_true: ArrayLike, B_est: ArrayLike) -> int:
    """Structural Hamming distance between the CPDAGs of two DAGs.

    Counts the unordered pairs ``{i, j}`` whose status differs between the CPDAGs
    (:func:`dpbnsl.graphs.dag_to_cpdag`): absent, ``i -> j``, ``j -> i`` or undirected ``i - j``.
    It is 0 exactly when the two DAGs are Markov equivalent.

    Parameters
    ----------
    B_true, B_est : array or DataFrame of shape (d, d)
        True and estimated graphs, in that order; both must be DAGs (only a DAG has a CPDAG). For
        a cyclic reference use :func:`count_accuracy` or :func:`skeleton_scores`.

    Returns
    -------
    int

    Examples
    --------
    >>> chain, reverse = [[0, 1, 0], [0, 0, 1], [0, 0, 0]], [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    >>> collider = [[0, 1, 0], [0, 0, 0], [0, 1, 0]]
    >>> shd_cpdag(chain, reverse), shd_cpdag(chain, collider)
    (0, 2)
    """
    T, E = _pair(
        B_true,
        B_est,
        "B_true",
        "B_est",
        truth_must="dag",
        est_must="dag",
        why=f"{_WHY_CPDAG}; {_OTHERS}",
        why_est=f"{_WHY_CPDAG}; compare a cyclic estimate with count_accuracy or skeleton_scores",
    )
    diff = dag_to_cpdag(T) != dag_to_cpdag(E)
    return int(np.triu(diff | diff.T, 1).sum())


def auroc_aupr(B_true: ArrayLike, W_est: ArrayLike) -> RankingScores:
    """AUROC and AUPR of ranking the d(d-1) off-diagonal ordered pairs by ``|W_est|``.

    Positives are the ``m`` true directed edges (a reversed edge is a negative unless the truth
    holds both directions), ``n`` negatives; the truth may be any directed graph, cyclic included.
    AUROC is the Mann–Whitney statistic ``(Σ_positives rank(s) − m(m+1)/2) / (m n)`` with tied
    scores given their average rank. AUPR is the average precision ``Σ_k (R_k − R_{k−1}) P_k``
    over the distinct scores ``t_1 > t_2 > ...``, with ``P_k``, ``R_k`` the precision and recall of
    predicting ``|W_est| >= t_k`` and ``R_0 = 0`` (scikit-learn's ``average_precision_score``).
    Both are ``nan`` when ``B_true`` has no edge; ``n >= 1`` whenever ``d >= 2``.

    Parameters
    ----------
    B_true : array or DataFrame of shape (d, d)
        True graph, possibly cyclic; the diagonal is ignored.
    W_est : array or DataFrame of shape (d, d)
        Estimated weights; the diagonal is ignored.

    Returns
    -------
    RankingScores

    Examples
    --------
    >>> auroc_aupr([[0, 1], [0, 0]], [[0, 0.9], [-0.2, 0]])
    RankingScores(auroc=1.0, aupr=1.0)
    """
    T, W = _pair(B_true, W_est, "B_true", "W_est")
    off = ~np.eye(T.shape[0], dtype=bool)
    y, s = T[off] != 0, np.abs(W[off])
    m, n = int(y.sum()), int((~y).sum())
    if m == 0:
        return RankingScores(float("nan"), float("nan"))
    auroc = (scipy.stats.rankdata(s)[y].sum() - m * (m + 1) / 2) / (m * n)
    order = np.argsort(-s, kind="stable")
    tp = np.cumsum(y[order])
    last = np.r_[np.flatnonzero(np.diff(s[order])), s.size - 1]  # last index of each tie group
    precision, recall = tp[last] / (last + 1), tp[last] / m
    aupr = np.sum(np.diff(recall, prepend=0.0) * precision)
    return RankingScores(float(auroc), float(aupr))


def nmse(W_true: ArrayLike, W_est: ArrayLike) -> float:
    """Normalised squared error ``‖W_est − W_true‖²_F / ‖W_true‖²_F`` over all entries.

    Argument order is (truth, estimate), as for every metric here.

    Parameters
    ----------
    W_true, W_est : array or DataFrame of shape (d, d)
        True and estimated weights; ``W_true`` must have a non-zero entry.

    Returns
    -------
    float >= 0

    Examples
    --------
    >>> nmse([[0, 2.0], [0, 0]], [[0, 1.5], [0, 0]])
    0.0625
    """
    T, E = _pair(W_true, W_est, "W_true", "W_est")
    den = float(np.sum(T * T))
    if den == 0.0:
        raise ValueError("`W_true` is all zero, so the NMSE is undefined")
    return float(np.sum((E - T) ** 2)) / den


@dataclass(frozen=True)
class LagAccuracy:
    """Accuracy of estimated lag (inter-slice) edges; see :func:`lag_accuracy`."""

    shd: int
    tpr: float
    fdr: float
    nnz: int
    true_positive: int
    extra: int
    missing: int
    n_true_edges: int


def lag_accuracy(A_true: ArrayLike, A_est: ArrayLike) -> LagAccuracy:
    """Compare the support of estimated lag weights with the truth (any shape, e.g. (p·d, d)).

    A lag edge ``x_{i, t−l} → x_{j, t}`` has its orientation fixed by time, so there are no
    reversals: ``shd = extra + missing`` (false positives + false negatives), ``tpr = TP / true
    edges``, ``fdr = extra / predicted edges``; zero denominators are floored at 1 (as
    ``count_accuracy``). Self-lags (the diagonal of each ``A_i``) are ordinary entries. Argument
    order is (truth, estimate).
    """
    T = as_float_matrix(A_true, "A_true") != 0
    E = as_float_matrix(A_est, "A_est") != 0
    if T.shape != E.shape:
        raise ValueError(f"`A_true` and `A_est` must have the same shape; got {T.shape} and {E.shape}")
    tp, nnz, n_true = int((T & E).sum()), int(E.sum()), int(T.sum())
    extra, missing = nnz - tp, n_true - tp
    return LagAccuracy(
        shd=extra + missing,
        tpr=tp / max(n_true, 1),
        fdr=extra / max(nnz, 1),
        nnz=nnz,
        true_positive=tp,
        extra=extra,
        missing=missing,
        n_true_edges=n_true,
    )
