"""FedSkele (FedPC §3.2.1): layer-wise skeleton learning with voting at the server.

Round ℓ (= layer ℓ, 0-based):

1. participant n starts from the aggregated skeleton ``S^{ℓ−1}`` (the complete graph in round 0)
   and deletes ``i − j`` when some ``Z ⊆ adj(i) \\ {j}`` with ``|Z| = ℓ`` gives ``p > α`` on its
   data (one PC level, :func:`dpbnsl.learners.constraint.pc.skeleton_level`); it uploads ``S_n^ℓ``, a dense
   d×d 0/1 symmetric matrix (kind ``"local_skeleton"``);
2. the server counts the votes ``c_ij = Σ_n S_n^ℓ[i, j]``, keeps ``i − j`` iff ``c_ij ≥ min_votes``
   (:func:`min_votes`) and broadcasts ``S^ℓ`` (kind ``"global_skeleton"``);
3. it stops after layer ℓ when no edge ``i − j`` of ``S^ℓ`` has ``|ne(i) \\ {j}| ≥ ℓ + 1``
   (``termination="neighbours"``, the standard PC rule) or, with ``"client-degree"`` (the paper's
   Phase 4 wording), when ℓ is not smaller than the largest degree in the participants' ``S_n^ℓ``;
   and always after layer ``max_cond_size``.

No separating set is kept: FedOrien recomputes them.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from ..._validation import check_choice, check_int, check_real
from ...federation import Dense, Payload, ServerReply
from .citests import CITest
from .pc import needs_level, skeleton_level

__all__ = ["min_votes", "SkeletonParticipant", "SkeletonServer", "VOTE_RULES", "TERMINATIONS"]

VOTE_RULES = ("paper", "code")
TERMINATIONS = ("neighbours", "client-degree")


def min_votes(n_participants: int, ratio: float = 0.3, rule: str = "paper") -> int:
    """Votes an edge needs to stay in the aggregated skeleton.

    ``rule="paper"``: strictly more than ``ratio · N`` (FedPC §3.2.1: "more than 30% of clients").
    ``rule="code"``: at least ``round(ratio · N)`` rounded half away from zero (the reference
    MATLAB code), but never fewer than 1. ``ratio · N`` is computed exactly in decimal (the ratio's
    shortest repr), so ``0.3 · 10`` is exactly 3. With ratio 0.3 the rules differ only when
    ``0.3 N`` is a whole number (N = 10: 4 vs 3 votes).

    Examples
    --------
    >>> [min_votes(n) for n in (3, 5, 10, 15)], [min_votes(n, rule="code") for n in (3, 5, 10, 15)]
    ([1, 2, 4, 5], [1, 2, 3, 5])
    """
    n = check_int(n_participants, "n_participants", low=1)
    r = Fraction(repr(check_real(ratio, "ratio", low=0.0, high=1.0, low_open=True, high_open=True)))
    check_choice(rule, "vote_rule", VOTE_RULES)
    x = r * n
    if rule == "paper":
        return int(x // 1) + 1
    return max(1, int((x + Fraction(1, 2)) // 1))


class SkeletonParticipant:
    """Participant n's FedSkele step: one PC level on its data from the aggregated skeleton."""

    def __init__(self, ci: CITest, *, alpha: float, variant: str) -> None:
        self.ci, self.alpha, self.variant = ci, alpha, variant
        self.tests: list[int] = []
        self.seconds: list[float] = []

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        t0, before = time.perf_counter(), self.ci.n_computed
        d = self.ci.d
        S = ~np.eye(d, dtype=bool) if inbox is None else inbox.to_dense() != 0
        skeleton_level(self.ci, S, t, alpha=self.alpha, variant=self.variant)
        self.tests.append(self.ci.n_computed - before)
        self.seconds.append(time.perf_counter() - t0)
        return "local_skeleton", Dense(S.astype(float))


class SkeletonServer:
    """FedSkele's server: vote, broadcast, decide whether another layer is needed."""

    def __init__(self, d: int, *, need: int, max_cond_size: int | None, termination: str) -> None:
        self.need, self.max_cond_size, self.termination = need, max_cond_size, termination
        self.S = ~np.eye(d, dtype=bool)
        self.votes = np.zeros((d, d), dtype=int)
        self.rows: list[dict] = []

    def __call__(self, t: int, uploads: list[Payload]) -> ServerReply:
        t0 = time.perf_counter()
        local = np.stack([u.to_dense() != 0 for u in uploads])
        self.votes = local.sum(axis=0)
        self.S = (self.votes >= self.need) & self.S  # participants only delete, so S^ℓ ⊆ S^{ℓ−1}
        nxt = t + 1
        if self.termination == "neighbours":
            stop = not needs_level(self.S, nxt, self.max_cond_size)
        else:
            max_deg = int(local.sum(axis=2).max()) if local.size else 0
            stop = not t < max_deg or (self.max_cond_size is not None and nxt > self.max_cond_size)
        self.rows.append(
            dict(
                level=t,
                edges=int(self.S.sum() // 2),
                local_edges_mean=float(local.sum(axis=(1, 2)).mean() / 2),
                server_seconds=time.perf_counter() - t0,
            )
        )
        return ServerReply(Dense(self.S.astype(float)), "global_skeleton", stop=stop)
