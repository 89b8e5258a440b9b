"""What DP-Fed-BNSL decides before touching data: the validated public settings and the noise
multipliers of the covariance (and, with private centring, the mean) release (:func:`plan`)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from dp_accounting import GaussianDpEvent

from .._validation import check_choice, check_epsilon, check_real
from ..accounting import LedgerEntry, calibrate_gaussian, compose_epsilon
from ..accounting.compose import Accountant
from ..mechanisms import CLIP_RANGE, check_neighbouring
from .admm import check_hyperparameters

__all__ = ["plan", "CovariancePlan", "ACCOUNTANT"]

#: the accountant each calibration is reported under ("pld" is exact for these Gaussian-only releases)
ACCOUNTANT: dict[str, Accountant] = {"tight": "pld", "classic": "pld", "zcdp": "zcdp"}
#: the Gaussian calibration of :func:`~dpbnsl.accounting.calibrate_gaussian` behind each name
_GAUSSIAN: dict[str, Literal["analytic", "classic", "zcdp"]] = {
    "tight": "analytic",
    "classic": "classic",
    "zcdp": "zcdp",
}


def _entries(z_cov: float, z_mean: float | None) -> list[LedgerEntry]:
    mean = [] if z_mean is None else [LedgerEntry("mean", GaussianDpEvent(z_mean), 1)]
    return mean + [LedgerEntry("covariance", GaussianDpEvent(z_cov), 1)]


@functools.lru_cache(maxsize=256)
def _multipliers(
    epsilon: float, delta: float, calibration: Literal["tight", "classic", "zcdp"], share: float
) -> tuple[float, float | None, float]:
    """Noise multipliers (covariance, mean or None) and the ε(δ) they spend under the reporting
    accountant. Releases of multipliers z/√(1−f) and z/√f compose exactly into one of multiplier z
    (Gaussian composition), so the calibrated z is split by the centring share f. If the
    accountant's own numerics put ε a hair above the target, z is raised until they do not (never
    less noise). Cached: sweeps repeat settings."""
    if math.isinf(epsilon):
        return 0.0, (0.0 if share else None), math.inf
    z, step = calibrate_gaussian(epsilon, delta, 1.0, method=_GAUSSIAN[calibration]), 1e-12
    for _ in range(50):
        z_cov, z_mean = z / math.sqrt(1.0 - share), (z / math.sqrt(share) if share else None)
        spent = compose_epsilon(_entries(z_cov, z_mean), delta, ACCOUNTANT[calibration])
        if spent <= epsilon:
            return z_cov, z_mean, spent
        step = max(2.0 * step, 2.0 * (spent - epsilon) / epsilon)
        z *= 1.0 + step
    raise RuntimeError(
        f"the {ACCOUNTANT[calibration]!r} accountant did not certify ε = {epsilon}"
        f" at δ = {delta} for the calibrated noise (last ε: {spent!r})"
    )


def _psd_floor(psd: bool | float) -> float | None:
    if isinstance(psd, (bool, np.bool_)):
        return 0.0 if psd else None
    return check_real(psd, "psd", low=0.0)


@dataclass(frozen=True)
class CovariancePlan:
    """Everything :func:`dp_fed_bnsl` decides before touching data: the validated public settings
    and the noise multipliers of the covariance (and, with private centring, the mean) release."""

    epsilon: float
    delta: float
    clip_norm: float
    neighbouring: str
    psd: float | None
    share: float
    hyper: dict
    z_cov: float
    z_mean: float | None
    spent: float  # ε(δ) of the calibrated releases under the calibration's accountant

    def entries(self) -> list[LedgerEntry]:
        """The ledger entries one participant will spend: the private mean (with private centring)
        and the covariance release."""
        return _entries(self.z_cov, self.z_mean)


def plan(
    *,
    epsilon: float,
    delta: float,
    clip_norm: float = 1.0,
    calibration: Literal["tight", "classic", "zcdp"] = "tight",
    psd: bool | float = True,
    centre: Literal["declared", "private"] = "declared",
    centre_share: float = 0.1,
    lambda1: float = 0.01,
    rho1: float = 1e-3,
    rho2: float = 1e-3,
    gamma1: float = 1.75,
    gamma2: float = 1.25,
    rho_max: float = 1e16,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    gap_tol: float = 1e-6,
    threshold: float = 0.3,
    neighbouring: str = "replace-one",
) -> CovariancePlan:
    """Validate the public settings of :func:`dp_fed_bnsl` and calibrate its noise, touching no
    data (same parameters, same errors). Sweeps call it for every setting before running any."""
    e = check_epsilon(epsilon, allow_inf=True)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    R = check_real(clip_norm, "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    relation = check_neighbouring(neighbouring)
    check_choice(calibration, "calibration", tuple(ACCOUNTANT))
    floor = _psd_floor(psd)
    check_choice(centre, "centre", ("declared", "private"))
    # validated whatever the centre (a bad value is a mistake even when it is not used); the
    # bounds keep both releases' multipliers z/√share and z/√(1 − share) in the accountants' range
    share = check_real(centre_share, "centre_share", low=1e-6, high=1.0 - 1e-6)
    share = share if centre == "private" else 0.0
    hyper = check_hyperparameters(
        lambda1=lambda1,
        rho1=rho1,
        rho2=rho2,
        gamma1=gamma1,
        gamma2=gamma2,
        rho_max=rho_max,
        max_rounds=max_rounds,
        h_tol=h_tol,
        gap_tol=gap_tol,
        threshold=threshold,
    )
    z_cov, z_mean, spent = _multipliers(e, dl, calibration, share)
    return CovariancePlan(e, dl, R, relation.value, floor, share, hyper, z_cov, z_mean, spent)
