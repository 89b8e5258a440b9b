"""The local covariance release that the covariance learners fit under local DP: each participant
releases XᵀX/n_k of its clipped rows once with Gaussian noise
(:func:`~dpbnsl.mechanisms.covariance.release_covariance`, recorded in its ledger), and the server
pools the releases by the rows. The joint release under secure aggregation is
:mod:`dpbnsl.learners.covariance_release`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._validation import as_generator
from ..accounting import PrivacyLedger, PrivacySummary, summarize_privacy
from ..federation import SERVER, Dense, Message, Transcript
from ..mechanisms.covariance import covariance_sensitivity, release_covariance
from .covariance_plan import ACCOUNTANT
from .covariance_plan import plan as covariance_plan
from .covariance_release import Release
from .scale_checks import check_declared_centre, check_row_norm

__all__ = ["LocalRun", "run_local_release"]


@dataclass(frozen=True)
class LocalRun:
    """The local releases pooled: ``release`` (S = Σ_k n_k S̃_k / N, its entry noise sd), the
    Gaussian noise multiplier, the transcript (each participant's S̃_k up), the ledgers and the
    privacy statement."""

    release: Release
    multiplier: float
    transcript: Transcript
    ledgers: tuple[PrivacyLedger, ...]
    privacy: PrivacySummary
    seconds: float


def run_local_release(
    arrays: Sequence[np.ndarray],
    columns: tuple[str, ...] | None,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    calibration: Literal["tight", "classic", "zcdp"],
    rng: np.random.Generator | int | None,
) -> LocalRun:
    """Each participant (stream k of ``rng.spawn(P)``) releases its covariance once with Gaussian
    noise calibrated to (ε, δ) (DP-Fed-BNSL's release, no PSD projection), recorded in its ledger;
    the server pools them by the rows. Entry noise of the pool:
    √Σ_k (n_k/N)² (z·√2R²/n_k)² = z·√2·R²·√P / N."""
    pl = covariance_plan(
        epsilon=epsilon, delta=delta, clip_norm=clip_norm, calibration=calibration, psd=False
    )
    e, dl, R, z = pl.epsilon, pl.delta, pl.clip_norm, pl.z_cov
    n_k = tuple(X.shape[0] for X in arrays)
    N, d = sum(n_k), arrays[0].shape[1]
    start = time.perf_counter()
    ledgers, total, transcript = [], np.zeros((d, d)), Transcript()
    for k, (X, g) in enumerate(zip(arrays, as_generator(rng).spawn(len(arrays)))):
        ledger = PrivacyLedger(budget=(e, dl), accountant=ACCOUNTANT[calibration], neighbouring="replace-one")
        check_declared_centre(X, participant=k, columns=columns)
        check_row_norm(X, clip_norm=R, participant=k)
        S, release = release_covariance(X, clip_norm=R, multiplier=z, psd_floor=None, rng=g)
        ledger.record("covariance", release.event)
        transcript.append(Message(0, k, SERVER, "covariance", Dense(S)))
        ledgers.append(ledger)
        total += X.shape[0] * S
    sd = math.sqrt(sum((n / N * z * covariance_sensitivity(n, clip_norm=R)) ** 2 for n in n_k))
    privacy = summarize_privacy(
        ledgers,
        delta=dl,
        target_epsilon=e,
        neighbouring="replace-one",
        calibration=calibration,
        accountants=(ACCOUNTANT[calibration],),
        public=dict(d=d, n_k=n_k, clip_norm=R, centre="declared", releases="one covariance per participant"),
    )
    if privacy.bounds[ACCOUNTANT[calibration]] > e:  # pragma: no cover - the calibration guarantees it
        raise RuntimeError(f"the releases spent ε = {privacy.epsilon!r} > target {e!r}")
    release_ = Release(total / N, N, sd, tuple(range(len(arrays))))
    return LocalRun(release_, z, transcript, tuple(ledgers), privacy, time.perf_counter() - start)
