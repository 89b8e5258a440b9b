"""DP-PGCD's clipping of per-sample gradients and the sensitivities it gives.

Per-sample gradient coordinates g_i,ab = −x_ia r_ib are clipped at C_a = c·√M_a (the clip scheme
sets c from the global clip bound C); the clipped data gradient then moves by at most 2C_a/n under
replace-one, and DP-PGCD's scores by at most 2c/n (:func:`clip_score_sensitivity`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CLIP_SCHEMES", "clip_bounds", "clipped_products", "clip_score_sensitivity", "scores_sensitivity"]

#: How the global clip bound C becomes the per-parent thresholds C_a = c·√M_a: ``"relative"``
#: c = C; ``"parents"`` c = C/√(Σ_a M_a); ``"coordinates"`` c = C/√((d−1)Σ_a M_a).
CLIP_SCHEMES = ("relative", "parents", "coordinates")


def clip_bounds(M: np.ndarray, clip: float, scheme: str = "relative") -> np.ndarray:
    """Per-parent clip bounds C_a = c·√M_a, with c = C (``"relative"``), C/√(Σ_a M_a)
    (``"parents"``) or C/√((d−1)Σ_a M_a) (``"coordinates"``, over the d(d−1) coordinates).

    Every scheme makes C_a/√M_a the same for every parent a, which is what lets one Gumbel scale
    serve every coordinate: the score sensitivity is 2c/n_k (:func:`score_sensitivity`)."""
    M = np.asarray(M, float)
    if scheme == "relative":
        return clip * np.sqrt(M)
    if scheme == "parents":
        return clip * np.sqrt(M / M.sum())
    if scheme == "coordinates":
        return clip * np.sqrt(M / ((M.size - 1) * M.sum()))
    raise ValueError(f"`scheme` must be one of {', '.join(map(repr, CLIP_SCHEMES))}; got {scheme!r}")


def clipped_products(
    X: np.ndarray,
    r: np.ndarray,
    bounds: np.ndarray,
    *,
    out: np.ndarray | None = None,
    x_finite: bool | None = None,
) -> np.ndarray:
    """Per-sample products x_ia·r_i clipped to [−C_a, C_a]: entry (i, a) is −g_i,ab of DP-PGCD for
    the column b whose residual is ``r`` (g_i,ab = −x_ia r_ib).

    Non-finite-safe, so the sensitivity bound holds for every finite record: a product that
    overflows to ±∞ clips to ±C_a like any large value, and one that is NaN (0·∞, or a residual
    that became ∞ − ∞ after an overflow) contributes 0. Every entry of the result lies in
    [−C_a, C_a].

    Parameters
    ----------
    X : array of shape (n, d)
    r : array of shape (n,)
    bounds : array of shape (d,), non-negative
    out : array of shape (n, d), optional
        Written in place (no allocation) and returned.
    x_finite : bool, optional
        Whether every entry of ``X`` is finite, when the caller knows it (else it is checked).
    """
    buf = np.multiply(X, r[:, None], out=out)  # may overflow (numpy warns): clipped below
    np.minimum(buf, bounds, out=buf)
    np.maximum(buf, -bounds, out=buf)
    # a product of two finite numbers is never NaN: look for NaN only when r or X is not finite
    if x_finite is None:
        x_finite = bool(np.isfinite(X).all())
    if not (x_finite and np.isfinite(r).all()):
        np.copyto(buf, 0.0, where=np.isnan(buf))
    return buf


def clip_score_sensitivity(M: np.ndarray, clip: float, n: int, scheme: str = "relative") -> float:
    """Δ_s = max_a 2C_a/(n√M_a) for the thresholds C_a of :func:`clip_bounds` (= 2c/n: the same
    for every coordinate under every scheme). Replacing one record moves the clipped data gradient
    g_ab by at most 2C_a/n, and the score s_ab = √M_a·|S_{λ/M_a}(B_ab − g_ab/M_a) − B_ab| is
    1/√M_a-Lipschitz in g_ab (the soft-threshold is 1-Lipschitz)."""
    M = np.asarray(M, float)
    return scores_sensitivity(clip_bounds(M, clip, scheme), M, n)


def scores_sensitivity(C_a: np.ndarray, M: np.ndarray, n: int) -> float:
    return 2.0 * float(np.max(C_a / np.sqrt(M))) / n
