"""Private selection of DP-Fed-Sparse-BNSL's settings: every candidate run and its score are paid
for in the same budget, so the whole pipeline, tuning included, meets the target (ε, δ).

Why composition, not repeat-and-select. The published private tuning results (Liu & Talwar 2019;
Papernot & Steinke 2022) bound the cost of running a private algorithm a random number of times
and releasing *only the best run*. In a federated protocol the server sees every run's messages,
so every run is released: the runs compose. :func:`select_dp_fed_sparse_bnsl` therefore gives each
of the J candidates an equal share of the budget (found by bisection so that the composition of
all runs and scores, under the RDP accountant, stays within (ε, δ)), and chooses among them by a
private score released in each run; the choice is post-processing.

The score of a run is a BIC with one common noise variance, N·d·ln(σ̂²) + |E|·ln N, where σ̂² is
the pooled mean squared residual per variable of the run's W. Each participant releases its own
mean of min(‖x_i − x_i W‖², L) once per run (Gaussian; replace-one sensitivity L/n_k, with the
public bound L); |E| is public (W is).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from dp_accounting import GaussianDpEvent

from ..._validation import EPSILON_MIN, ArrayLike, as_generator, as_participants, check_epsilon, check_real
from ...accounting import LedgerEntry, PrivacyLedger, compose_epsilon, epsilon_to_rho, summarize_privacy
from ...blas import one_blas_thread
from ...federation import SERVER, Dense, Message, Transcript
from ...mechanisms import CLIP_RANGE, gaussian_mechanism
from ..result import LearnResult
from .dp_fed_sparse_bnsl import SparsePlan, dp_fed_sparse_bnsl, plan

__all__ = ["select_dp_fed_sparse_bnsl", "residual_loss"]

#: Settings a candidate may vary (the others are common to all runs).
_TUNABLE = ("clip", "clip_scheme", "rounds", "local_iters", "lambda1")


def residual_loss(X: np.ndarray, W: np.ndarray, bound: float) -> float:
    """(1/n) Σ_i min(‖x_i − x_i W‖², L): each term lies in [0, L] whatever the record (an
    overflowing or NaN residual counts as L), so replacing one record moves the mean by at most
    L/n."""
    with np.errstate(over="ignore", invalid="ignore"):
        R = X - X @ W
        per_row = np.einsum("ij,ij->i", R, R)
    per_row = np.where(np.isnan(per_row), bound, np.minimum(per_row, bound))
    return float(per_row.mean())


def _check_candidates(candidates: Any) -> list[dict]:
    if isinstance(candidates, Mapping) or not isinstance(candidates, Sequence) or isinstance(candidates, str):
        raise TypeError(
            f"`candidates` must be a sequence of dicts of settings; got {type(candidates).__name__}"
        )
    out = []
    for j, c in enumerate(candidates):
        if not isinstance(c, Mapping):
            raise TypeError(f"`candidates`[{j}] must be a dict of settings; got {c!r}")
        bad = sorted(set(c) - set(_TUNABLE))
        if bad:
            raise ValueError(f"`candidates`[{j}] sets {bad}; a candidate may set only {', '.join(_TUNABLE)}")
        out.append(dict(c))
    if len(out) < 2:
        raise ValueError(f"`candidates` must hold at least 2 settings to choose from; got {len(out)}")
    return out


@one_blas_thread
def select_dp_fed_sparse_bnsl(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    candidates: Sequence[Mapping[str, Any]],
    feature_bound: float | ArrayLike,
    loss_bound: float | None = None,
    score_share: float = 0.1,
    rng: np.random.Generator | int | None = None,
    **settings: Any,
) -> LearnResult:
    """Run DP-Fed-Sparse-BNSL once per candidate setting and return the best run by a private
    BIC; the returned guarantee covers every run and every score.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        Data declared centred (the scores measure residuals of the raw rows).
    epsilon, delta : float
        The per-participant target for the whole selection.
    candidates : sequence of dict
        Two or more settings, each setting some of ``clip``, ``clip_scheme``, ``rounds``,
        ``local_iters``, ``lambda1`` (e.g. ``[{"clip": 0.5}, {"clip": 1.0}, {"clip": 2.0}]``).
        **Public**, like every setting: not chosen by looking at the data.
    feature_bound : float or array of shape (d,)
        Public bound X_a on x_ia², as in :func:`dp_fed_sparse_bnsl` (required).
    loss_bound : float, optional
        Public bound L on a row's squared residual ‖x_i − x_i W‖² in the score (default Σ_a X_a,
        the bound on ‖x_i‖² itself).
    score_share : float in (0, 1), default 0.1
        Share of each run's zCDP budget given to its score release.
    rng : None, int or numpy Generator, default None
        Source of all the noise (fresh OS entropy by default; a known seed voids the guarantee).
    **settings
        Common settings of :func:`dp_fed_sparse_bnsl` (``calibration``, ``smoothness``,
        ``shares``, ``rho1``, ``threshold``, …; ``centre`` must stay ``"declared"``).

    Returns
    -------
    LearnResult
        The chosen run, with ``ledger`` the per-participant ledgers of *all* runs and scores,
        ``privacy`` their guarantee (at most ``epsilon``), ``transcript`` every run's messages and
        the scores (rounds numbered on), ``info["selection"]`` a table of the candidates with
        their noisy scores, and ``info["epsilon_per_run"]`` the target each run was calibrated to.

    Privacy
    -------
    Replace-one within each participant. Every run r_j is DP-Fed-Sparse-BNSL calibrated to
    (ε_j, δ) (its own events: private smoothness, T·K DP-PGCD steps); every score is one Gaussian
    release of sensitivity L/n_k (see :func:`residual_loss`). All runs and scores compose; ε_j is
    the largest per-run target (the same for every candidate) for which the RDP accountant puts
    the composition within (ε, δ), found by bisection before any data is touched. The choice of
    the best score and the returned run are post-processing.
    """
    arrays, columns = as_participants(participants)
    P, d = len(arrays), arrays[0].shape[1]
    e = check_epsilon(epsilon)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    cands = _check_candidates(candidates)
    share = check_real(score_share, "score_share", low=0.0, high=1.0, low_open=True, high_open=True)
    if settings.get("centre", "declared") != "declared":
        raise ValueError(
            "`centre` must be 'declared' for the selection (its score measures "
            "residuals of the rows as they are)"
        )
    for name in ("epsilon", "delta", "rng", "participants") + _TUNABLE:
        if name in settings:
            raise TypeError(
                f"`{name}` is not a common setting here (candidates set "
                f"{', '.join(_TUNABLE)}; epsilon, delta and rng are the selection's)"
            )
    n_k = tuple(X.shape[0] for X in arrays)
    bound_sum = float(np.sum(np.broadcast_to(np.asarray(feature_bound, float), (d,))))
    L = check_real(
        bound_sum if loss_bound is None else loss_bound, "loss_bound", low=CLIP_RANGE[0], high=CLIP_RANGE[1]
    )

    def plans(eps_run: float) -> list[SparsePlan]:
        return [
            plan(d, epsilon=eps_run, delta=dl, n_k=n_k, feature_bound=feature_bound, **settings, **c)
            for c in cands
        ]

    def score_multiplier(eps_run: float) -> float:
        rho = epsilon_to_rho(eps_run, dl, conversion="bun-steinke")
        return 1.0 / math.sqrt(2.0 * share * rho)

    def total_epsilon(eps_run: float) -> float:
        entries = [
            LedgerEntry(f"candidate {j}/{x.label}", x.event, x.count)
            for j, pl in enumerate(plans(eps_run))
            for x in pl.entries()
        ]
        entries.append(LedgerEntry("scores", GaussianDpEvent(score_multiplier(eps_run)), len(cands)))
        return compose_epsilon(entries, dl, "rdp")

    # --- the per-run budget, before any data is touched -----------------------------------------
    lo, hi = EPSILON_MIN, e
    if total_epsilon(lo) > e:
        raise ValueError(
            f"`epsilon` = {e:g} cannot pay for {len(cands)} runs and their scores "
            f"(even runs at ε = {lo:g} each exceed it); use fewer candidates"
        )
    for _ in range(40):
        if hi - lo <= 1e-6 * hi:
            break
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if total_epsilon(mid) <= e else (lo, mid)
    eps_run, z_score = lo, score_multiplier(lo)

    # --- the runs, their scores, and the choice ---------------------------------------------------
    streams = as_generator(rng).spawn(len(cands) + 1)
    score_rngs = streams[-1].spawn(P)
    ledgers = tuple(PrivacyLedger(neighbouring="replace-one") for _ in range(P))
    messages: list[Message] = []
    rows, results, offset = [], [], 0
    N = sum(n_k)
    for j, (c, g) in enumerate(zip(cands, streams)):
        r = dp_fed_sparse_bnsl(
            arrays, epsilon=eps_run, delta=dl, feature_bound=feature_bound, rng=g, **settings, **c
        )
        assert r.ledger is not None and r.transcript is not None  # a private federated run has both
        for k, lg in enumerate(r.ledger):
            for x in lg.entries:
                ledgers[k].record(f"candidate {j}/{x.label}", x.event, x.count)
        warm = r.info.get("warm_start")
        if warm:  # the warm start's messages come first (the server saw them first)
            messages.extend(replace(m, round=m.round + offset) for m in warm["transcript"])
            offset += warm["transcript"].n_rounds
        rounds = len(r.history)
        messages.extend(replace(m, round=m.round + offset) for m in r.transcript)
        W = np.asarray(r.W)
        noisy = []
        for k, (X, sg) in enumerate(zip(arrays, score_rngs)):
            rel = gaussian_mechanism(
                residual_loss(X, W, L), sensitivity=L / X.shape[0], multiplier=z_score, rng=sg
            )
            ledgers[k].record(f"candidate {j}/score", rel.event)
            noisy.append(float(rel.value))
            messages.append(
                Message(offset + rounds, k, SERVER, "selection_score", Dense(np.array([rel.value])))
            )
        offset += rounds + 1
        sigma2 = max(sum(n * v for n, v in zip(n_k, noisy)) / (N * d), 1e-300)
        nnz = int(np.count_nonzero(W))
        rows.append(dict(candidate=j, **c, nnz=nnz, score=N * d * math.log(sigma2) + nnz * math.log(N)))
        results.append(r)
    table = pd.DataFrame(rows)
    best = int(table["score"].idxmin())
    table["chosen"] = table.index == best
    chosen = results[best]
    assert chosen.privacy is not None  # dp_fed_sparse_bnsl always states its guarantee
    public = dict(chosen.privacy.public, candidates=len(cands), loss_bound=L, epsilon_per_run=eps_run)
    privacy = summarize_privacy(
        ledgers,
        delta=dl,
        target_epsilon=e,
        neighbouring="replace-one",
        calibration=chosen.params["calibration"],
        accountants=("rdp", "zcdp"),
        public=public,
    )
    if privacy.epsilon > e:  # pragma: no cover - the bisection guarantees it; never silently
        raise RuntimeError(f"the selection spent ε = {privacy.epsilon!r} > target {e!r}")
    info = dict(
        chosen.info,
        selection=table,
        epsilon_per_run=eps_run,
        score_multiplier=z_score,
        epsilon={a: privacy.bounds[a] for a in ("zcdp", "rdp")},
    )
    params = dict(
        chosen.params, candidates=tuple(cands), chosen=best, loss_bound=L, score_share=share, epsilon=e
    )
    return LearnResult(
        "dp-fed-sparse-bnsl (selected)",
        chosen.W,
        chosen.W_raw,
        chosen.history,
        columns,
        Transcript(messages),
        ledgers,
        params,
        info,
        privacy,
    )
