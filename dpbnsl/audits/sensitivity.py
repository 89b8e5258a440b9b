"""Grey-box sensitivity checks: each private computation run on replace-one neighbours D, D′.

A check runs the package's own code path for the computation on D and D′ twice:

1. **noise off** (noise multiplier 0, so the release *is* the pre-noise statistic; DP-PGCD: the
   gradient and scores its state holds before any release): the movement of the pre-noise value
   is compared with the sensitivity the package declares for it;
2. **noise on, same random state** (two generators seeded alike): the control flow outside the
   noise draws must be identical, i.e. both generators end in the same state (equally many
   draws), the privacy events recorded are equal, and, where the release is the statistic plus
   noise, release(D) − release(D′) equals the pre-noise difference (identical noise).

=============  =========================================  ======================  ==========
check          pre-noise value (package code path)        declared sensitivity    measured
=============  =========================================  ======================  ==========
pgcd-gradient  clipped g_ab, all coordinates (new_state)  Δ_g,ab = 2C_ab/n        per entry
pgcd-score     scores s_ab (new_state)                    Δ_s = 2C/(n√ΣM)         per entry
smoothness     m_a, Thm D.1 (private_smoothness)          X_a/n                   per entry
covariance     triangle of clip(X)ᵀclip(X)/n              √2R²/n                  ℓ2
               (release_covariance, DP-Fed-BNSL)
mean           mean of rows clipped to R (private_mean)   2R/n                    ℓ2
=============  =========================================  ======================  ==========

Given ``X_prime`` a check uses the one pair (X, X_prime); otherwise ``pairs`` generated pairs
replacing a random row, of three kinds in turn: ``"random"`` (a Gaussian row at the data's scale),
``"far"`` (10^U(1, 3) times larger: clipping binds) and ``"boundary"`` (row i of both datasets set
to a crafted pair beyond the clip boundary that attains the declared bound, so a ratio of 1 shows
the check is not vacuous). :data:`BROKEN_CHECKS` lists the negative controls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import ArrayLike, check_int, check_real
from ..accounting import LedgerEntry, PrivacyLedger
from ..learners.linear.pgcd import PGCDNoise, PGCDState, new_state, run_iterations
from ..mechanisms import (
    clip_bounds,
    clip_rows,
    clip_score_sensitivity,
    covariance_sensitivity,
    gaussian_mechanism,
    release_covariance,
)
from ..mechanisms.moments import as_bounds, private_mean, private_smoothness
from ._pgcd_games import UnclippedState
from ._sensitivity_base import BROKEN_CHECKS, RTOL, SensitivityCheck, Spec, check_inputs, run_check
from .game_base import EXCESS

if TYPE_CHECKING:
    from dp_accounting.dp_event import DpEvent

__all__ = [
    "SensitivityCheck",
    "CHECKS",
    "BROKEN_CHECKS",
    "RTOL",
    "check_sensitivity",
    "check_pgcd_gradient",
    "check_pgcd_score",
    "check_smoothness",
    "check_covariance",
    "check_mean",
]


def _pgcd(
    target: str,
    X: ArrayLike | None,
    X_prime: ArrayLike | None,
    *,
    pairs: int,
    clip: float,
    lambda1: float,
    rho2: float,
    multiplier: float,
    local_iters: int,
    broken: str | None,
    rng: np.random.Generator | int | None,
) -> SensitivityCheck:
    name = f"pgcd-{target}"
    X, X_prime, pairs, rng = check_inputs(X, X_prime, pairs, broken, name, rng, min_d=2)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    lam = check_real(lambda1, "lambda1", low=0.0)
    rho2 = check_real(rho2, "rho2", low=0.0, low_open=True)
    noise = PGCDNoise(C, check_real(multiplier, "multiplier", low=0.0, low_open=True))
    K = check_int(local_iters, "local_iters", low=1)
    n, d = X.shape
    M, off = (X * X).mean(axis=0) + rho2, ~np.eye(d, dtype=bool)  # m_a declared public
    s = math.sqrt(EXCESS * C / math.sqrt(d - 1))  # |x_a x_b| = s² ≥ 4C_a: always clipped

    def context(g: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # B, W, β of the pair (B = 0 for boundary rows: r_i = x_i)
        B, W = (np.where(g.random((d, d)) < 0.4, g.normal(size=(d, d)), 0.0) for _ in "BW")
        B = np.zeros((d, d)) if kind == "boundary" else B
        np.fill_diagonal(B, 0.0)
        np.fill_diagonal(W, 0.0)
        return B, W, 0.1 * g.normal(size=(d, d))

    def state(Xw: np.ndarray, ctx: tuple[np.ndarray, np.ndarray, np.ndarray]) -> PGCDState:
        B, W, beta = ctx
        Mw = (Xw * Xw).mean(axis=0) + rho2 if broken == "raw-smoothness" else M
        if broken == "no-clipping":
            return UnclippedState(Xw, B.copy(), W, beta, Mw, lam, rho2, clip_bounds(Mw, C))
        return new_state(Xw, B.copy(), W, beta, M=Mw, lambda1=lam, rho2=rho2, noise=noise)

    def exact(Xw: np.ndarray, ctx: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        st = state(Xw, ctx)
        return (st.G if target == "gradient" else st.S)[off]

    def noisy(
        Xw: np.ndarray, ctx: tuple[np.ndarray, np.ndarray, np.ndarray], g: np.random.Generator
    ) -> tuple[None, tuple[LedgerEntry, ...]]:  # K iterations: selections and gradient releases
        ledger = PrivacyLedger()
        run_iterations(state(Xw, ctx), K, noise=noise, rng=g, ledger=ledger)
        return None, ledger.entries

    def boundary(g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # B = 0: per-sample gradients −x_a x_b = ∓s² flip on the cross pairs
        flip = np.zeros(d, bool)
        flip[g.choice(d, size=int(g.integers(1, d)), replace=False)] = True
        return np.full(d, s), np.where(flip, -s, s)

    if target == "gradient":  # pgcd(), Privacy: Δ_g,ab = 2C_ab/n_k
        declared = np.broadcast_to((2.0 * clip_bounds(M, C) / n)[:, None], (d, d))[off]
    else:
        declared = np.full(d * (d - 1), clip_score_sensitivity(M, C, n))
    return run_check(
        name, Spec(exact, noisy, declared, boundary, False, context), X, X_prime, pairs, broken, rng
    )


def check_pgcd_gradient(
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    clip: float = 1.0,
    lambda1: float = 0.05,
    rho2: float = 0.3,
    multiplier: float = 2.0,
    local_iters: int = 3,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> SensitivityCheck:
    """DP-PGCD's clipped gradient g_ab, every off-diagonal coordinate, against Δ_g,ab = 2C_ab/n.

    The pre-noise gradient is the one :func:`~dpbnsl.learners.linear.pgcd.new_state` computes (the state
    every DP-PGCD run starts from; B, W, β drawn per pair, public m_a = D's raw means); the noisy
    run is ``local_iters`` iterations of :func:`~dpbnsl.learners.linear.pgcd.run_iterations` (selection
    and gradient release each), whose draws and ledger must agree on D and D′ (the selected
    coordinates may differ: they are the noisy output).

    Parameters
    ----------
    X, X_prime : arrays of shape (n, d), optional
        D (default: 40 × 5 N(0, 0.5²) rows from ``rng``) and a replace-one neighbour (default:
        ``pairs`` generated neighbours).
    pairs : int
        Generated neighbouring pairs.
    clip, lambda1, rho2, multiplier, local_iters : float, float, float, float, int
        C, λ₁, ρ₂, the noise multiplier m and K of the run.
    broken : {None, "no-clipping", "raw-smoothness"}
    rng : None, int or Generator

    Returns
    -------
    SensitivityCheck
    """
    return _pgcd(
        "gradient",
        X,
        X_prime,
        pairs=pairs,
        clip=clip,
        lambda1=lambda1,
        rho2=rho2,
        multiplier=multiplier,
        local_iters=local_iters,
        broken=broken,
        rng=rng,
    )


def check_pgcd_score(
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    clip: float = 1.0,
    lambda1: float = 0.05,
    rho2: float = 0.3,
    multiplier: float = 2.0,
    local_iters: int = 3,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> SensitivityCheck:
    """DP-PGCD's selection scores s_ab, every coordinate, against Δ_s = 2C/(n√ΣM) (the scale of
    the exponential mechanism is λ_G = mΔ_s). As :func:`check_pgcd_gradient` otherwise."""
    return _pgcd(
        "score",
        X,
        X_prime,
        pairs=pairs,
        clip=clip,
        lambda1=lambda1,
        rho2=rho2,
        multiplier=multiplier,
        local_iters=local_iters,
        broken=broken,
        rng=rng,
    )


def check_smoothness(
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    feature_bound: float | ArrayLike = 1.0,
    multiplier: float = 2.0,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> SensitivityCheck:
    """The private smoothness constants m_a (Fed-Sparse-BNSL Thm D.1), each against X_a/n.

    :func:`~dpbnsl.mechanisms.moments.private_smoothness` with multiplier 0 (pre-noise) and
    ``multiplier`` (d releases). Its floor is post-processing: set to the smallest positive
    float, and released values at the floor are not compared. Boundary pair: x_ia² = 4X_a
    (clipped to X_a) against 0. ``feature_bound``: X_a (scalar or shape (d,)); ``broken``:
    {None, "no-clipping"}; other parameters as in :func:`check_pgcd_gradient`.
    """
    X, X_prime, pairs, rng = check_inputs(X, X_prime, pairs, broken, "smoothness", rng)
    n, d = X.shape
    b = as_bounds(feature_bound, d, "feature_bound")
    z, tiny = check_real(multiplier, "multiplier", low=0.0, low_open=True), np.finfo(float).tiny

    def exact(Xw: np.ndarray, _: object) -> np.ndarray:
        bw = np.maximum(b, (Xw * Xw).max(axis=0)) if broken == "no-clipping" else b
        return private_smoothness(
            Xw, bound=bw, multiplier=0.0, rng=np.random.default_rng(0), ledger=PrivacyLedger(), floor=tiny
        )

    def noisy(
        Xw: np.ndarray, _: object, g: np.random.Generator
    ) -> tuple[np.ndarray, tuple[LedgerEntry, ...] | tuple[DpEvent, ...]]:
        ledger = PrivacyLedger()
        if broken is None:
            return private_smoothness(
                Xw, bound=b, multiplier=z, rng=g, ledger=ledger, floor=tiny
            ), ledger.entries
        u = exact(Xw, None)  # unclipped, with the noise of the declared sensitivity
        out = [gaussian_mechanism(u[a], sensitivity=b[a] / n, multiplier=z, rng=g) for a in range(d)]
        return np.maximum([r.value for r in out], tiny), tuple(r.event for r in out)

    def boundary(g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return np.sqrt(EXCESS * b) * g.choice([-1.0, 1.0], size=d), np.zeros(d)

    return run_check(
        "smoothness", Spec(exact, noisy, b / n, boundary, False, floor=tiny), X, X_prime, pairs, broken, rng
    )


def _row_clip(broken: str | None, R: float, Xw: np.ndarray) -> float:
    """The clip norm a variant applies: R, or (no clipping) one that no row of ``Xw`` exceeds."""
    return max(R, float(np.linalg.norm(Xw, axis=1).max())) if broken == "no-clipping" else R


def check_covariance(
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    clip_norm: float = 1.0,
    multiplier: float = 2.0,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> SensitivityCheck:
    """DP-Fed-BNSL's covariance release: the upper triangle of clip(X)ᵀclip(X)/n against √2R²/n
    in ℓ2 (:func:`~dpbnsl.learners.linear.dp_fed_bnsl.covariance_sensitivity`).

    :func:`~dpbnsl.learners.linear.dp_fed_bnsl.release_covariance` (what :func:`dp_fed_bnsl` calls) with
    multiplier 0 and ``multiplier``, no PSD projection. Boundary pair: 4R·e_a against 4R·e_b.
    ``clip_norm``: R; ``broken``: {None, "no-clipping", "data-dependent-noise"}; other parameters
    as in :func:`check_pgcd_gradient`.
    """
    X, X_prime, pairs, rng = check_inputs(X, X_prime, pairs, broken, "covariance", rng)
    n, d = X.shape
    R = check_real(clip_norm, "clip_norm", low=0.0, low_open=True)
    z = check_real(multiplier, "multiplier", low=0.0, low_open=True)
    declared = covariance_sensitivity(n, clip_norm=R)

    def exact(Xw: np.ndarray, _: object) -> np.ndarray:
        return release_covariance(
            Xw,
            clip_norm=_row_clip(broken, R, Xw),
            multiplier=0.0,
            psd_floor=None,
            rng=np.random.default_rng(0),
        )[1].value

    def noisy(Xw: np.ndarray, _: object, g: np.random.Generator) -> tuple[np.ndarray, tuple[DpEvent, ...]]:
        if broken == "no-clipping":
            r = gaussian_mechanism(exact(Xw, None), sensitivity=declared, multiplier=z, rng=g)
            return r.value, (r.event,)
        zw = z
        if broken == "data-dependent-noise":  # σ ∝ mean ‖clip(x_i)‖² instead of R²
            zw = z * float((clip_rows(Xw, norm=R) ** 2).sum(axis=1).mean()) / R**2
        r = release_covariance(Xw, clip_norm=R, multiplier=zw, psd_floor=None, rng=g)[1]
        return r.value, (r.event,)

    def boundary(g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # e_a, e_b (a ≠ b) beyond R attain the triangle's √2R²/n
        a, b = g.choice(d, size=2, replace=False) if d > 1 else (0, 0)
        return EXCESS * R * np.eye(d)[a], EXCESS * R * np.eye(d)[b]

    return run_check(
        "covariance", Spec(exact, noisy, np.array([declared]), boundary, True), X, X_prime, pairs, broken, rng
    )


def check_mean(
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    row_norm: float = 1.0,
    multiplier: float = 2.0,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> SensitivityCheck:
    """The private mean of rows clipped to ‖x‖₂ ≤ R (DP-Fed-BNSL's private centring) against 2R/n
    in ℓ2 (:func:`~dpbnsl.mechanisms.moments.private_mean`, Privacy).

    Boundary pair: 4R·u against −4R·u. ``row_norm``: R; ``broken``: {None, "no-clipping"}; other
    parameters as in :func:`check_pgcd_gradient`.
    """
    X, X_prime, pairs, rng = check_inputs(X, X_prime, pairs, broken, "mean", rng)
    n, d = X.shape
    R = check_real(row_norm, "row_norm", low=0.0, low_open=True)
    z = check_real(multiplier, "multiplier", low=0.0, low_open=True)
    declared = 2.0 * R / n

    def exact(Xw: np.ndarray, _: object) -> np.ndarray:
        return private_mean(
            Xw,
            row_norm=_row_clip(broken, R, Xw),
            multiplier=0.0,
            rng=np.random.default_rng(0),
            ledger=PrivacyLedger(),
        )

    def noisy(
        Xw: np.ndarray, _: object, g: np.random.Generator
    ) -> tuple[np.ndarray, tuple[DpEvent, ...] | tuple[LedgerEntry, ...]]:
        if broken == "no-clipping":
            r = gaussian_mechanism(exact(Xw, None), sensitivity=declared, multiplier=z, rng=g)
            return r.value, (r.event,)
        ledger = PrivacyLedger()
        return private_mean(Xw, row_norm=R, multiplier=z, rng=g, ledger=ledger), ledger.entries

    def boundary(g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        u = g.standard_normal(d)
        u *= EXCESS * R / np.linalg.norm(u)
        return u, -u

    return run_check(
        "mean", Spec(exact, noisy, np.array([declared]), boundary, True), X, X_prime, pairs, broken, rng
    )


#: The checks by name; each takes ``X``, ``X_prime`` and keyword-only ``pairs``, ``broken``,
#: ``rng`` and the computation's parameters, and returns a :class:`SensitivityCheck`.
CHECKS: Mapping[str, Callable[..., SensitivityCheck]] = MappingProxyType(
    {
        "pgcd-gradient": check_pgcd_gradient,
        "pgcd-score": check_pgcd_score,
        "smoothness": check_smoothness,
        "covariance": check_covariance,
        "mean": check_mean,
    }
)


def check_sensitivity(
    name: str,
    X: ArrayLike | None = None,
    X_prime: ArrayLike | None = None,
    *,
    pairs: int = 200,
    rng: np.random.Generator | int | None = None,
    **options: Any,
) -> SensitivityCheck:
    """Run the check ``name`` (a key of :data:`CHECKS`) with keyword ``options`` (``broken`` and
    the computation's parameters).

    Examples
    --------
    >>> r = check_sensitivity("covariance", pairs=30, rng=0)
    >>> r.passed, r.same_control_flow, round(r.ratio, 9)
    (True, True, 1.0)
    >>> check_sensitivity("covariance", pairs=30, rng=0, broken="no-clipping").passed
    False
    """
    if not isinstance(name, str) or name not in CHECKS:
        raise ValueError(f"`name` must be one of {', '.join(map(repr, CHECKS))}; got {name!r}")
    return CHECKS[name](X, X_prime, pairs=pairs, rng=rng, **options)
