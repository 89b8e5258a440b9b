"""FedOrien (FedPC §3.2.2): consistent separating sets across participants.

1. Server: for every non-adjacent pair ``{i, j}`` (i < j) of the final skeleton ``S*`` with a common
   neighbour, the candidate set ``C = (ne(i) ∪ ne(j)) \\ {i, j}`` (``candidates="union"``, reference
   code) or the two endpoint sets ``ne(i) \\ {j}`` and ``ne(j) \\ {i}`` searched separately
   (``"endpoints"``, the paper's ``ne(S*, X_i)`` for both orderings of the triple). One query per
   pair (the set does not depend on the middle node). The queries are a public function of the
   last skeleton broadcast, so each participant derives them itself (:func:`orientation_queries`)
   and they need not travel; :func:`queries_payload` is their table ``[i, j, candidate mask]``.
2. Participant: among ``Z ⊆ C`` with ``|Z| ≤ max_size`` and ``p > α`` on its data, the largest
   p-value (``criterion="max-p"``) or the smallest |partial correlation| (``"min-r"``, reference
   code for continuous data); ties go to the first visited (by size, then lexicographic). It uploads
   ``[i, j, value, Z mask]`` per query, value ``nan`` when no Z qualifies (kind ``"sepset_pvalues"``
   or ``"sepset_abs_r"``).
3. Server: the best value over participants; ties go to the smallest ``(|Z|, Z, participant)``,
   which reproduces the reference code's first-found rule exactly.
"""

from __future__ import annotations

import numpy as np

from ...federation import Dense
from .citests import CITest
from .pc import best_separating_set

__all__ = [
    "orientation_queries",
    "queries_payload",
    "participant_answers",
    "answers_payload",
    "select_sepsets",
    "CANDIDATES",
    "CRITERIA",
]

CANDIDATES = ("union", "endpoints")
CRITERIA = ("max-p", "min-r")


def orientation_queries(S: np.ndarray, *, candidates: str = "union") -> list:
    """``[(i, j, C_1, C_2, ...)]``: non-adjacent pairs with a common neighbour and their candidate
    sets (one set for ``"union"``, two for ``"endpoints"``)."""
    d = S.shape[0]
    out = []
    for i in range(d):
        for j in range(i + 1, d):
            if S[i, j] or not (S[i] & S[j]).any():
                continue
            ni = tuple(int(k) for k in np.flatnonzero(S[i]) if k != j)
            nj = tuple(int(k) for k in np.flatnonzero(S[j]) if k != i)
            sets = (tuple(sorted(set(ni) | set(nj))),) if candidates == "union" else (ni, nj)
            out.append((i, j, *sets))
    return out


def queries_payload(queries: list, d: int) -> Dense:
    """Rows ``[i, j, mask of the union of the candidate sets]``."""
    table = np.zeros((len(queries), 2 + d))
    for r, (i, j, *sets) in enumerate(queries):
        table[r, :2] = i, j
        for C in sets:
            table[r, 2 + np.array(C, dtype=int)] = 1.0
    return Dense(table)


def participant_answers(
    ci: CITest, queries: list, *, alpha: float, max_size: int | None, criterion: str
) -> list:
    """The participant's best ``(Z, value)`` (or None) for each query."""
    out = []
    for i, j, *sets in queries:
        best = None
        for C in sets:  # "endpoints": the first set wins ties, as it is searched first
            cand = best_separating_set(ci, i, j, C, alpha=alpha, max_size=max_size, criterion=criterion)
            if cand is not None and (best is None or _better(cand[1], best[1], criterion)):
                best = cand
        out.append(best)
    return out


def _better(a: float, b: float, criterion: str) -> bool:
    return a > b if criterion == "max-p" else a < b


def answers_payload(queries: list, answers: list, d: int) -> Dense:
    """Rows ``[i, j, value (nan if none), mask of Z]``."""
    table = np.zeros((len(queries), 3 + d))
    for r, ((i, j, *_), ans) in enumerate(zip(queries, answers)):
        table[r, :3] = i, j, np.nan
        if ans is not None:
            table[r, 2] = ans[1]
            table[r, 3 + np.array(ans[0], dtype=int)] = 1.0
    return Dense(table)


def select_sepsets(queries: list, uploads: list, criterion: str) -> tuple[dict, dict]:
    """Server: the consistent separating set per pair from the participants' upload tables.

    Returns ``sepsets`` (``(i, j) → Z`` or None when no participant found one) and ``chosen``
    (``(i, j) → (participant, value)`` for the pairs that have one).
    """
    sepsets, chosen = {}, {}
    for r, (i, j, *_) in enumerate(queries):
        best_key, best = None, None
        for k, table in enumerate(uploads):
            value = table[r, 2]
            if np.isnan(value):
                continue
            Z = tuple(int(z) for z in np.flatnonzero(table[r, 3:]))
            key = (-value if criterion == "max-p" else value, len(Z), Z, k)
            if best_key is None or key < best_key:
                best_key, best = key, (Z, k, float(value))
        sepsets[(i, j)] = None if best is None else best[0]
        if best is not None:
            chosen[(i, j)] = (best[1], best[2])
    return sepsets, chosen
