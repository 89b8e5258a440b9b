"""Error rates of threshold tests on audit scores, with their confidence bounds: the pieces the
audit bounds (:mod:`~dpbnsl.audits.bounds`, :mod:`~dpbnsl.audits.gdp`) share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .._validation import as_generator, check_choice

__all__ = [
    "as_scores",
    "cp_upper",
    "eps_from",
    "error_counts",
    "tail_ranks",
    "BestTest",
    "best_test",
    "directions",
]

SPLIT_CANDIDATES = 2000  # thresholds scanned on the selection part (no effect on soundness)


def as_scores(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be an array of real scores; got {x!r:.60}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` has a non-finite value {float(arr[i])!r} at index {i}")
    return arr


def directions(direction: str) -> tuple[bool, ...]:
    """The test directions of ``direction`` (True: score > t guesses world 1; False: score < t)."""
    choice = check_choice(direction, "direction", ("both", "greater", "less"))
    return {"both": (True, False), "greater": (True,), "less": (False,)}[choice]


def cp_upper(k: float | np.ndarray, n: int, level: float) -> np.ndarray:
    """Clopper–Pearson upper bound on a rate from k of n, one-sided at ``level`` (k may be real)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        # the upper tail's inverse at `level` itself: 1 − level would round away levels < 1e-16
        ub = special.betainccinv(k + 1.0, np.maximum(n - k, 1e-300), level)
    return np.where(k >= n, 1.0, ub)


def eps_from(fpr_ub: np.ndarray, fnr_ub: np.ndarray, delta: float) -> np.ndarray:
    """max{ln((1 − δ − FNR)/FPR), ln((1 − δ − FPR)/FNR), 0}, vectorised."""
    with np.errstate(divide="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_ub, 0.0)) - np.log(fpr_ub)
        b = np.log(np.maximum(1.0 - delta - fpr_ub, 0.0)) - np.log(fnr_ub)
    return np.maximum(np.maximum(a, b), 0.0)


def error_counts(
    s0: np.ndarray, s1: np.ndarray, t: float | np.ndarray, greater: bool
) -> tuple[np.ndarray, np.ndarray]:
    """False-positive and false-negative counts at thresholds ``t`` (``s0``, ``s1`` sorted)."""
    if greater:
        return s0.size - np.searchsorted(s0, t, "right"), np.searchsorted(s1, t, "right")
    return np.searchsorted(s0, t, "left"), s1.size - np.searchsorted(s1, t, "left")


def tail_ranks(n: int, m: int) -> np.ndarray:
    """At most ``m`` distinct ranks in [0, n), geometrically dense towards both ends."""
    if m >= n:
        return np.arange(n)
    h = np.arange((m + 1) // 2)
    low = np.round(np.geomspace(1, max(n / 2, 1), h.size)).astype(int) - 1
    low = np.maximum.accumulate(low - h) + h  # strictly increasing: m distinct ranks if m ≪ n
    return np.unique(np.concatenate([low, n - 1 - low[: m // 2]]))


@dataclass(frozen=True)
class BestTest:
    """The threshold test :func:`best_test` reports: its ``value`` (the bound it gives), threshold,
    direction (``greater``: score > t guesses world 1), error counts and their upper confidence
    bounds, the number of tests sharing α, and the runs it was evaluated on."""

    value: float
    threshold: float
    greater: bool
    fp: int
    fn: int
    fpr_ub: float
    fnr_ub: float
    n_tests: int
    evaluation_trials: tuple[int, int]


def best_test(
    s0: np.ndarray,
    s1: np.ndarray,
    *,
    value: Callable[[np.ndarray, np.ndarray], np.ndarray],
    alpha: float,
    rule: str,
    directions: Sequence[bool],
    ranks: Callable[[int], np.ndarray],
    predict: Callable[[np.ndarray, np.ndarray, int, int, int, int], np.ndarray],
    split: float,
    rng: Any,
    threshold: float | None = None,
) -> BestTest:
    """The threshold test maximising ``value(fpr_ub, fnr_ub)`` (a bound that decreases in both
    rates), with every rate bound valid jointly with probability ≥ 1 − α; the audit bounds'
    shared core (the soundness argument is :func:`~dpbnsl.audits.clopper_pearson_bound`'s).

    ``s0``, ``s1`` sorted. ``rule``: ``"bonferroni"`` (world-0 order statistics at ``ranks(n₀)``
    per direction, α shared by all), ``"split"`` (a ``split`` fraction of each world's runs picks
    the test maximising ``predict(fp, fn, k₀, k₁, m₀, m₁)`` — counts on the k selection runs, m
    held-out runs — and the held-out runs evaluate it) or ``"fixed"`` (``threshold``).
    """
    n0, n1 = s0.size, s1.size
    if rule == "split":
        k0, k1 = round(split * n0), round(split * n1)
        if not (0 < k0 < n0 and 0 < k1 < n1):
            raise ValueError(f"`split` = {split!r} leaves an empty part with {n0} and {n1} runs")
        gen = as_generator(rng)
        p0, p1 = gen.permutation(n0), gen.permutation(n1)
        sel0, sel1 = np.sort(s0[p0[:k0]]), np.sort(s1[p1[:k1]])
        s0, s1 = np.sort(s0[p0[k0:]]), np.sort(s1[p1[k1:]])
        pool = np.sort(np.concatenate([sel0, sel1]))
        cand = pool[tail_ranks(pool.size, SPLIT_CANDIDATES)]
        best = (-np.inf, 0.0, True)
        for g in directions:
            fp, fn = error_counts(sel0, sel1, cand, g)
            pred = predict(fp, fn, k0, k1, s0.size, s1.size)
            i = int(np.argmax(pred))
            best = max(best, (float(pred[i]), float(cand[i]), g), key=lambda b: b[0])
        tests, n_tests, fp_rank = [(np.array([best[1]]), best[2])], 1, None
    elif rule == "fixed":
        tests = [(np.array([threshold], dtype=float), g) for g in directions]
        n_tests, fp_rank = len(directions), None
    else:
        r = ranks(n0)
        tests = [(s0[n0 - 1 - r] if g else s0[r], g) for g in directions]
        n_tests, fp_rank = r.size * len(directions), r
    level = alpha / (2 * n_tests)
    found: BestTest | None = None
    for t, g in tests:
        fp, fn = error_counts(s0, s1, t, g)
        fpr_ub = cp_upper(fp if fp_rank is None else fp_rank, s0.size, level)
        fnr_ub = cp_upper(fn, s1.size, level)
        v = value(fpr_ub, fnr_ub)
        i = int(np.argmax(v))
        if found is None or float(v[i]) > found.value:
            found = BestTest(
                float(v[i]),
                float(t[i]),
                g,
                int(fp[i]),
                int(fn[i]),
                float(fpr_ub[i]),
                float(fnr_ub[i]),
                n_tests,
                (s0.size, s1.size),
            )
    if found is None:  # pragma: no cover - there is always a direction
        raise RuntimeError("no test was evaluated")
    return found
