"""Attack every participant of one federated run and tabulate what the server learned.

:func:`server_covariances` turns a learner's transcript into the server's estimate of each
participant's covariance (per row, ``X_kᵀX_k / n_k`` of the rows as the protocol used them):

- Fed-BNSL / DP-Fed-BNSL: :func:`~dpbnsl.attacks.covariance.reconstruct_covariance` (exact, or the
  noisy release);
- Fed-Sparse-BNSL / DP-Fed-Sparse-BNSL: :func:`~dpbnsl.attacks.sparse.reconstruct_gram_sparse`;
  entries the equations leave undetermined are filled from the adversary's ``prior`` (population
  statistics) and the matrix is projected onto the PSD cone (its negative eigenvalues set to 0).

:func:`attack_report` then scores, per participant, the reconstruction error and the fraction of
entries recovered, membership inference (its rows against non-members), attribute inference (one
hidden column of its rows) and record reconstruction (its last row, the others known). Evaluation
uses the participants' data, which the attacks themselves never see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from .._validation import ArrayLike, as_generator, as_participants, as_square_matrix, check_real
from ..federation import Transcript
from ..learners.registry import names
from ..scores import centre
from .covariance import DENSE_PROTOCOLS, reconstruct_covariances
from .inference import attribute_inference, membership_inference, reconstruct_record, roc_auc, tpr_at_fpr
from .sparse import SparseGramReconstruction, reconstruct_gram_sparse_from_result

if TYPE_CHECKING:
    from ..learners.result import LearnResult

__all__ = [
    "ALL_ROW",
    "ATTACKABLE",
    "AttackReport",
    "server_covariances",
    "attack_report",
    "population_covariance",
    "protocol_statistic",
]

SPARSE_PROTOCOLS = names(messages="sparse")
ATTACKABLE = DENSE_PROTOCOLS + SPARSE_PROTOCOLS
#: How the "all" row of an :class:`AttackReport` summarises the participants' rows.
ALL_ROW = (
    "all: rel_error and record_error are medians over participants, recovered and attribute_gain "
    "means, n_k the sum, membership_auc and membership_tpr computed on the pooled scores"
)


@dataclass(frozen=True)
class AttackReport:
    """``table``: one row per participant (method, participant, n_k, rel_error, recovered,
    membership_auc, membership_tpr, attribute_gain, record_error) and a last row ``"all"``: the
    median over participants of ``rel_error`` and ``record_error`` (errors are skewed: one bad
    participant should not hide the rest), the mean of ``recovered`` and ``attribute_gain`` (a
    share and a ratio), n_k summed, and the membership columns on the scores pooled over
    participants (see :data:`ALL_ROW`); ``scores``: one row per membership target
    (participant, member, score). ``rtol`` is the recovery tolerance, ``fpr`` the false-positive
    rate of ``membership_tpr``."""

    method: str
    table: pd.DataFrame
    scores: pd.DataFrame
    rtol: float
    fpr: float


def _centred(result: LearnResult) -> bool:
    """Whether the participants' rows were centred by their own means before the protocol: the
    non-private learners' ``centre=True``, or a private learner's ``centre="private"``."""
    centre = result.params.get("centre")
    return centre is True or centre == "private"


def protocol_statistic(result: LearnResult, X: np.ndarray) -> np.ndarray:
    """``X_kᵀX_k / n_k`` of participant data ``X`` as the learner used it (centred by its own mean
    when the learner centred; the DP learners' declared-centred data as is)."""
    X = centre(X) if _centred(result) else np.asarray(X, float)
    return X.T @ X / X.shape[0]


def population_covariance(W: ArrayLike, *, noise_scale: float | ArrayLike = 1.0) -> np.ndarray:
    """Covariance of the linear SEM ``X = XW + N`` with independent noise of standard deviation
    ``noise_scale`` (scalar or per variable): ``(I − W)⁻ᵀ diag(σ²) (I − W)⁻¹``."""
    W = as_square_matrix(W, "W")
    d = W.shape[0]
    A = np.linalg.inv(np.eye(d) - W)
    s = np.broadcast_to(np.asarray(noise_scale, float), (d,))
    return A.T @ (s[:, None] ** 2 * A)


def server_covariances(result: LearnResult, *, prior: ArrayLike | None = None) -> tuple[np.ndarray, ...]:
    """The server's estimate of each participant's per-row covariance, from ``result.transcript``
    and the public ``result.params`` only (see the module docstring); ``prior`` (d×d, the
    adversary's population covariance) fills what the sparse attack leaves undetermined."""
    method = getattr(result, "method", None)
    if method not in ATTACKABLE:
        raise ValueError(f"`result` must come from one of {', '.join(ATTACKABLE)}; got method {method!r}")
    p = result.params
    if method in DENSE_PROTOCOLS:
        recs = reconstruct_covariances(
            cast(Transcript, result.transcript),  # a result of ATTACKABLE carries its transcript
            rho2=p["rho2"],
            gamma2=p["gamma2"],
            rho_max=p["rho_max"],
            normalization=p["normalize"],
            n_samples=result.info["n_samples"],
        )
        # n_samples is given, so every reconstruction carries its covariance
        return tuple(cast(np.ndarray, r.covariance) for r in recs)
    if prior is None:
        raise ValueError(
            f"`prior` (a population covariance) is required for {method}: the "
            f"sparse attack recovers only some entries"
        )
    d = result.W.shape[0]
    prior = as_square_matrix(prior, "prior")
    if prior.shape != (d, d):
        raise ValueError(f"`prior` must have shape ({d}, {d}); got {prior.shape}")
    out = []
    # no `participant` given: one reconstruction per participant
    for rec in cast("tuple[SparseGramReconstruction, ...]", reconstruct_gram_sparse_from_result(result)):
        G = np.where(rec.identifiable, rec.gram, prior)
        w, V = np.linalg.eigh((G + G.T) / 2.0)
        out.append((V * np.clip(w, 0.0, None)) @ V.T)
    return tuple(out)


def attack_report(
    result: LearnResult,
    participants: Any,
    *,
    population_cov: ArrayLike,
    target: int | None = None,
    rtol: float = 1e-2,
    fpr: float = 0.01,
    rng: np.random.Generator | int | None = None,
) -> AttackReport:
    """Run every attack against every participant of ``result``.

    Parameters
    ----------
    result : LearnResult of one of :data:`ATTACKABLE`
    participants : the participants' data, in the order the learner received them (evaluation
        only: the truth for the errors, the members, the hidden column and the hidden row)
    population_cov : array of shape (d, d)
        The adversary's population statistics: the prior of the sparse attack, the reference of
        the membership test and the baseline of attribute inference.
    target : int, optional
        The hidden column of attribute inference; default the last.
    rtol : float, default 1e-2
        An entry is recovered when ``|Ĉ_ij − C_ij| ≤ rtol·√(C_ii C_jj)``.
    fpr : float, default 0.01
        False-positive rate at which ``membership_tpr`` is read.
    rng : seed for choosing the non-members: for participant k, n_k rows drawn without replacement
        from the other participants (the same population, not in k's data).

    Returns
    -------
    AttackReport
    """
    arrays, _ = as_participants(participants)
    rtol = check_real(rtol, "rtol", low=0.0, low_open=True)
    P, d = len(arrays), arrays[0].shape[1]
    if P < 2:
        raise ValueError(
            "`participants` must hold at least 2 participants (the non-members of "
            "one are drawn from the others)"
        )
    pop = as_square_matrix(population_cov, "population_cov")
    target = d - 1 if target is None else target
    estimates = server_covariances(result, prior=pop)
    gen = as_generator(rng)
    centred = _centred(result)
    rows, scores = [], []
    for k, (X, C) in enumerate(zip(arrays, estimates)):
        n = X.shape[0]
        truth = protocol_statistic(result, X)
        scale = np.sqrt(np.outer(np.diag(truth), np.diag(truth)))
        iu = np.triu_indices(d)
        recovered = float(np.mean((np.abs(C - truth) <= rtol * scale)[iu]))
        others = np.concatenate([a for j, a in enumerate(arrays) if j != k])
        outsiders = others[gen.choice(len(others), size=min(n, len(others)), replace=False)]
        candidates = np.concatenate([X, outsiders])
        members = np.r_[np.ones(n, bool), np.zeros(len(outsiders), bool)]
        if centred:  # the statistic is of own-mean-centred rows: score candidates the same way
            candidates = candidates - X.mean(axis=0)
        mi = membership_inference(C, candidates, n_samples=n, population_cov=pop, members=members, fpr=fpr)
        attr = attribute_inference(C, X, target=target, population_cov=pop)
        rec = reconstruct_record(C, X[:-1], n_samples=n, centred=centred, true_record=X[-1])
        rows.append(
            dict(
                method=result.method,
                participant=k,
                n_k=n,
                rel_error=float(np.linalg.norm(C - truth) / np.linalg.norm(truth)),
                recovered=recovered,
                membership_auc=mi.auc,
                membership_tpr=mi.tpr,
                attribute_gain=attr.gain,
                record_error=rec.error,
            )
        )
        scores.append(pd.DataFrame(dict(participant=k, member=members, score=mi.scores)))
    table = pd.DataFrame(rows)
    allscores = pd.concat(scores, ignore_index=True)
    pooled = dict(
        method=result.method,
        participant="all",
        n_k=int(table.n_k.sum()),
        rel_error=table.rel_error.median(),
        recovered=table.recovered.mean(),
        membership_auc=roc_auc(allscores.score, allscores.member),
        membership_tpr=tpr_at_fpr(allscores.score, allscores.member, fpr),
        attribute_gain=table.attribute_gain.mean(),
        record_error=table.record_error.median(),
    )
    table = pd.concat([table, pd.DataFrame([pooled])], ignore_index=True)
    return AttackReport(result.method, table, allscores, rtol, fpr)
