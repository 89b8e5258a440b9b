"""Every noisy release goes through here: clipping, the Gaussian mechanism, Gumbel-max selection.

Each mechanism returns the release *and* its privacy event, so that the caller can record it in a
:class:`~dpbnsl.accounting.PrivacyLedger`. The ``rng`` of a mechanism is the source of its noise:
a Generator seeded with anything that can be known or guessed voids the guarantee (the noise can
be regenerated and subtracted); the learners pass Generators spawned from fresh OS entropy unless
the caller chose a seed. Sensitivities and clip bounds must be public (not derived from the data).

- :func:`gaussian_mechanism` → ``GaussianDpEvent(σ/Δ)`` (the multiplier against the release's own
  ℓ2-sensitivity Δ under the neighbouring relation in force);
- :func:`gumbel_max` → :class:`BoundedRangeDpEvent` with ε₀ = 2Δ/λ (the exponential mechanism
  P(j) ∝ exp(s_j/λ) is ε₀-bounded-range; Durfee & Rogers 2019).

The event types live here (not in ``accounting``) because mechanisms sit below the accountant.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import attr
import numpy as np
from dp_accounting import GaussianDpEvent
from dp_accounting.dp_event import DpEvent

from .._validation import ArrayLike, as_generator, check_real

__all__ = [
    "Neighbouring",
    "check_neighbouring",
    "BoundedRangeDpEvent",
    "Release",
    "clip",
    "clip_rows",
    "row_norms",
    "CLIP_RANGE",
    "gaussian_mechanism",
    "gumbel_max",
    "exponential_mechanism_sample",
    "ColumnwiseExponentialMechanism",
    "ColumnwiseExponentialStream",
    "GaussianStream",
]


class Neighbouring(str, Enum):
    """The neighbouring relation a guarantee is stated for: the sensitivities in this package are
    derived for replacing one row of one participant's dataset (Fed-Sparse-BNSL Def. 2.1)."""

    REPLACE_ONE = "replace-one"


def check_neighbouring(value: Neighbouring | str) -> Neighbouring:
    """Validate a requested neighbouring relation (only those the sensitivities are derived for)."""
    allowed = [n.value for n in Neighbouring]
    if isinstance(value, Neighbouring):
        return value
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"`neighbouring` must be one of {allowed}; got {value!r}")
    return Neighbouring(value)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BoundedRangeDpEvent(DpEvent):
    """An ε₀-bounded-range mechanism: its privacy loss lies in an interval of width ε₀. Gumbel-max
    with scale λ on scores of sensitivity Δ has ε₀ = 2Δ/λ. Exact RDP curve:
    :func:`dpbnsl.accounting.bounded_range_rdp`; as zCDP it costs ρ = ε₀²/8."""

    epsilon0: float


@dataclass(frozen=True)
class Release:
    """A private release: the released ``value`` and the privacy ``event`` it costs."""

    value: Any
    event: DpEvent


def clip(values: ArrayLike, bound: float | np.ndarray) -> np.ndarray:
    """Clip entries to ``[-bound, bound]`` (``bound`` ≥ 0 broadcasts; a new array is returned).

    Non-finite-safe: ±inf clips to ±bound and NaN (e.g. 0·∞ after an overflow) becomes 0, so
    every output entry lies in [-bound, bound] whatever the input."""
    b = np.asarray(bound, float)
    if np.any(~(b >= 0)):
        raise ValueError(f"`bound` must be >= 0; got {bound!r}")
    out = np.clip(values, -b, b)
    return np.where(np.isnan(out), 0.0, out) if np.isnan(out).any() else out


#: The range of public clip bounds (C, R, feature bounds): outside it the sensitivities derived
#: from them (R²/n, C/n, X_a/n) could underflow to 0 (no noise) or overflow.
CLIP_RANGE = (1e-100, 1e100)


def _row_scales(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(top, unit) per row: the largest magnitude and the norm of the row divided by it (in
    [1, √d]), so that ‖x‖ = top·unit is never formed when it would overflow."""
    top = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(len(X))
    safe = np.where((top > 0) & np.isfinite(top), top, 1.0)
    unit = np.linalg.norm(X / safe[:, None], axis=1)
    return top, unit


def row_norms(X: np.ndarray) -> np.ndarray:
    """ℓ2 norm of each row of ``X``, computed without intermediate overflow (a norm above the
    float64 range is ∞, as is the norm of a row with an infinite entry)."""
    X = np.asarray(X, float)
    with np.errstate(invalid="ignore", over="ignore"):
        top, unit = _row_scales(X)
        return np.where(np.isfinite(top), np.where(top > 0, top, 1.0) * unit * (top > 0), np.inf)


def clip_rows(X: np.ndarray, *, norm: float) -> np.ndarray:
    """Scale each row of ``X`` down to ℓ2 norm at most ``norm`` (rows already inside are kept).

    Non-finite-safe: a row x with largest magnitude t is scaled as (x/t)·(R'/‖x/t‖), so neither
    the norm of a row near the float64 limit nor a subnormal factor R/t is ever formed; a row with
    a non-finite entry becomes zeros. R' = R(1 − 1e-12) absorbs the rounding of the computed
    norms, so every output row has norm ≤ R. ``norm`` must lie in [1e-100, 1e100] (a public
    bound outside would make the sensitivities underflow or overflow).
    """
    R = check_real(norm, "norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    X = np.asarray(X, float)
    out = X.copy()
    # aim a relative 1e-12 inside R: the computed norms carry a few ulps of rounding, so a row
    # scaled to exactly R (or kept at a computed norm of R) could be an ulp over it
    target = R * (1.0 - 1e-12)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        top, unit = _row_scales(X)
        outside = np.isfinite(top) & (top > 0) & (top * unit > target)
        if outside.any():
            out[outside] = (X[outside] / top[outside, None]) * (target / unit[outside])[:, None]
    bad = ~np.isfinite(top)
    if bad.any():
        out[bad] = 0.0
    return out


def gaussian_mechanism(
    value: ArrayLike,
    *,
    sensitivity: float,
    sigma: float | None = None,
    multiplier: float | None = None,
    rng: np.random.Generator,
) -> Release:
    """Release ``value + N(0, σ²)`` (entrywise) for a statistic of ℓ2-sensitivity Δ.

    Give the noise either as ``sigma`` or as ``multiplier`` = σ/Δ (then σ = multiplier·Δ and the
    event carries the multiplier exactly, so repeated releases of one calibration are one event).

    Privacy: ρ = Δ²/(2σ²)-zCDP; event ``GaussianDpEvent(σ/Δ)``. σ = 0 releases the value exactly
    (an infinite-cost event unless Δ = 0)."""
    s = check_real(sensitivity, "sensitivity", low=0.0)
    if (sigma is None) == (multiplier is None):
        raise TypeError("give exactly one of `sigma` and `multiplier`")
    if multiplier is not None:
        z = check_real(multiplier, "multiplier", low=0.0)
        if s == 0.0 and z > 0.0:
            # a noise multiplier means noise is intended; Δ = 0 here is an underflowed bound
            # (e.g. R²/n with a tiny R), and releasing without noise would leak the value
            raise ValueError(
                "`sensitivity` is 0 with a positive noise `multiplier`: a "
                "sensitivity computed from positive bounds has underflowed; use "
                "larger public bounds"
            )
        g = z * s
    else:
        g = check_real(sigma, "sigma", low=0.0)
        z = math.inf if s == 0 else g / s
    v = np.asarray(value, float)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"`value` must be finite; got {value!r}")
    rng = as_generator(rng)
    noisy = v + (g * rng.standard_normal(v.shape) if g > 0 else 0.0)
    if s == 0:
        z = math.inf
    return Release(float(noisy) if noisy.ndim == 0 else noisy, GaussianDpEvent(z))


def exponential_mechanism_sample(log_weights: np.ndarray, u: float) -> int:
    """Index j drawn from P(j) ∝ exp(log_weights[j]) by inverting the CDF at ``u`` ∈ [0, 1)."""
    w = np.exp(log_weights - np.max(log_weights))
    cdf = np.cumsum(w)
    return int(min(np.searchsorted(cdf, u * cdf[-1], side="right"), w.size - 1))


def gumbel_max(scores: ArrayLike, *, sensitivity: float, scale: float, rng: np.random.Generator) -> Release:
    """Select ``argmax_j s_j + G_j`` with G_j ~ Gumbel(0, λ) i.i.d.: exactly the exponential
    mechanism P(j) ∝ exp(s_j/λ) (Gumbel-max trick). Returns the flat index.

    Privacy: scores of sensitivity Δ give an ε₀ = 2Δ/λ bounded-range mechanism (ρ = ε₀²/8-zCDP;
    Fed-Sparse-BNSL Thm A.4). λ = 0 is the exact argmax (infinite cost unless Δ = 0)."""
    s = check_real(sensitivity, "sensitivity", low=0.0)
    lam = check_real(scale, "scale", low=0.0)
    sc = np.asarray(scores, float).ravel()
    rng = as_generator(rng)
    noisy = sc + (rng.gumbel(0.0, lam, sc.shape) if lam > 0 else 0.0)
    e0 = 0.0 if s == 0 else (math.inf if lam == 0 else 2.0 * s / lam)
    return Release(int(np.argmax(noisy)), BoundedRangeDpEvent(e0))


class ColumnwiseExponentialMechanism:
    """The exponential mechanism P(a, b) ∝ exp(s_ab/λ) over a d×d score matrix, sampled in two
    levels so that a draw and a one-column update each cost O(d) instead of O(d²).

    A draw picks column b with probability ∝ Σ_a exp(s_ab/λ) (kept as per-column log-sum-exps), then
    row a within b with probability ∝ exp(s_ab/λ): the product is exactly the softmax over all
    entries, i.e. the distribution Gumbel-max samples. Entries set to −∞ are never selected.

    Privacy: each draw on scores of sensitivity Δ is ε₀ = 2Δ/λ bounded-range (as :func:`gumbel_max`).
    """

    def __init__(
        self,
        scores: np.ndarray,
        *,
        sensitivity: float,
        scale: float | None = None,
        multiplier: float | None = None,
    ) -> None:
        self.sensitivity = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
        if (scale is None) == (multiplier is None):
            raise TypeError("give exactly one of `scale` and `multiplier` (= scale/sensitivity)")
        if multiplier is not None:
            m = check_real(multiplier, "multiplier", low=0.0, low_open=True)
            self.scale, epsilon0 = m * self.sensitivity, 2.0 / m  # the event carries 2/m exactly
        else:
            self.scale = check_real(scale, "scale", low=0.0, low_open=True)
            epsilon0 = 2.0 * self.sensitivity / self.scale
        self.logits = np.array(scores, dtype=float) / self.scale
        with np.errstate(divide="ignore"):
            self.column_lse = np.logaddexp.reduce(self.logits, axis=0)
        self.event = BoundedRangeDpEvent(epsilon0)

    def update_column(self, b: int, scores: np.ndarray) -> None:
        """Replace column ``b`` of the scores (O(d))."""
        self.logits[:, b] = np.asarray(scores, float) / self.scale
        self.column_lse[b] = np.logaddexp.reduce(self.logits[:, b])

    def sample(self, rng: np.random.Generator) -> Release:
        """Draw one entry; returns its flat index ``a * d + b`` and the event."""
        u_col, u_row = rng.random(2)
        b = exponential_mechanism_sample(self.column_lse, u_col)
        a = exponential_mechanism_sample(self.logits[:, b], u_row)
        return Release(a * self.logits.shape[1] + b, self.event)


def _generator(rng: object) -> np.random.Generator:
    """The streams draw block after block from one generator: a seed would be turned into a fresh
    generator at every block, which would repeat the same noise (and give the uniforms and the
    normals the same bits), so only a ``numpy.random.Generator`` is accepted."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"`rng` must be a numpy.random.Generator for a noise stream (a seed would repeat the "
            f"noise of every block); got {type(rng).__name__}"
        )
    return rng


class ColumnwiseExponentialStream:
    """:class:`ColumnwiseExponentialMechanism` for a long run of draws on changing scores: the same
    distribution P(a, b) ∝ exp(s_ab/λ), sampled in the same two levels, and the same event.

    Each column keeps the cumulative weights of its rows, and the columns' weights are kept
    against a common reference, the largest column's, so that a draw costs one cumulative sum
    over the d columns and two binary searches, and :meth:`update_column` O(d). The reference is
    renewed at every update, whatever the scores: the work of an update is the same for any
    scores (a re-base only when the weights drifted far would make the participant's run time
    depend on its unnoised scores, which a server can time).
    The two uniforms of each draw are drawn from ``rng`` for ``count`` draws at once
    (:meth:`draw`); each pair is used by exactly one :meth:`sample`, so the draws stay independent
    of each other and of the scores.

    Privacy: each draw on scores of sensitivity Δ with scale λ = mΔ is ε₀ = 2/m bounded-range.
    """

    #: The columns' total weight is at least 1 (the largest column's is e^0) unless no entry can
    #: be drawn at all; below FLOOR the weights are re-based before a draw (never on scores that
    #: have an entry to draw).
    FLOOR = math.exp(-30.0)

    def __init__(self, scores: np.ndarray, *, sensitivity: float, multiplier: float) -> None:
        self.sensitivity = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
        m = check_real(multiplier, "multiplier", low=0.0, low_open=True)
        self.scale = m * self.sensitivity
        self.event = BoundedRangeDpEvent(2.0 / m)  # the event carries 2/m exactly
        S = np.asarray(scores, dtype=float)
        self.shape = S.shape
        # row b of `_cum`: the cumulative weights exp(l_ab − max_a l_ab) of column b (l = s/λ)
        self._cum = np.divide(S.T, self.scale, out=np.empty(S.shape[::-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            top = self._cum.max(axis=1)
            shift = np.where(np.isfinite(top), top, 0.0)  # a column of −∞ has no weight
            np.subtract(self._cum, shift[:, None], out=self._cum)
            np.exp(self._cum, out=self._cum)
            np.cumsum(self._cum, axis=1, out=self._cum)
            self._lse = shift + np.log(self._cum[:, -1])  # per-column log-sum-exp
        self._column = np.empty(S.shape[0])
        self._weights = np.empty(S.shape[1])  # exp(lse_b − ref)
        self._cdf = np.empty(S.shape[1])
        self._rebase()
        self._uniforms: Iterator[list[float]] = iter(())

    def _rebase(self) -> None:
        top = float(self._lse.max())
        self._ref = top if math.isfinite(top) else 0.0
        np.subtract(self._lse, self._ref, out=self._weights)
        np.exp(self._weights, out=self._weights)

    def update_column(self, b: int, scores: np.ndarray, top: float | None = None) -> None:
        """Replace column ``b`` of the scores (O(d)); ``top`` is their maximum, when the caller
        has it."""
        col, cum = self._column, self._cum[b]
        np.divide(scores, self.scale, out=col)
        # dividing by λ > 0 keeps the order, so max(s)/λ is exactly the largest logit
        top = float(np.maximum.reduce(col)) if top is None else top / self.scale
        if top == -math.inf:  # no entry of the column can be drawn (a structural zero, public)
            cum.fill(0.0)
            self._lse[b] = -math.inf
        else:
            np.subtract(col, top, out=col)
            np.exp(col, out=col)
            np.add.accumulate(col, out=cum)  # np.cumsum, without its wrapper
            self._lse[b] = top + math.log(cum[-1])
        self._rebase()  # at every update: the same work whatever the scores

    def draw(self, rng: np.random.Generator, count: int) -> None:
        """Draw the uniforms of the next ``count`` samples (2·count numbers from ``rng``); the
        previous ones must all have been used."""
        if next(self._uniforms, None) is not None:
            raise RuntimeError("draw() while uniforms of earlier draws are unused")
        self._uniforms = iter(_generator(rng).random((count, 2)).tolist())

    def sample(self) -> int:
        """The flat index ``a * d + b`` of one draw, with the next uniforms of :meth:`draw`."""
        try:
            u_col, u_row = next(self._uniforms)
        except StopIteration:
            raise RuntimeError("sample() needs uniforms: call draw(rng, count) first") from None
        cdf = np.add.accumulate(self._weights, out=self._cdf)
        total = cdf[-1]
        if not total >= self.FLOOR:
            self._rebase()
            total = np.add.accumulate(self._weights, out=cdf)[-1]
        b = min(int(cdf.searchsorted(u_col * total, side="right")), cdf.size - 1)
        cum = self._cum[b]
        a = min(int(cum.searchsorted(u_row * cum[-1], side="right")), cum.size - 1)
        return a * self.shape[1] + b


class GaussianStream:
    """The Gaussian mechanism for a run of scalar releases with one noise multiplier m, whose values
    are known only one at a time (each may depend on the releases before it): ``value + N(0, σ²)``
    with σ = m·Δ for a value of ℓ2-sensitivity Δ, as :func:`gaussian_mechanism` releases it.

    The standard normals of ``count`` releases are drawn from ``rng`` at once (:meth:`draw`); each is
    used by exactly one :meth:`release`, so the noise of a release is independent of its value and
    of every other release.

    Privacy: each release is ``GaussianDpEvent(m)`` (ρ = 1/(2m²)), the event of
    :func:`gaussian_mechanism` with ``multiplier=m``.
    """

    def __init__(self, multiplier: float) -> None:
        self.multiplier = check_real(multiplier, "multiplier", low=0.0, low_open=True)
        self.event = GaussianDpEvent(self.multiplier)
        self._normals: Iterator[float] = iter(())

    def draw(self, rng: np.random.Generator, count: int) -> None:
        """Draw the noise of the next ``count`` releases (``count`` standard normals from ``rng``);
        the previous ones must all have been used."""
        if next(self._normals, None) is not None:
            raise RuntimeError("draw() while noise of earlier draws is unused")
        self._normals = iter(_generator(rng).standard_normal(count).tolist())

    def release(self, value: float, sensitivity: float) -> float:
        """``value + σz`` with σ = m·``sensitivity`` and the next standard normal z of :meth:`draw`.
        Raises as :func:`gaussian_mechanism` does for a zero sensitivity or a non-finite value."""
        if not sensitivity > 0.0 or not math.isfinite(sensitivity):
            check_real(sensitivity, "sensitivity", low=0.0)
            raise ValueError(
                "`sensitivity` is 0 with a positive noise `multiplier`: a "
                "sensitivity computed from positive bounds has underflowed; use "
                "larger public bounds"
            )
        if not math.isfinite(value):
            raise ValueError(f"`value` must be finite; got {value!r}")
        try:
            z = next(self._normals)
        except StopIteration:
            raise RuntimeError("release() needs noise: call draw(rng, count) first") from None
        return value + (self.multiplier * sensitivity) * z
