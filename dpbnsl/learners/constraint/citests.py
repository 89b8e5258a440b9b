"""Conditional-independence (CI) tests for constraint-based structure learning (PC, FedPC).

A test answers ``X_i ⊥ X_j | X_S`` with a p-value; the learners call it *independent* iff
``p > alpha`` (FedPC §3.2.2), so a ``nan`` p-value (test not applicable) always counts as
*dependent*.
Every :class:`CITest` caches its results by ``(min(i, j), max(i, j), sorted(S))``.

- :class:`FisherZ` (continuous, linear-Gaussian): partial correlation from the correlation matrix,
  computed once; ``r = −P₀₁ / √(P₀₀ P₁₁)`` with ``P`` the inverse of the correlation sub-matrix of
  ``(i, j, S)``, then ``z = √(n − |S| − 3) · atanh(r)`` and ``p = 2 (1 − Φ(|z|))``.
- :class:`GSquare` (discrete, integer codes ``0 .. r − 1``): the likelihood-ratio statistic
  ``G² = 2 Σ_{z,x,y} O ln(O / E)``, ``E = N_{xz} N_{yz} / N_z`` per stratum ``z`` of ``X_S``, with the
  FedPC reference code's rules (its ``my_g2_test.m``): *adjusted* degrees of freedom
  ``Σ_z max(r_X − 1 − #empty X levels in z, 0) · max(r_Y − 1 − #empty Y levels in z, 0)``
  (``df = 0`` gives ``p = 1``) and the *reliability* rule: the test runs only when
  ``n / (r_X r_Y Π_{s∈S} r_s) ≥ 5``, otherwise ``p = nan`` (dependent).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.special

from ..._validation import ArrayLike, as_float_matrix, check_choice, check_int, check_real

__all__ = [
    "CI_TESTS",
    "CIResult",
    "CITest",
    "FisherZ",
    "GSquare",
    "check_alpha",
    "discrete_levels",
    "make_ci_test",
]

CI_TESTS = ("fisher-z", "g2")
AUTO_MAX_LEVELS = 10  # "auto": integer data with at most this many codes per column is discrete
_BIG_RADIX = 2**40  # compress stratum codes before they could overflow int64
_SQRT2 = math.sqrt(2.0)


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """Return the significance level as a float after checking ``0 < alpha < 1``."""
    return check_real(alpha, name, low=0.0, high=1.0, low_open=True, high_open=True)


@dataclass(frozen=True)
class CIResult:
    """One CI test: ``p_value`` (``nan`` when the test is not applicable), the ``statistic``
    (Fisher-z: the partial correlation r; G²: the G² value) and the degrees of freedom ``dof``
    (Fisher-z: the effective sample size ``n − |S| − 3``; G²: the df of the χ² reference)."""

    p_value: float
    statistic: float
    dof: float


_NAN = CIResult(float("nan"), float("nan"), float("nan"))


class CITest:
    """Cached CI test over the ``d`` columns of one data set; subclasses implement ``_compute``.

    ``test(i, j, S)`` returns the p-value, ``result(i, j, S)`` the full :class:`CIResult`,
    ``independent(i, j, S, alpha=...)`` the decision ``p > alpha``. ``n_computed`` counts the tests
    actually computed (cache misses), ``n_calls`` all requests.
    """

    name = "ci-test"

    def __init__(self, n: int, d: int) -> None:
        self.n, self.d = int(n), int(d)
        self._cache: dict[tuple, CIResult] = {}
        self.n_calls = 0

    @property
    def n_computed(self) -> int:
        return len(self._cache)

    def _key(self, i: int, j: int, S: Iterable[int]) -> tuple:
        try:
            a, b = operator.index(i), operator.index(j)
            S = tuple(sorted(operator.index(s) for s in S))
        except TypeError:
            raise TypeError(
                f"`i`, `j` and `S` must be integer column indices; got i = {i!r}, j = {j!r}, S = {S!r}"
            ) from None
        key = (a, b, S) if a < b else (b, a, S)
        if key in self._cache:
            return key
        d = self.d
        if not (0 <= a < d and 0 <= b < d):
            for name, v in (("i", a), ("j", b)):
                check_int(v, name, low=0, high=d - 1)
        if a == b:
            raise ValueError(f"`i` and `j` must differ; got {i!r} twice")
        bad = [s for s in S if not 0 <= s < d]
        if bad:
            raise ValueError(f"`S` holds {bad[0]!r}, not a column index in 0..{d - 1}")
        if len(set(S)) != len(S) or a in S or b in S:
            raise ValueError(f"`S` = {list(S)} must hold distinct indices other than i = {i}, j = {j}")
        return key

    def result(self, i: int, j: int, S: Iterable[int] = ()) -> CIResult:
        """The cached :class:`CIResult` of ``X_i ⊥ X_j | X_S`` (symmetric in ``i``, ``j``)."""
        self.n_calls += 1
        key = self._key(i, j, S)
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = self._compute(*key)
        return out

    def test(self, i: int, j: int, S: Iterable[int] = ()) -> float:
        """The p-value of ``X_i ⊥ X_j | X_S`` (``nan`` when the test is not applicable)."""
        return self.result(i, j, S).p_value

    def independent(self, i: int, j: int, S: Iterable[int] = (), *, alpha: float) -> bool:
        """``p > alpha`` (a ``nan`` p-value is *dependent*)."""
        return bool(self.test(i, j, S) > check_alpha(alpha))

    def _compute(self, i: int, j: int, S: tuple[int, ...]) -> CIResult:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, d={self.d}, computed={self.n_computed})"


class FisherZ(CITest):
    """Fisher's z test of zero partial correlation (continuous data, linear-Gaussian model).

    Parameters
    ----------
    X : array or DataFrame of shape (n, d)
        Samples in rows; every column needs a positive variance.

    Notes
    -----
    ``p = 2 (1 − Φ(√(n − |S| − 3) · |atanh r|))`` with r the sample partial correlation. The test is
    not applicable (``p = nan``, hence dependent) when ``n − |S| − 3 ≤ 0`` or the correlation
    sub-matrix is singular; ``|r| = 1`` gives ``p = 0``. Use :meth:`from_correlation` to test from
    a correlation (or covariance) matrix instead of data.
    """

    name = "fisher-z"

    def __init__(self, X: ArrayLike, *, name: str = "X") -> None:
        X = as_float_matrix(X, name)
        n, d = X.shape
        if n < 2:
            raise ValueError(f"`{name}` has {n} rows; at least 2 are required")
        sd = X.std(axis=0)
        if np.any(sd == 0):
            k = int(np.flatnonzero(sd == 0)[0])
            raise ValueError(f"`{name}` column {k} is constant; Fisher-z needs a positive variance")
        corr = np.corrcoef(X, rowvar=False) if d > 1 else np.ones((1, 1))
        self._init(np.atleast_2d(corr), n)

    def _init(self, corr: np.ndarray, n: int) -> None:
        super().__init__(n, corr.shape[0])
        corr = np.array(corr, dtype=float, copy=True)
        corr.setflags(write=False)
        self.corr = corr

    @classmethod
    def from_correlation(cls, C: ArrayLike, n: int) -> FisherZ:
        """A test from a (d, d) correlation or covariance matrix ``C`` of ``n`` samples."""
        C = as_float_matrix(C, "C")
        if C.shape[0] != C.shape[1] or not np.allclose(C, C.T):
            raise ValueError(f"`C` must be a symmetric square matrix; got shape {C.shape}")
        n = check_int(n, "n", low=2)
        sd = np.sqrt(np.diag(C))
        if np.any(~(sd > 0)):
            raise ValueError(f"`C` has a non-positive diagonal entry at {int(np.argmin(sd))}")
        self = cls.__new__(cls)
        self._init(C / np.outer(sd, sd), n)
        return self

    def _compute(self, i: int, j: int, S: tuple[int, ...]) -> CIResult:
        m = self.n - len(S) - 3
        C = self.corr
        if len(S) == 1:  # closed form: (r_ij − r_ik r_jk) / √((1 − r_ik²)(1 − r_jk²))
            k = S[0]
            denom = (1.0 - C[i, k] ** 2) * (1.0 - C[j, k] ** 2)
            if not denom > 1e-14:
                return _NAN
            r = (C[i, j] - C[i, k] * C[j, k]) / math.sqrt(denom)
        elif S:
            idx = [i, j, *S]
            try:
                P = np.linalg.inv(C[idx][:, idx])
            except np.linalg.LinAlgError:
                return _NAN
            p00, p11, p01 = float(P[0, 0]), float(P[1, 1]), float(P[0, 1])
            if not (math.isfinite(p01) and p00 * p11 > 0 and math.isfinite(p00 * p11)):
                return _NAN
            r = -p01 / math.sqrt(p00 * p11)
        else:
            r = float(C[i, j])
        r = min(1.0, max(-1.0, float(r)))
        if m <= 0:
            return CIResult(float("nan"), r, float(m))
        if abs(r) == 1.0:
            return CIResult(0.0, r, float(m))
        z = math.sqrt(m) * abs(math.atanh(r))
        return CIResult(math.erfc(z / _SQRT2), r, float(m))  # = 2 (1 − Φ(z))


def discrete_levels(X: np.ndarray, name: str = "X", *, where: str = "") -> np.ndarray:
    """Check that ``X`` holds integer codes ``0, 1, ...`` and return ``max + 1`` per column."""
    frac = X != np.round(X)
    if frac.any():
        r, c = np.argwhere(frac)[0]
        raise ValueError(
            f"`{name}`{where} must hold integer category codes 0, 1, 2, ... for a "
            f"discrete test; got {float(X[r, c])!r} at row {r}, column {c}"
        )
    if (X < 0).any():
        r, c = np.argwhere(X < 0)[0]
        raise ValueError(
            f"`{name}`{where} must hold non-negative category codes; got "
            f"{float(X[r, c])!r} at row {r}, column {c}"
        )
    return (X.max(axis=0) + 1).astype(np.int64) if X.shape[0] else np.zeros(X.shape[1], np.int64)


def _check_levels(levels: Sequence[int] | np.ndarray, d: int, name: str = "levels") -> np.ndarray:
    if isinstance(levels, (str, bytes)) or np.ndim(levels) != 1:
        raise TypeError(f"`{name}` must be a sequence of d = {d} ints; got {levels!r}")
    if len(levels) != d:
        raise ValueError(f"`{name}` must hold d = {d} level counts; got {len(levels)}")
    return np.array([check_int(v, f"{name}[{k}]", low=2) for k, v in enumerate(levels)], np.int64)


class GSquare(CITest):
    """The G² (likelihood-ratio) test of conditional independence for discrete data.

    Parameters
    ----------
    X : array or DataFrame of shape (n, d)
        Integer category codes ``0 .. r_k − 1`` (floats that are whole numbers are accepted).
    levels : sequence of d ints >= 2, optional
        Number of categories per column (e.g. public metadata shared by all participants). Default:
        ``max + 1`` of each column, and then a column with a single observed value is an error.
    min_samples_per_cell : float >= 0, default 5
        Reliability rule of the FedPC reference code: the test is skipped (``p = nan``, dependent)
        when ``n / (r_i r_j Π_{s∈S} r_s) < min_samples_per_cell``; 0 disables it.
    dof : {"adjusted", "classic"}, default "adjusted"
        ``"adjusted"``: ``Σ_z max(r_i − 1 − e_i(z), 0) · max(r_j − 1 − e_j(z), 0)`` over strata ``z``,
        ``e(z)`` the number of empty levels in the stratum (empty strata add 0; ``df = 0`` gives
        ``p = 1``). ``"classic"``: ``(r_i − 1)(r_j − 1) Π_{s∈S} r_s``.

    Notes
    -----
    ``G² = 2 Σ O ln(O / E)`` over the non-empty cells ``O`` of the ``(z, x, y)`` table, with
    ``E = N_{xz} N_{yz} / N_z``; ``p = P(χ²_df > G²)``.
    """

    name = "g2"

    def __init__(
        self,
        X: ArrayLike,
        *,
        levels: Sequence[int] | np.ndarray | None = None,
        min_samples_per_cell: float = 5.0,
        dof: str = "adjusted",
        name: str = "X",
    ) -> None:
        X = as_float_matrix(X, name)
        n, d = X.shape
        observed = discrete_levels(X, name)
        if levels is None:
            for k in range(d):
                if n and np.all(X[:, k] == X[0, k]):
                    raise ValueError(
                        f"`{name}` column {k} has a single level ({X[0, k]:g}); a CI test needs at "
                        f"least 2 (drop the column, or pass `levels` when other data have more)"
                    )
            levels = observed
        else:
            levels = _check_levels(levels, d)
            over = np.flatnonzero(observed > levels)
            if over.size:
                k = int(over[0])
                raise ValueError(
                    f"`{name}` column {k} has code {observed[k] - 1} but `levels[{k}]` "
                    f"= {levels[k]} (codes must be < levels)"
                )
        super().__init__(n, d)
        self.levels = np.array(levels, dtype=np.int64)
        self.levels.setflags(write=False)
        self.min_samples_per_cell = check_real(min_samples_per_cell, "min_samples_per_cell", low=0.0)
        self.dof = check_choice(dof, "dof", ("adjusted", "classic"))
        self._X = X.astype(np.int64)

    def _strata(self, S: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """Stratum (configuration of ``X_S``) of each row and the number of strata ``K``.

        Mixed-radix codes are used directly while ``Π r_s`` is small; otherwise the observed
        configurations are renumbered (empty strata contribute nothing either way).
        """
        if not S:
            return np.zeros(self.n, dtype=np.int64), 1
        code = self._X[:, S[0]].copy()
        radix = int(self.levels[S[0]])
        for s in S[1:]:
            if radix * int(self.levels[s]) > _BIG_RADIX:
                code = np.unique(code, return_inverse=True)[1].ravel().astype(np.int64)
                radix = int(code.max()) + 1
            code = code * self.levels[s] + self._X[:, s]
            radix *= int(self.levels[s])
        if radix <= max(4 * self.n, 1024):
            return code, radix
        code = np.unique(code, return_inverse=True)[1].ravel()
        return code, int(code.max()) + 1

    def _compute(self, i: int, j: int, S: tuple[int, ...]) -> CIResult:
        L = self.levels
        rx, ry = int(L[i]), int(L[j])
        cells = rx * ry * math.prod(int(L[s]) for s in S)
        if self.min_samples_per_cell > 0 and self.n < self.min_samples_per_cell * cells:
            return _NAN
        z, K = self._strata(S)
        flat = (z * rx + self._X[:, i]) * ry + self._X[:, j]
        observed = np.bincount(flat, minlength=K * rx * ry).reshape(K, rx, ry).astype(float)
        nx, ny = observed.sum(axis=2), observed.sum(axis=1)
        nz = nx.sum(axis=1)
        E = nx[:, :, None] * ny[:, None, :] / np.maximum(nz, 1.0)[:, None, None]
        pos = observed > 0
        G = max(0.0, float(2.0 * np.sum(observed[pos] * np.log(observed[pos] / E[pos]))))
        if self.dof == "adjusted":
            fx = np.maximum(rx - 1 - (nx == 0).sum(axis=1), 0)
            fy = np.maximum(ry - 1 - (ny == 0).sum(axis=1), 0)
            df = int(np.sum(fx * fy))
        else:
            df = (rx - 1) * (ry - 1) * math.prod(int(L[s]) for s in S)
        p = 1.0 if df == 0 else float(scipy.special.chdtrc(df, G))  # P(χ²_df > G)
        return CIResult(p, G, float(df))


def _looks_discrete(X: np.ndarray) -> bool:
    if not np.all(X == np.round(X)) or np.any(X < 0):
        return False
    return all(np.unique(X[:, k]).size <= AUTO_MAX_LEVELS for k in range(X.shape[1]))


def make_ci_test(
    X: ArrayLike,
    *,
    test: str = "fisher-z",
    levels: Sequence[int] | np.ndarray | None = None,
    min_samples_per_cell: float = 5.0,
    dof: str = "adjusted",
    name: str = "X",
) -> CITest:
    """Build the CI test named ``test`` on ``X`` (``"fisher-z"``, ``"g2"`` or ``"auto"``).

    ``"auto"`` picks G² when every value is a non-negative integer and every column has at most
    ``AUTO_MAX_LEVELS`` = 10 distinct values, Fisher-z otherwise. ``levels``,
    ``min_samples_per_cell`` and ``dof`` are passed to :class:`GSquare` (ignored by Fisher-z).
    """
    check_choice(test, "test", CI_TESTS + ("auto",))
    if test == "auto":
        test = "g2" if _looks_discrete(as_float_matrix(X, name)) else "fisher-z"
    if test == "fisher-z":
        return FisherZ(X, name=name)
    return GSquare(X, levels=levels, min_samples_per_cell=min_samples_per_cell, dof=dof, name=name)


def subsets(candidates: Iterable[int], size: int) -> Iterator[tuple[int, ...]]:
    """Size-``size`` subsets of ``candidates`` in lexicographic order of the sorted indices."""
    return itertools.combinations(sorted(candidates), size)
