"""A lower bound on the bounded-range parameter ε₀ of a selection, from threshold tests.

A mechanism is ε₀-bounded-range (Durfee & Rogers 2019; Dong, Durfee & Rogers 2020) when, for
every pair of neighbouring inputs, the privacy loss L(o) = ln P′(o)/P(o) of its outputs spans an
interval of width at most ε₀: sup L − inf L ≤ ε₀. The exponential mechanism with scale λ on scores
of sensitivity Δ is 2Δ/λ-bounded-range; this is the event DP-PGCD's selection step records
(:class:`~dpbnsl.mechanisms.BoundedRangeDpEvent`) and what its accounting composes.

Both distributions sum to one, so sup L ≥ 0 ≥ inf L. Any set S of outputs has
P′(S) ≤ e^{sup L} P(S), and any set S′ has P(S′) ≤ e^{−inf L} P′(S′); in the rates of threshold
tests (guess world 1 on S: FPR = P(S), FNR = 1 − P′(S)),

    sup L ≥ ln((1 − FNR)/FPR) of any test,   −inf L ≥ ln((1 − FPR)/FNR) of any test,

so ε₀ ≥ max{0, max over tests of the first} + max{0, max over tests of the second}. The two
maxima may come from different tests — one at each end of the scores — which matters when the
loss varies continuously (one test only reaches the averages of L on its two sides). Both terms
decrease in both rates: upper confidence bounds on the rates of many tests, valid simultaneously,
give a lower bound on ε₀ that holds with probability ≥ 1 − α **whatever the mechanism** (no
assumption on its shape: ε₀ is the smallest width its privacy loss has). A pure ε-DP bound from the
same tests is only the larger of the two terms; the bounded-range claim constrains both sides of
the loss at once, so it can be tested more sharply (on a two-output worst case of width ε₀ with
both sides ε₀/2, the bound reaches ε₀ where the pure-DP one stops at ε₀/2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._validation import as_generator, check_choice, check_int, check_real
from .rates import BestTest, as_scores, best_test, cp_upper, directions, tail_ranks

__all__ = [
    "BoundedRangeLowerBound",
    "bounded_range_lower_bound",
    "upper_term",
    "lower_term",
    "range_from",
    "ASSUMPTION",
]

_RULES = ("bonferroni", "split", "fixed")
ASSUMPTION = "none: a lower bound on the width of the privacy loss's range (the bounded-range epsilon0)"


@dataclass(frozen=True)
class BoundedRangeLowerBound:
    """Output of :func:`bounded_range_lower_bound`: with probability ≥ 1 − α, the mechanism is not
    ε₀-bounded-range for any ε₀ < ``epsilon0_lb`` = ``upper_lb`` + ``lower_lb``, the lower bounds
    on sup L and on −inf L. ``upper`` and ``lower`` are the tests that gave them (the same test
    under ``rule="fixed"``); ``n_tests`` tests share α."""

    epsilon0_lb: float
    upper_lb: float
    lower_lb: float
    alpha: float
    trials: tuple[int, int]
    threshold_rule: str
    n_tests: int
    upper: BestTest
    lower: BestTest
    assumption: str = ASSUMPTION
    method: str = "bounded-range"

    def violates(self, claimed_epsilon0: float) -> bool:
        """True when ``epsilon0_lb`` exceeds the claimed bounded-range parameter (≥ 0, may be ∞)."""
        return self.epsilon0_lb > check_real(claimed_epsilon0, "claimed_epsilon0", low=0.0, allow_inf=True)


def _log_ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """ln(max(p, 0)/q), 0 where undefined (p ≤ 0 with q = 0 cannot occur: q is a rate's bound)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log(np.maximum(p, 0.0)) - np.log(q)
    return np.where(np.isnan(v), -np.inf, v)


def upper_term(fpr_ub: np.ndarray, fnr_ub: np.ndarray) -> np.ndarray:
    """ln((1 − FNR)/FPR) at upper bounds of the rates: a lower bound on sup L."""
    return _log_ratio(1.0 - np.asarray(fnr_ub, float), np.asarray(fpr_ub, float))


def lower_term(fpr_ub: np.ndarray, fnr_ub: np.ndarray) -> np.ndarray:
    """ln((1 − FPR)/FNR) at upper bounds of the rates: a lower bound on −inf L."""
    return _log_ratio(1.0 - np.asarray(fpr_ub, float), np.asarray(fnr_ub, float))


def range_from(fpr_ub: np.ndarray, fnr_ub: np.ndarray) -> np.ndarray:
    """Both terms from one test: max{0, ln((1 − FNR)/FPR)} + max{0, ln((1 − FPR)/FNR)}."""
    return np.maximum(upper_term(fpr_ub, fnr_ub), 0.0) + np.maximum(lower_term(fpr_ub, fnr_ub), 0.0)


def bounded_range_lower_bound(
    scores0: Any,
    scores1: Any,
    *,
    alpha: float = 0.05,
    rule: Literal["bonferroni", "split", "fixed"] = "bonferroni",
    direction: Literal["greater", "less", "both"] = "both",
    n_thresholds: int = 30,
    threshold: float | None = None,
    split: float = 0.2,
    rng: Any = None,
) -> BoundedRangeLowerBound:
    """Lower bound on the bounded-range parameter ε₀ from audit scores (module docstring).

    Parameters
    ----------
    scores0, scores1 : arrays of shape (n₀,) and (n₁,)
        One score per independent run in world 0 and in world 1, higher meaning "world 1"
        (``direction="both"`` also tries the reverse).
    alpha : float in (0, 1)
        Failure probability: P[ε₀ < ``epsilon0_lb``] ≤ α for an ε₀-bounded-range mechanism.
    rule : {"bonferroni", "split", "fixed"}
        As in :func:`~dpbnsl.audits.clopper_pearson_bound`: ``"bonferroni"`` (default) shares α
        among the tests at ``n_thresholds`` world-0 order statistics per direction, dense towards
        both tails; ``"split"`` picks the test on a ``split`` fraction of the runs and evaluates it
        on the others (the rule for scores with few distinct values, whose order statistics tie);
        ``"fixed"`` evaluates the test at ``threshold``, chosen before the runs.
    direction : {"both", "greater", "less"}
    n_thresholds : int ≥ 1
    threshold : float, for ``rule="fixed"``
    split : float in (0, 1)
    rng : None, int or Generator
        Randomness of the split.

    Examples
    --------
    A selection between two candidates whose privacy loss is −½ on one and +½ on the other
    (ε₀ = 1): P(candidate 0) = σ(½) in world 0 and σ(−½) in world 1; the score is 1 for candidate 0.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p0, p1 = 1 / (1 + np.exp(-0.5)), 1 / (1 + np.exp(0.5))
    >>> s0, s1 = (rng.random(100_000) < p0).astype(float), (rng.random(100_000) < p1).astype(float)
    >>> b = bounded_range_lower_bound(s0, s1, rule="fixed", threshold=0.5, direction="less")
    >>> 0.95 < b.epsilon0_lb <= 1.0
    True
    """
    s0, s1 = np.sort(as_scores(scores0, "scores0")), np.sort(as_scores(scores1, "scores1"))
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    check_choice(rule, "rule", _RULES)
    dirs = directions(direction)
    n_thr = check_int(n_thresholds, "n_thresholds", low=1)
    frac = check_real(split, "split", low=0.0, high=1.0, low_open=True, high_open=True)
    if rule == "fixed":
        threshold = check_real(threshold, "threshold")
    # Bonferroni and fixed: both maxima run over the same tests with the same rate bounds, which
    # all hold together with probability ≥ 1 − α. Split: two selections, two held-out
    # evaluations, α/2 each.
    level = a / 2 if rule == "split" else a
    gen = as_generator(rng)

    def best(term: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> BestTest:
        return best_test(
            s0,
            s1,
            value=term,
            alpha=level,
            rule=rule,
            directions=dirs,
            ranks=lambda n: tail_ranks(n, n_thr),
            # the held-out value predicted from the selection part's upper bounds
            predict=lambda fp, fn, k0, k1, m0, m1: term(
                cp_upper(fp, k0, level / 2), cp_upper(fn, k1, level / 2)
            ),
            split=frac,
            rng=gen,
            threshold=threshold,
        )

    upper, lower = best(upper_term), best(lower_term)
    upper_lb, lower_lb = max(upper.value, 0.0), max(lower.value, 0.0)
    return BoundedRangeLowerBound(
        epsilon0_lb=upper_lb + lower_lb,
        upper_lb=upper_lb,
        lower_lb=lower_lb,
        alpha=a,
        trials=(s0.size, s1.size),
        threshold_rule=rule,
        n_tests=upper.n_tests + (lower.n_tests if rule == "split" else 0),
        upper=upper,
        lower=lower,
    )
