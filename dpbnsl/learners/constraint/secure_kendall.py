"""Priv-PC's Kendall test over secure aggregation: one jointly noised statistic per test.

Each participant p computes, for a requested test ``X_i ⊥ X_j | X_S``, the numerator of
:class:`~dpbnsl.learners.constraint.kendall.StratifiedKendall` on its own rows,
``T_p = Σ_s 9 K_s / (2 m_s + 5)`` over its strata, rounds ``γ·T_p`` down to an integer on the public
scale γ, adds its share of Skellam noise and uploads the result modulo 2^bits as a secure share
(:mod:`dpbnsl.federation.secure_sum`). The server reads only the sum and the statistic

    z̃ = (Σ_p ⌊γ T_p⌋ + E) / (γ √w(N)),      N = Σ_p n_p (public),

i.e. the stratified statistic of the pooled rows with the participants as further strata, over the
public normaliser of all N rows, plus one noise E for the pooled data. Under independence its
signal has variance Σ_{p,s} w(m_ps) / w(N) ≤ 1 (w is superadditive), so the server's test is
``|z̃| ≤ z_α √(1 + σ_z²)`` with σ_z the public noise sd of z̃ (noise-aware, as
:mod:`~dpbnsl.learners.constraint.noisy_fisher_z` is for Fisher's z).

**Sensitivity** (replace one row of one participant). Only that participant's ``T_p`` moves, and
by less than Δ = 9 without conditioning and 13.5 with it (the proof in
:mod:`~dpbnsl.learners.constraint.kendall`). For reals x, y with |x − y| < a, ⌊x⌋ − ⌊y⌋ is an
integer below a + 1, so ``⌊γ T_p⌋`` moves by at most ⌈γΔ⌉; one more unit covers the floating-point
rounding of ``T_p``: the integer sensitivity is ``⌈γΔ⌉ + 1`` (ℓ1 = ℓ2, one coordinate per test).

**Privacy.** Every test is one Skellam release (Agarwal, Kairouz & Liu 2021) of that sensitivity.
Every share is the same, sized for the conditional sensitivity (noise sd c times it) whatever the
test in its slot: the participants cannot see each other's requests, so a server that sent one
participant a conditional test and the others unconditional ones in the same slot would otherwise
sum one larger share with smaller ones. An unconditional test is then recorded with its own,
smaller sensitivity and the same noise. A run reserves K
tests up front (``d(d − 1)/2`` of them unconditional at most, the rest conditional), records them
in each participant's ledger before its first share, and c is the smallest on a relative grid of
1e-9 whose K releases compose to ε(δ) ≤ target under the RDP accountant. The shares are sized so
that the P − t honest ones carry the whole noise (t = ``dropouts``, declared in advance); the
trust model is that of the covariance release (:mod:`dpbnsl.mechanisms.distributed`). Adaptive
choice of the tests by the server is covered by adaptive composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..._validation import check_epsilon, check_int, check_real
from ...accounting.compose import LedgerEntry, compose_epsilon
from ...mechanisms.distributed import (
    MAX_MODULUS_BITS,
    MAX_SKELLAM_VARIANCE,
    WRAP_BOUND,
    SkellamDpEvent,
    noisy_share,
    wrap_probability,
)
from .kendall import StratifiedKendall, kendall_weight

__all__ = [
    "default_tests",
    "SecureTestPlan",
    "plan_secure_tests",
    "integer_numerators",
    "batch_shares",
    "KENDALL_BOUND",
    "TEST_KINDS",
]

#: Δ of the numerator T_p: without conditioning, with it (module docstring)
KENDALL_BOUND = (9.0, 13.5)
#: the ledger's names of the two kinds of test
TEST_KINDS = ("kendall tests, unconditional (reserved)", "kendall tests, conditional (reserved)")
#: the finest scale γ a plan takes: the rounding's error, at most 1/γ per participant, is then
#: below 0.2 % of Δ; a coarser grid fits larger N into the modulus
MAX_SCALE = 64.0
_ACCOUNTANT: Literal["rdp"] = "rdp"


def default_tests(d: int) -> int:
    """The default number of reserved tests: 3·d(d − 1)/2, three per pair of variables.

    Chosen on simulated discrete networks (random DAGs with 1.25·d edges, 2–4 states, Dirichlet(0.5)
    CPTs, n = 100,000 rows over 5 participants; d = 20 and 37; three seeds kept apart from every
    reported result; ``experiments/secure_pc_tests.py``), with K = 2, 3, 4, 6, 8 per pair and at
    most 1, 2, 4 or all candidate sets per edge and level (the server's ``max_sets``). Averaged
    over the five K, the mean skeleton F1 over d = 20, 37 and ε = 1, 10 was 0.809, 0.823, 0.821
    and 0.797 for the four caps: two sets is the default. With two sets it was 0.845, 0.838,
    0.828, 0.815, 0.791 for K = 2, 3, 4, 6, 8 per pair; K = 2 ran out of tests in 4 of its 12
    runs, K = 3 in none, so K = 3 is the default: the fewest tests that let PC finish on every
    simulated network, within sampling error of the best.
    """
    return 3 * d * (d - 1) // 2


@dataclass(frozen=True)
class SecureTestPlan:
    """The public calibration of a run of jointly noised Kendall tests.

    ``tests`` = K reserved, ``unconditional`` of them with an empty conditioning set;
    ``scale`` γ; ``sensitivity`` the integer sensitivities (unconditional, conditional);
    ``multiplier`` c (noise sd over the conditional sensitivity); ``share`` each participant's
    Skellam variance on every slot; ``events`` the two kinds of release as the P − t honest shares
    protect them; ``accounted``
    ε(δ) of all K under the RDP accountant (≤ ``epsilon``); ``wrap`` the bound on the
    probability that any of the K sums wraps around the modulus 2^``modulus_bits``."""

    epsilon: float
    delta: float
    participants: int
    dropouts: int
    n_total: int
    tests: int
    unconditional: int
    scale: float
    sensitivity: tuple[int, int]
    multiplier: float
    share: float
    events: tuple[SkellamDpEvent, SkellamDpEvent]
    modulus_bits: int
    wrap: float
    accounted: float

    @property
    def honest(self) -> int:
        """The shares the guarantee needs in each sum: P − t."""
        return self.participants - self.dropouts

    @property
    def conditional(self) -> int:
        return self.tests - self.unconditional

    def entries(self) -> list[LedgerEntry]:
        """Every reserved test, as the ledger records them before the first share."""
        counts = (self.unconditional, self.conditional)
        return [LedgerEntry(k, e, m) for k, e, m in zip(TEST_KINDS, self.events, counts) if m]

    def z_noise_sd(self, *, contributors: int, rows: int) -> float:
        """The sd of the noise of z̃ when ``contributors`` shares holding ``rows`` rows are summed."""
        v = self.share * contributors
        return math.sqrt(v) / (self.scale * math.sqrt(kendall_weight(rows)))


def _events(
    c: float, sens: tuple[int, int], honest: int
) -> tuple[float, tuple[SkellamDpEvent, SkellamDpEvent]]:
    share = (c * sens[1]) ** 2 / honest
    v = share * honest
    return share, (
        SkellamDpEvent(float(sens[0]), float(sens[0]), v),
        SkellamDpEvent(float(sens[1]), float(sens[1]), v),
    )


def _spent(c: float, sens: tuple[int, int], honest: int, counts: tuple[int, int], delta: float) -> float:
    _, events = _events(c, sens, honest)
    entries = [LedgerEntry(k, e, m) for k, e, m in zip(TEST_KINDS, events, counts) if m]
    return compose_epsilon(entries, delta, _ACCOUNTANT)


def plan_secure_tests(
    *,
    epsilon: float,
    delta: float,
    participants: int,
    n_total: int,
    d: int,
    tests: int,
    dropouts: int = 0,
    modulus_bits: int = 31,
    unconditional: int | None = None,
) -> SecureTestPlan:
    """Calibrate K = ``tests`` jointly noised Kendall tests on N = ``n_total`` pooled rows of
    ``participants`` (P, up to ``dropouts`` = t missing or colluding) to (ε, δ) (module
    docstring): the multiplier by bisection from above, so ``accounted`` ≤ ε always; the scale γ
    the largest up to :data:`MAX_SCALE` whose sums fit the modulus with a wrap-around probability
    at most :data:`~dpbnsl.mechanisms.distributed.WRAP_BOUND`. ``unconditional`` of the K are
    reserved for tests with an empty conditioning set (default: min(K, d(d − 1)/2), PC's level 0).
    Raises ``ValueError`` when no scale
    γ ≥ 1 fits (a larger ``modulus_bits``, fewer rows or a larger budget is needed)."""
    e = check_epsilon(epsilon)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    P = check_int(participants, "participants", low=1)
    t = check_int(dropouts, "dropouts", low=0, high=P - 1)
    N = check_int(n_total, "n_total", low=2 * P)
    d = check_int(d, "d", low=2)
    K = check_int(tests, "tests", low=1, high=10**7)
    bits = check_int(modulus_bits, "modulus_bits", low=8, high=MAX_MODULUS_BITS)
    honest = P - t
    u = (
        min(K, d * (d - 1) // 2)
        if unconditional is None
        else check_int(unconditional, "unconditional", low=0, high=K)
    )
    counts = (u, K - u)
    half = float(2 ** (bits - 1) - 1)
    gamma = MAX_SCALE
    while gamma >= 1.0:
        sens = (math.ceil(gamma * KENDALL_BOUND[0]) + 1, math.ceil(gamma * KENDALL_BOUND[1]) + 1)
        # a Gaussian first guess of c, then bisection on the accountant's ε(δ)
        hi = math.sqrt(2.0 * K * math.log(1.25 / dl)) / e + 1.0
        while _spent(hi, sens, honest, counts, dl) > e:
            hi *= 2.0
            if hi > 1e12:
                raise ValueError(f"no noise reaches ε = {e:g} for {K} tests")  # pragma: no cover
        lo = hi / 2.0
        while lo > 1e-9 and _spent(lo, sens, honest, counts, dl) <= e:
            hi, lo = lo, lo / 2.0
        while hi - lo > 1e-9 * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if _spent(mid, sens, honest, counts, dl) <= e else (mid, hi)
        share, events = _events(hi, sens, honest)
        # the signal: |⌊γ T_p⌋| ≤ γ·9 n_p/4 + 1 (|K_s| ≤ m(m − 1)/2), summed over the participants
        room = half - (gamma * 9.0 * N / 4.0 + P)
        everyone = share * P
        wrap = wrap_probability(noise="skellam", variance=everyone, room=room, size=K)
        if wrap <= WRAP_BOUND and share <= MAX_SKELLAM_VARIANCE:
            accounted = _spent(hi, sens, honest, counts, dl)
            return SecureTestPlan(
                e, dl, P, t, N, K, counts[0], gamma, sens, hi, share, events, bits, wrap, accounted
            )
        gamma *= 0.9
    raise ValueError(
        f"{bits} modulus bits cannot hold the sum of {N} rows' Kendall numerators with the noise for "
        f"{K} tests at ε = {e:g} (or the noise exceeds the sampler's range): it needs a larger "
        f"modulus (`modulus_bits` in Python, up to {MAX_MODULUS_BITS}; Flower's SecAgg+ carries 31), "
        "fewer rows, or a larger budget"
    )


def batch_shares(values: np.ndarray, plan: SecureTestPlan, *, rng: np.random.Generator) -> np.ndarray:
    """One participant's upload for a batch: its integer numerators plus one Skellam share of the
    plan's variance on every slot, as residues modulo 2^bits (the protocol's and the audit's)."""
    return noisy_share(values, noise="skellam", share=plan.share, bits=plan.modulus_bits, rng=rng)


def integer_numerators(
    ci: StratifiedKendall, tests: Sequence[tuple[int, int, tuple[int, ...]]], scale: float
) -> np.ndarray:
    """⌊γ T_p⌋ of every test on one participant's rows (int64)."""
    norm = math.sqrt(kendall_weight(ci.n))
    out = np.empty(len(tests), dtype=np.int64)
    for r, (i, j, S) in enumerate(tests):
        out[r] = math.floor(scale * ci.z(i, j, S) * norm)
    return out
