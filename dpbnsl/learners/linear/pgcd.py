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
The per-iteration work stays out of Python objects where it can: the clipped column sums reuse
one buffer and clip every row whatever the data, so that the run time reveals nothing the
releases do not (:class:`~dpbnsl.mechanisms.ClippedProductSums`), the selection keeps
per-column cumulative weights and the noise of a block of iterations is drawn at once
(:class:`~dpbnsl.mechanisms.ColumnwiseExponentialStream`,
:class:`~dpbnsl.mechanisms.GaussianStream`), and a block's releases are recorded as one ledger
record per event with its count (benchmarks/bench_dp_pgcd.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..._validation import ArrayLike, as_float_matrix, as_generator, check_int, check_real
from ...blas import one_blas_thread
from ...mechanisms import (
    BoundedRangeDpEvent,
    ColumnwiseExponentialStream,
    GaussianStream,
    gaussian_mechanism,
)
from ...mechanisms.gradients import (
    CLIP_SCHEMES,
    ClippedProductSums,
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


def _soft_threshold_scalar(z: float, tau: float) -> float:
    """:func:`soft_threshold` of one float, in Python arithmetic: the same value, signed zeros and
    NaNs included (sign(z)·max(|z| − τ, 0))."""
    m = abs(z) - tau
    if m > 0.0:
        return m if z > 0.0 else -m
    if m == m:  # max(m, 0) = 0, times sign(z)
        return -0.0 if z < 0.0 else 0.0
    return math.nan


class PGCDState:
    """Residual, gradient and scores of the current B, updated one column at a time.

    The data part of the gradient (``Gd``, clipped when private) depends only on X and B, so it
    survives an ADMM round: :meth:`reset` takes the new W and β in O(d²). W and β must not change
    between calls to :meth:`reset` (the state keeps β + ρ₂(B − W), updating it with B).
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
        # the state's matrices are column-major: an iteration reads and writes one column
        self.R = np.asfortranarray(X - X @ B)  # may overflow near 1e308: the private gradient clips it
        self.changes = 0  # iterations that changed B
        self._derived()
        self.Gd = np.empty_like(B, order="F")
        for b in range(self.d):
            self.Gd[:, b] = self.data_gradient(b)
        self.reset(W, beta)

    def _derived(self) -> None:
        """Constants and work buffers derived from X, M, λ and C_a (not saved: rebuilt)."""
        M = self.M
        self._sums = None if self.C_a is None else ClippedProductSums(self.X, self.C_a)
        self._tau = self.lam / M  # soft-threshold levels λ/M_a
        self._neg_tau = -self._tau
        self._sqrt_M = np.sqrt(M)
        self._M_list, self._tau_list = M.tolist(), self._tau.tolist()
        self._col = np.empty((2, self.d))  # column work buffers
        self._step = np.empty(self.n)  # the change of a residual column

    def reset(self, W: np.ndarray, beta: np.ndarray) -> None:
        """New W and β (a new ADMM round): gradient and scores of every column, O(d²)."""
        self.W, self.beta = W, beta
        self._P = np.asfortranarray(beta + self.rho2 * (self.B - W))  # the gradient's non-data part
        self.G = self.Gd + self._P
        self.S = np.asfortranarray(
            scores(self.B, self.G, self.M[:, None], self._tau[:, None], self._sqrt_M[:, None])
        )
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
            setattr(self, k, None if v is None else np.array(v, dtype=float, order="F"))
        self.lam, self.rho2, self.changes = float(saved["lam"]), float(saved["rho2"]), int(saved["changes"])
        self._derived()
        self._P = np.asfortranarray(beta + self.rho2 * (B - W))
        return self

    def data_gradient(self, b: int) -> np.ndarray:
        """(1/n) Σ_i g_i,ab for every parent a (clipped per sample when private): O(n d)."""
        if self._sums is None:
            return -(self.X.T @ self.R[:, b]) / self.n
        sums = self._sums(self.R[:, b])
        sums /= -self.n  # −(Σ)/n: dividing by −n rounds to the same number
        return sums

    def _refresh(self, b: int) -> None:
        """Gradient and scores of column b after its residual changed: O(n d) for the data
        gradient, then O(d) (the arithmetic of :meth:`reset`, in preallocated buffers)."""
        gd = self.data_gradient(b)
        self.Gd[:, b] = gd
        g = np.add(gd, self._P[:, b], out=self.G[:, b])
        v, s = self._col
        np.divide(g, self.M, out=v)
        np.subtract(self.B[:, b], v, out=s)  # u = B − g/M, and S_τ(u) − B = −(v + clip(u, ±τ))
        np.maximum(s, self._neg_tau, out=s)
        np.minimum(s, self._tau, out=s)
        np.add(s, v, out=s)
        np.abs(s, out=s)
        np.multiply(s, self._sqrt_M, out=s)
        s[b] = -math.inf  # the diagonal is not a coordinate
        self.S[:, b] = s
        self.col_max[b] = np.maximum.reduce(s)

    def argmax(self) -> tuple[int, int]:
        """The largest score (ties: lowest column, then lowest row), in O(d)."""
        b = int(np.argmax(self.col_max))
        return int(np.argmax(self.S[:, b])), b

    def update(self, a: int, b: int, g: float) -> bool:
        """Apply update (9) to B_ab; returns whether B changed. When it did not (e.g. a zero
        coordinate soft-thresholded back to zero), nothing in column b changed either."""
        old = self.B.item(a, b)
        new = _soft_threshold_scalar(old - float(g) / self._M_list[a], self._tau_list[a])
        delta = new - old
        if delta == 0.0:
            return False
        self.changes += 1
        self.B[a, b] = new
        self._P[a, b] = self.beta.item(a, b) + self.rho2 * (new - self.W.item(a, b))
        r, step = self.R[:, b], self._step
        np.multiply(self.X[:, a], delta, out=step)
        np.subtract(r, step, out=r)  # may overflow: the private gradient clips it
        self._refresh(b)
        return True


def scores(B: np.ndarray, G: np.ndarray, M: np.ndarray, tau: np.ndarray, sqrt_M: np.ndarray) -> np.ndarray:
    """Scores (8) s = √M·|S_τ(B − G/M) − B| (τ = λ/M; M, τ and √M broadcast against B), computed
    as √M·|v + clip(B − v, −τ, τ)| with v = G/M: algebraically the same, since
    S_τ(u) = u − clip(u, ±τ) (the two forms round differently, by about one ulp of v)."""
    v = G / M
    return sqrt_M * np.abs(v + np.clip(B - v, -tau, tau))


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


@one_blas_thread
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
        regenerated and subtracted). The noise is drawn in blocks of iterations
        (:func:`run_iterations`).
    ledger : PrivacyLedger
        Required when ``noise`` is given: receives one event per release (a selection and a
        Gaussian gradient per iteration), recorded with counts per block of iterations.

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


#: DP-PGCD draws its noise from ``rng`` for up to this many iterations at a time: the 2L uniforms
#: of the L selections, then the L standard normals of the L gradient releases (each number is
#: used by exactly one release).
DRAW_BLOCK = 1024


def run_iterations(
    state: PGCDState,
    iters: int,
    *,
    noise: PGCDNoise | None,
    rng: np.random.Generator | None,
    ledger: PrivacyLedger | None,
    label: str = "dp-pgcd",
    trace: list[float] | None = None,
) -> np.ndarray:
    """``iters`` (DP-)PGCD iterations on ``state``, O(n_k·d) each; returns the selected flat
    indices. Private releases go through the mechanisms and are recorded in ``ledger``; with
    ``trace`` (a list), the released noisy gradients are appended to it, in order (an
    auditor's view of the transcript: :mod:`dpbnsl.audits.transcript`).

    With noise, the random numbers come from ``rng`` in blocks of up to :data:`DRAW_BLOCK`
    iterations (the block's selection uniforms, then its Gaussian normals), and the ledger
    receives each block's selections and gradient releases as one record of each with their
    count (the same entries as one record per release). A ledger with a budget checks the whole
    block first (:meth:`~dpbnsl.accounting.PrivacyLedger.fits`); a block that would not fit gets
    one record of each per iteration instead, before the update, so that a release the budget
    refuses never reaches B."""
    if noise is not None and noise.multiplier > 0:
        # when private, the callers give rng and ledger, and state.C_a is set (the casts below)
        return _run_private(
            state,
            iters,
            noise.multiplier,
            cast(np.random.Generator, rng),
            cast("PrivacyLedger", ledger),
            label,
            trace,
        )
    d, n = state.d, state.n
    selected = np.empty(iters, dtype=np.int64)
    for k in range(iters):  # PGCD, or DP-PGCD with the noise switched off (multiplier 0: exact argmax)
        a, b = state.argmax()
        g = state.G[a, b]
        if noise is not None:
            release = gaussian_mechanism(
                g,
                sensitivity=2.0 * cast(np.ndarray, state.C_a)[a] / n,
                multiplier=noise.multiplier,
                rng=cast(np.random.Generator, rng),
            )
            g = release.value
            cast("PrivacyLedger", ledger).record(f"{label}/select", BoundedRangeDpEvent(math.inf))
            cast("PrivacyLedger", ledger).record(f"{label}/gradient", release.event)
        selected[k] = a * d + b
        state.update(a, b, g)
    return selected


def _run_private(
    state: PGCDState,
    iters: int,
    multiplier: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    label: str,
    trace: list[float] | None = None,
) -> np.ndarray:
    """DP-PGCD's iterations: a selection by the exponential mechanism, then a Gaussian release of
    the selected gradient coordinate, then the update (see :func:`run_iterations`)."""
    d = state.d
    selected = np.empty(iters, dtype=np.int64)
    sampler = ColumnwiseExponentialStream(
        state.S, sensitivity=score_sensitivity(state), multiplier=multiplier
    )
    gaussian = GaussianStream(multiplier)
    select_label, gradient_label = f"{label}/select", f"{label}/gradient"
    # Δ_g,ab = 2C_a/n_k, the expression gaussian_mechanism was given
    delta_g = (2.0 * cast(np.ndarray, state.C_a) / state.n).tolist()
    filtered = getattr(ledger, "budget", None) is not None
    G, S, col_max, update = state.G, state.S, state.col_max, state.update
    sample, release, update_column = sampler.sample, gaussian.release, sampler.update_column
    record = ledger.record
    done = 0
    while done < iters:
        block = min(DRAW_BLOCK, iters - done)
        # a ledger with a budget checks the block's releases at once; only a block that would not
        # fit is recorded release by release, so that the one the budget refuses never reaches B
        eager = filtered and not ledger.fits(
            [(select_label, sampler.event, block), (gradient_label, gaussian.event, block)]
        )
        sampler.draw(rng, block)
        gaussian.draw(rng, block)
        released = 0  # iterations of the block whose two releases were made (to record)
        try:
            for k in range(done, done + block):
                flat = sample()
                a, b = divmod(flat, d)
                g = release(G.item(a, b), delta_g[a])
                if trace is not None:
                    trace.append(g)
                if eager:
                    record(select_label, sampler.event)
                    record(gradient_label, gaussian.event)
                else:
                    released += 1
                selected[k] = flat
                if update(a, b, g):
                    update_column(b, S[:, b], col_max.item(b))
        finally:
            if released:  # count = k records exactly as k records of one event
                record(select_label, sampler.event, released)
                record(gradient_label, gaussian.event, released)
        done += block
    return selected
