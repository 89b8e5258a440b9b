"""A stratified Kendall's τ test of conditional independence with a bounded sensitivity (Priv-PC).

For ``X_i ⊥ X_j | X_S`` the rows are split into strata by the codes of ``X_S`` (discrete data: the
category codes; continuous data: public equal-width bins, :func:`public_bins`). In each stratum
``s`` of ``m_s`` rows, ``K_s = C_s − D_s`` is the number of concordant minus discordant pairs of
``(x_i, x_j)`` (ties count 0: Kendall's τ_a numerator). The statistic is

    z = Σ_s 9 K_s / (2 m_s + 5)  /  √w(n),        w(m) = 9 m (m − 1) / (4 m + 10),

i.e. the inverse-variance weighted sum ``Σ_s w(m_s) τ_a,s`` of the strata's τ_a (Kendall's null
variance of τ_a is 1/w(m)), over a **public** normaliser: ``√w(n)`` from the public row count ``n``
where Priv-PC's authors divide by the data-dependent ``√Σ_s w(m_s)`` over the strata in which both
variables vary. Without conditioning ``z`` is exactly their statistic; with it ``z`` is smaller by
at most the factor ``√(Σ_s w(m_s)/w(n)) ≤ 1`` (w is superadditive), so the test is conservative:
under independence ``z`` has variance ≤ 1. The data-dependent normaliser has no bounded
sensitivity (one row can make a large stratum non-constant and change it by a constant factor);
the public one does. The p-value is two-sided, ``p = 2(1 − Φ(|z|))``.

**Sensitivity** (replace one of the ``n`` rows). Write ``f(K, m) = 9K/(2m + 5)``.

- Same stratum (always, when ``S = ∅``): ``m`` is unchanged and ``K`` moves by at most
  ``2(m − 1)`` (the m − 1 pairs with the replaced row each move by at most 2), so ``f`` moves by
  at most ``18(m − 1)/(2m + 5) < 9``.
- Different strata: the row leaves a stratum of ``m`` rows (``K → K′``, ``|K − K′| ≤ m − 1``,
  ``|K′| ≤ (m − 1)(m − 2)/2``) and joins another. For the one it leaves,
  ``|f(K, m) − f(K′, m − 1)| = 9 |(K − K′)/(2m + 5) − 2K′/((2m + 5)(2m + 3))|
  ≤ 9 (m − 1)(3m + 1)/((2m + 5)(2m + 3)) < 27/4`` (since ``4(m − 1)(3m + 1) < 3(2m + 5)(2m + 3)``);
  the stratum it joins is the same bound read backwards, so ``Σ_s f`` moves by less than 27/2.

Hence ``Δz < 9/√w(n)`` without conditioning and ``Δz < 13.5/√w(n)`` with it (≈ 6/√n and 9/√n;
the first is the sensitivity Priv-PC's authors derive). :func:`kendall_sensitivity` returns them;
the tests check them on neighbouring datasets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.special
import scipy.stats

from ..._validation import ArrayLike, check_int
from .citests import CIResult, CITest

__all__ = ["StratifiedKendall", "kendall_sensitivity", "kendall_weight", "p_value_sensitivity", "public_bins"]

#: contingency tables up to this many cells per stratum; beyond, Kendall's τ by sorting
_MAX_CELLS = 4096
_BIG_RADIX = 2**40
_SQRT2 = math.sqrt(2.0)


def kendall_weight(m: int | np.ndarray) -> Any:
    """w(m) = 9m(m − 1)/(4m + 10): the inverse null variance of Kendall's τ_a on m rows."""
    m = np.asarray(m, float)
    out = 9.0 * m * (m - 1.0) / (4.0 * m + 10.0)
    return float(out) if out.ndim == 0 else out


def kendall_sensitivity(n: int, *, conditional: bool) -> float:
    """The replace-one sensitivity of :class:`StratifiedKendall`'s ``z`` on ``n`` rows (module
    docstring): 9/√w(n) without conditioning, 13.5/√w(n) with it."""
    n = check_int(n, "n", low=2)
    return (13.5 if conditional else 9.0) / math.sqrt(kendall_weight(n))


def p_value_sensitivity(n: int, *, conditional: bool) -> float:
    """The replace-one sensitivity of the two-sided p-value ``p = erfc(|z|/√2)``: erf(Δz/√2).

    ``p`` is a decreasing function of ``|z|`` whose slope is steepest at 0, and ``|z|`` moves by at
    most Δz (:func:`kendall_sensitivity`), so ``p`` moves by at most ``p(0) − p(Δz) = erf(Δz/√2)``."""
    return math.erf(kendall_sensitivity(n, conditional=conditional) / _SQRT2)


def public_bins(X: ArrayLike, *, bounds: Any, bins: int) -> np.ndarray:
    """Integer codes ``0 .. bins − 1`` of ``bins`` equal-width bins on each column's **public**
    ``[low, high]`` (values outside go to the end bins). ``bounds`` is one pair for all columns or
    one pair per column."""
    X = np.asarray(X, float)
    if X.ndim != 2:
        raise ValueError(f"`X` must be a 2-d array (rows × columns); got shape {X.shape}")
    bins = check_int(bins, "bins", low=2, high=1 << 16)
    try:
        b = np.asarray(bounds, float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`bounds` must be a pair (low, high) or one pair per column; got {bounds!r}"
        ) from None
    if b.shape == (2,):
        b = np.broadcast_to(b, (X.shape[1], 2))
    if b.shape != (X.shape[1], 2):
        raise ValueError(
            f"`bounds` must be a pair (low, high) or one pair per column (d = {X.shape[1]}); "
            f"got shape {b.shape}"
        )
    lo, hi = b[:, 0], b[:, 1]
    if not (np.all(np.isfinite(b)) and np.all(hi > lo)):
        k = int(np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi) & (hi > lo)))[0])
        raise ValueError(f"`bounds` must be finite with low < high; column {k} has ({lo[k]!r}, {hi[k]!r})")
    with np.errstate(over="ignore", invalid="ignore"):
        u = (X - lo) / (hi - lo) * bins
    return np.clip(np.floor(np.nan_to_num(u, nan=0.0, posinf=bins, neginf=-1.0)), 0, bins - 1).astype(
        np.int64
    )


def _dense(v: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ranks 0 .. r − 1 of ``v`` (ties share a rank) and r."""
    values, inv = np.unique(v, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), int(values.size)


def _concordance_table(
    sid: np.ndarray, n_strata: int, x: np.ndarray, rx: int, y: np.ndarray, ry: int
) -> np.ndarray:
    """K_s = C_s − D_s of every stratum from its rx × ry contingency table."""
    N = np.bincount((sid * rx + x) * ry + y, minlength=n_strata * rx * ry).reshape(n_strata, rx, ry)
    above = np.cumsum(N[:, ::-1], axis=1)[:, ::-1] - N  # rows a' > a, column b
    cum = np.cumsum(above, axis=2)
    greater = cum[:, :, -1:] - cum  # a' > a, b' > b
    smaller = cum - above  # a' > a, b' < b
    return (N * (greater - smaller)).sum(axis=(1, 2))


def _concordance_sorted(sid: np.ndarray, n_strata: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """K_s = C_s − D_s of every stratum by Kendall's τ_b (O(m log m) per stratum)."""
    K = np.zeros(n_strata)
    order = np.argsort(sid, kind="stable")
    bounds = np.searchsorted(sid[order], np.arange(n_strata + 1))
    for s in range(n_strata):
        rows = order[bounds[s] : bounds[s + 1]]
        m = rows.size
        if m < 2:
            continue
        xs, ys = x[rows], y[rows]
        pairs = m * (m - 1) / 2.0
        tx = np.unique(xs, return_counts=True)[1].astype(float)
        ty = np.unique(ys, return_counts=True)[1].astype(float)
        ties_x, ties_y = (tx * (tx - 1) / 2).sum(), (ty * (ty - 1) / 2).sum()
        if ties_x == pairs or ties_y == pairs:
            continue
        tau_b = scipy.stats.kendalltau(xs, ys, variant="b").statistic
        K[s] = np.round(tau_b * math.sqrt((pairs - ties_x) * (pairs - ties_y)))
    return K


class StratifiedKendall(CITest):
    """The stratified Kendall's τ test of the module docstring on one data set.

    ``result(i, j, S)`` returns ``p = 2(1 − Φ(|z|))``, ``statistic = z`` and ``dof = n``.

    Parameters
    ----------
    X : array of shape (n, d)
        The values whose order Kendall's τ compares (category codes or measurements).
    codes : integer array of shape (n, d), optional
        The codes that define the strata of a conditioning set: :func:`public_bins` of continuous
        data. Default: ``X`` itself, which must then hold category codes 0, 1, ... (discrete data).
    levels : integer array of shape (d,), optional
        Category counts (array sizes only; the statistic does not depend on them).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 3, 2000)
    >>> X = np.column_stack([x, (x + rng.integers(0, 2, 2000)) % 3, rng.integers(0, 2, 2000)])
    >>> ci = StratifiedKendall(X)
    >>> ci.test(0, 1) < 0.01, ci.test(0, 2) > 0.01
    (True, True)
    """

    name = "kendall"

    def __init__(
        self, X: ArrayLike, codes: ArrayLike | None = None, *, levels: ArrayLike | None = None
    ) -> None:
        X = np.asarray(X, float)
        if X.ndim != 2 or X.shape[0] < 2:
            raise ValueError(f"`X` must be a 2-d array with at least 2 rows; got shape {X.shape}")
        super().__init__(X.shape[0], X.shape[1])
        c = X if codes is None else np.asarray(codes)
        if c.shape != X.shape:
            raise ValueError(f"`codes` must have the shape of `X` {X.shape}; got {c.shape}")
        if not np.all(c == np.round(c)) or (c < 0).any():
            raise ValueError("`codes` must hold non-negative integer codes (category codes or public bins)")
        self._codes = c.astype(np.int64)
        # codes beyond n are relabelled by rank (the strata and the order stay), so that stratum
        # ids and tables never grow with the codes' magnitude
        for k in np.flatnonzero(self._codes.max(axis=0) >= self.n):
            self._codes[:, k] = np.unique(self._codes[:, k], return_inverse=True)[1].reshape(-1)
        # array sizes only (the statistic does not depend on them): at least max + 1 per column
        top = self._codes.max(axis=0) + 1
        self._levels = (
            top if levels is None else np.minimum(np.maximum(np.asarray(levels, np.int64), top), self.n)
        )
        self._X = X
        self._discrete = codes is None
        self._ranks: dict[int, tuple[np.ndarray, int]] = {}
        self._scale = 1.0 / math.sqrt(kendall_weight(self.n))

    def _rank(self, k: int) -> tuple[np.ndarray, int]:
        """Ranks of column k for Kendall's τ and their count (codes themselves for discrete data)."""
        if k not in self._ranks:
            if self._discrete:
                self._ranks[k] = (self._codes[:, k], int(self._levels[k]))
            else:
                self._ranks[k] = _dense(self._X[:, k])
        return self._ranks[k]

    def sensitivity(self, conditional: bool) -> float:
        """Δz on this data set's row count (:func:`kendall_sensitivity`)."""
        return kendall_sensitivity(self.n, conditional=conditional)

    def _strata(self, S: Sequence[int]) -> tuple[np.ndarray, int]:
        sid = np.zeros(self.n, np.int64)
        size = 1
        for s in S:
            if size * int(self._levels[s]) >= _BIG_RADIX:
                _, sid = np.unique(sid, return_inverse=True)
                sid = sid.reshape(-1).astype(np.int64)
                size = int(sid.max()) + 1
            sid = sid * int(self._levels[s]) + self._codes[:, s]
            size *= int(self._levels[s])
        if size > self.n:
            _, sid = np.unique(sid, return_inverse=True)
            sid = sid.reshape(-1).astype(np.int64)
            size = int(sid.max()) + 1
        return sid, size

    def z(self, i: int, j: int, S: Sequence[int] = ()) -> float:
        """The statistic z (also ``result(i, j, S).statistic``, cached there)."""
        return self.result(i, j, S).statistic

    def _compute(self, a: int, b: int, S: tuple[int, ...]) -> CIResult:
        sid, n_strata = self._strata(S)
        (xa, ra), (xb, rb) = self._rank(a), self._rank(b)
        if ra * rb <= _MAX_CELLS and n_strata * ra * rb <= 8 * self.n + (1 << 20):  # memory
            K = _concordance_table(sid, n_strata, xa, ra, xb, rb).astype(float)
        else:
            K = _concordance_sorted(sid, n_strata, xa, xb)
        m = np.bincount(sid, minlength=n_strata).astype(float)
        z = float((9.0 * K / (2.0 * m + 5.0)).sum() * self._scale)
        p = float(scipy.special.erfc(abs(z) / _SQRT2))
        return CIResult(p, z, float(self.n))
