"""FedPC as a hosted protocol: the participant and server objects that :func:`fed_pc` drives in
process and ``dpbnsl.flower`` runs on separate machines (see :mod:`dpbnsl.federation.protocol`).

Exchanges:

- the setup: each participant sends ``[n_k, d, t_k, levels, minima]``, where t_k is the CI test
  its data call for (0: Fisher-z, 1: G²) and, for G² with ``levels="global"``, its per-column
  category counts and minima; the server checks that the participants agree on the test, and sends
  back the row counts followed by the shared category counts (the maximum over participants;
  zeros when unused). Category counts are public metadata of a discrete study.
- FedSkele's layers (local skeleton up, aggregated skeleton down, dense d × d);
- FedOrien: each participant derives the queries (the non-adjacent pairs with a common neighbour
  and their candidate sets) from the last skeleton it received — public post-processing, so the
  queries need not travel — and uploads its best separating sets; the server derives the same
  queries, keeps the consistent separating sets and orients.

A participant holding a DataFrame numbers its columns by the alphabetical order of their names
(with ``id_mapping``), so the server only ever sees IDs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, check_bool, check_choice, check_data_scale, check_int, check_real
from ...federation import Dense, Payload
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    read_n_vector,
)
from ._fed_pc_ids import align_by_name
from ._fed_pc_orient import CANDIDATES, CRITERIA, answers_payload, orientation_queries, participant_answers
from ._fed_pc_orient import select_sepsets as choose_sepsets
from ._fed_pc_skeleton import TERMINATIONS, VOTE_RULES, SkeletonParticipant, SkeletonServer, min_votes
from .citests import CITest, discrete_levels, make_ci_test
from .pc import check_pc_options, cpdag_matrix, orient_pdag, pdag_to_dag

__all__ = ["fed_pc_settings", "FedPCParticipant", "FedPCServer", "TESTS"]

#: The CI tests by the code they travel as in the setup.
TESTS = ("fisher-z", "g2")
DEFAULTS: dict[str, Any] = dict(
    alpha=0.01,
    test="fisher-z",
    ratio=0.3,
    vote_rule="paper",
    variant="original",
    max_cond_size=None,
    termination="neighbours",
    sepset_candidates="union",
    max_sepset_size=3,
    sepset_criterion="max-p",
    no_sepset="orient",
    conflict="first",
    extension="dor-tarsi",
    levels="global",
    min_samples_per_cell=5.0,
    dof="adjusted",
    id_mapping=True,
)


def fed_pc_settings(**settings: Any) -> dict[str, Any]:
    """FedPC's public settings (the keywords of :func:`fed_pc`), validated, defaults filled."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown FedPC setting(s) {unknown}; known: {sorted(DEFAULTS)}")
    m = {**DEFAULTS, **settings}
    out: dict[str, Any] = dict(
        check_pc_options(
            alpha=m["alpha"],
            variant=m["variant"],
            max_cond_size=m["max_cond_size"],
            conflict=m["conflict"],
            extension=m["extension"],
            no_sepset=m["no_sepset"],
        )
    )
    out.update(
        test=check_choice(m["test"], "test", (*TESTS, "auto")),
        ratio=check_real(m["ratio"], "ratio", low=0.0, high=1.0, low_open=True, high_open=True),
        vote_rule=check_choice(m["vote_rule"], "vote_rule", VOTE_RULES),
        termination=check_choice(m["termination"], "termination", TERMINATIONS),
        sepset_candidates=check_choice(m["sepset_candidates"], "sepset_candidates", CANDIDATES),
        max_sepset_size=None
        if m["max_sepset_size"] is None
        else check_int(m["max_sepset_size"], "max_sepset_size", low=0),
        sepset_criterion=check_choice(m["sepset_criterion"], "sepset_criterion", CRITERIA),
        min_samples_per_cell=m["min_samples_per_cell"],
        dof=m["dof"],
        id_mapping=check_bool(m["id_mapping"], "id_mapping"),
    )
    levels = m["levels"]
    out["levels"] = (
        check_choice(levels, "levels", ("global", "local"))
        if isinstance(levels, str)
        else [int(v) for v in np.asarray(levels).ravel()]
    )
    return out


class FedPCParticipant(HostedParticipant):
    """Participant ``participant`` of FedPC, holding its data (an array, or a DataFrame whose
    columns it numbers alphabetically)."""

    def __init__(
        self, X: Any, *, settings: Mapping[str, Any], participant: int, columns: tuple[str, ...] | None = None
    ) -> None:
        self.params = fed_pc_settings(**settings)
        self.k = check_int(participant, "participant", low=0)
        if self.params["id_mapping"] and isinstance(X, pd.DataFrame):
            X = align_by_name([X], f"participant {self.k}'s data")[0][0]  # its own IDs
        self.X = check_data_scale(as_float_matrix(X, "X"), "X")
        self.test = self.params["test"]
        if self.test == "auto":  # what this participant's data call for; the server checks agreement
            self.test = make_ci_test(self.X, test="auto").name
        self.levels: Any = None  # the G² category counts in use (None: Fisher-z, or local levels)
        self.ci: CITest | None = None
        # diagnostics of this process (not saved): CI tests computed and seconds, per request
        self.tests: list[int] = []
        self.seconds: list[float] = []

    def _setup_upload(self) -> tuple[str, Payload]:
        n, d = self.X.shape
        extra = np.zeros(2 * d)
        if self.test == "g2" and self.params["levels"] == "global":
            extra = np.concatenate([discrete_levels(self.X, "X"), self.X.min(axis=0)])
        head = np.array([n, d, TESTS.index(self.test)], dtype=float)
        return "data_shape", Dense(np.concatenate([head, extra]))

    def _ci(self) -> CITest:
        levels = self.params["levels"]
        if self.test == "g2" and levels == "local":
            per: Any = np.maximum(discrete_levels(self.X, "X", where=f" (participant {self.k})"), 2)
        elif self.test == "g2" and levels == "global":
            per = np.asarray(self.levels, dtype=int)
        else:
            per = None if isinstance(levels, str) else levels
        return make_ci_test(
            self.X,
            test=self.test,
            levels=per,
            min_samples_per_cell=self.params["min_samples_per_cell"],
            dof=self.params["dof"],
            name=f"participants[{self.k}]",
        )

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        if t == SETUP_ROUND:
            return self._setup_upload()
        start = time.perf_counter()
        before = 0 if self.ci is None else self.ci.n_computed
        out = self._respond(phase, t, inbox)
        self.tests.append(cast(CITest, self.ci).n_computed - before)
        self.seconds.append(time.perf_counter() - start)
        return out

    def _respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        p = self.params
        if self.ci is None:  # the first round: the inbox holds the row counts, then the category counts
            if t != 0 or inbox is None:
                raise ProtocolError(f"participant {self.k}: a round was requested before the setup exchange")
            v, d = inbox.to_dense().ravel(), self.X.shape[1]
            read_n_vector(Dense(v[: v.size - d]), self.k)
            self.levels = [int(x) for x in v[v.size - d :]]
            self.ci, inbox = self._ci(), None
        if phase == "orient":  # the last skeleton: derive the queries, answer them
            if inbox is None:
                raise ProtocolError(f"participant {self.k}: orientation without a skeleton")
            S = inbox.to_dense() != 0
            queries = orientation_queries(S, candidates=p["sepset_candidates"])
            answers = participant_answers(
                self.ci,
                queries,
                alpha=p["alpha"],
                max_size=p["max_sepset_size"],
                criterion=p["sepset_criterion"],
            )
            kind = "sepset_pvalues" if p["sepset_criterion"] == "max-p" else "sepset_abs_r"
            return kind, answers_payload(queries, answers, S.shape[0])
        return SkeletonParticipant(self.ci, alpha=p["alpha"], variant=p["variant"])(t, inbox)

    def state_dict(self) -> dict[str, StateValue]:
        return {} if self.levels is None else {"levels": np.array(self.levels, dtype=float)}

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        if "levels" in state:
            self.levels = [int(x) for x in np.asarray(state["levels"])]
            self.ci = self._ci()


class FedPCServer(HostedServer):
    """FedPC's server: the setup's agreement on the test and the shared category counts, FedSkele's
    votes, and FedOrien's consistent separating sets and orientation."""

    def __init__(self, *, settings: Mapping[str, Any], n_participants: int) -> None:
        self.params = fed_pc_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        self.need = min_votes(self.n_participants, self.params["ratio"], self.params["vote_rule"])
        self.core: SkeletonServer | None = None
        self.sepsets: dict = {}
        self.chosen: dict = {}
        self.result: dict[str, Any] = {}

    def _setup(self, ordered: list[Payload]) -> Reply:
        rows = [u.to_dense().ravel() for u in ordered]
        ds = {int(r[1]) for r in rows}
        if len(ds) != 1:
            detail = ", ".join(f"participant {k}: {int(r[1])}" for k, r in enumerate(rows))
            raise ProtocolError(f"the participants' data have different numbers of columns ({detail})")
        d = ds.pop()
        if any(r.size != 3 + 2 * d for r in rows):
            raise ProtocolError("a participant sent a malformed FedPC setup upload")
        tests = [TESTS[int(r[2])] for r in rows]
        if len(set(tests)) != 1:
            raise ProtocolError(
                f"the participants' data call for different CI tests {tests}: set `test` explicitly"
            )
        self.test = tests[0]
        levels = np.zeros(d)
        if self.test == "g2" and self.params["levels"] == "global":
            levels = np.max([r[3 : 3 + d] for r in rows], axis=0)
            low = np.min([r[3 + d :] for r in rows], axis=0)
            single = np.flatnonzero(levels - low <= 1)
            if single.size:
                raise ProtocolError(
                    f"column {int(single[0])} has a single level in all the data; a CI test needs at least 2"
                )
        n = [int(r[0]) for r in rows]
        self.core = SkeletonServer(
            d,
            need=self.need,
            max_cond_size=self.params["max_cond_size"],
            termination=self.params["termination"],
        )
        return Reply(
            "n_samples_levels", Dense(np.concatenate([np.array(n, dtype=float), levels])), ("rounds", 0)
        )

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t == SETUP_ROUND:
            return self._setup(ordered)
        if self.core is None:
            raise ProtocolError(f"{phase} round {t} before the setup exchange")
        p = self.params
        if phase == "orient":
            S = self.core.S
            queries = orientation_queries(S, candidates=p["sepset_candidates"])
            self.sepsets, self.chosen = choose_sepsets(
                queries, [u.to_dense() for u in ordered], p["sepset_criterion"]
            )
            self.queries = len(queries)
            return Reply("done", None, None)  # the server orients alone: nothing to send
        r = self.core(t, ordered)
        d = self.core.S.shape[0]
        done = r.stop or t + 1 >= max(d, 1)
        return Reply(r.kind, r.payload, ("orient", t + 1) if done else ("rounds", t + 1))  # type: ignore[arg-type]

    def transcript_of(self, phase: str) -> str:
        return "rounds"  # FedSkele and FedOrien are one transcript (FedOrien's round follows the layers)

    def orient(self) -> dict[str, Any]:
        """The oriented result: DAG, CPDAG, v-structures, conflicts and forced edges."""
        if self.core is None:
            raise ProtocolError("the server has not run a learning round")
        p, S = self.params, self.core.S
        directed, undirected, vs, conflicts = orient_pdag(
            S, self.sepsets, conflict=p["conflict"], no_sepset=p["no_sepset"]
        )
        dag, forced = pdag_to_dag(directed, undirected, method=p["extension"])
        return dict(
            dag=dag,
            cpdag=cpdag_matrix(directed, undirected),
            v_structures=vs,
            conflicts=conflicts,
            forced=forced,
        )

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        out = self.orient()
        return out["dag"], out["cpdag"], pd.DataFrame(self.core.rows if self.core else [])
