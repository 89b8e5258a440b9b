"""FedPC (Huang, Guo, Yu, Cao & Liang 2022): the PC algorithm across participants.

Participants share skeletons and (separating set, p-value) pairs, never data or statistics:

1. **FedSkele** (:mod:`._fed_pc_skeleton`): per layer ℓ each participant runs PC level ℓ on its data
   from the aggregated skeleton; the server keeps an edge iff more than ``ratio`` = 30% of the
   participants kept it, and broadcasts the result; repeat until no edge can be tested at ℓ + 1.
2. **FedOrien** (:mod:`._fed_pc_orient`): for each non-adjacent pair with a common neighbour each
   participant returns its separating set with the highest p-value; the server keeps the highest
   over participants as the consistent separating set, orients the v-structures, applies Meek's
   rules R1–R3 and extends the PDAG to a DAG (:mod:`.pc`).
3. Variables travel as IDs (:mod:`._fed_pc_ids`): every participant numbers its columns in
   alphabetical order of their names.

Baselines (PC-All, PC-Avg, PC-Best, FedPC-Simple-I/II) are in :mod:`._fed_pc_baselines` and
re-exported here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from ..._validation import as_participants, check_bool, check_choice, check_data_scale, check_int
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ..result import LearnResult
from ._fed_pc_baselines import (
    LocalPC,
    fed_pc_simple_i,
    fed_pc_simple_ii,
    pc_all,
    pc_avg_scores,
    pc_best,
    pc_local,
    shared_levels,
)
from ._fed_pc_ids import align_by_name, alphabetical_ids
from ._fed_pc_orient import CANDIDATES, CRITERIA
from ._fed_pc_skeleton import TERMINATIONS, VOTE_RULES, SkeletonServer, min_votes
from .citests import CITest, discrete_levels, make_ci_test
from .hosted_fed_pc import FedPCParticipant, FedPCServer
from .pc import check_pc_options

__all__ = [
    "fed_pc",
    "min_votes",
    "alphabetical_ids",
    "LocalPC",
    "pc_local",
    "pc_all",
    "pc_avg_scores",
    "pc_best",
    "fed_pc_simple_i",
    "fed_pc_simple_ii",
]


def _ci_tests(
    arrays: Sequence[np.ndarray],
    *,
    test: str,
    levels: str | Sequence[int] | np.ndarray,
    min_samples_per_cell: float,
    dof: str,
) -> tuple[list[CITest], str]:
    """One CI test per participant; G² levels from all participants (``"global"``), from each
    participant's own data floored at 2 (``"local"``, reference code), or given."""
    if test == "auto":
        test = make_ci_test(np.vstack(arrays), test="auto").name
    per: list[Any] = [None] * len(arrays)
    if test == "g2":
        if isinstance(levels, str) and check_choice(levels, "levels", ("global", "local")):
            if levels == "global":
                per = [shared_levels(arrays)] * len(arrays)
            else:
                per = [
                    np.maximum(discrete_levels(X, "participants", where=f" (participant {k})"), 2)
                    for k, X in enumerate(arrays)
                ]
        else:
            per = [levels] * len(arrays)
    return [
        make_ci_test(
            X,
            test=test,
            levels=per[k],
            min_samples_per_cell=min_samples_per_cell,
            dof=dof,
            name=f"participants[{k}]",
        )
        for k, X in enumerate(arrays)
    ], test


@one_blas_thread
def fed_pc(
    participants: Any,
    *,
    alpha: float = 0.01,
    test: str = "fisher-z",
    ratio: float = 0.3,
    vote_rule: str = "paper",
    variant: str = "original",
    max_cond_size: int | None = None,
    termination: str = "neighbours",
    sepset_candidates: str = "union",
    max_sepset_size: int | None = 3,
    sepset_criterion: str = "max-p",
    no_sepset: str = "orient",
    conflict: str = "first",
    extension: str = "dor-tarsi",
    levels: str | Sequence[int] | np.ndarray = "global",
    min_samples_per_cell: float = 5.0,
    dof: str = "adjusted",
    id_mapping: bool = True,
) -> LearnResult:
    """Learn a CPDAG (and one DAG of its class) from data split across participants with FedPC.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        One data set per participant (integer category codes for ``test="g2"``).
    alpha : float in (0, 1), default 0.01
        Significance level of every CI test (independent iff ``p > alpha``).
    test : {"fisher-z", "g2", "auto"}, default "fisher-z"
        CI test (:mod:`dpbnsl.learners.constraint.citests`); ``"auto"`` decides on the pooled values.
    ratio : float in (0, 1), default 0.3
        Voting ratio τ of FedSkele.
    vote_rule : {"paper", "code"}, default "paper"
        Keep an edge with ``c > τN`` votes (paper) or ``c ≥ round(τN)`` (reference code); see
        :func:`min_votes`.
    variant : {"original", "stable"}, default "original"
        Participants' PC level on the live graph (reference code) or on the layer's input graph.
    max_cond_size : int >= 0, optional
        Last FedSkele layer (default: none; the reference code stops after layer 3).
    termination : {"neighbours", "client-degree"}, default "neighbours"
        When FedSkele stops (see :mod:`._fed_pc_skeleton`).
    sepset_candidates : {"union", "endpoints"}, default "union"
        FedOrien's candidate separating sets (see :mod:`._fed_pc_orient`).
    max_sepset_size : int >= 0 or None, default 3
        Largest separating set FedOrien tries (reference code: 3; None: no limit).
    sepset_criterion : {"max-p", "min-r"}, default "max-p"
        Highest p-value (paper) or smallest |partial correlation| (reference code, Fisher-z only).
    no_sepset : {"orient", "skip"}, default "orient"
        A pair for which no participant finds a separating set: its triples become colliders
        (reference code, Z = ∅) or stay unoriented.
    conflict : {"first", "last"}, default "first"
        Conflicting v-structures: the earlier collider wins (causal-learn's rule), or the last one
        overwrites (reference code); see :func:`dpbnsl.learners.constraint.pc.orient_pdag`.
    extension : {"dor-tarsi", "max-parents"}, default "dor-tarsi"
        PDAG → DAG (:func:`dpbnsl.learners.constraint.pc.pdag_to_dag`).
    levels : {"global", "local"} or sequence of d ints, default "global"
        G² category counts: from all participants (public metadata), each participant's own
        ``max + 1`` (reference code), or given.
    min_samples_per_cell, dof
        G² options (:class:`dpbnsl.learners.constraint.citests.GSquare`).
    id_mapping : bool, default True
        Participants send variable IDs in alphabetical order of their column names (DataFrames
        may then list their columns in different orders). The result is in participant 0's
        column order; the transcript is in ID order.

    Returns
    -------
    LearnResult
        ``W``: 0/1 DAG; ``W_raw`` and ``info["cpdag"]``: the CPDAG; ``history``: one row per
        FedSkele layer then one for FedOrien; ``transcript``: the setup exchange (round −1), every
        local and aggregated skeleton, and the (set, value) answers (the queries are derived
        from the last skeleton on both sides, so they do not travel); ``info``: ``skeleton``, ``sepsets``,
        ``chosen`` (pair → (participant, value)), ``v_structures``, ``conflicts``, ``forced``,
        ``min_votes``, ``layers``, ``ci_tests`` per participant, ``ids`` (name → ID, held by the
        participants).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(6, 3000, participants=3, rng=0)
    >>> r = fed_pc(data.participants)
    >>> r.is_dag, r.info["min_votes"], r.transcript.n_participants
    (True, 1, 3)
    """
    opts = check_pc_options(
        alpha=alpha,
        variant=variant,
        max_cond_size=max_cond_size,
        conflict=conflict,
        extension=extension,
        no_sepset=no_sepset,
    )
    check_choice(vote_rule, "vote_rule", VOTE_RULES)
    check_choice(termination, "termination", TERMINATIONS)
    check_choice(sepset_candidates, "sepset_candidates", CANDIDATES)
    check_choice(sepset_criterion, "sepset_criterion", CRITERIA)
    if max_sepset_size is not None:
        max_sepset_size = check_int(max_sepset_size, "max_sepset_size", low=0)
    id_mapping = check_bool(id_mapping, "id_mapping")
    order = None
    if id_mapping and isinstance(participants, (list, tuple)) and participants:
        aligned, order = align_by_name(participants)
        first_cols = [str(c) for c in participants[0].columns] if order is not None else None
        participants = aligned
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    P, d = len(arrays), arrays[0].shape[1]
    need = min_votes(P, ratio, vote_rule)
    # every CI-test setting is validated here, before any work (the participants build their own)
    _, test_name = _ci_tests(
        arrays, test=test, levels=levels, min_samples_per_cell=min_samples_per_cell, dof=dof
    )
    if sepset_criterion == "min-r" and test_name != "fisher-z":
        raise ValueError(f"`sepset_criterion` = 'min-r' needs test 'fisher-z'; got {test_name!r}")
    if test_name == "g2" and levels == "global":
        shared_levels(arrays)  # the same check the server makes, before any work
    t_start = time.perf_counter()
    settings = dict(
        alpha=alpha,
        test=test_name,
        ratio=ratio,
        vote_rule=vote_rule,
        variant=variant,
        max_cond_size=max_cond_size,
        termination=termination,
        sepset_candidates=sepset_candidates,
        max_sepset_size=max_sepset_size,
        sepset_criterion=sepset_criterion,
        no_sepset=no_sepset,
        conflict=conflict,
        extension=extension,
        levels=levels,
        min_samples_per_cell=min_samples_per_cell,
        dof=dof,
        id_mapping=False,  # aligned above (the ID order maps back to participant 0's order below)
    )
    clients = [FedPCParticipant(X, settings=settings, participant=k) for k, X in enumerate(arrays)]
    server = FedPCServer(settings=settings, n_participants=P)
    transcript = run_protocol(server, clients)["rounds"]
    core = cast(SkeletonServer, server.core)
    S, layers = core.S, len(core.rows)
    rows = [
        dict(
            round=t,
            phase="skeleton",
            **r,
            ci_tests=sum(c.tests[t] for c in clients),
            seconds=sum(c.seconds[t] for c in clients) + r["server_seconds"],
        )
        for t, r in enumerate(core.rows)
    ]
    t0 = time.perf_counter()
    out = server.orient()
    dag, directed_cpdag = out["dag"], out["cpdag"]
    vs, conflicts, forced = out["v_structures"], out["conflicts"], out["forced"]
    sepsets, chosen = server.sepsets, server.chosen
    rows.append(
        dict(
            round=layers,
            phase="orient",
            level=np.nan,
            edges=int(S.sum() // 2),
            local_edges_mean=np.nan,
            ci_tests=sum(c.tests[layers] for c in clients),
            queries=server.queries,
            seconds=sum(c.seconds[layers] for c in clients) + time.perf_counter() - t0,
        )
    )
    history = pd.DataFrame(rows).drop(columns=["server_seconds"], errors="ignore")
    cpdag = directed_cpdag
    skeleton = S.astype(int)
    if order is not None:  # back from ID order to participant 0's column order
        back = np.empty(d, dtype=int)
        back[order] = np.arange(d)
        dag, cpdag, skeleton = (M[np.ix_(back, back)] for M in (dag, cpdag, skeleton))
        relabel = lambda Z: tuple(sorted(order[z] for z in Z))
        sepsets = {
            tuple(sorted((order[i], order[j]))): None if Z is None else relabel(Z)
            for (i, j), Z in sepsets.items()
        }
        chosen = {tuple(sorted((order[i], order[j]))): v for (i, j), v in chosen.items()}
        vs = [(order[i], order[k], order[j]) for i, k, j in vs]
        assert first_cols is not None  # set together with order
        columns = tuple(first_cols)
    params = dict(
        opts,
        test=test_name,
        ratio=ratio,
        vote_rule=vote_rule,
        termination=termination,
        sepset_candidates=sepset_candidates,
        max_sepset_size=max_sepset_size,
        sepset_criterion=sepset_criterion,
        levels=levels if isinstance(levels, str) else tuple(int(v) for v in levels),
        min_samples_per_cell=min_samples_per_cell,
        dof=dof,
        id_mapping=id_mapping,
    )
    info = dict(
        cpdag=cpdag,
        skeleton=skeleton,
        sepsets=sepsets,
        chosen=chosen,
        v_structures=vs,
        conflicts=conflicts,
        forced=forced,
        min_votes=need,
        layers=layers,
        ci_tests=tuple(cast(CITest, c.ci).n_computed for c in clients),
        # with order, columns is participant 0's names (set above)
        ids=alphabetical_ids(cast("tuple[str, ...]", columns)) if order is not None else None,
        seconds=time.perf_counter() - t_start,
    )
    return LearnResult(
        "fed-pc", dag, cpdag, history, columns, transcript=transcript, params=params, info=info
    )
