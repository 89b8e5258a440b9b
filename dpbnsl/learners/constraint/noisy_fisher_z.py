"""Fisher's z test on a noisy covariance: the test of PC on a differentially private release.

A DP covariance S̃ = S + E (E symmetric, its upper-triangle entries independent with a public
standard deviation s) is not a sample covariance: it may be indefinite, and its partial
correlations carry the release noise on top of the sampling error. The test here

1. repairs S̃ once (post-processing): eigenvalues below ``floor`` are raised to it, with
   ``floor = 2·s·√d`` by default — the edge of the spectrum of a d × d symmetric noise matrix of
   entry sd s (Wigner's semicircle), below which an eigenvalue says nothing about the data — and at
   least a tiny positive value so that every principal sub-matrix can be inverted;
2. computes the partial correlation r of (i, j) given S from the repaired matrix, as
   :class:`~dpbnsl.learners.constraint.citests.FisherZ` does;
3. adds the release noise to the variance of Fisher's z by the delta method. With
   P = C_{ij·S}⁻¹ (index 0 = i, 1 = j) and r = −P₀₁/√(P₀₀P₁₁), a perturbation E of C moves r by
   Σ_{u,v} g_uv E_uv with

       g = P₀P₁ᵀ/√(P₀₀P₁₁) + (r/2)·(P₀P₀ᵀ/P₀₀ + P₁P₁ᵀ/P₁₁)

   (P₀, P₁ the first two rows of P); E's independent entries are the upper triangle, so
   Var_noise(r) ≈ s²·(Σ_u g_uu² + Σ_{u<v} (g_uv + g_vu)²), and

       z = |atanh r| / √(1/(n − |S| − 3) + Var_noise(r)/(1 − r²)²),   p = 2(1 − Φ(z)).

With s = 0 it is Fisher's z test of the (repaired) matrix. Everything it uses (s, n, the floor) is
public, so the test is post-processing of the release.
"""

from __future__ import annotations

import math

import numpy as np

from ..._validation import ArrayLike, as_float_matrix, check_int, check_real
from ..covariance_repair import noise_floor, repair_covariance
from .citests import CIResult, CITest

__all__ = ["NoisyFisherZ", "repair_covariance", "noise_floor"]  # the repair re-exported

_SQRT2 = math.sqrt(2.0)
#: the smallest eigenvalue kept, relative to the largest entry, when the release has no noise
_TINY = 1e-9


class NoisyFisherZ(CITest):
    """Fisher's z test from a noisy covariance ``S`` of ``n`` rows whose entries carry independent
    noise of public standard deviation ``noise_sd`` (module docstring).

    Parameters
    ----------
    S : array of shape (d, d)
        The released covariance (symmetric; indefinite is fine).
    n : int >= 2
        The rows behind it (public).
    noise_sd : float >= 0
        The standard deviation of each released upper-triangle entry (public).
    floor : float > 0, optional
        The eigenvalue floor of the repair; default ``max(2·s·√d, 1e-9 × the largest |entry|)``.
    """

    name = "noisy-fisher-z"

    def __init__(self, S: ArrayLike, n: int, *, noise_sd: float, floor: float | None = None) -> None:
        S = as_float_matrix(S, "S")
        if S.shape[0] != S.shape[1]:
            raise ValueError(f"`S` must be a square matrix; got shape {S.shape}")
        if not np.allclose(S, S.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(S).max()))):
            raise ValueError("`S` must be symmetric")
        n = check_int(n, "n", low=2)
        s = check_real(noise_sd, "noise_sd", low=0.0)
        d = S.shape[0]
        scale = float(np.max(np.abs(S)))  # finite: as_float_matrix refuses inf and nan
        if not scale > 0:
            raise ValueError("`S` is all zeros; nothing to test")
        if floor is None:
            floor = max(noise_floor(s, d), _TINY * scale)
        floor = check_real(floor, "floor", low=0.0, low_open=True)
        # partial correlations do not depend on the scale: work at unit mean diagonal, so that
        # no product over- or underflows whatever the data's units
        C, self.repaired = repair_covariance(S / scale, floor=floor / scale)
        C.setflags(write=False)
        super().__init__(n, d)
        self.cov, self.noise_sd, self.floor = C, s, float(floor)
        self._s = s / scale  # the noise sd at the working scale

    def _compute(self, i: int, j: int, S: tuple[int, ...]) -> CIResult:
        idx = [i, j, *S]
        P = np.linalg.inv(self.cov[np.ix_(idx, idx)])  # positive definite after the repair
        p00, p11, p01 = float(P[0, 0]), float(P[1, 1]), float(P[0, 1])
        norm = math.sqrt(p00 * p11)
        r = min(1.0, max(-1.0, -p01 / norm))
        m = self.n - len(S) - 3
        if m <= 0:
            return CIResult(float("nan"), r, float(m))
        if abs(r) == 1.0:
            return CIResult(0.0, r, float(m))
        var = 1.0 / m
        if self._s > 0.0:
            g = np.outer(P[0], P[1]) / norm + 0.5 * r * (
                np.outer(P[0], P[0]) / p00 + np.outer(P[1], P[1]) / p11
            )
            sym = g + g.T
            var_r = float(np.sum(np.diag(g) ** 2) + np.sum(np.triu(sym, 1) ** 2)) * self._s**2
            var += var_r / (1.0 - r * r) ** 2
        z = abs(math.atanh(r)) / math.sqrt(var)
        return CIResult(math.erfc(z / _SQRT2), r, 1.0 / var)  # dof: the effective n − |S| − 3
