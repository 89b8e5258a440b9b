"""Calibration of one jointly noised integer release under secure aggregation (the RDP and zCDP
formulas: :mod:`dpbnsl.accounting.skellam`).

:func:`calibrate_distributed`: the integer grid, the modulus, and the noise share that reach a
target (ε, δ) without exceeding it, for P participants of whom up to t may drop out or collude.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from dp_accounting import ZCDpEvent
from dp_accounting.dp_event import DpEvent

from .._validation import check_choice, check_int, check_real
from ..mechanisms.distributed import (
    MAX_MODULUS_BITS,
    MAX_SKELLAM_VARIANCE,
    WRAP_BOUND,
    SkellamDpEvent,
    integer_gram_sensitivity,
    integer_grid,
    wrap_probability,
)
from ..mechanisms.releases import CLIP_RANGE
from .compose import LedgerEntry, compose_epsilon, event_rho
from .skellam import ddg_rho

__all__ = [
    "DistributedPlan",
    "calibrate_distributed",
    "calibrate_distributed_rho",
    "max_norm_bound",
    "epsilon_with_shares",
    "NOISES",
]

NOISES = ("skellam", "ddg")
#: the accountant the distributed releases are calibrated and reported under
ACCOUNTANT: Literal["rdp"] = "rdp"


@dataclass(frozen=True)
class DistributedPlan:
    """One jointly noised integer release of the upper triangle of a d × d Gram matrix.

    ``scale`` γ and ``norm_bound`` B define the integer grid (rows clipped to ``clip_norm``);
    ``share`` is each participant's noise share (Skellam: its variance; ``"ddg"``: its σ), sized
    so that ``participants − dropouts`` honest shares carry the whole noise; ``variance`` is the
    per-coordinate variance those honest shares give the sum (in integer units); ``event`` is the
    release's privacy event (under replace-one in one participant's dataset); ``modulus_bits``
    the modular range; ``wrap`` the bound on the probability of a wrap-around when all
    participants' shares reach the sum; ``spent`` ε(δ) under the ``"rdp"`` accountant."""

    noise: str
    participants: int
    dropouts: int
    d: int
    n_total: int
    clip_norm: float
    scale: float
    norm_bound: int
    modulus_bits: int
    share: float
    variance: float
    l2_sensitivity: float
    l1_sensitivity: float
    event: DpEvent
    wrap: float
    spent: float

    @property
    def honest(self) -> int:
        """The shares the guarantee needs in the sum: P − t."""
        return self.participants - self.dropouts

    @property
    def covariance_sd(self) -> float:
        """The noise standard deviation of each entry of the released covariance Σ qqᵀ/(γ²N)."""
        return math.sqrt(self.variance) / (self.scale**2 * self.n_total)


def _event(noise: str, l2: float, l1: float, share: float, honest: int, D: int) -> tuple[DpEvent, float]:
    """(event, total honest variance) of ``honest`` shares of size ``share``."""
    if noise == "skellam":
        v = share * honest
        return SkellamDpEvent(l2, l1, v), v
    return ZCDpEvent(ddg_rho(l2=l2, sigma=share, shares=honest, dimension=D)), share * share * honest


def _epsilon(event: DpEvent, *, delta: float) -> float:
    return compose_epsilon([LedgerEntry("covariance", event, 1)], delta, ACCOUNTANT)


def _calibrate_share(
    noise: str,
    l2: float,
    l1: float,
    honest: int,
    D: int,
    *,
    cost: Callable[[DpEvent], float],
    budget: float,
    sigma: float,
) -> float:
    """The smallest share (on a relative grid of 1e-9) whose release costs at most ``budget``
    (``cost``: ε(δ) or ρ of the event; decreasing in the share), from a Gaussian first guess of
    the total σ."""

    def spent(share: float) -> float:
        return cost(_event(noise, l2, l1, share, honest, D)[0])

    # a discrete Gaussian share has σ ≥ 1/2 (Kairouz et al.'s condition)
    floor = 1e-6 if noise == "skellam" else 0.5
    lo = hi = max(sigma * sigma / honest if noise == "skellam" else sigma / math.sqrt(honest), floor)
    while spent(hi) > budget:
        lo, hi = hi, hi * 2.0
    while spent(lo) <= budget and lo > floor:
        hi, lo = lo, max(lo / 2.0, floor)
    if spent(lo) <= budget:
        return lo
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if spent(mid) <= budget else (mid, hi)
    return hi


def epsilon_with_shares(plan: DistributedPlan, shares: int, *, delta: float) -> float:
    """The ε (at ``delta``) of a participant's statistic when only ``shares`` noise shares protect
    it: the plan's guarantee needs P − t; a coalition of the server and every other participant
    subtracts their shares and leaves one (``shares=1``), so against a coalition larger than the
    declared t the release is this much weaker than its claim."""
    k = check_int(shares, "shares", low=1, high=plan.participants)
    d = plan.d
    event, _ = _event(plan.noise, plan.l2_sensitivity, plan.l1_sensitivity, plan.share, k, d * (d + 1) // 2)
    return _epsilon(event, delta=check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True))


def max_norm_bound(d: int) -> int:
    """The finest grid a plan takes: B ≤ max(2¹⁶, 64·d). The rounding's variance per entry, about
    N·B/(2d), is a fraction N/(4d·z²·B) of the noise's 2z²B² (z = √μ/Δ₂): under 1 % for 10⁴ rows
    at d ≥ 20 and ε ≤ 5, so a finer grid buys little; the cap keeps the shares' Poisson means
    near or below :data:`~dpbnsl.mechanisms.distributed.POISSON_EXACT` (one draw each) at
    moderate ε; at very small ε the plan shrinks B further (see :func:`calibrate_distributed`)."""
    return max(2**16, 64 * int(d))


def calibrate_distributed(
    epsilon: float,
    delta: float,
    *,
    d: int,
    n_total: int,
    participants: int,
    dropouts: int = 0,
    clip_norm: float,
    noise: Literal["skellam", "ddg"] = "skellam",
    modulus_bits: int = 31,
) -> DistributedPlan:
    """Plan one jointly noised release of Σ_k Σ_i q_i q_iᵀ (upper triangle) that is (ε, δ)-DP for
    every record of every participant, against the server and up to ``dropouts`` = t colluding or
    missing participants.

    The modulus M = 2^bits holds the signal (|entry| ≤ N·B) and the noise (all P shares) with a
    wrap-around probability at most :data:`~dpbnsl.mechanisms.distributed.WRAP_BOUND`; the grid
    takes the largest B that allows it (finer grid, smaller rounding error), up to
    :func:`max_norm_bound`, and with Skellam noise small enough that each share stays within
    :data:`~dpbnsl.mechanisms.distributed.MAX_SKELLAM_VARIANCE` (noise ∝ B²). The share is
    calibrated for B's sensitivities by bisection on the ``"rdp"`` accountant's ε(δ), from above:
    ``spent`` ≤ ε always. Raises ``ValueError`` when no grid fits the modulus.
    """
    e = check_real(epsilon, "epsilon", low=1e-6, high=100.0)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    check_choice(noise, "noise", NOISES)
    # Gaussian first guess of the multiplier σ/Δ₂
    z = math.sqrt(2.0 * math.log(1.25 / dl)) / e
    return _plan(
        noise,
        dl,
        z,
        functools.partial(_epsilon, delta=dl),
        e,
        f"ε = {e:g}",
        d=d,
        n_total=n_total,
        participants=participants,
        dropouts=dropouts,
        clip_norm=clip_norm,
        modulus_bits=modulus_bits,
    )


def calibrate_distributed_rho(
    rho: float,
    delta: float,
    *,
    d: int,
    n_total: int,
    participants: int,
    dropouts: int = 0,
    clip_norm: float,
    modulus_bits: int = 31,
) -> DistributedPlan:
    """As :func:`calibrate_distributed`, for a zCDP budget ρ instead of (ε, δ): the distributed
    discrete Gaussian, whose sum is ρ′-zCDP (Kairouz et al. Thm 1) with ρ′ ≤ ``rho``, so that it
    takes a share of a budget split in ρ (DP-Fed-Sparse-BNSL's warm start). ``spent`` is the
    release's own ε(``delta``) under the ``"rdp"`` accountant."""
    r = check_real(rho, "rho", low=0.0, high=1e6, low_open=True)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return _plan(
        "ddg",
        dl,
        1.0 / math.sqrt(2.0 * r),
        lambda event: event_rho(event)[0],
        r,
        f"ρ = {r:g}",
        d=d,
        n_total=n_total,
        participants=participants,
        dropouts=dropouts,
        clip_norm=clip_norm,
        modulus_bits=modulus_bits,
    )


def _plan(
    noise: str,
    dl: float,
    z: float,
    cost: Callable[[DpEvent], float],
    budget: float,
    target: str,
    *,
    d: int,
    n_total: int,
    participants: int,
    dropouts: int,
    clip_norm: float,
    modulus_bits: int,
) -> DistributedPlan:
    """The grid, the modulus and the share for a release of noise multiplier about ``z`` whose
    ``cost`` stays within ``budget`` (``target`` names it in errors)."""
    d = check_int(d, "d", low=1)
    N = check_int(n_total, "n_total", low=1)
    P = check_int(participants, "participants", low=1)
    t = check_int(dropouts, "dropouts", low=0, high=P - 1)
    R = check_real(clip_norm, "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    bits = check_int(modulus_bits, "modulus_bits", low=8, high=MAX_MODULUS_BITS)
    D = d * (d + 1) // 2
    half = float(2 ** (bits - 1) - 1)
    honest = P - t
    # noise of all P shares ≈ z·√2·B·√(P/(P − t)); margin ~9 sd
    B = int(min(half / (N + 9.0 * z * math.sqrt(2.0 * P / honest)), (_EXACT - 1) / N, max_norm_bound(d)))
    for _ in range(200):
        if B <= d:
            raise ValueError(
                f"{bits} modulus bits cannot hold the sum of {N} rows in dimension {d} with the noise "
                f"for {target}: it needs a larger modulus (`modulus_bits`, up to {MAX_MODULUS_BITS}, where "
                "the learner takes it), fewer rows or dimensions, or a larger privacy budget"
            )
        l2, l1 = integer_gram_sensitivity(d=d, norm_bound=B)
        share = _calibrate_share(noise, l2, l1, honest, D, cost=cost, budget=budget, sigma=z * l2)
        event, variance = _event(noise, l2, l1, share, honest, D)
        everyone = variance * P / honest
        wrap = wrap_probability(noise=noise, variance=everyone, room=half - N * B, size=D)
        sampled = noise != "skellam" or share <= MAX_SKELLAM_VARIANCE  # a coarser grid, less noise
        if wrap <= WRAP_BOUND and sampled:
            spent = _epsilon(event, delta=dl)
            grid = integer_grid(clip_norm=R, d=d, norm_bound=B)
            return DistributedPlan(
                noise, P, t, d, N, R, grid.scale, B, bits, share, variance, l2, l1, event, wrap, spent
            )
        B = int(B * 0.97)
    raise ValueError(f"no integer grid fits {bits} modulus bits")  # pragma: no cover


_EXACT = 2.0**53
