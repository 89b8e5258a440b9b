"""An ε estimate from Gaussians fitted to canary scores (Andrew et al., ICLR 2024).

Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar ("One-shot empirical privacy estimation for
federated learning") insert canaries with random directions into one run, score each by the cosine
of its direction with the released model, fit one normal distribution to the scores of the canaries
that were inserted and one to those that were not, and report the ε(δ) of the mechanism that
outputs a draw of one of the two normals. It is an *estimate*, not a bound: it has no failure
probability and extrapolates the fitted tails. Its assumption is that the scores are normal within
each group (for a Gaussian release scored linearly they are exactly) and that the canaries are
independent draws.

The ε(δ) of a pair of normals P = N(m₁, s₁²) and Q = N(m₀, s₀²) is computed exactly: the hockey-stick
divergence P(A) − e^ε Q(A) is maximised by A = {x : ln p(x)/q(x) > ε}, and ln p/q is a quadratic
in x, so A is an interval, the complement of one, or a half-line, whose masses are normal tails.
δ(ε) is the larger of the two directions' divergences; ε(δ) is found by bisection (δ(ε) decreases
in ε). With s₀ = s₁ it is the ε(δ) of μ-GDP with μ = |m₁ − m₀|/s.

The two fitted s.d.s differ by sampling noise even when the release is a pure shift (a Gaussian
mechanism scored linearly), and at small δ a variance ratio of 1 ± 3 % adds a quadratic term to the
privacy loss that raises ε(δ) markedly (about +0.5 at ε = 4 with 1,200 scores a side). The estimate
therefore also reports the shift model's reading: μ̂ = (m₁ − m₀)/s with the pooled s.d., and the
ε(δ) of μ̂-GDP (``mu`` and ``epsilon_shift``), which is what a Gaussian mechanism's scores fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .._validation import check_real

__all__ = ["GaussianFitEstimate", "gaussian_fit_epsilon", "normal_pair_delta", "normal_pair_epsilon"]

_EPS_MAX = 1000.0  # beyond it the pair is reported as not (ε, δ)-close for any finite ε


@dataclass(frozen=True)
class GaussianFitEstimate:
    """Output of :func:`gaussian_fit_epsilon`: the fitted normals (sample mean and standard
    deviation of the scores of the canaries inserted, ``in``, and not inserted, ``out``), the
    ε(``delta``) of the pair (``epsilon``), and the shift model's μ̂ and ε(δ) of μ̂-GDP
    (``mu``, ``epsilon_shift``; module docstring). Estimates: no confidence level."""

    epsilon: float
    mu: float
    epsilon_shift: float
    delta: float
    mean_in: float
    sd_in: float
    mean_out: float
    sd_out: float
    n_in: int
    n_out: int
    method: str = "andrew-et-al-2024 (Gaussian fit)"


def _log_mass(lo: float, hi: float, m: float, s: float) -> float:
    """ln P[lo < X < hi] for X ~ N(m, s²), accurate far in either tail (−∞ for an empty set)."""
    a, b = (lo - m) / s, (hi - m) / s
    if not a < b:
        return -math.inf
    if a > 0:  # both in the upper tail: ln(Φ(−a) − Φ(−b))
        big, small = float(special.log_ndtr(-a)), float(special.log_ndtr(-b))
    elif b < 0:  # both in the lower tail: ln(Φ(b) − Φ(a))
        big, small = float(special.log_ndtr(b)), float(special.log_ndtr(a))
    else:
        return math.log(float(special.ndtr(b) - special.ndtr(a)))
    return big + math.log1p(-math.exp(small - big)) if small < big else -math.inf


def _region(m1: float, s1: float, m0: float, s0: float, eps: float) -> list[tuple[float, float]]:
    """The intervals where ln N(x; m1, s1²) − ln N(x; m0, s0²) > eps."""
    a = 0.5 / s0**2 - 0.5 / s1**2
    b = m1 / s1**2 - m0 / s0**2
    c = -0.5 * m1**2 / s1**2 + 0.5 * m0**2 / s0**2 + math.log(s0 / s1) - eps
    inf = math.inf
    if abs(a) <= 1e-12 * (abs(b) + abs(c) + 1.0 / s0**2):  # linear (equal variances)
        if b == 0.0:
            return [(-inf, inf)] if c > 0 else []
        x = -c / b
        return [(x, inf)] if b > 0 else [(-inf, x)]
    disc = b * b - 4.0 * a * c
    if disc <= 0.0:  # no sign change: everywhere (a > 0) or nowhere (a < 0)
        return [(-inf, inf)] if a > 0 else []
    r = math.sqrt(disc)
    x1, x2 = sorted(((-b - r) / (2.0 * a), (-b + r) / (2.0 * a)))
    return [(-inf, x1), (x2, inf)] if a > 0 else [(x1, x2)]


def _log_sum(logs: list[float]) -> float:
    """ln Σ e^x over at most two terms, without overflow or underflow."""
    top = max(logs)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(x - top) for x in logs))


def _divergence(m1: float, s1: float, m0: float, s0: float, eps: float) -> float:
    """The hockey-stick divergence sup_A P(A) − e^ε Q(A), P = N(m1, s1²), Q = N(m0, s0²), with the
    masses in logs (Q's can be far below the smallest float while e^ε·Q(A) is not)."""
    regions = _region(m1, s1, m0, s0, eps)
    if not regions:
        return 0.0
    log_p = _log_sum([_log_mass(lo, hi, m1, s1) for lo, hi in regions])
    log_q = _log_sum([_log_mass(lo, hi, m0, s0) for lo, hi in regions])
    if log_p == -math.inf:
        return 0.0
    # P(A) − e^ε Q(A) = P(A)·(1 − e^{ε + ln Q(A) − ln P(A)})
    gap = eps + log_q - log_p
    return 0.0 if gap >= 0.0 else math.exp(log_p) * -math.expm1(gap)


def normal_pair_delta(m1: float, s1: float, m0: float, s0: float, epsilon: float) -> float:
    """δ(ε) of the pair N(m1, s1²), N(m0, s0²): the larger divergence of the two directions."""
    _check_pair(m1, s1, m0, s0)
    e = check_real(epsilon, "epsilon", low=0.0)
    return _delta(m1, s1, m0, s0, e)


def _check_pair(m1: float, s1: float, m0: float, s0: float) -> None:
    for name, v in (("m1", m1), ("m0", m0)):
        check_real(v, name)
    for name, v in (("s1", s1), ("s0", s0)):
        check_real(v, name, low=0.0, low_open=True)


def _delta(m1: float, s1: float, m0: float, s0: float, epsilon: float) -> float:
    return max(_divergence(m1, s1, m0, s0, epsilon), _divergence(m0, s0, m1, s1, epsilon))


def normal_pair_epsilon(m1: float, s1: float, m0: float, s0: float, delta: float) -> float:
    """The least ε ≥ 0 with δ(ε) ≤ ``delta`` for the pair (∞ beyond ε = 1000)."""
    _check_pair(m1, s1, m0, s0)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    # ε is invariant under x ↦ (x − m0)/S: work where the larger s.d. is 1 and m0 = 0
    S = max(s0, s1)
    if min(s0, s1) < 1e-100 * S:
        raise ValueError(f"the standard deviations {s1!r} and {s0!r} differ by more than a factor 1e100")
    with np.errstate(over="ignore"):
        shift = (m1 - m0) / S
    if not abs(shift) <= 1e6:  # a million standard deviations apart: ε(δ) is far beyond 1000
        return math.inf
    m1, s1, m0, s0 = shift, s1 / S, 0.0, s0 / S
    if _delta(m1, s1, m0, s0, 0.0) <= dl:
        return 0.0
    if _delta(m1, s1, m0, s0, _EPS_MAX) > dl:
        return math.inf
    lo, hi = 0.0, 1.0
    while _delta(m1, s1, m0, s0, hi) > dl:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-10 * max(hi, 1.0):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _delta(m1, s1, m0, s0, mid) > dl else (lo, mid)
    return hi


def gaussian_fit_epsilon(scores_in: Any, scores_out: Any, *, delta: float) -> GaussianFitEstimate:
    """Andrew et al.'s estimate (module docstring) from the scores of the canaries inserted
    (``scores_in``) and not inserted (``scores_out``), at least two finite scores each, neither
    group constant."""
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    groups = []
    for name, s in (("scores_in", scores_in), ("scores_out", scores_out)):
        arr = np.asarray(s, dtype=float)
        if arr.ndim != 1 or arr.size < 2 or not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}` must be a 1-D array of at least two finite scores")
        sd = float(np.std(arr, ddof=1))
        if not sd > 0.0:
            raise ValueError(f"`{name}` is constant: a normal cannot be fitted to it")
        groups.append((float(np.mean(arr)), sd, arr.size))
    (m1, s1, n1), (m0, s0, n0) = groups
    pooled = math.sqrt(((n1 - 1) * s1 * s1 + (n0 - 1) * s0 * s0) / (n1 + n0 - 2))
    mu = (m1 - m0) / pooled
    return GaussianFitEstimate(
        epsilon=normal_pair_epsilon(m1, s1, m0, s0, dl),
        mu=mu,
        epsilon_shift=normal_pair_epsilon(mu, 1.0, 0.0, 1.0, dl),
        delta=dl,
        mean_in=m1,
        sd_in=s1,
        mean_out=m0,
        sd_out=s0,
        n_in=n1,
        n_out=n0,
    )
