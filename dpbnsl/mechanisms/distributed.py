"""Distributed noise for secure aggregation: integer statistics, integer noise shares, modular sums.

Under secure aggregation the server reads only the sum of the participants' uploads. If every
participant adds a share of the noise *in the integer domain*, the sum of the shares has a known
distribution, and the summed release is protected as if one party had noised the pooled statistic
(Kairouz, Liu & Steinke, ICML 2021: the distributed discrete Gaussian; Agarwal, Kairouz & Liu,
NeurIPS 2021: the Skellam mechanism). This module holds the pieces:

- :class:`IntegerGrid`: the public scale γ that maps a clipped row x (‖x‖₂ ≤ R) to an integer row
  q by unbiased randomised rounding of γx, with the deterministic bound ‖q‖₂² ≤ B (each coordinate
  moves by less than 1, so ‖q‖₂ < γR + √d ≤ √B);
- :func:`integer_gram`: the participant's integer statistic, the upper triangle of Σ_i q_i q_iᵀ,
  with its replace-one sensitivities (:func:`integer_gram_sensitivity`): Δ₂ = √2·B, Δ₁ = (d + 1)·B;
- the noise shares: :func:`skellam_share` (Poisson(μ/2) − Poisson(μ/2), variance μ: a sum of
  independent Skellam shares is Skellam, exactly) and :func:`discrete_gaussian_share` (the
  discrete Gaussian on ℤ, sampled by rejection from the discrete Laplace, Canonne, Kamath &
  Steinke, NeurIPS 2020);
- :func:`to_residues` / :func:`modular_sum` / :func:`centred`: uploads as residues modulo
  M = 2^bits and their sum, read back in [−M/2, M/2);
- the events: :class:`SkellamDpEvent` (its RDP curve: :func:`dpbnsl.accounting.skellam_rdp`) and,
  for the discrete Gaussian, a ``ZCDpEvent`` (:func:`dpbnsl.accounting.ddg_rho`).

Trust model: the guarantee covers the *sum* the server reads, against the server and any coalition
of up to ``t`` participants (declared in advance and public), provided the secure-aggregation
protocol holds and at least P − t honest shares reach the sum: each share is sized so that P − t
of them carry the whole noise. Reducing the sum modulo M is post-processing (no privacy cost); a
wrap-around would only spoil utility, and the plan sizes M so that its probability is below
:data:`WRAP_BOUND` (:func:`wrap_probability`).

The samplers draw from a numpy ``Generator`` in floating point (numpy's Poisson sampler, and one
floating-point acceptance test per discrete-Gaussian draw), as every numpy-based DP library does;
the privacy analysis is of the integer distributions they target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import attr
import numpy as np
from dp_accounting.dp_event import DpEvent

from .._validation import check_int, check_real
from .releases import CLIP_RANGE, clip_rows

__all__ = [
    "SkellamDpEvent",
    "IntegerGrid",
    "integer_grid",
    "quantise_rows",
    "integer_gram",
    "integer_gram_sensitivity",
    "skellam_share",
    "discrete_gaussian_share",
    "to_residues",
    "modular_sum",
    "centred",
    "wrap_probability",
    "noisy_share",
    "MAX_MODULUS_BITS",
    "WRAP_BOUND",
]

#: residues are int64 added two at a time, and a sum is recorded exactly in a float64 transcript:
#: M ≤ 2^53
MAX_MODULUS_BITS = 53
#: the largest wrap-around probability a plan accepts (utility, not privacy: see the module text)
WRAP_BOUND = 1e-9
#: integer statistics are computed by float64 products; sums below 2^53 are exact
_EXACT = 2.0**53


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SkellamDpEvent(DpEvent):
    """The Skellam mechanism: an integer statistic of ℓ2- and ℓ1-sensitivity ``l2_sensitivity``
    and ``l1_sensitivity`` released with Skellam noise of ``variance`` μ per coordinate (the
    difference of two Poisson(μ/2)). Its RDP curve is Agarwal, Kairouz & Liu (2021) Thm 3.5
    (:func:`dpbnsl.accounting.skellam_rdp`)."""

    l2_sensitivity: float
    l1_sensitivity: float
    variance: float


@dataclass(frozen=True)
class IntegerGrid:
    """The public map from clipped rows to integer rows: ``q = round(γ·x)`` (unbiased randomised
    rounding) for rows with ‖x‖₂ ≤ ``clip_norm``; every q has ‖q‖₂² ≤ ``norm_bound`` (B)."""

    scale: float  # γ
    norm_bound: int  # B
    clip_norm: float  # R
    d: int


def integer_grid(*, clip_norm: float, d: int, norm_bound: int) -> IntegerGrid:
    """The grid whose rounded rows satisfy ‖q‖₂² ≤ B = ``norm_bound``: γ = (√B − √d)/R, since
    randomised rounding moves each of the d coordinates by less than 1 (‖q − γx‖₂ < √d)."""
    R = check_real(clip_norm, "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    d = check_int(d, "d", low=1)
    B = check_int(norm_bound, "norm_bound", low=1)
    room = math.sqrt(B) - math.sqrt(d)
    if not room > 0:
        raise ValueError(
            f"`norm_bound` = {B} leaves no room for the rounding of {d} coordinates "
            f"(it must exceed d = {d}); use more modulus bits or fewer rows"
        )
    # one part in 1e9 below the exact bound absorbs the rounding of γ·x in floating point
    return IntegerGrid(room * (1.0 - 1e-9) / R, B, R, d)


def quantise_rows(X: np.ndarray, grid: IntegerGrid, *, rng: np.random.Generator) -> np.ndarray:
    """Rows clipped to ‖x‖₂ ≤ R, scaled by γ and rounded to integers at random (up with
    probability equal to the fractional part, so E q = γx), as float64 holding integers.

    Every row satisfies ‖q‖₂² ≤ B (checked: a violation would void the sensitivity)."""
    Xc = clip_rows(np.asarray(X, float), norm=grid.clip_norm)
    Y = Xc * grid.scale
    low = np.floor(Y)
    Q = low + (rng.random(Y.shape) < (Y - low))
    if Q.size and float(np.max(np.einsum("ij,ij->i", Q, Q))) > grid.norm_bound:  # pragma: no cover
        raise RuntimeError("a rounded row exceeds the grid's norm bound")
    return Q


def integer_gram(Q: np.ndarray) -> np.ndarray:
    """The upper triangle (row-major, as ``np.triu_indices``) of Σ_i q_i q_iᵀ for integer rows Q,
    as an int64 vector. Exact: computed in float64 only when every entry is below 2^53."""
    n, d = Q.shape
    top = float(np.max(np.einsum("ij,ij->i", Q, Q))) if n else 0.0
    if n * top >= _EXACT:
        raise ValueError(f"the integer statistic of {n} rows of squared norm {top:g} is not exact in float64")
    G = Q.T @ Q
    return np.rint(G[np.triu_indices(d)]).astype(np.int64)


def integer_gram_sensitivity(*, d: int, norm_bound: int) -> tuple[float, float]:
    """(Δ₂, Δ₁) of the upper triangle of Σ_i q_i q_iᵀ under replace-one, for rows with ‖q‖₂² ≤ B.

    With T(q) the upper triangle of qqᵀ: ‖T(q)‖₂² = (‖q‖⁴ + Σ_a q_a⁴)/2 ≤ ‖q‖⁴ and
    ⟨T(q), T(q')⟩ = ((qᵀq')² + Σ_a q_a² q'_a²)/2 ≥ 0, so ‖T(q) − T(q')‖₂² ≤ 2B² (attained at
    q = √B e_a, q' = √B e_b); ‖T(q)‖₁ = (‖q‖₁² + ‖q‖₂²)/2 ≤ (d + 1)B/2, so Δ₁ ≤ (d + 1)B."""
    d = check_int(d, "d", low=1)
    B = check_int(norm_bound, "norm_bound", low=1)
    return math.sqrt(2.0) * B, float((d + 1) * B)


#: The largest Poisson mean drawn at once: numpy's sampler is exact in distribution up to its float
#: arithmetic, which starts to show above about 10¹³ (measured: variance 1.04λ and kurtosis 3.7 at
#: λ = 10¹⁵, against 1.000 and 3.00 at 10¹²); a larger mean is drawn as a sum of Poissons of
#: means at most this (Poisson laws add), so the share is Skellam for any variance.
POISSON_EXACT = 1e12


#: The largest Skellam variance a share may have: each of its two Poissons then takes at most
#: 1,000 draws of mean ≤ :data:`POISSON_EXACT` (the plans keep shares below it).
MAX_SKELLAM_VARIANCE = 2e15


def _poisson(lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
    m = max(1, math.ceil(lam / POISSON_EXACT))
    out = rng.poisson(lam / m, size).astype(np.int64)
    for _ in range(m - 1):  # one vector at a time: memory O(size) whatever m
        out += rng.poisson(lam / m, size).astype(np.int64)
    return out


def skellam_share(size: int, *, variance: float, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Skellam noise of ``variance`` μ (Poisson(μ/2) − Poisson(μ/2)), int64;
    each Poisson mean above :data:`POISSON_EXACT` is drawn as a sum of smaller ones."""
    v = check_real(variance, "variance", low=0.0, high=MAX_SKELLAM_VARIANCE)
    return _poisson(v / 2.0, size, rng) - _poisson(v / 2.0, size, rng)


def discrete_gaussian_share(size: int, *, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of the discrete Gaussian on ℤ, P(k) ∝ exp(−k²/(2σ²)), int64: a discrete
    Laplace draw Y of scale s = ⌊σ⌋ + 1 accepted with probability exp(−(|Y| − σ²/s)²/(2σ²))
    (Canonne, Kamath & Steinke 2020, Algorithm 3), rejected draws redrawn."""
    s = check_real(sigma, "sigma", low=0.5, high=1e9)
    scale = math.floor(s) + 1.0
    p = -math.expm1(-1.0 / scale)  # P(geometric step) of the discrete Laplace
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = rng.geometric(p, todo.size).astype(np.int64) - rng.geometric(p, todo.size).astype(np.int64)
        keep = rng.random(todo.size) < np.exp(-((np.abs(y) - s * s / scale) ** 2) / (2.0 * s * s))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out


def _modulus(bits: int) -> int:
    return 1 << check_int(bits, "modulus_bits", low=2, high=MAX_MODULUS_BITS)


def to_residues(values: np.ndarray, *, bits: int) -> np.ndarray:
    """Integers as residues in [0, 2^bits) (int64)."""
    return np.mod(np.asarray(values, dtype=np.int64), _modulus(bits))


def modular_sum(residues: list[np.ndarray], *, bits: int) -> np.ndarray:
    """The sum of residue vectors modulo M = 2^bits, added two at a time (no int64 overflow)."""
    M = _modulus(bits)
    total = np.zeros_like(np.asarray(residues[0], dtype=np.int64))
    for r in residues:
        r = np.asarray(r, dtype=np.int64)
        if r.shape != total.shape or (r.size and (r.min() < 0 or r.max() >= M)):
            raise ValueError(f"a share is not a vector of residues modulo 2^{bits} of shape {total.shape}")
        total = np.mod(total + r, M)
    return total


def centred(residues: np.ndarray, *, bits: int) -> np.ndarray:
    """Residues modulo M read as integers in [−M/2, M/2)."""
    M = _modulus(bits)
    r = np.asarray(residues, dtype=np.int64)
    return np.where(r >= M // 2, r - M, r)


def _log_tail_skellam(a: float, variance: float) -> float:
    """log of the Chernoff bound on P(Z ≥ a) for Skellam Z of variance v: its moment generating
    function is exp(v(cosh s − 1)), minimised at s = asinh(a/v)."""
    s = math.asinh(a / variance)
    return variance * (math.cosh(s) - 1.0) - s * a


def wrap_probability(*, noise: str, variance: float, room: float, size: int) -> float:
    """An upper bound on the probability that any of ``size`` coordinates of noise of total
    ``variance`` exceeds ``room`` in magnitude (a wrap-around of the modular sum when the signal
    takes the rest of the range): a union bound over coordinates and signs of the Chernoff bound
    (Skellam), or of the sub-Gaussian bound exp(−a²/(2v)) of a sum of discrete Gaussians
    (each is σ²-sub-Gaussian: Canonne, Kamath & Steinke 2020)."""
    if not room > 0:
        return 1.0
    if variance == 0:
        return 0.0
    log_one = _log_tail_skellam(room, variance) if noise == "skellam" else -room * room / (2.0 * variance)
    return min(1.0, 2.0 * size * math.exp(log_one))


def noisy_share(
    values: np.ndarray, *, noise: str, share: float, bits: int, rng: np.random.Generator
) -> np.ndarray:
    """One participant's upload: its integer statistic plus its noise share, as residues modulo
    2^bits. ``noise`` is ``"skellam"`` (``share`` = the share's variance) or ``"ddg"`` (``share`` =
    the share's σ)."""
    v = np.asarray(values, dtype=np.int64)
    if noise == "skellam":
        e = skellam_share(v.size, variance=share, rng=rng)
    elif noise == "ddg":
        e = discrete_gaussian_share(v.size, sigma=share, rng=rng)
    else:
        raise ValueError(f"`noise` must be one of ['skellam', 'ddg']; got {noise!r}")
    return to_residues(v + e.reshape(v.shape), bits=bits)
