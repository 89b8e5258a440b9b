"""PGCD and DP-PGCD: proximal greedy coordinate descent on participant k's local problem.

Local problem (Fed-Sparse-BNSL eq. (4); docs/decisions.md, 'Fed-Sparse-BNSL: the local problem
and the ADMM round'), over the off-diagonal entries of B (diagonal 0):

    f_k(B) = 1/(2n_k) ‖X_k − X_k B‖² + ⟨β_k, B − W⟩ + ρ₂/2 ‖B − W‖²  +  λ‖B‖₁

- coordinate smoothness M_ab = m_a + ρ₂ with m_a = (1/n_k) Σ_i x_ia²;
- gradient g_ab = (1/n_k) Σ_i g_i,ab + β_ab + ρ₂(B_ab − W_ab), with g_i,ab = −x_ia r_ib, r = X − XB;
- score (8): s_ab = √M_ab · |S_{λ/M_ab}(B_ab − g_ab/M_ab) − B_ab|;
- update (9) of the selected coordinate only: B_ab ← S_{λ/M_ab}(B_ab − g_ab/M_ab).

PGCD selects the argmax score. DP-PGCD (replace-one neighbours inside participant k) clips each
per-sample gradient coordinate at C_ab = c·√M_ab, selects by the exponential mechanism with scale
λ_G = m·Δ_s on the scores (Δ_s = 2c/n_k, the same for every coordinate), and adds N(0, σ_ab²) with
σ_ab = m·Δ_g,ab (Δ_g,ab = 2C_ab/n_k) to the selected gradient coordinate only; both releases cost
ρ = 1/(2m²). The global clip bound C sets c through the clip scheme (:data:`CLIP_SCHEMES`):
c = C (``"relative"``), c = C/√(Σ_a M_a) (``"parents"``, the d distinct constants) or
c = C/√((d−1)Σ_a M_a) (``"coordinates"``, the DP-CD normalisation over all d(d−1) coordinates).

Cost: O(n_k d²) to start (residual, gradient, scores), then O(n_k d) per iteration: an update of
B_ab changes only column b of the residual, hence only column b of the gradient and of the scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..._validation import ArrayLike, as_float_matrix, as_generator, check_int, check_real
from ...mechanisms import BoundedRangeDpEvent, ColumnwiseExponentialMechanism, gaussian_mechanism
from ...mechanisms.gradients import (
    CLIP_SCHEMES,
    clip_bounds,
    clip_score_sensitivity,
    clipped_products,
    scores_sensitivity,
)

if TYPE_CHECKING:
    from ...accounting.ledger import PrivacyLedger

__all__ = [
    "PGCDNoise",
    "PGCDResult",
    "pgcd",
    "soft_threshold",
    "clip_bounds",
    "clipped_products",
    "score_sensitivity",
    "clip_score_sensitivity",
    "CLIP_SCHEMES",
]


def soft_threshold(z: float | np.ndarray, tau: float | np.ndarray) -> float | np.ndarray:
    """S_τ(z) = sign(z)·max(|z| − τ, 0)."""
    return np.sign(z) * np.maximum(np.abs(z) - tau, 0.0)


@dataclass(frozen=True)
class PGCDNoise:
    """DP-PGCD noise: global clip bound ``clip`` (C), noise ``multiplier`` (m = λ_G/Δ_s =
    σ_ab/Δ_g,ab, from :func:`dpbnsl.accounting.calibrate_dp_pgcd`) and the ``scheme`` that turns
    C into per-parent thresholds (:func:`clip_bounds`)."""

    clip: float
    multiplier: float
    scheme: str = "relative"

    def __post_init__(self) -> None:
        check_real(self.clip, "clip", low=0.0, low_open=True)
        check_real(self.multiplier, "multiplier", low=0.0)
        if self.scheme not in CLIP_SCHEMES:
            raise ValueError(
                f"`scheme` must be one of {', '.join(map(repr, CLIP_SCHEMES))}; got {self.scheme!r}"
            )


@dataclass(frozen=True)
class PGCDResult:
    B: np.ndarray
    selected: np.ndarray  # flat index a·d + b of the coordinate chosen at each iteration
    score_sensitivity: float | None = None
    changes: int = 0  # iterations whose update changed B (the others left it as it was)


class PGCDState:
    """Residual, gradient and scores of the current B, updated one column at a time.

    The data part of the gradient (``Gd``, clipped when private) depends only on X and B, so it
    survives an ADMM round: :meth:`reset` takes the new W and β in O(d²).
    """

    def __init__(
        self,
        X: np.ndarray,
        B: np.ndarray,
        W: np.ndarray,
        beta: np.ndarray,
        M: np.ndarray,
        lambda1: float,
        rho2: float,
        C_a: np.ndarray | None,
    ) -> None:
        self.X, self.B = X, B
        self.n, self.d = X.shape
        self.M, self.lam, self.rho2, self.C_a = M, lambda1, rho2, C_a
        self.R = X - X @ B  # may overflow for records near 1e308: the private gradient clips it
        self._x_finite = bool(np.isfinite(X).all())
        self.changes = 0  # iterations that changed B
        self._buf = np.empty_like(X)
        self._ones = np.ones(self.n)  # column sums as a BLAS product: ~2× faster than sum(axis=0)
        self.Gd = np.empty_like(B)
        for b in range(self.d):
            self.Gd[:, b] = self.data_gradient(b)
        self.reset(W, beta)

    def reset(self, W: np.ndarray, beta: np.ndarray) -> None:
        """New W and β (a new ADMM round): gradient and scores of every column, O(d²)."""
        self.W, self.beta = W, beta
        self.G = self.Gd + beta + self.rho2 * (self.B - W)
        M = self.M[:, None]
        step = soft_threshold(self.B - self.G / M, self.lam / M)
        self.S = np.sqrt(M) * np.abs(step - self.B)
        np.fill_diagonal(self.S, -np.inf)  # the diagonal is not a coordinate
        self.col_max = self.S.max(axis=0)

    #: The arrays and numbers :meth:`arrays` saves (X, B, W and β are the caller's).
    SAVED = ("M", "C_a", "R", "Gd", "G", "S", "col_max")

    def arrays(self) -> dict[str, np.ndarray | float | int | None]:
        """The state's own arrays and counters, to rebuild it exactly with :meth:`restore`."""
        out: dict[str, np.ndarray | float | int | None] = {k: getattr(self, k) for k in self.SAVED}
        out.update(lam=self.lam, rho2=self.rho2, changes=self.changes)
        return out

    @classmethod
    def restore(
        cls,
        X: np.ndarray,
        B: np.ndarray,
        W: np.ndarray,
        beta: np.ndarray,
        saved: Mapping[str, Any],
    ) -> PGCDState:
        """The state :meth:`arrays` saved, on the same X (B, W and β are kept by reference, as
        the constructor and :meth:`reset` do); bitwise the state that was saved."""
        self = cls.__new__(cls)
        self.X, self.B, self.W, self.beta = X, B, W, beta
        self.n, self.d = X.shape
        for k in cls.SAVED:
            v = saved[k]
            setattr(self, k, None if v is None else np.array(v, dtype=float))
        self.lam, self.rho2, self.changes = float(saved["lam"]), float(saved["rho2"]), int(saved["changes"])
        self._x_finite = bool(np.isfinite(X).all())
        self._buf = np.empty_like(X)
        self._ones = np.ones(self.n)
        return self

    def data_gradient(self, b: int) -> np.ndarray:
        """(1/n) Σ_i g_i,ab for every parent a (clipped per sample when private): O(n d)."""
        if self.C_a is None:
            return -(self.X.T @ self.R[:, b]) / self.n
        buf = clipped_products(self.X, self.R[:, b], self.C_a, out=self._buf, x_finite=self._x_finite)
        return -(self._ones @ buf) / self.n

    def _refresh(self, b: int) -> None:
        self.Gd[:, b] = self.data_gradient(b)
        g = self.Gd[:, b] + self.beta[:, b] + self.rho2 * (self.B[:, b] - self.W[:, b])
        self.G[:, b] = g
        step = soft_threshold(self.B[:, b] - g / self.M, self.lam / self.M)
        s = np.sqrt(self.M) * np.abs(step - self.B[:, b])
        s[b] = -np.inf  # the diagonal is not a coordinate
        self.S[:, b] = s
        self.col_max[b] = s.max()

    def argmax(self) -> tuple[int, int]:
        """The largest score (ties: lowest column, then lowest row), in O(d)."""
        b = int(np.argmax(self.col_max))
        return int(np.argmax(self.S[:, b])), b

    def update(self, a: int, b: int, g: float) -> bool:
        """Apply update (9) to B_ab; returns whether B changed. When it did not (e.g. a zero
        coordinate soft-thresholded back to zero), nothing in column b changed either."""
        new = float(soft_threshold(self.B[a, b] - g / self.M[a], self.lam / self.M[a]))
        delta = new - self.B[a, b]
        if delta == 0.0:
            return False
        self.changes += 1
        self.B[a, b] = new
        self.R[:, b] -= self.X[:, a] * delta  # may overflow: the private gradient clips it
        self._refresh(b)
        return True


def _pgcd_iv(
    X: ArrayLike,
    B: ArrayLike,
    W: ArrayLike,
    beta: ArrayLike,
    m: ArrayLike,
    lambda1: float,
    rho2: float,
    iters: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = as_float_matrix(X, "X")
    n, d = X.shape
    if d < 2:
        raise ValueError(f"`X` must have at least 2 columns (off-diagonal coordinates); got {d}")
    mats = []
    for name, A in (("B", B), ("W", W), ("beta", beta)):
        A = as_float_matrix(A, name)
        if A.shape != (d, d):
            raise ValueError(f"`{name}` must have shape ({d}, {d}); got {A.shape}")
        mats.append(A)
    m = np.asarray(m, dtype=float)
    if m.shape != (d,) or not np.all(np.isfinite(m) & (m >= 0)):
        raise ValueError(f"`m` must be {d} finite non-negative smoothness constants; got {m!r}")
    check_real(lambda1, "lambda1", low=0.0)
    rho2 = check_real(rho2, "rho2", low=0.0)
    check_int(iters, "iters", low=0)
    M = m + rho2
    if np.any(M <= 0):
        raise ValueError("`m` + `rho2` must be positive (a zero column needs rho2 > 0)")
    return X, mats[0], mats[1], mats[2], M


def pgcd(
    X: np.ndarray,
    B: np.ndarray,
    W: np.ndarray,
    beta: np.ndarray,
    *,
    lambda1: float,
    rho2: float,
    iters: int,
    m: np.ndarray,
    noise: PGCDNoise | None = None,
    rng: np.random.Generator | None = None,
    ledger: PrivacyLedger | None = None,
    label: str = "dp-pgcd",
) -> PGCDResult:
    """Run ``iters`` iterations of PGCD (``noise=None``) or DP-PGCD from ``B`` (warm start).

    Parameters
    ----------
    X : array of shape (n_k, d)
        Participant k's data (centred or declared centred by the caller).
    B, W, beta : arrays of shape (d, d)
        Current local matrix (warm start; not modified), global matrix and dual variable.
    lambda1, rho2 : float
        ℓ1 weight and consensus penalty.
    iters : int
        Number of coordinate updates K.
    m : array of shape (d,)
        Data part of the smoothness constants, m_a = (1/n_k)Σ x_ia². In a private run it must be
        public (not computed from X) or privately estimated, because it sets the clip thresholds.
    noise : PGCDNoise, optional
        Clip bound and noise multiplier (both public); None runs the non-private PGCD. A multiplier of 0 keeps
        the clipping but switches the noise off (exact argmax; the ledger then records
        infinite-cost events).
    rng : None, int or numpy Generator
        Randomness of the private releases. None draws fresh entropy from the operating system;
        a seed or Generator whose state anyone can know voids the guarantee (the noise can be
        regenerated and subtracted).
    ledger : PrivacyLedger
        Required when ``noise`` is given: receives one event per release (a selection and a
        Gaussian gradient per iteration).

    Privacy
    -------
    Replace-one neighbours within participant k; per-sample gradient coordinates clipped at
    C_ab = c√M_a (:func:`clip_bounds`, scheme ``noise.scheme``). Selection: scores of sensitivity
    Δ_s = 2c/n_k (:func:`score_sensitivity`), exponential mechanism with λ_G = mΔ_s (ε₀ = 2/m
    bounded range, ρ = 1/(2m²)). Update: Gaussian with σ_ab = mΔ_g,ab = λ_G√M_ab on a coordinate
    of sensitivity Δ_g,ab = 2C_ab/n_k (ρ = 1/(2m²)). Fassy El Fehri et al. eqs. (11)–(13),
    Theorem 5.1.
    """
    X, B, W, beta, M = _pgcd_iv(X, B, W, beta, m, lambda1, rho2, iters)
    n, d = X.shape
    private = noise is not None
    if private:
        if not isinstance(noise, PGCDNoise):
            raise TypeError(f"`noise` must be a PGCDNoise or None; got {type(noise).__name__}")
        if ledger is None:
            raise TypeError("`ledger` is required when `noise` is given: every release is recorded")
        rng = as_generator(rng)
    state = new_state(X, B, W, beta, M=M, lambda1=lambda1, rho2=rho2, noise=noise)
    selected = run_iterations(state, iters, noise=noise, rng=rng, ledger=ledger, label=label)
    delta_s = score_sensitivity(state) if private else None
    return PGCDResult(state.B, selected, delta_s, state.changes)


def score_sensitivity(state: PGCDState) -> float:
    """Δ_s of the scores of a private state (see :func:`clip_score_sensitivity`)."""
    return scores_sensitivity(cast(np.ndarray, state.C_a), state.M, state.n)


def new_state(
    X: np.ndarray,
    B: np.ndarray,
    W: np.ndarray,
    beta: np.ndarray,
    *,
    M: np.ndarray,
    lambda1: float,
    rho2: float,
    noise: PGCDNoise | None,
) -> PGCDState:
    """The O(n_k·d²) start of a (DP-)PGCD run on validated arrays (B is updated in place)."""
    C_a = clip_bounds(M, noise.clip, noise.scheme) if noise is not None else None
    return PGCDState(X, B, W, beta, M, lambda1, rho2, C_a)


def run_iterations(
    state: PGCDState,
    iters: int,
    *,
    noise: PGCDNoise | None,
    rng: np.random.Generator | None,
    ledger: PrivacyLedger | None,
    label: str = "dp-pgcd",
) -> np.ndarray:
    """``iters`` (DP-)PGCD iterations on ``state``, O(n_k·d) each; returns the selected flat
    indices. Private releases go through the mechanisms and are recorded in ``ledger``."""
    n, d = state.n, state.d
    private = noise is not None
    selected = np.empty(iters, dtype=np.int64)
    sampler = None
    # when private, the callers give noise, rng and ledger, and state.C_a is set (the casts below)
    if private and cast(PGCDNoise, noise).multiplier > 0:
        sampler = ColumnwiseExponentialMechanism(
            state.S, sensitivity=score_sensitivity(state), multiplier=cast(PGCDNoise, noise).multiplier
        )
    for k in range(iters):
        if sampler is not None:
            choice = sampler.sample(cast(np.random.Generator, rng))
            a, b = divmod(choice.value, d)
        else:  # PGCD, or DP-PGCD with the noise switched off (multiplier 0: exact argmax)
            a, b = state.argmax()
        g = state.G[a, b]
        if private:
            delta_g = 2.0 * cast(np.ndarray, state.C_a)[a] / n
            release = gaussian_mechanism(
                g,
                sensitivity=delta_g,
                multiplier=cast(PGCDNoise, noise).multiplier,
                rng=cast(np.random.Generator, rng),
            )
            g = release.value
            select_event = choice.event if sampler is not None else BoundedRangeDpEvent(math.inf)
            cast("PrivacyLedger", ledger).record(f"{label}/select", select_event)
            cast("PrivacyLedger", ledger).record(f"{label}/gradient", release.event)
        selected[k] = a * d + b
        if state.update(a, b, g) and sampler is not None:
            sampler.update_column(b, state.S[:, b])
    return selected
