"""Sampler checks: the package's random draws against their exact distributions.

- :func:`check_selection_sampler`: draws of the exponential mechanism P(j) ∝ exp(s_j/λ) (the
  two-level :class:`~dpbnsl.mechanisms.ColumnwiseExponentialMechanism` DP-PGCD uses, or
  :func:`~dpbnsl.mechanisms.gumbel_max`) against the exact softmax, by a χ² goodness-of-fit test;
- :func:`check_gaussian_sampler`: releases of :func:`~dpbnsl.mechanisms.gaussian_mechanism` of a
  fixed value against N(value, σ²): mean, variance and a Kolmogorov–Smirnov test.

Both return frozen results with p-values and ``passed`` at level ``alpha``: a correct sampler
fails with probability at most ``alpha``; with a fixed seed the outcome is deterministic.
A ``sampler`` callable replaces the package's sampler (negative controls, other samplers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy import special, stats

from .._validation import ArrayLike, as_generator, check_choice, check_int, check_real
from ..mechanisms import ColumnwiseExponentialMechanism, gaussian_mechanism, gumbel_max

__all__ = [
    "SelectionSamplerCheck",
    "GaussianSamplerCheck",
    "check_selection_sampler",
    "check_gaussian_sampler",
    "softmax",
    "pooled_chi2",
]

MIN_EXPECTED = 5.0  # pool cells until every expected count reaches this (Cochran's rule)


@dataclass(frozen=True)
class SelectionSamplerCheck:
    """Result of :func:`check_selection_sampler`: χ² ``statistic`` on ``dof`` = ``cells`` − 1
    degrees of freedom over the pooled cells, its ``pvalue``, ``passed`` = ``pvalue ≥ alpha``.
    ``impossible`` counts draws of zero-probability entries (any fails the check);
    ``max_deviation`` is max_j |count_j/draws − p_j| over the unpooled entries."""

    sampler: str
    draws: int
    statistic: float
    dof: int
    pvalue: float
    alpha: float
    passed: bool
    cells: int
    impossible: int
    max_deviation: float


@dataclass(frozen=True)
class GaussianSamplerCheck:
    """Result of :func:`check_gaussian_sampler`. ``mean`` must lie within ``mean_tolerance`` of
    ``value`` and ``variance`` (ddof 1) inside ``variance_interval``; ``pvalues`` holds the
    two-sided p-values of the mean, variance and KS tests (each at level α/3)."""

    sampler: str
    sigma: float
    value: float
    draws: int
    mean: float
    mean_tolerance: float
    variance: float
    variance_interval: tuple[float, float]
    ks_statistic: float
    pvalues: Mapping[str, float]
    alpha: float
    passed: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "pvalues", MappingProxyType(dict(self.pvalues)))


def softmax(scores: ArrayLike, scale: float) -> np.ndarray:
    """Exact P(j) ∝ exp(s_j/λ) over the flattened ``scores`` (−∞ entries get probability 0)."""
    logits = np.asarray(scores, float).ravel() / scale
    return np.exp(logits - special.logsumexp(logits))


def pooled_chi2(
    counts: ArrayLike, probs: ArrayLike, *, min_expected: float = MIN_EXPECTED
) -> tuple[float, int, int]:
    """Pearson's χ² of ``counts`` against ``probs`` (> 0), cells pooled in increasing order of
    expected count until each pool expects ≥ ``min_expected`` (a short remainder joins the last
    pool). Returns (statistic, dof, pools); one pool gives (0, 0, 1), nothing to test."""
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    order = np.argsort(probs, kind="stable")
    expected = probs[order] * counts.sum()
    pools, start, acc = [], 0, 0.0
    for k, e in enumerate(expected):
        acc += e
        if acc >= min_expected:
            pools.append((start, k + 1))
            start, acc = k + 1, 0.0
    if start < expected.size:
        pools = pools[:-1] + [(pools[-1][0] if pools else 0, expected.size)]
    obs = np.array([counts[order][a:b].sum() for a, b in pools])
    exp = np.array([expected[a:b].sum() for a, b in pools])
    return float(((obs - exp) ** 2 / exp).sum()), len(pools) - 1, len(pools)


def _columnwise(scores: np.ndarray, *, scale: float, draws: int, rng: np.random.Generator) -> np.ndarray:
    sampler = ColumnwiseExponentialMechanism(scores, sensitivity=1.0, scale=scale)
    return np.array([sampler.sample(rng).value for _ in range(draws)])


def _gumbel(scores: np.ndarray, *, scale: float, draws: int, rng: np.random.Generator) -> np.ndarray:
    return np.array([gumbel_max(scores, sensitivity=1.0, scale=scale, rng=rng).value for _ in range(draws)])


_SELECTION = {"columnwise": _columnwise, "gumbel-max": _gumbel}


def check_selection_sampler(
    *,
    scores: ArrayLike | None = None,
    d: int = 5,
    scale: float = 1.0,
    draws: int = 20_000,
    sampler: str | Callable = "columnwise",
    alpha: float = 1e-3,
    rng: np.random.Generator | int | None = None,
) -> SelectionSamplerCheck:
    """χ² goodness of fit of a selection sampler's draws against the exact softmax.

    Under the null the pooled counts are multinomial with every expected count ≥ 5, so Pearson's
    statistic is close to χ² with (pools − 1) degrees of freedom; the check passes when its
    p-value is ≥ ``alpha``. A draw of a zero-probability entry (score −∞) fails at once.

    Parameters
    ----------
    scores : array of shape (d, d), optional
        Scores s_ab; default: N(0, 1) entries from ``rng`` with a −∞ diagonal (DP-PGCD's layout).
    d : int
        Side of the default scores (≥ 2).
    scale : float
        λ > 0, the mechanism's scale.
    draws : int
        Number of draws (each one call of the sampler).
    sampler : {"columnwise", "gumbel-max"} or callable
        The package's two-level sampler or Gumbel-max; a callable
        ``sampler(scores, *, scale, draws, rng)`` returns ``draws`` flat indices.
    alpha : float in (0, 1)
    rng : None, int or Generator
    """
    rng = as_generator(rng)
    lam = check_real(scale, "scale", low=0.0, low_open=True)
    draws = check_int(draws, "draws", low=1)
    alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    if callable(sampler):
        name, draw = getattr(sampler, "__name__", "custom"), sampler
    else:
        name = check_choice(sampler, "sampler", _SELECTION)
        draw = _SELECTION[name]
    if scores is None:
        scores = rng.standard_normal((check_int(d, "d", low=2),) * 2)
        np.fill_diagonal(scores, -np.inf)
    s = np.array(scores, dtype=float)
    if s.ndim != 2 or np.isnan(s).any() or np.isposinf(s).any() or not np.isfinite(s).any():
        raise ValueError(
            "`scores` must be a 2-dimensional array of finite scores or -inf, with "
            f"at least one finite entry; got {scores!r}"
        )
    p = softmax(s, lam)
    picks = np.asarray(draw(s, scale=lam, draws=draws, rng=rng), dtype=np.int64).ravel()
    if picks.size != draws or picks.min() < 0 or picks.max() >= p.size:
        raise ValueError(
            f"`sampler` must return {draws} flat indices in [0, {p.size}); got "
            f"{picks.size} in [{picks.min()}, {picks.max()}]"
        )
    counts = np.bincount(picks, minlength=p.size)
    impossible = int(counts[p == 0].sum())
    deviation = float(np.max(np.abs(counts / draws - p)))
    if impossible:
        stat, dof, pools = math.inf, 0, 0
        pvalue = 0.0
    else:
        stat, dof, pools = pooled_chi2(counts[p > 0], p[p > 0])
        pvalue = float(stats.chi2.sf(stat, dof)) if dof > 0 else 1.0
    return SelectionSamplerCheck(
        name, draws, stat, dof, pvalue, alpha, pvalue >= alpha, pools, impossible, deviation
    )


def _gaussian(values: np.ndarray, *, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return gaussian_mechanism(values, sensitivity=1.0, sigma=sigma, rng=rng).value


def check_gaussian_sampler(
    *,
    sigma: float,
    draws: int,
    value: float = 0.0,
    sampler: str | Callable = "gaussian-mechanism",
    alpha: float = 1e-3,
    rng: np.random.Generator | int | None = None,
) -> GaussianSamplerCheck:
    """Mean, variance and distribution of ``draws`` Gaussian releases of ``value`` against
    N(value, σ²); three tests at level α/3 each (Bonferroni), so a correct sampler fails with
    probability ≤ α.

    Tolerances, from the exact sampling distributions of n i.i.d. N(μ, σ²) draws:

    - mean: x̄ ~ N(μ, σ²/n) exactly, so |x̄ − μ| ≤ z_{1−α/6}·σ/√n with probability 1 − α/3;
    - variance: (n − 1)s²/σ² ~ χ²_{n−1} exactly (Cochran), so s² lies in
      σ²·[χ²_{n−1}(α/6), χ²_{n−1}(1 − α/6)]/(n − 1) with probability 1 − α/3 (≈ σ²(1 ± z√(2/n)));
    - shape: the Kolmogorov–Smirnov statistic against the N(μ, σ²) cdf is distribution-free
      under the null (scipy's exact or asymptotic Kolmogorov distribution): it catches a
      sampler with the right two moments and the wrong law (e.g. Laplace: excess kurtosis 3).

    Parameters
    ----------
    sigma : float > 0
    draws : int ≥ 2
        Releases, drawn in one call of the sampler on an array of ``draws`` copies of ``value``.
    value : float
        The released statistic.
    sampler : "gaussian-mechanism" or callable
        :func:`~dpbnsl.mechanisms.gaussian_mechanism`, or ``sampler(values, *, sigma, rng)``
        returning an array of releases.
    alpha : float in (0, 1)
    rng : None, int or Generator
    """
    rng = as_generator(rng)
    s = check_real(sigma, "sigma", low=0.0, low_open=True)
    n = check_int(draws, "draws", low=2)
    mu = check_real(value, "value")
    alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    if callable(sampler):
        name, draw = getattr(sampler, "__name__", "custom"), sampler
    else:
        name, draw = check_choice(sampler, "sampler", ("gaussian-mechanism",)), _gaussian
    x = np.asarray(draw(np.full(n, mu), sigma=s, rng=rng), dtype=float).ravel()
    if x.size != n:
        raise ValueError(f"`sampler` must return {n} releases; got {x.size}")
    level = alpha / 3.0
    mean, var = float(x.mean()), float(x.var(ddof=1))
    tol = float(stats.norm.isf(level / 2.0)) * s / math.sqrt(n)
    q = (n - 1) * var / s**2
    chi = stats.chi2(n - 1)
    interval = (float(s * s * chi.ppf(level / 2.0) / (n - 1)), float(s * s * chi.isf(level / 2.0) / (n - 1)))
    ks = stats.kstest(x, stats.norm(mu, s).cdf)
    pvalues = {
        "mean": float(2.0 * stats.norm.sf(abs(mean - mu) * math.sqrt(n) / s)),
        "variance": float(min(1.0, 2.0 * min(chi.cdf(q), chi.sf(q)))),
        "ks": float(ks.pvalue),
    }
    return GaussianSamplerCheck(
        name,
        s,
        mu,
        n,
        mean,
        tol,
        var,
        interval,
        float(ks.statistic),
        pvalues,
        alpha,
        min(pvalues.values()) >= level,
    )
