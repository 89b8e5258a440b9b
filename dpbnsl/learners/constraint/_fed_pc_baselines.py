"""FedPC's baselines (FedPC §4.1.3), all built on PC run separately on each participant.

- PC-All: PC on the pooled data (not federated; the reference a central curator would get).
- PC-Avg: the metrics of the participants' own PC graphs, averaged (:func:`pc_avg_scores`).
- PC-Best (**oracle**): the participant graph with the lowest SHD against the true graph.
- FedPC-Simple-I: keep a directed edge found in more than 30% of the participants' DAGs.
- FedPC-Simple-II: keep an undirected edge found in more than 30% of the participants' skeletons,
  take the intersection of their separating sets, orient as PC does.

Fit the local PCs once with :func:`pc_local` and pass ``local=`` to share them between baselines.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import ArrayLike, as_participants, check_choice, check_data_scale
from ...blas import one_blas_thread
from ...federation import SERVER, Dense, Message, Transcript
from ...graphs import threshold_to_dag
from ...metrics import count_accuracy, skeleton_scores
from ..result import LearnResult
from ._fed_pc_skeleton import min_votes
from .citests import discrete_levels, make_ci_test
from .pc import CONFLICTS, EXTENSIONS, cpdag_matrix, orient_pdag, pc, pdag_to_dag

__all__ = [
    "LocalPC",
    "pc_local",
    "pc_all",
    "pc_best",
    "pc_avg_scores",
    "fed_pc_simple_i",
    "fed_pc_simple_ii",
    "shared_levels",
]


@dataclass(frozen=True)
class LocalPC:
    """One PC result per participant, each fitted on that participant's data alone."""

    results: tuple
    columns: tuple | None
    seconds: float

    def __len__(self) -> int:
        return len(self.results)


def shared_levels(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Category counts ``max + 1`` over all participants (public metadata in a deployment)."""
    levels = np.max(
        [discrete_levels(X, "participants", where=f" (participant {k})") for k, X in enumerate(arrays)],
        axis=0,
    )
    pooled_min = np.min([X.min(axis=0) for X in arrays], axis=0)
    single = np.flatnonzero(levels - pooled_min <= 1)
    if single.size:
        raise ValueError(
            f"`participants` column {int(single[0])} has a single level in all the "
            f"data; a CI test needs at least 2"
        )
    return levels


def _pc_kwargs(arrays: Sequence[np.ndarray], kwargs: dict) -> dict:
    """Resolve ``test="auto"`` on the pooled data and share the G² levels between participants."""
    kwargs = dict(kwargs)
    if kwargs.get("test") == "auto":
        kwargs["test"] = make_ci_test(np.vstack(arrays), test="auto").name
    if kwargs.get("test") == "g2" and kwargs.get("levels") is None:
        kwargs["levels"] = tuple(int(v) for v in shared_levels(arrays))
    return kwargs


def pc_local(participants: Any, **pc_kwargs: Any) -> LocalPC:
    """Run :func:`dpbnsl.learners.constraint.pc.pc` on each participant's data (same keyword arguments)."""
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    kwargs = _pc_kwargs(arrays, pc_kwargs)
    start = time.perf_counter()
    results = tuple(pc(X, **kwargs) for X in arrays)
    return LocalPC(results, columns, time.perf_counter() - start)


def _fits(participants: Any, local: LocalPC | None, kwargs: dict) -> LocalPC:
    if local is not None and (participants is not None or kwargs):
        given = (["participants"] if participants is not None else []) + sorted(kwargs)
        raise ValueError(
            f"`local` fits were given, so {given} would be ignored: pass either the "
            f"data (and PC arguments) or `local`"
        )
    if local is None:
        if participants is None:
            raise ValueError("pass `participants` (data) or `local` (fits from pc_local)")
        return pc_local(participants, **kwargs)
    if not isinstance(local, LocalPC):
        raise TypeError(f"`local` must be a LocalPC from pc_local; got {type(local).__name__}")
    return local


@one_blas_thread
def pc_all(participants: Any, **pc_kwargs: Any) -> LearnResult:
    """PC-All: PC on all participants' rows pooled (``method="pc-all"``)."""
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    pooled = np.vstack(arrays)
    r = pc(
        pd.DataFrame(pooled, columns=list(columns)) if columns else pooled, **_pc_kwargs(arrays, pc_kwargs)
    )
    return dataclasses.replace(r, method="pc-all")


@one_blas_thread
def pc_best(
    participants: Any = None, *, B_true: ArrayLike, local: LocalPC | None = None, **pc_kwargs: Any
) -> LearnResult:
    """PC-Best (**oracle**): the participant DAG with the lowest SHD against ``B_true`` (ties: the
    lowest index). ``info["oracle"]`` is True; ``info["chosen"]`` the participant."""
    fits = _fits(participants, local, pc_kwargs)
    shd = [count_accuracy(B_true, r.W).shd for r in fits.results]
    k = int(np.argmin(shd))
    best = fits.results[k]
    return dataclasses.replace(
        best,
        method="pc-best",
        columns=fits.columns,
        info={**best.info, "oracle": True, "chosen": k, "shd": tuple(shd)},
    )


def pc_avg_scores(
    participants: Any = None, *, B_true: ArrayLike, local: LocalPC | None = None, **pc_kwargs: Any
) -> pd.DataFrame:
    """PC-Avg: one row of metrics per participant's own PC DAG (``.mean()`` gives PC-Avg).

    Columns: participant, shd, f1, precision, recall, skeleton_f1, nnz.
    """
    fits = _fits(participants, local, pc_kwargs)
    rows = []
    for k, r in enumerate(fits.results):
        acc = count_accuracy(B_true, r.W)
        rows.append(
            dict(
                participant=k,
                shd=acc.shd,
                f1=acc.f1,
                precision=acc.precision,
                recall=acc.recall,
                skeleton_f1=skeleton_scores(B_true, r.W).f1,
                nnz=acc.nnz,
            )
        )
    return pd.DataFrame(rows)


def _result(
    method: str,
    W: np.ndarray,
    W_raw: np.ndarray,
    fits: LocalPC,
    transcript: Transcript,
    params: dict,
    **info: Any,
) -> LearnResult:
    return LearnResult(
        method,
        W,
        W_raw,
        pd.DataFrame(),
        fits.columns,
        transcript=transcript,
        params=params,
        info={"local": fits.results, "seconds": fits.seconds, **info},
    )


@one_blas_thread
def fed_pc_simple_i(
    participants: Any = None,
    *,
    local: LocalPC | None = None,
    ratio: float = 0.3,
    vote_rule: str = "paper",
    **pc_kwargs: Any,
) -> LearnResult:
    """FedPC-Simple-I: keep ``i → j`` when at least :func:`min_votes` participant DAGs have it.

    If both directions pass, the one with more votes stays (ties: ``i → j`` for ``i < j``); then
    the edges with the fewest votes are removed until the graph is acyclic
    (:func:`dpbnsl.graphs.threshold_to_dag`). ``W_raw`` holds the vote shares; every participant
    uploads its DAG (kind ``"local_dag"``).
    """
    fits = _fits(participants, local, pc_kwargs)
    P = len(fits)
    need = min_votes(P, ratio, vote_rule)
    votes = np.sum([r.W != 0 for r in fits.results], axis=0)
    keep = votes >= need
    both = keep & keep.T
    lose = both & ((votes < votes.T) | ((votes == votes.T) & np.tril(np.ones_like(keep), -1)))
    keep &= ~lose
    dag = (threshold_to_dag(np.where(keep, votes / P, 0.0)) != 0).astype(int)
    transcript = Transcript(
        [Message(0, k, SERVER, "local_dag", Dense(r.W)) for k, r in enumerate(fits.results)]
    )
    return _result(
        "fed-pc-simple-i",
        dag,
        votes / P,
        fits,
        transcript,
        dict(ratio=ratio, vote_rule=vote_rule, **pc_kwargs),
        votes=votes,
        min_votes=need,
        removed_for_cycles=int(keep.sum() - dag.sum()),
    )


@one_blas_thread
def fed_pc_simple_ii(
    participants: Any = None,
    *,
    local: LocalPC | None = None,
    ratio: float = 0.3,
    vote_rule: str = "paper",
    conflict: str = "first",
    extension: str = "dor-tarsi",
    **pc_kwargs: Any,
) -> LearnResult:
    """FedPC-Simple-II: one-shot skeleton vote, intersected separating sets, PC orientation.

    An undirected edge stays when at least :func:`min_votes` participant skeletons have it. For a
    non-adjacent pair with a common neighbour, the separating set is the intersection of the sets
    found by the participants whose skeleton lacks the edge (at least one does). V-structures,
    Meek R1–R3 and the DAG extension follow :func:`dpbnsl.learners.constraint.pc.orient_pdag` and
    :func:`~dpbnsl.learners.constraint.pc.pdag_to_dag`. Every participant uploads its skeleton and its
    separating sets (rows ``[i, j, Z mask]``, kind ``"local_sepsets"``).
    """
    check_choice(conflict, "conflict", CONFLICTS)
    check_choice(extension, "extension", EXTENSIONS)
    fits = _fits(participants, local, pc_kwargs)
    P = len(fits)
    need = min_votes(P, ratio, vote_rule)
    skels = np.stack([r.info["skeleton"] != 0 for r in fits.results])
    votes = skels.sum(axis=0)
    S = votes >= need
    d = S.shape[0]
    transcript = Transcript()
    for k, r in enumerate(fits.results):
        transcript.append(Message(0, k, SERVER, "local_skeleton", Dense(skels[k].astype(float))))
        table = np.zeros((len(r.info["sepsets"]), 2 + d))
        for row, ((i, j), Z) in enumerate(sorted(r.info["sepsets"].items())):
            table[row, :2] = i, j
            table[row, 2 + np.array(Z, dtype=int)] = 1.0
        transcript.append(Message(0, k, SERVER, "local_sepsets", Dense(table)))
    sepsets = {}
    for i, j in zip(*np.nonzero(np.triu(~S, 1))):
        if not (S[i] & S[j]).any():
            continue  # no unshielded triple needs this pair's separating set
        sets = [set(r.info["sepsets"][(i, j)]) for r, sk in zip(fits.results, skels) if not sk[i, j]]
        sepsets[(int(i), int(j))] = tuple(sorted(set.intersection(*sets)))
    directed, undirected, vs, conflicts = orient_pdag(S, sepsets, conflict=conflict)
    dag, forced = pdag_to_dag(directed, undirected, method=extension)
    cpdag = cpdag_matrix(directed, undirected)
    return _result(
        "fed-pc-simple-ii",
        dag,
        cpdag,
        fits,
        transcript,
        dict(ratio=ratio, vote_rule=vote_rule, conflict=conflict, extension=extension, **pc_kwargs),
        cpdag=cpdag,
        skeleton=S.astype(int),
        votes=votes,
        min_votes=need,
        sepsets=sepsets,
        v_structures=vs,
        conflicts=conflicts,
        forced=forced,
    )
