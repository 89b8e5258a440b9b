"""Noise calibration: from a target (ε, δ) to noise scales, always on the safe side of the target.

Every function returns noise for which the accounted ε is at most the target (searches keep the
bracket end that satisfies the target, never the midpoint). Noise is returned as *multipliers* of
the sensitivity: the caller multiplies by the Δ of its own release.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import dp_accounting
import numpy as np
from dp_accounting import GaussianDpEvent

from .._validation import check_choice, check_int, check_real
from .ledger import BoundedRangeDpEvent, LedgerEntry, compose_epsilon, event_rho
from .zcdp import epsilon_to_rho, rho_to_epsilon

__all__ = [
    "NoiseScales",
    "LaplaceScales",
    "BudgetSplit",
    "calibrate_gaussian",
    "calibrate_dp_pgcd",
    "calibrate_smoothness",
    "calibrate_dp_pgcd_laplace",
    "split_budget",
    "dp_pgcd_entries",
]


def _target(epsilon, delta) -> tuple[float, float]:
    e = check_real(epsilon, "epsilon", low=0.0, low_open=True)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return e, d


def _gaussian_delta(sigma: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with sensitivity 1 and noise σ (Balle & Wang 2018)."""
    from scipy.stats import norm

    a, b = 0.5 / sigma, epsilon * sigma
    return float(norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b))


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
    - ``"zcdp"``: Δ/√(2ρ) with ρ from the Bun–Steinke inverse (as the seed paper calibrates).

    Examples
    --------
    >>> round(calibrate_gaussian(1.0, 1e-5), 6)
    3.730632
    """
    e, d = _target(epsilon, delta)
    s = check_real(sensitivity, "sensitivity", low=0.0)
    check_choice(method, "method", ("analytic", "classic", "zcdp"))
    if s == 0.0:
        return 0.0
    if method == "classic":
        if e >= 1.0:
            raise ValueError(f"the classic Gaussian calibration holds only for ε < 1; `epsilon` = "
                             f"{epsilon!r} (use method='analytic')")
        return s * math.sqrt(2.0 * math.log(1.25 / d)) / e
    if method == "zcdp":
        z = 1.0 / math.sqrt(2.0 * epsilon_to_rho(e, d, conversion="bun-steinke"))
        return s * _round_up(z, lambda m: rho_to_epsilon(0.5 / (m * m), d,
                                                         conversion="bun-steinke") <= e)
    # the double-precision δ(σ) below cancels to ~1e-12 relative, so start 1e-10 above the
    # root found by dp-accounting and step up until the check passes
    z = float(dp_accounting.get_sigma_gaussian(e, d)) * (1.0 + 1e-10)
    while _gaussian_delta(z, e) > d:
        z *= 1.0 + 1e-10
    return s * z


def _round_up(m: float, ok) -> float:
    """Step ``m`` up by ulps until ``ok(m)``: closed forms can land one ulp over the target."""
    while not ok(m):
        m = math.nextafter(m, math.inf)
    return m


@dataclass(frozen=True)
class NoiseScales:
    """Noise of DP-PGCD relative to the sensitivities (DECISIONS §2).

    ``gumbel_multiplier`` = λ_G/Δ_s (Gumbel scale of the selection over the score sensitivity);
    ``gaussian_multiplier`` = σ/Δ_g (gradient noise over the gradient sensitivity). The two are
    equal by the paper's balancing, so selection and update cost the same ρ per step.
    """

    method: str
    rounds: int
    local_iters: int
    gumbel_multiplier: float
    gaussian_multiplier: float
    rho_per_step: float
    epsilon_zcdp: float
    epsilon_rdp: float
    epsilon: float
    delta: float

    @property
    def steps(self) -> int:
        return self.rounds * self.local_iters

    @property
    def rho_total(self) -> float:
        return 2 * self.steps * self.rho_per_step


def dp_pgcd_entries(multiplier: float, steps: int, label: str = "dp-pgcd") -> list[LedgerEntry]:
    """The ledger entries of ``steps`` DP-PGCD iterations with noise multiplier m: one Gumbel-max
    selection (ε₀ = 2/m bounded range) and one Gaussian release (z = m) per iteration."""
    multiplier = check_real(multiplier, "multiplier", low=0.0, low_open=True)
    steps = check_int(steps, "steps", low=1)
    return [LedgerEntry(f"{label}/select", BoundedRangeDpEvent(2.0 / multiplier), steps),
            LedgerEntry(f"{label}/gradient", GaussianDpEvent(multiplier), steps)]


def calibrate_dp_pgcd(
    epsilon: float,
    delta: float,
    *,
    rounds: int,
    local_iters: int,
    method: Literal["tight", "paper"] = "tight",
    prior: Sequence[LedgerEntry] = (),
) -> NoiseScales:
    """Noise multipliers for T·K DP-PGCD iterations (each a selection and a Gaussian release).

    ``prior`` lists releases already made from the same data (e.g. private smoothness constants);
    the multiplier is then calibrated so that prior + DP-PGCD stays within (ε, δ) — for ``"paper"``
    by giving DP-PGCD the zCDP budget ρ* minus the prior's ρ. A ``ValueError`` says when the prior
    alone exhausts the budget.

    - ``"paper"``: seed 001's Theorem 5.1 exactly: ρ* = (√(ε + ln 1/δ) − √(ln 1/δ))², multiplier
      √(TK/ρ*), so that 2TK·ρ' = ρ* with ρ' = 1/(2m²);
    - ``"tight"``: the smallest multiplier whose composition under the ``"rdp"`` accountant (exact
      bounded-range curve for the selections, CKS conversion) has ε ≤ target, by bisection keeping
      the feasible end; never above the paper's multiplier.

    Examples
    --------
    >>> paper = calibrate_dp_pgcd(1.0, 1e-5, rounds=10, local_iters=10, method="paper")
    >>> tight = calibrate_dp_pgcd(1.0, 1e-5, rounds=10, local_iters=10)
    >>> round(paper.gumbel_multiplier, 1), tight.gumbel_multiplier < 0.85 * paper.gumbel_multiplier
    (69.3, True)
    """
    e, d = _target(epsilon, delta)
    T = check_int(rounds, "rounds", low=1)
    K = check_int(local_iters, "local_iters", low=1)
    check_choice(method, "method", ("tight", "paper"))
    steps = T * K
    prior = list(prior)
    rho_prior = sum(x.count * event_rho(x.event)[0] for x in prior)
    xi_prior = sum(x.count * event_rho(x.event)[1] for x in prior)
    rho_left = epsilon_to_rho(e, d, conversion="bun-steinke") - rho_prior
    if xi_prior > 0 or rho_left <= 0:
        raise ValueError(f"the releases in `prior` (ρ = {rho_prior:.6g}) already spend the whole "
                         f"budget ε = {e:g}, δ = {d:g}; nothing is left for DP-PGCD")
    # The paper's multiplier, stepped up by ulps where the closed form lands just over the target,
    # is the answer for "paper" and the fallback (and upper end) for "tight".
    paper = _round_up(math.sqrt(steps / rho_left),
                      lambda x: compose_epsilon(prior + dp_pgcd_entries(x, steps), d, "zcdp") <= e)
    m = paper
    if method == "tight":
        eps_of = lambda mult: compose_epsilon(prior + dp_pgcd_entries(mult, steps), d,  # noqa
                                              "rdp")
        hi, lo = paper, paper * 0.5
        # The paper's multiplier meets the target under "rdp" too (CKS ≤ Bun–Steinke and the exact
        # selection curve ≤ ε₀²/8); should rounding ever break that, the paper's value stands.
        if eps_of(hi) <= e:
            while eps_of(lo) <= e and lo > 1e-12 * paper:
                hi, lo = lo, lo * 0.5
            while hi - lo > 1e-6 * hi:
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if eps_of(mid) <= e else (mid, hi)
            m = hi
    entries = prior + dp_pgcd_entries(m, steps)
    return NoiseScales(method, T, K, m, m, 0.5 / (m * m),
                       compose_epsilon(entries, d, "zcdp"), compose_epsilon(entries, d, "rdp"),
                       e, d)


def calibrate_smoothness(
    epsilon: float, delta: float, *, d: int, method: Literal["tight", "paper"] = "tight"
) -> float:
    """Noise multiplier σ_a/(X_a/n_k) for privately estimating the d smoothness constants m_a
    (seed 001 Thm D.1: d Gaussian releases, each of sensitivity X_a/n_k under replace-one).

    ``"paper"``: √(d/(2ρ*)) with the Bun–Steinke ρ*. ``"tight"``: d equal Gaussian releases
    compose exactly into one Gaussian of multiplier m/√d, so m = √d · (analytic Gaussian σ).
    """
    e, dl = _target(epsilon, delta)
    dd = check_int(d, "d", low=1)
    check_choice(method, "method", ("tight", "paper"))
    if method == "paper":
        m = math.sqrt(dd / (2.0 * epsilon_to_rho(e, dl, conversion="bun-steinke")))
        return _round_up(m, lambda x: rho_to_epsilon(dd * 0.5 / (x * x), dl,
                                                     conversion="bun-steinke") <= e)
    return math.sqrt(dd) * calibrate_gaussian(e, dl, 1.0, method="analytic")


@dataclass(frozen=True)
class LaplaceScales:
    """The predecessor design (Mangold et al.): Laplace noise for selection (report-noisy-max,
    scale b_s = 2Δ_s/ε₀) and update (b_g = Δ_g/ε₀), each step ε₀-DP, 2TK steps composed by the
    advanced composition theorem. Multipliers are b/Δ."""

    rounds: int
    local_iters: int
    epsilon_per_step: float
    selection_multiplier: float
    update_multiplier: float
    epsilon: float
    delta: float


def calibrate_dp_pgcd_laplace(
    epsilon: float, delta: float, *, rounds: int, local_iters: int
) -> LaplaceScales:
    """Per-step ε₀ and Laplace multipliers of the Laplace-noise DP-PGCD (for comparison only): the
    largest ε₀ with ε₀√(2k ln(1/δ)) + kε₀(e^{ε₀} − 1) ≤ ε for k = 2TK (Dwork, Rothblum & Vadhan
    2010), found by bisection keeping the feasible end."""
    e, d = _target(epsilon, delta)
    T = check_int(rounds, "rounds", low=1)
    K = check_int(local_iters, "local_iters", low=1)
    k = 2 * T * K
    total = lambda e0: e0 * math.sqrt(2 * k * math.log(1 / d)) + k * e0 * math.expm1(e0)  # noqa
    lo, hi = 0.0, e / k + 1.0
    while total(hi) <= e:
        hi *= 2.0
    while hi - lo > 1e-15 + 1e-12 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if total(mid) <= e else (lo, mid)
    return LaplaceScales(T, K, lo, 2.0 / lo, 1.0 / lo, e, d)


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
    e, d = _target(epsilon, delta)
    if not isinstance(shares, Mapping) or not shares:
        raise ValueError(f"`shares` must be a non-empty mapping of part name to weight; got {shares!r}")
    w = {str(k): check_real(v, f"shares[{k!r}]", low=0.0, low_open=True) for k, v in shares.items()}
    total = sum(w.values())
    rho = epsilon_to_rho(e, d, conversion="bun-steinke")
    # shrink the parts by a few ulps so that their sum never rounds above ρ*
    shrink = 1.0 - 4.0 * len(w) * float(np.finfo(float).eps)
    return BudgetSplit(e, d, rho, {k: rho * v / total * shrink for k, v in w.items()})
