"""DP-PGCD's clipping of per-sample gradients and the sensitivities it gives.

Per-sample gradient coordinates g_i,ab = −x_ia r_ib are clipped at C_a = c·√M_a (the clip scheme
sets c from the global clip bound C); the clipped data gradient then moves by at most 2C_a/n under
replace-one, and DP-PGCD's scores by at most 2c/n (:func:`clip_score_sensitivity`).
"""

from __future__ import annotations

import numpy as np

from . import clip_kernel

__all__ = [
    "CLIP_SCHEMES",
    "clip_bounds",
    "clipped_products",
    "ClippedProductSums",
    "clip_score_sensitivity",
    "scores_sensitivity",
]

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


def clipped_products(X: np.ndarray, r: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per-sample products x_ia·r_i clipped to [−C_a, C_a]: entry (i, a) is −g_i,ab of DP-PGCD for
    the column b whose residual is ``r`` (g_i,ab = −x_ia r_ib); a new (n, d) array, computed as
    the numpy backend of :mod:`~dpbnsl.mechanisms.clip_kernel` does.

    Non-finite-safe, so the sensitivity bound holds for every finite record: a product that
    overflows to ±∞ clips to ±C_a like any large value, and one that is NaN (0·∞, or a residual
    that became ∞ − ∞ after an overflow) contributes 0. Every entry of the result lies in
    [−C_a, C_a].

    Parameters
    ----------
    X : array of shape (n, d)
    r : array of shape (n,)
    bounds : array of shape (d,), non-negative
    """
    X, r, bounds = (np.asarray(v, dtype=float) for v in (X, r, bounds))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow and 0·∞: clipped and zeroed
        return clip_kernel.clip_products(
            X, r, bounds, -bounds, np.empty(np.broadcast_shapes(X.shape, r[:, None].shape))
        )


#: Up to this many entries of X (n·d), :class:`ClippedProductSums` keeps the bounds repeated on
#: every row (two more arrays the size of X) for faster clipping passes; above, it broadcasts them.
FULL_BOUNDS_MAX = 1 << 22


class ClippedProductSums:
    """Σ_i clip(x_ia·r_i, −C_a, C_a) for every a — the column sums of :func:`clipped_products` —
    for many vectors r on one X and one set of bounds: DP-PGCD's clipped data gradient, one column
    of the residual at a time (n·d entries each).

    Every call clips every row, whatever the data: a shortcut for rows no bound can reach would be
    exact, but its run time would tell whether some record needs clipping (an outlier), which a
    server can observe and the privacy guarantee does not cover. The sums come from the kernel of
    :mod:`~dpbnsl.mechanisms.clip_kernel`: one compiled pass with numba (the ``fast`` extra), else
    numpy passes over one reused buffer; both add the rows in order and give the same bits.
    Replacing one row changes only that row's terms, each in [−C_a, C_a], so sum a moves by at
    most 2C_a.

    Parameters
    ----------
    X : array of shape (n, d)
        Kept by reference when C-ordered float (it must not change), else copied once.
    bounds : array of shape (d,), non-negative
    """

    def __init__(self, X: np.ndarray, bounds: np.ndarray) -> None:
        self.X = np.ascontiguousarray(X, dtype=float)  # row order of the sums needs C order
        self.bounds = np.ascontiguousarray(bounds, dtype=float)
        if self.X.ndim != 2 or self.bounds.shape != self.X.shape[1:]:
            raise ValueError(f"`bounds` must have shape ({self.X.shape[-1]},); got {self.bounds.shape}")
        if not (self.bounds >= 0).all():  # NaN too
            raise ValueError("`bounds` must be non-negative numbers")
        n, d = self.X.shape
        self.backend = clip_kernel.backend()
        self._kernel = clip_kernel.numba_kernel()[0] if self.backend == "numba" else None
        if self._kernel is None:
            full = n * d <= FULL_BOUNDS_MAX  # the bounds repeated on every row: no broadcasting
            self._upper = np.repeat(self.bounds[None, :], n, axis=0) if full else self.bounds
            self._lower = -self._upper
            self._buf = np.empty((n, d))

    def __call__(self, r: np.ndarray) -> np.ndarray:
        """The d sums for the vector ``r`` of shape (n,) (a new array)."""
        r = np.ascontiguousarray(r, dtype=float)
        if r.shape != self.X.shape[:1]:
            raise ValueError(f"`r` must have shape ({self.X.shape[0]},); got {r.shape}")
        if self._kernel is None:
            return clip_kernel.numpy_column_sums(self.X, r, self._upper, self._lower, self._buf)
        out = np.empty(self.X.shape[1])
        self._kernel(self.X, r, self.bounds, out)
        return out


def clip_score_sensitivity(M: np.ndarray, clip: float, n: int, scheme: str = "relative") -> float:
    """Δ_s = max_a 2C_a/(n√M_a) for the thresholds C_a of :func:`clip_bounds` (= 2c/n: the same
    for every coordinate under every scheme). Replacing one record moves the clipped data gradient
    g_ab by at most 2C_a/n, and the score s_ab = √M_a·|S_{λ/M_a}(B_ab − g_ab/M_a) − B_ab| is
    1/√M_a-Lipschitz in g_ab (the soft-threshold is 1-Lipschitz)."""
    M = np.asarray(M, float)
    return scores_sensitivity(clip_bounds(M, clip, scheme), M, n)


def scores_sensitivity(C_a: np.ndarray, M: np.ndarray, n: int) -> float:
    return 2.0 * float(np.max(C_a / np.sqrt(M))) / n
