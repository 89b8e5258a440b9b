"""DP-FedPC: FedPC's layer-wise skeleton voting over participants who test privately (Priv-PC's
sieve and examine on their own rows, each with its own budget: local DP).

Layer ℓ: every participant starts from the aggregated skeleton and runs PC level ℓ with
:class:`~dpbnsl.learners.constraint.priv_pc.PrivateTests` on its rows; it uploads its local skeleton
(0/1, post-processing of its private decisions). The server keeps an edge iff more than ``ratio`` of
the participants kept it (FedPC's vote, :func:`~dpbnsl.learners.constraint.fed_pc.min_votes`), and
stops as PC does. Orientation needs separating sets, which FedPC re-tests; here each participant
uploads the separating sets its private tests found (post-processing again), and the server takes,
for every non-adjacent pair, the set most participants reported (ties: the first in sorted order),
then orients as PC does. A participant whose reserved rounds are spent keeps every edge from then on.

Every participant's guarantee is that of :func:`~dpbnsl.learners.constraint.priv_pc.priv_pc` on its
own rows (its ledger reserves its rounds up front); the server sees 0/1 skeletons and separating
sets only.

With ``aggregation="secure"`` the protocol is another: PC-stable on the pooled rows, every test one
jointly noised Kendall statistic summed by secure aggregation (about √P less noise than a
participant's own, and no vote), :mod:`~dpbnsl.learners.constraint.secure_fed_pc`. The sparse
vector technique does not carry over: its comparisons against the noisy threshold would have to be
computed inside the secure computation, which a secure *sum* cannot do; every secure test is paid
for as one Skellam release (:mod:`~dpbnsl.learners.constraint.secure_kendall`).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..._validation import (
    as_generator,
    as_participants,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
)
from ...accounting import summarize_privacy
from ...accounting.compose import Accountant
from ...blas import one_blas_thread
from ...federation import SERVER, Dense, Message, Payload, Transcript
from ...federation.protocol import run_protocol
from ..result import LearnResult
from ._fed_pc_skeleton import VOTE_RULES, SkeletonServer, min_votes
from .citests import check_alpha
from .pc import check_pc_options, orient_skeleton
from .priv_pc import PrivateTests, check_data, default_rounds, plan_priv_pc, reserve_rounds
from .secure_fed_pc import SecurePCParticipant, SecurePCServer, secure_pc_settings

__all__ = ["dp_fed_pc", "majority_sepsets"]


def majority_sepsets(reports: list[dict]) -> dict:
    """For every pair some participant separated, the separating set most of them reported (ties:
    the smallest in sorted order)."""
    pairs: dict[tuple[int, int], Counter] = {}
    for rep in reports:
        for pair, Z in rep.items():
            pairs.setdefault(pair, Counter())[tuple(Z)] += 1
    return {pair: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for pair, c in pairs.items()}


@one_blas_thread
def dp_fed_pc(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    alpha: float = 0.2,
    data: str = "discrete",
    levels: Any = None,
    bounds: Any = None,
    bins: int = 4,
    max_examinations: int | None = None,
    ratio: float = 0.3,
    vote_rule: str = "paper",
    max_cond_size: int | None = None,
    variant: str = "stable",
    conflict: str = "first",
    extension: str = "dor-tarsi",
    accountant: Accountant = "rdp",
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    modulus_bits: int = 31,
    max_sets: int | None = 2,
    rng: np.random.Generator | int | None = None,
) -> LearnResult:
    """FedPC with every participant's tests private (module docstring).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        The same columns in the same order (category codes for discrete data).
    epsilon, delta
        Every record's guarantee within its participant's dataset (replace-one).
    alpha, data, levels, bounds, bins, max_examinations, max_cond_size, variant, accountant
        As in :func:`~dpbnsl.learners.constraint.priv_pc.priv_pc`, per participant (the rounds
        reserved default to 3 per pair of variables for each).
    ratio, vote_rule
        FedPC's vote (:func:`~dpbnsl.learners.constraint.fed_pc.min_votes`).
    conflict, extension
        As in :func:`~dpbnsl.learners.constraint.pc.pc`.
    aggregation : {"local", "secure"}, default "local"
        "local": the vote above, every participant private on its own. "secure": PC on the pooled
        rows with jointly noised tests over secure aggregation (module docstring); there
        ``max_examinations`` is the number of tests reserved (default 3 per pair of variables,
        :func:`~dpbnsl.learners.constraint.secure_kendall.default_tests`),
        ``accountant`` must be "rdp", ``ratio`` and ``vote_rule`` do not apply and ``variant`` must
        be "stable".
    dropouts, modulus_bits
        Secure only: t, the participants that may drop out or collude with the server (each noise
        share is sized for P − t honest shares), and the secure sum's modulus 2^bits (Flower's
        SecAgg+ carries up to 31).
    max_sets : int or None, default 2
        Secure only: the most conditioning sets tested per edge and level, the likeliest
        separators first (None: all of them, as PC does).
    rng : None, int or numpy Generator
        Participant k draws from stream k of ``rng.spawn(P)``. **A fixed seed voids the guarantee.**

    Returns
    -------
    LearnResult
        ``method`` "dp-fed-pc"; ``ledger`` one per participant; ``transcript`` the local skeletons
        and separating-set reports (up) and the aggregated skeletons (down); ``info``: ``skeleton``,
        ``sepsets``, ``votes``, ``min_votes``, ``examinations`` (per participant), ``plans``.
        Secure: ``info`` has ``skeleton``, ``sepsets``, ``tests`` (unconditional, conditional
        tests run), ``exhausted``, ``plan``; ``ledger`` one per participant, each holding every
        reserved test.

    Examples
    --------
    >>> from dpbnsl.io.networks import sample_network
    >>> s = sample_network("child", 30_000, participants=3, rng=0)
    >>> r = dp_fed_pc(s.participants, epsilon=10.0, delta=1e-3, rng=1)
    >>> r.method, r.privacy.epsilon <= 10.0, len(r.ledger)
    ('dp-fed-pc', True, 3)
    >>> r = dp_fed_pc(s.participants, epsilon=10.0, delta=1e-3, aggregation="secure", rng=1)
    >>> r.params["aggregation"], r.privacy.epsilon <= 10.0
    ('secure', True)
    """
    check_choice(aggregation, "aggregation", ("local", "secure"))
    if aggregation == "local" and (dropouts, modulus_bits, max_sets) != (0, 31, 2):
        raise ValueError('`dropouts`, `modulus_bits` and `max_sets` apply to aggregation="secure" only')
    if aggregation == "secure" and (ratio, vote_rule) != (0.3, "paper"):
        raise ValueError('`ratio` and `vote_rule` apply to the local vote only, not to aggregation="secure"')
    if aggregation == "secure":
        return _secure(
            participants,
            rng,
            epsilon=epsilon,
            delta=delta,
            alpha=alpha,
            data=data,
            levels=levels,
            bounds=bounds,
            bins=bins,
            max_examinations=max_examinations,
            max_cond_size=max_cond_size,
            variant=variant,
            conflict=conflict,
            extension=extension,
            dropouts=dropouts,
            modulus_bits=modulus_bits,
            max_sets=max_sets,
            accountant=accountant,
        )
    e = check_epsilon(epsilon)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    alpha = check_alpha(alpha)
    bins = check_int(bins, "bins", low=2, high=1 << 16)
    check_real(ratio, "ratio", low=0.0, high=1.0, low_open=True, high_open=True)
    if vote_rule not in VOTE_RULES:
        raise ValueError(f"`vote_rule` must be one of {', '.join(map(repr, VOTE_RULES))}; got {vote_rule!r}")
    opts = check_pc_options(
        alpha=alpha, variant=variant, max_cond_size=max_cond_size, conflict=conflict, extension=extension
    )
    arrays, columns = as_participants(participants, min_rows=4)
    d = arrays[0].shape[1]
    if d < 2:
        raise ValueError(f"`participants` hold {d} column(s); PC needs at least 2")
    prepared = [check_data(X, data, bounds, bins, levels) for X in arrays]
    K = (
        default_rounds(d)
        if max_examinations is None
        else check_int(max_examinations, "max_examinations", low=1, high=10**6)
    )
    plans = [plan_priv_pc(epsilon=e, delta=dl, n=X.shape[0], rounds=K, accountant=accountant) for X in arrays]
    ledgers = [reserve_rounds(pl) for pl in plans]

    start = time.perf_counter()
    streams = as_generator(rng).spawn(len(arrays))
    testers = [
        PrivateTests(X, codes, lv, pl, alpha=alpha, margin=0.0, rng=g)
        for X, (codes, lv), pl, g in zip(arrays, prepared, plans, streams)
    ]
    need = min_votes(len(arrays), ratio, vote_rule)
    server = SkeletonServer(d, need=need, max_cond_size=opts["max_cond_size"], termination="neighbours")
    transcript = Transcript()
    S = ~np.eye(d, dtype=bool)
    level = 0
    while True:
        uploads: list[Payload] = []
        for k, tester in enumerate(testers):
            local = S.copy()
            tester.level(local, level, variant=opts["variant"])
            uploads.append(Dense(local.astype(float)))
            transcript.append(Message(level, k, SERVER, "local_skeleton", uploads[-1]))
        reply = server(level, uploads)
        broadcast = Dense(np.asarray(server.S, float))  # the payload of the reply: one for all
        S = server.S.copy()
        for k in range(len(testers)):
            transcript.append(Message(level, SERVER, k, "global_skeleton", broadcast))
        if reply.stop:
            break
        level += 1
    for k, tester in enumerate(testers):
        report = np.zeros((len(tester.sepsets), d + 2))  # one row per pair: i, j, then Z's indicator
        for row, ((i, j), Z) in enumerate(sorted(tester.sepsets.items())):
            report[row, :2] = i, j
            report[row, 2 + np.asarray(Z, int)] = 1.0
        transcript.append(Message(level + 1, k, SERVER, "separating_sets", Dense(report)))
    sepsets = majority_sepsets([t.sepsets for t in testers])
    dag, cpdag, info = orient_skeleton(S, sepsets, opts)
    n_k = tuple(X.shape[0] for X in arrays)
    privacy = summarize_privacy(
        ledgers,
        delta=dl,
        target_epsilon=e,
        neighbouring="replace-one",
        calibration=f"pure-dp rounds ({accountant})",
        accountants=(accountant,),
        public=dict(d=d, n_k=n_k, rounds=K, alpha=alpha, data=data, releases="private tests per participant"),
    )
    history = pd.DataFrame(server.rows)
    info.update(
        votes=server.votes,
        min_votes=need,
        examinations=tuple(t.used for t in testers),
        plans=tuple(plans),
        seconds=time.perf_counter() - start,
    )
    params = dict(
        opts,
        epsilon=e,
        delta=dl,
        test="kendall",
        data=data,
        bins=bins if data == "continuous" else None,
        max_examinations=K,
        ratio=ratio,
        vote_rule=vote_rule,
        accountant=accountant,
        aggregation="local",
    )
    params.pop("no_sepset")
    return LearnResult(
        "dp-fed-pc",
        dag,
        cpdag,
        history,
        columns,
        transcript=transcript,
        ledger=tuple(ledgers),
        params=params,
        info=info,
        privacy=privacy,
    )


def _secure(participants: Any, rng: Any, *, accountant: str, **options: Any) -> LearnResult:
    """The secure protocol in process: participant k draws from stream k of ``rng.spawn(P)``;
    every participant defends the study's (ε, δ)."""
    if accountant != "rdp":
        raise ValueError(
            f'secure DP-FedPC is accounted under RDP; `accountant` must be "rdp"; got {accountant!r}'
        )
    arrays, columns = as_participants(participants, min_rows=4)
    d = arrays[0].shape[1]
    if d < 2:
        raise ValueError(f"`participants` hold {d} column(s); PC needs at least 2")
    if isinstance(options.get("bounds"), np.ndarray):
        options["bounds"] = options["bounds"].tolist()
    if isinstance(options.get("levels"), np.ndarray):
        options["levels"] = options["levels"].tolist()
    settings = secure_pc_settings(
        participants=len(arrays), n_total=sum(X.shape[0] for X in arrays), **options
    )
    budget = (settings["epsilon"], settings["delta"])
    start = time.perf_counter()
    clients = [
        SecurePCParticipant(X, settings=settings, participant=k, rng=g, budget=budget, columns=columns)
        for k, (X, g) in enumerate(zip(arrays, as_generator(rng).spawn(len(arrays))))
    ]
    server = SecurePCServer(settings=settings, n_participants=len(arrays))
    transcript = run_protocol(server, clients)["rounds"]
    dag, cpdag, history = server.learned()
    plan = server.plan
    ledgers = tuple(c.ledger for c in clients)
    privacy = summarize_privacy(
        ledgers,
        delta=settings["delta"],
        target_epsilon=settings["epsilon"],
        neighbouring="replace-one",
        calibration="secure-sum",
        accountants=("rdp", "zcdp"),
        public=dict(
            d=d,
            n_k=tuple(X.shape[0] for X in arrays),
            tests=plan.tests if plan is not None else None,
            alpha=settings["alpha"],
            data=settings["data"],
            releases="one jointly noised Kendall statistic per test (secure aggregation)",
            trust=(
                f"secure aggregation: the server reads only the sums; DP against the server and up "
                f"to t = {settings['dropouts']} colluding or missing participants, while at least "
                f"{len(arrays) - settings['dropouts']} honest shares reach each sum"
            ),
            noise="skellam",
            modulus_bits=settings["modulus_bits"],
        ),
    )
    if privacy.bounds["rdp"] > settings["epsilon"]:  # pragma: no cover - the calibration guarantees it
        raise RuntimeError(f"the run spent ε = {privacy.bounds['rdp']!r} > target {settings['epsilon']!r}")
    info = dict(server.info, plan=plan, seconds=time.perf_counter() - start)
    params = {k: v for k, v in settings.items() if k not in ("participants", "n_total")}
    params.update(test="kendall", aggregation="secure", noise="skellam", accountant="rdp")
    params["max_examinations"] = plan.tests if plan is not None else None
    return LearnResult(
        "dp-fed-pc",
        dag,
        cpdag,
        history,
        columns,
        transcript=transcript,
        ledger=ledgers,
        params=params,
        info=info,
        privacy=privacy,
    )
