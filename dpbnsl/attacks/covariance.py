"""Covariance reconstruction from a Fed-BNSL transcript (Fed-Sparse-BNSL App. A.1, eq. (10)).

In Fed-BNSL participant k answers round t with the closed-form local solution (eq. 8)

    B_k = (S_k + ρ₂I)⁻¹ (ρ₂W − β_k + S_k),

where W is the server's last broadcast, ρ₂ the penalty of round t and β_k the consensus dual, which
the server keeps itself (β_k += ρ₂(B_k − W) after each round). Rearranged,

    S_k (B_k − I) = ρ₂(W − B_k) − β_k   ⇒   S_k = (ρ₂(W − B_k) − β_k)(B_k − I)⁻¹.

Every quantity on the right is in the transcript or a public hyperparameter, so one round of one
participant reveals its statistic S_k exactly. At round 0 (W = 0, β_k = 0) this is
S_k = ρ₂B_k(I − B_k)⁻¹, and I − B_k = ρ₂(S_k + ρ₂I)⁻¹ is always invertible.

The server's view only: the functions here read messages and hyperparameters, never data. The
server replays the dual updates with the same floating-point operations as the participant, so its
β_k is bit-identical and the only error is the solve, whose amplification is reported per round.

On a DP-Fed-BNSL transcript the same algebra returns the participant's *noisy* released covariance:
:func:`covariance_error` puts its error against the true covariance beside the error the noise
level predicts (E‖E‖_F = σ·d for a symmetric release with N(0, σ²) entries, up to O(1/d)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from .._validation import ArrayLike, as_square_matrix, check_choice, check_int, check_real
from ..federation import Transcript
from ..learners.admm import PenaltySchedule
from ..learners.registry import names

__all__ = [
    "CovarianceReconstruction",
    "CovarianceError",
    "reconstruct_covariance",
    "reconstruct_covariances",
    "covariance_error",
    "DENSE_PROTOCOLS",
]

#: The learners whose uploads are closed-form local solutions of eq. 8.
#: The learners whose dense consensus-ADMM messages this attack reads (from the registry).
DENSE_PROTOCOLS = names(messages="dense")


@dataclass(frozen=True)
class CovarianceReconstruction:
    """What the server recovers about participant k.

    Attributes
    ----------
    participant, round : int
        Whose statistic, and the round (0-based) whose messages were inverted.
    statistic : array of shape (d, d)
        S_k exactly as the participant used it: ``X_kᵀX_k / n`` (``normalization="global"``, n the
        total sample count) or ``X_kᵀX_k / n_k`` (``"local"``), of its centred rows.
    covariance : array of shape (d, d) or None
        The per-row covariance ``X_kᵀX_k / n_k`` (needs ``n_samples`` under global normalisation).
    normalization : {"global", "local"}
    condition : float
        Condition number of B_k − I in that round.
    amplification : float
        cond(B_k − I) · (ρ₂(‖W‖ + ‖B_k‖) + ‖β_k‖) / ‖ρ₂(W − B_k) − β_k‖: how much the round
        magnifies rounding errors (the participant's own rounding in ρ₂W − β_k + S_k is of
        order ε_mach·(ρ₂‖W‖ + ‖β_k‖), large once ρ₂ has grown; the round chosen by default
        minimises it).
    rounds_available : int
    """

    participant: int
    round: int
    statistic: np.ndarray
    covariance: np.ndarray | None
    normalization: str
    condition: float
    amplification: float
    rounds_available: int

    def __repr__(self) -> str:  # the d × d arrays are the attribute; print them, not the summary
        d = self.statistic.shape[0]
        return (
            f"CovarianceReconstruction(participant={self.participant}, round={self.round} of "
            f"{self.rounds_available}, d={d}, normalization={self.normalization!r}, "
            f"condition={self.condition:.3g}, amplification={self.amplification:.3g}, "
            f"covariance={'recovered' if self.covariance is not None else 'None'})"
        )


@dataclass(frozen=True)
class CovarianceError:
    """Relative Frobenius error ‖Ŝ − S‖_F / ‖S‖_F of a reconstruction, and the error that
    Gaussian noise of standard deviation ``sigma`` per entry predicts (``None`` without σ)."""

    relative_error: float
    predicted_relative_error: float | None


def _check_protocol(transcript: Transcript) -> None:
    kinds = {m.kind for m in transcript}
    if not kinds:
        raise ValueError("`transcript` is empty: there is nothing to reconstruct from")
    if kinds != {"local_B", "global_W"}:
        raise ValueError(
            f"`transcript` holds messages of kinds {sorted(kinds)}; covariance "
            f"reconstruction applies to Fed-BNSL / DP-Fed-BNSL transcripts "
            f"(dense 'local_B' uploads and 'global_W' broadcasts)"
        )
    if any(m.payload.__class__.__name__ != "Dense" for m in transcript):
        raise ValueError(
            "`transcript` has sparse messages (Fed-Sparse-BNSL); use "
            "dpbnsl.attacks.sparse.reconstruct_gram_sparse for those protocols"
        )


def _rounds(transcript: Transcript, participant: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The uploads B_k and the broadcasts W the participant received, in round order."""
    P = transcript.n_participants
    if not 0 <= participant < P:
        raise ValueError(f"`participant` must be in [0, {P - 1}] for this transcript; got {participant}")
    mine = transcript.by_participant(participant)
    B = {m.round: m for m in mine if m.direction == "up"}
    W = {m.round: m for m in mine if m.direction == "down"}
    T = max(B) + 1
    missing = sorted(set(range(T)) - set(B))
    if missing:
        raise ValueError(
            f"the transcript lacks participant {participant}'s upload in round(s) "
            f"{missing[:5]}; the duals cannot be replayed past round {missing[0] - 1} "
            f"(try `round` < {missing[0]})"
        )
    return [B[t].to_dense() for t in range(T)], [W[t].to_dense() for t in sorted(W)]


def reconstruct_covariance(
    transcript: Transcript,
    *,
    participant: int,
    rho2: float,
    gamma2: float = 1.0,
    rho_max: float = np.inf,
    round: int | Literal["best"] = "best",
    normalization: Literal["global", "local"] = "global",
    n_samples: Sequence[int] | None = None,
) -> CovarianceReconstruction:
    """Recover participant ``participant``'s statistic S_k from a Fed-BNSL transcript.

    Parameters
    ----------
    transcript : Transcript
        The messages of a Fed-BNSL (or DP-Fed-BNSL) run, as the server saw them.
    participant : int
    rho2, gamma2, rho_max : float
        The public penalty schedule: ρ₂ in round t is ``rho2 · gamma2**t`` while below ``rho_max``
        (the learner's ``params``).
    round : int or "best", default "best"
        The round whose upload is inverted; ``"best"`` takes the smallest amplification.
    normalization : {"global", "local"}, default "global"
        How the protocol normalised X_kᵀX_k (the learner's ``params["normalize"]``).
    n_samples : sequence of int, optional
        Every participant's n_k (public in Fed-BNSL: the global normalisation needs n); gives the
        per-row ``covariance``. Unset, the row counts of the transcript's setup exchange are used
        when it has one.

    Returns
    -------
    CovarianceReconstruction

    Examples
    --------
    >>> import numpy as np
    >>> from dpbnsl import fed_bnsl, simulate
    >>> from dpbnsl.scores import centre
    >>> data = simulate(5, 300, participants=3, rng=0)
    >>> r = fed_bnsl(data.participants)
    >>> rec = reconstruct_covariance(r.transcript, participant=1, rho2=r.params["rho2"],
    ...                              gamma2=r.params["gamma2"], rho_max=r.params["rho_max"])
    >>> X = centre(data.participants[1])
    >>> bool(np.allclose(rec.statistic, X.T @ X / 300))
    True
    """
    if not isinstance(transcript, Transcript):
        raise TypeError(f"`transcript` must be a dpbnsl Transcript; got {type(transcript).__name__}")
    setup_n = transcript.n_samples()
    transcript = transcript.learning()
    _check_protocol(transcript)
    participant = check_int(participant, "participant", low=0)
    schedule = PenaltySchedule(
        1.0,
        check_real(rho2, "rho2", low=0.0, low_open=True),
        1.0,
        check_real(gamma2, "gamma2", low=1.0),
        check_real(rho_max, "rho_max", low=0.0, low_open=True, allow_inf=True),
    )
    normalization = cast(
        Literal["global", "local"], check_choice(normalization, "normalization", ("global", "local"))
    )
    Bs, Ws = _rounds(transcript, participant)
    T = len(Bs)
    if round != "best":
        round = check_int(round, "round", low=0)
        if round >= T:
            raise ValueError(f"`round` must be < {T} (the transcript has {T} rounds); got {round}")
    d = Bs[0].shape[0]
    eye = np.eye(d)
    beta = np.zeros((d, d))
    best = None
    last = T - 1 if round == "best" else round
    for t in range(last + 1):
        W = np.zeros((d, d)) if t == 0 else Ws[t - 1]
        if t > 0:  # the participant's own dual update, replayed operation for operation
            beta += schedule.rho(t - 1)[1] * (Bs[t - 1] - W)
        if round != "best" and t != round:
            continue
        r2 = schedule.rho(t)[1]
        rhs = r2 * (W - Bs[t]) - beta
        A = Bs[t] - eye
        cond = float(np.linalg.cond(A))
        scale = r2 * (np.linalg.norm(W) + np.linalg.norm(Bs[t])) + np.linalg.norm(beta)
        amp = cond * scale / max(np.linalg.norm(rhs), np.finfo(float).tiny)
        if not np.isfinite(cond) or cond > 1.0 / np.finfo(float).eps:
            if round != "best":
                raise ValueError(
                    f'B_k − I is singular in round {t} (condition {cond:.3g}); try `round`="best" or round 0'
                )
            continue
        if best is None or amp < best[2]:
            best = (t, rhs, amp, cond, A)
    if best is None:
        raise ValueError(f"B_k − I is singular in every round of participant {participant}")
    t, rhs, amp, cond, A = best
    S = np.linalg.solve(A.T, rhs.T).T  # S·A = rhs
    S = (S + S.T) / 2.0
    cov = None
    if normalization == "local":
        cov = S
    elif n_samples is None and setup_n is not None:  # the row counts the setup exchange sent
        cov = S * (sum(setup_n) / setup_n[participant])
    elif n_samples is not None:
        n = [check_int(v, "n_samples", low=1) for v in n_samples]
        if len(n) != transcript.n_participants:
            raise ValueError(
                f"`n_samples` must have one entry per participant ({transcript.n_participants}); got {len(n)}"
            )
        cov = S * (sum(n) / n[participant])
    return CovarianceReconstruction(participant, t, S, cov, normalization, cond, float(amp), T)


def reconstruct_covariances(transcript: Transcript, **kwargs: Any) -> tuple[CovarianceReconstruction, ...]:
    """:func:`reconstruct_covariance` for every participant of the transcript."""
    if "participant" in kwargs:
        raise TypeError(
            "reconstruct_covariances attacks every participant; use reconstruct_covariance for one"
        )
    if not isinstance(transcript, Transcript):
        raise TypeError(f"`transcript` must be a dpbnsl Transcript; got {type(transcript).__name__}")
    return tuple(
        reconstruct_covariance(transcript, participant=k, **kwargs) for k in range(transcript.n_participants)
    )


def covariance_error(estimate: ArrayLike, truth: ArrayLike, *, sigma: float | None = None) -> CovarianceError:
    """Relative Frobenius error of ``estimate`` against ``truth`` and, given the per-entry noise
    standard deviation ``sigma`` of a DP release, the error that noise alone predicts,
    σ·d / ‖truth‖_F (a symmetric d×d matrix of N(0, σ²) entries has E‖E‖²_F = σ²d²)."""
    est = as_square_matrix(estimate, "estimate")
    true = as_square_matrix(truth, "truth")
    if est.shape != true.shape:
        raise ValueError(f"`estimate` has shape {est.shape} but `truth` has shape {true.shape}")
    norm = float(np.linalg.norm(true))
    if norm == 0.0:
        raise ValueError("`truth` is the zero matrix; the relative error is undefined")
    predicted = None
    if sigma is not None:
        predicted = check_real(sigma, "sigma", low=0.0) * true.shape[0] / norm
    return CovarianceError(float(np.linalg.norm(est - true)) / norm, predicted)
