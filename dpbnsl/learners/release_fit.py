"""One covariance release and a server fit on it: the run shared by the learners that only
post-process the release (PC on a private covariance, the private sorting baselines).

The release is each participant's own Gaussian release (``aggregation="local"``,
:mod:`~dpbnsl.learners.local_release`) or one jointly noised integer release under secure
aggregation (``"secure"``, :mod:`~dpbnsl.learners.covariance_release`). The fit sees the released
covariance, its row count and its public entry noise sd, nothing else: the whole run spends the
release's (ε, δ).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..accounting import PrivacyLedger, PrivacySummary
from ..federation import Transcript
from .covariance_release import (
    AGGREGATIONS,
    Release,
    refuse_secure_only,
    release_settings,
    run_secure_release,
)
from .local_release import run_local_release
from .result import LearnResult

__all__ = ["ReleaseFit", "release_and_fit"]

#: the secure release's settings a result reports
_SECURE_KEYS = ("epsilon", "delta", "clip_norm", "dropouts", "noise", "modulus_bits")


@dataclass(frozen=True)
class ReleaseFit:
    """A release and the fit on it: ``fit`` the fit's result, ``params`` the release's settings as
    the learners report them, ``extra`` what the run adds to ``info`` (the plan and release under
    secure aggregation, the noise multiplier of the local releases)."""

    fit: LearnResult
    release: Release
    transcript: Transcript
    ledgers: tuple[PrivacyLedger, ...]
    privacy: PrivacySummary
    seconds: float
    params: dict[str, Any]
    extra: dict[str, Any]

    def result(
        self,
        method: str,
        columns: tuple[str, ...] | None,
        method_params: Mapping[str, Any],
        info: Mapping[str, Any],
        n_samples: tuple[int, ...],
    ) -> LearnResult:
        """The learner's result: the fit's graph and history with the run's transcript, ledgers
        and privacy statement; ``params`` the method's then the release's; ``info`` the method's
        then the release's noise sd, ε by accountant, seconds, row counts and ``extra``."""
        p = self.privacy
        full_info = dict(
            info,
            noise_sd=self.release.noise_sd,
            epsilon={p.accountant: p.epsilon},
            seconds=self.seconds,
            n_samples=n_samples,
            **self.extra,
        )
        return LearnResult(
            method,
            self.fit.W,
            self.fit.W_raw,
            self.fit.history,
            columns,
            self.transcript,
            self.ledgers,
            dict(method_params, **self.params),
            full_info,
            p,
        )


def release_and_fit(
    arrays: Sequence[np.ndarray],
    columns: tuple[str, ...] | None,
    fit: Callable[[np.ndarray, int, float], LearnResult],
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    aggregation: str,
    dropouts: int,
    noise: str,
    modulus_bits: int,
    calibration: Literal["tight", "classic", "zcdp"],
    rng: np.random.Generator | int | None,
) -> ReleaseFit:
    """Release the participants' covariance once under ``aggregation`` and run ``fit(S, n,
    noise_sd)`` on it (module docstring). Settings that do not apply to the aggregation chosen are
    refused before any release."""
    if aggregation not in AGGREGATIONS:  # the learners check it first; a guard, not a message
        raise ValueError(f"`aggregation` must be one of {AGGREGATIONS}; got {aggregation!r}")
    if aggregation == "secure":
        if calibration != "tight":
            raise ValueError('`calibration` applies to aggregation="local" only')
        settings = release_settings(
            epsilon=epsilon,
            delta=delta,
            clip_norm=clip_norm,
            participants=len(arrays),
            n_total=sum(X.shape[0] for X in arrays),
            noise=noise,
            dropouts=dropouts,
            modulus_bits=modulus_bits,
        )
        secure = run_secure_release(
            arrays, columns, settings, rng=rng, fit=lambda r: fit(r.S, r.n, r.noise_sd)
        )
        params = {k: settings[k] for k in _SECURE_KEYS}
        params.update(aggregation=aggregation, neighbouring="replace-one")
        return ReleaseFit(
            secure.result,
            secure.release,
            secure.transcript,
            secure.ledgers,
            secure.privacy,
            secure.seconds,
            params,
            dict(plan=secure.plan, release=secure.release),
        )
    refuse_secure_only(dropouts=dropouts, noise=noise, modulus_bits=modulus_bits)
    local = run_local_release(
        arrays, columns, epsilon=epsilon, delta=delta, clip_norm=clip_norm, calibration=calibration, rng=rng
    )
    result = fit(local.release.S, local.release.n, local.release.noise_sd)
    params = dict(
        epsilon=local.privacy.target_epsilon,
        delta=local.privacy.delta,
        clip_norm=float(clip_norm),
        calibration=calibration,
        aggregation=aggregation,
        neighbouring="replace-one",
    )
    return ReleaseFit(
        result,
        local.release,
        local.transcript,
        local.ledgers,
        local.privacy,
        local.seconds,
        params,
        dict(noise_multiplier=local.multiplier),
    )
