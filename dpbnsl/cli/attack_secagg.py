"""``dpbnsl attack --secagg``: the protocol over secure aggregation, and what the server still
reads — the pooled covariance, a participant's statistic by a coalition of the server and the
others, and by the difference of two sums one participant apart (the run, and a second run after
that participant dropped out, with fresh noise) (:mod:`dpbnsl.attacks.secagg`)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd

SECAGG_COLUMNS = (
    "participant",
    "n_k",
    "server_error",
    "coalition_error",
    "difference_error",
    "server_auc",
    "coalition_auc",
)


def run_secagg_attack(
    args: argparse.Namespace,
    participants: list[np.ndarray],
    population: np.ndarray,
    noise_seed: int,
    fresh: list[np.ndarray] | None,
) -> tuple[Any, pd.DataFrame, dict[str, Any]]:
    """Fit ``args.method`` over secure aggregation and read every participant through the three
    views; ``fresh`` holds non-member rows per participant (simulated data only: membership needs
    rows outside the study). Returns (result, table, the study's public settings)."""
    from ..accounting.distributed import epsilon_with_shares
    from ..attacks.inference import membership_inference, roc_auc
    from ..attacks.secagg import (
        isolate_by_coalition,
        isolate_by_difference,
        read_sum,
        replay_shares,
        with_sum,
    )
    from ..learners.linear.dp_fed_bnsl import dp_fed_bnsl
    from ..learners.linear.fed_bnsl import fed_bnsl
    from ..mechanisms.releases import clip_rows

    P = len(participants)
    base = dict(aggregation="secure", participants=P, n_total=sum(len(X) for X in participants))
    if args.method == "fed-bnsl":
        result = fed_bnsl(participants, centre=False, aggregation="secure", clip_norm=args.clip_norm)
        settings = dict(base, clip_norm=args.clip_norm, centre=False)
        bound = args.clip_norm
    else:
        result = dp_fed_bnsl(
            participants,
            epsilon=args.epsilon,
            delta=args.delta,
            clip_norm=args.clip_norm,
            aggregation="secure",
            dropouts=args.dropouts,
            rng=noise_seed,
        )
        settings = dict(base, epsilon=args.epsilon, delta=args.delta, clip_norm=args.clip_norm)
        settings["dropouts"] = args.dropouts
        bound = args.clip_norm
    shares, setup = replay_shares(args.method, participants, settings, rng=noise_seed)
    # a second run after a participant dropped out: the others' shares again, with fresh noise
    again, _ = replay_shares(
        args.method, participants, settings, rng=np.random.SeedSequence(noise_seed).spawn(1)[0]
    )
    everyone = tuple(range(P))
    assert result.transcript is not None  # a secure run records what the server saw
    view = read_sum(result.transcript, settings)
    rows = []
    for k, X in enumerate(participants):
        Xc = clip_rows(X, norm=bound)
        own = Xc.T @ Xc / len(X)
        others = tuple(j for j in everyone if j != k)
        row: dict[str, Any] = {"participant": k, "n_k": len(X)}
        row["server_error"] = _rel(view.S, own)
        views = {"server": (view.S, view.n)}
        if P > 1:
            coal = isolate_by_coalition(view, {j: shares[j] for j in others})
            diff = isolate_by_difference(view, read_sum(with_sum(setup, again, others), settings))
            row["coalition_error"] = _rel(coal.covariance, own)
            row["difference_error"] = _rel(diff.covariance, own)
            views["coalition"] = (coal.covariance, len(X))
        for name, (S, n) in views.items():
            if fresh is not None:
                cand = clip_rows(np.vstack([X, fresh[k]]), norm=bound)
                labels = np.r_[np.ones(len(X)), np.zeros(len(fresh[k]))]
                scores = membership_inference(S, cand, n_samples=n, population_cov=population).scores
                row[f"{name}_auc"] = roc_auc(scores, labels)
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(SECAGG_COLUMNS))
    info: dict[str, Any] = {"settings": settings, "contributors": list(view.contributors)}
    if args.method != "fed-bnsl":
        plan = result.info["plan"]
        info["epsilon_against_coalition"] = epsilon_with_shares(plan, 1, delta=args.delta)
    return result, table, info


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))
