"""Noise calibration: from a target (ε, δ) to noise scales, always on the safe side of the target.

Every function returns noise for which the accounted ε is at most the target (searches keep the
bracket end that satisfies the target, never the midpoint). Noise is returned as *multipliers* of
the sensitivity: the caller multiplies by the Δ of its own release.

This module: single Gaussian releases, the smoothness constants and zCDP budget splits; DP-PGCD's
T·K-step calibration is in :mod:`dpbnsl.accounting.calibrate_pgcd`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import dp_accounting
import numpy as np

from .._validation import check_choice, check_epsilon, check_int, check_real
from .gaussian import certified
from .zcdp import epsilon_to_rho, rho_to_epsilon

__all__ = [
    "BudgetSplit",
    "calibrate_gaussian",
    "calibrate_smoothness",
    "split_budget",
]


def check_target(epsilon: float, delta: float) -> tuple[float, float]:
    e = check_epsilon(epsilon)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return e, d


def calibrate_gaussian(
    epsilon: float,
    delta: float,
    sensitivity: float = 1.0,
    *,
    method: Literal["analytic", "classic", "zcdp"] = "analytic",
) -> float:
    """σ of a single Gaussian mechanism with ℓ2-sensitivity Δ that is (ε, δ)-DP.

    - ``"analytic"``: the smallest such σ (Balle & Wang 2018), via dp-accounting's
      ``get_sigma_gaussian``, then checked against the exact δ(σ) and nudged up if needed;
    - ``"classic"``: Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1), valid only for ε < 1;
    - ``"zcdp"``: Δ/√(2ρ) with ρ from the Bun–Steinke inverse (as Fed-Sparse-BNSL calibrates).

    Examples
    --------
    >>> round(calibrate_gaussian(1.0, 1e-5), 6)
    3.730632
    """
    e, dl = check_target(epsilon, delta)
    s = check_real(sensitivity, "sensitivity", low=0.0)
    check_choice(method, "method", ("analytic", "classic", "zcdp"))
    if s == 0.0:
        return 0.0
    if method == "classic":
        if e >= 1.0:
            raise ValueError(
                f"the classic Gaussian calibration holds only for ε < 1; `epsilon` = "
                f"{epsilon!r} (use method='analytic')"
            )
        return s * math.sqrt(2.0 * (math.log(1.25) - math.log(dl))) / e  # 1.25/δ may overflow
    if method == "zcdp":
        z = 1.0 / math.sqrt(2.0 * epsilon_to_rho(e, dl, conversion="bun-steinke"))
        return s * round_up(z, lambda m: rho_to_epsilon(0.5 / (m * m), dl, conversion="bun-steinke") <= e)
    # start 1e-10 above the root found by dp-accounting and step up until the exact profile,
    # with its rounding-error bound, certifies δ(ε) ≤ δ
    z = float(dp_accounting.get_sigma_gaussian(e, dl)) * (1.0 + 1e-10)
    step = 1e-10
    while not certified(1.0 / z, e, dl):
        z *= 1.0 + step
        step *= 2.0
    return s * z


def round_up(m: float, ok: Callable[[float], bool]) -> float:
    """Step ``m`` up until ``ok(m)``: closed forms can land an ulp or a few over the target. The
    steps start at one ulp and double, so the loop ends after a few dozen tries at worst."""
    step = 0.0
    while not ok(m):
        step = max(2.0 * step, math.ulp(m))
        m += step
    return m


def calibrate_smoothness(
    epsilon: float, delta: float, *, d: int, method: Literal["tight", "paper"] = "tight"
) -> float:
    """Noise multiplier σ_a/(X_a/n_k) for privately estimating the d smoothness constants m_a
    (Fed-Sparse-BNSL Thm D.1: d Gaussian releases, each of sensitivity X_a/n_k under replace-one).

    ``"paper"``: √(d/(2ρ*)) with the Bun–Steinke ρ*. ``"tight"``: d equal Gaussian releases
    compose exactly into one Gaussian of multiplier m/√d, so m = √d · (analytic Gaussian σ).
    """
    e, dl = check_target(epsilon, delta)
    dd = check_int(d, "d", low=1)
    check_choice(method, "method", ("tight", "paper"))
    if method == "paper":
        m = math.sqrt(dd / (2.0 * epsilon_to_rho(e, dl, conversion="bun-steinke")))
        return round_up(m, lambda x: rho_to_epsilon(dd * 0.5 / (x * x), dl, conversion="bun-steinke") <= e)
    return math.sqrt(dd) * calibrate_gaussian(e, dl, 1.0, method="analytic")


@dataclass(frozen=True)
class BudgetSplit:
    """A zCDP budget ρ* (Bun–Steinke inverse of the target) shared among named parts."""

    epsilon: float
    delta: float
    rho_total: float
    rho: Mapping[str, float]


def split_budget(epsilon: float, delta: float, shares: Mapping[str, float]) -> BudgetSplit:
    """Split the zCDP budget of (ε, δ) among parts in proportion to ``shares``, e.g.
    ``{"smoothness": 0.1, "centring": 0.1, "dp-pgcd": 0.8}``. zCDP composes additively, so parts
    calibrated to their ρ compose to at most ε at δ (Bun–Steinke).

    Examples
    --------
    >>> s = split_budget(1.0, 1e-5, {"smoothness": 1, "dp-pgcd": 3})
    >>> round(s.rho["dp-pgcd"] / s.rho_total, 2)
    0.75
    """
    e, dl = check_target(epsilon, delta)
    if not isinstance(shares, Mapping) or not shares:
        raise ValueError(f"`shares` must be a non-empty mapping of part name to weight; got {shares!r}")
    w = {str(k): check_real(v, f"shares[{k!r}]", low=0.0, low_open=True) for k, v in shares.items()}
    total = sum(w.values())
    rho = epsilon_to_rho(e, dl, conversion="bun-steinke")
    # shrink the parts by a few ulps so that their sum never rounds above ρ*
    shrink = 1.0 - 4.0 * len(w) * float(np.finfo(float).eps)
    return BudgetSplit(e, dl, rho, {k: rho * v / total * shrink for k, v in w.items()})
