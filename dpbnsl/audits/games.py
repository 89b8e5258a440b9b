"""Distinguishing games: each private release run many times on two neighbouring datasets.

A game fixes a worst-case pair of replace-one neighbours D (world 0) and D′ (world 1), runs the
mechanism ``trials`` times on each, and returns one score per run, higher meaning "world 1", for
the bounds of :mod:`dpbnsl.audits.bounds`. The replaced row is crafted beyond the clipping
boundary, so that the clipped statistic moves by exactly the declared sensitivity. Scores are the
likelihood-ratio statistic of the mechanism run (optimal by Neyman–Pearson) where it is tractable:

================  =============================================  ===============================
game              neighbours (replace one row)                   score
================  =============================================  ===============================
gaussian-step     g_i,ab = −x_ia x_ib clipped: −C_a vs +C_a      the released gradient g̃_ab
selection         one row flips many clipped gradients           log P₁(j)/P₀(j) of the pick j
covariance        rows 2R·e₀ vs 2R·e₁ (clipped to norm R)        projection of S̃ on e₀₀ − e₁₁
smoothness        x_ia² = 4X_a (clipped to X_a) vs 0             Σ_a (m̃_a − m_a)/X_a
dp-pgcd           as selection, K iterations                     the canary entry of the message
dp-pgcd-worst     a row that flips every cross coordinate's      ln p(D′)/p(D) of all 2K releases
                  clipped gradient; D's scores split "up"/"down"
dp-fed-sparse-    participant 0's row with an extreme entry      minus the mass of row p in
bnsl                                                             participant 0's uploads
secure-           participant 0's rows 2R·e₀ vs 2R·e₁, rounded   projection of the decoded
covariance        onto the integer grid, P noise shares summed   secure sum on e₀₀ − e₁₁
sparse-vector     k − 1 queries at the threshold vs +Δ, the last   1 if the round stopped at the
                  at cΔ vs (c − 1)Δ (Priv-PC's sieve round)       last query
priv-pc-examine   a row concordant with a discordant stratum vs   the released |z| + Lap(Δ/ε)
                  discordant with a concordant one (Kendall z)
secure-kendall    priv-pc-examine's rows in participant 0, the    the decoded secure sum
                  numerators summed with P Skellam shares
================  =============================================  ===============================

Every game calibrates its noise with :mod:`dpbnsl.accounting` and reports as
``claimed_epsilon`` what the package's accountant says for the release (PLD for single Gaussian
releases, the RDP accountant for selections and DP-PGCD runs). The Gaussian games draw all trials
in one call of :func:`dpbnsl.mechanisms.gaussian_mechanism` on a stacked value (the same function
the learners call, once per release); the selection game samples the exponential mechanism by
inverting its CDF for all trials at once (the distribution the package's samplers draw; the tests
compare both against the package's own path). :data:`BROKEN` lists the negative controls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from dp_accounting import GaussianDpEvent

from .._validation import as_generator, check_int, check_real
from ..accounting import LedgerEntry, PrivacyLedger, calibrate_gaussian, calibrate_smoothness, compose_epsilon
from ..learners.linear.dp_fed_bnsl import plan
from ..learners.linear.pgcd import PGCDNoise, new_state
from ..mechanisms import clip_bounds, covariance_sensitivity, gaussian_mechanism, release_covariance
from ..mechanisms.moments import as_bounds, private_smoothness
from ._pgcd_games import (
    dp_fed_sparse_bnsl_game,
    dp_fed_sparse_bnsl_transcript_game,
    dp_fed_sparse_bnsl_worst_game,
    dp_pgcd_game,
    dp_pgcd_transcript_game,
    dp_pgcd_worst_game,
    selection_game,
)
from ._pure_games import priv_pc_examine_game, secure_kendall_game, sparse_vector_game
from ._secure_games import secure_covariance_game
from .game_base import BROKEN, EXCESS, GameResult, base_rows, check_broken, check_target, check_trials

__all__ = [
    "GameResult",
    "GAMES",
    "BROKEN",
    "run_game",
    "gaussian_step_game",
    "selection_game",
    "covariance_game",
    "smoothness_game",
    "dp_pgcd_game",
    "dp_pgcd_transcript_game",
    "dp_pgcd_worst_game",
    "dp_fed_sparse_bnsl_game",
    "dp_fed_sparse_bnsl_transcript_game",
    "dp_fed_sparse_bnsl_worst_game",
    "secure_covariance_game",
    "sparse_vector_game",
    "priv_pc_examine_game",
    "secure_kendall_game",
]

_CHUNK = 1 << 16  # trials per batch for releases of more than one number


@functools.lru_cache(maxsize=64)
def _pld_epsilon(multiplier: float, count: int, delta: float) -> float:
    """ε(δ) of ``count`` Gaussian releases of one multiplier under the PLD accountant."""
    return compose_epsilon([LedgerEntry("release", GaussianDpEvent(multiplier), count)], delta, "pld")


def gaussian_step_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    noise_deficit: float = 0.0,
    n: int = 100,
    d: int = 4,
    clip: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """The Gaussian release of one clipped DP-PGCD gradient coordinate, calibrated to (ε, δ).

    Participant data X (n × d), B = W = β = 0, public smoothness m_a = 1, ρ₂ = 1, coordinate
    (a, b) = (0, 1). The last row is the canary: √(4C_a)(e_a + e_b) in D and √(4C_a)(e_a − e_b) in
    D′, so its per-sample gradient −x_a x_b is clipped from −C_a to +C_a and the data gradient
    (computed by the package's DP-PGCD state) moves by exactly Δ_g = 2C_a/n_k. The release is
    g_ab + N(0, (zΔ_g)²) with z = :func:`~dpbnsl.accounting.calibrate_gaussian` (analytic), the
    exact (ε, δ) calibration of one Gaussian release, so the game is tight. Score: the released
    value (the likelihood-ratio statistic of a Gaussian shift).

    Broken variants: ``"noise-halved"`` (z/2); ``"no-clipping"`` (the unclipped gradient, which
    moves by 8C_a/n_k, with noise for Δ_g). ``noise_deficit`` p is a graded negative control: the
    release adds (1 − p)·σ while the claim stays the calibrated ε (p = 0.1, 0.2, 0.5: the
    negative-control table of the audits' documentation).

    Parameters
    ----------
    epsilon, delta : float
        Target of the single release (ε > 0, δ in (0, 1)).
    trials : int
        Runs per world; all noise is drawn in one call.
    broken : {None, "noise-halved", "no-clipping"}
    noise_deficit : float in [0, 1), default 0
        Fraction of the calibrated noise left out (0: the correct mechanism).
    n, d : int
        Rows and columns of the participant's data (n ≥ 2, d ≥ 2).
    clip : float
        Global clip bound C; C_a = C√(M_a/ΣM).
    rng : None, int or Generator
        Randomness of the releases (the neighbours are fixed).

    Returns
    -------
    GameResult
        ``details``: multiplier z (and the one used), sensitivity, σ, pre-noise gradients, rows.
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "gaussian-step")
    n, d = check_int(n, "n", low=2), check_int(d, "d", low=2)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    deficit = check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True)
    rng = as_generator(rng)
    z = calibrate_gaussian(e, dl, 1.0, method="analytic")
    M, rho2, a, b = np.full(d, 2.0), 1.0, 0, 1
    C_a = float(clip_bounds(M, C)[a])
    sensitivity = 2.0 * C_a / n
    canary, s = np.zeros((2, d)), np.sqrt(EXCESS * C_a)  # x_a·x_b = ±4C_a
    canary[:, a], canary[:, b] = s, (s, -s)
    worlds, zero = [np.vstack([base_rows(n, d, 0.5), row]) for row in canary], np.zeros((d, d))
    noise = None if broken == "no-clipping" else PGCDNoise(C, z)
    gradients = [
        float(new_state(X, zero.copy(), zero, zero, M=M, lambda1=0.0, rho2=rho2, noise=noise).G[a, b])
        for X in worlds
    ]
    z_used = (z / 2.0 if broken == "noise-halved" else z) * (1.0 - deficit)
    scores = [
        gaussian_mechanism(np.full(trials, g), sensitivity=sensitivity, multiplier=z_used, rng=rng).value
        for g in gradients
    ]
    return GameResult(
        "gaussian-step",
        scores[0],
        scores[1],
        _pld_epsilon(z, 1, dl),
        dl,
        broken,
        {
            "multiplier": z,
            "multiplier_used": z_used,
            "noise_deficit": deficit,
            "sensitivity": sensitivity,
            "sigma": z_used * sensitivity,
            "means": tuple(gradients),
            "coordinate": (a, b),
            "clip_a": C_a,
            "smoothness": M - rho2,
            "rho2": rho2,
            "rows": tuple(worlds),
            "accountant": "pld",
            "score": "released gradient coordinate g̃_ab",
        },
    )


def _clip_spectrum(
    triangles: np.ndarray, iu: tuple[np.ndarray, np.ndarray], d: int, top: float
) -> np.ndarray:
    """Upper triangles (k, p) of symmetric matrices with eigenvalues clipped to [0, ``top``]."""
    S = np.zeros((triangles.shape[0], d, d))
    S[:, iu[0], iu[1]] = triangles
    S[:, iu[1], iu[0]] = triangles
    evals, Q = np.linalg.eigh(S)
    return ((Q * np.clip(evals, 0.0, top)[:, None, :]) @ np.swapaxes(Q, 1, 2))[:, iu[0], iu[1]]


def covariance_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    n: int = 100,
    d: int = 3,
    clip_norm: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """DP-Fed-BNSL's covariance release S̃ = clip(X)ᵀclip(X)/n + E, calibrated to (ε, δ).

    The n − 1 shared rows have norm ≤ R/2; the canary row is 2R·e₀ in D and 2R·e₁ in D′, clipped
    to R·e₀ vs R·e₁, which attains the replace-one sensitivity √2R²/n of the upper triangle
    (orthogonal rows at the clip norm). The release runs the package's
    :func:`~dpbnsl.learners.linear.dp_fed_bnsl.release_covariance` steps: the pre-noise triangle comes
    from it (noise multiplier 0), the noise from :func:`~dpbnsl.mechanisms.gaussian_mechanism`
    with the learner's own calibration (analytic Gaussian, certified by the PLD accountant).
    Score: projection of the released triangle on the unit vector along e₀₀ − e₁₁, centred at
    world 0's pre-noise value.

    Broken variants: ``"noise-halved"``; ``"no-clipping"`` (rows not clipped: the triangle moves
    by 4√2R²/n); ``"noise-before-clipping"`` (noise added to the raw triangle of XᵀX/n, then the
    release clipped to the set where a covariance of rows of norm ≤ R lies, eigenvalues in
    [0, R²]: post-processing that bounds the output but not the sensitivity).

    Parameters
    ----------
    epsilon, delta, trials, broken, rng
        As in :func:`gaussian_step_game` (``broken`` from :data:`BROKEN`).
    n, d : int
        Rows and columns of the participant's data.
    clip_norm : float
        R, the row clip norm.
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "covariance")
    n, d = check_int(n, "n", low=2), check_int(d, "d", low=2)
    R = check_real(clip_norm, "clip_norm", low=0.0, low_open=True)
    rng = as_generator(rng)
    covariance = plan(epsilon=e, delta=dl)  # the learner's analytic calibration, no centring
    z, claimed = covariance.z_cov, covariance.spent
    base = base_rows(n, d, 0.5 * R / np.sqrt(d))
    canary = np.sqrt(EXCESS) * R * np.eye(d)[:2]
    worlds = [np.vstack([base, row]) for row in canary]
    iu = np.triu_indices(d)
    raw = broken in ("no-clipping", "noise-before-clipping")

    def triangle(X: np.ndarray, norm: float) -> np.ndarray:
        # the package's release with the noise switched off
        return release_covariance(X, clip_norm=norm, multiplier=0.0, psd_floor=None, rng=rng)[0][iu]

    clipped = [triangle(X, R) for X in worlds]
    direction = (clipped[1] - clipped[0]) / np.linalg.norm(clipped[1] - clipped[0])
    # unclipped variants: a clip norm no row exceeds leaves every row as it is
    means = [
        triangle(X, float(np.linalg.norm(X, axis=1).max())) if raw else c for X, c in zip(worlds, clipped)
    ]
    sensitivity = covariance_sensitivity(n, clip_norm=R)
    z_used = z / 2.0 if broken == "noise-halved" else z
    scores = [np.empty(trials), np.empty(trials)]
    for w, u in enumerate(means):
        for start in range(0, trials, _CHUNK):
            k = min(_CHUNK, trials - start)
            released = gaussian_mechanism(
                np.broadcast_to(u, (k, u.size)), rng=rng, sensitivity=sensitivity, multiplier=z_used
            ).value
            if broken == "noise-before-clipping":
                released = _clip_spectrum(released, iu, d, R * R)
            scores[w][start : start + k] = (released - means[0]) @ direction
    return GameResult(
        "covariance",
        scores[0],
        scores[1],
        claimed,
        dl,
        broken,
        {
            "multiplier": z,
            "multiplier_used": z_used,
            "sensitivity": sensitivity,
            "sigma": z_used * sensitivity,
            "shift": float((means[1] - means[0]) @ direction),
            "direction": direction,
            "rows": tuple(worlds),
            "accountant": "pld",
            "score": "projection of the released upper triangle on e00 - e11",
        },
    )


def smoothness_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    n: int = 100,
    d: int = 3,
    feature_bound: float = 1.0,
    floor: float = 1e-3,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """The private smoothness constants (Fed-Sparse-BNSL Thm D.1): d Gaussian releases of clipped
    means.

    The n − 1 shared rows have x_ia² ≤ 0.81X_a; the canary row is 0 in D and x_ia = 2√X_a in D′
    (x_ia² = 4X_a, clipped to X_a), so every m_a moves by exactly its sensitivity X_a/n. Noise from
    :func:`~dpbnsl.accounting.calibrate_smoothness` ("tight": d releases of multiplier m compose
    exactly into one Gaussian of multiplier m/√d = the analytic (ε, δ) multiplier). Pre-noise
    values come from :func:`~dpbnsl.mechanisms.moments.private_smoothness` with the noise off;
    each constant is then released for all trials in one call, and floored as the package does.
    Score: Σ_a (m̃_a − m_a(D))/X_a, the likelihood-ratio direction.

    Broken variants: ``"noise-halved"``; ``"no-clipping"`` (x_ia² not clipped: m_a moves by
    4X_a/n).

    Parameters
    ----------
    epsilon, delta, trials, broken, rng
        As in :func:`gaussian_step_game` (``broken`` from :data:`BROKEN`).
    n, d : int
        Rows and columns of the participant's data.
    feature_bound : float
        The public bound X_a on x_ia² (the same for every a).
    floor : float
        The floor applied to the released constants (post-processing, as the package does).
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "smoothness")
    n, d = check_int(n, "n", low=2), check_int(d, "d", low=1)
    bound = as_bounds(check_real(feature_bound, "feature_bound", low=0.0, low_open=True), d, "feature_bound")
    floor = check_real(floor, "floor", low=0.0, low_open=True)
    rng = as_generator(rng)
    m = calibrate_smoothness(e, dl, d=d, method="tight")
    base = 0.9 * np.sqrt(bound) * np.abs(base_rows(n, d, 1.0))
    canary = np.vstack([np.zeros(d), np.sqrt(EXCESS * bound)])
    worlds = [np.vstack([base, row]) for row in canary]

    def exact(X: np.ndarray) -> np.ndarray:  # the package's estimate with the noise switched off
        b = np.maximum(bound, (X * X).max(axis=0)) if broken == "no-clipping" else bound
        return private_smoothness(X, bound=b, multiplier=0.0, rng=rng, ledger=PrivacyLedger(), floor=floor)

    means = [exact(X) for X in worlds]
    m_used = m / 2.0 if broken == "noise-halved" else m
    scores = []
    for u in means:
        released = np.column_stack(
            [
                gaussian_mechanism(
                    np.full(trials, u[a]), sensitivity=bound[a] / n, multiplier=m_used, rng=rng
                ).value
                for a in range(d)
            ]
        )
        scores.append(((np.maximum(released, floor) - means[0]) / bound).sum(axis=1))
    return GameResult(
        "smoothness",
        scores[0],
        scores[1],
        _pld_epsilon(m, d, dl),
        dl,
        broken,
        {
            "multiplier": m,
            "multiplier_used": m_used,
            "sensitivity": tuple(bound / n),
            "means": tuple(map(tuple, means)),
            "rows": tuple(worlds),
            "accountant": "pld",
            "score": "sum_a (released m_a - m_a(D)) / X_a",
        },
    )


#: The games by name; each takes keyword-only ``epsilon``, ``delta``, ``trials``, ``broken``,
#: ``rng`` (and game-specific design parameters) and returns a :class:`GameResult`.
GAMES: dict[str, Callable[..., GameResult]] = {
    "gaussian-step": gaussian_step_game,
    "selection": selection_game,
    "covariance": covariance_game,
    "smoothness": smoothness_game,
    "dp-pgcd": dp_pgcd_game,
    "dp-pgcd-transcript": dp_pgcd_transcript_game,
    "dp-pgcd-worst": dp_pgcd_worst_game,
    "dp-fed-sparse-bnsl": dp_fed_sparse_bnsl_game,
    "dp-fed-sparse-bnsl-transcript": dp_fed_sparse_bnsl_transcript_game,
    "dp-fed-sparse-bnsl-worst": dp_fed_sparse_bnsl_worst_game,
    "secure-covariance": secure_covariance_game,
    "sparse-vector": sparse_vector_game,
    "priv-pc-examine": priv_pc_examine_game,
    "secure-kendall": secure_kendall_game,
}


def run_game(name: str, **kwargs: Any) -> GameResult:
    """Run the game ``name`` (a key of :data:`GAMES`) with keyword arguments ``kwargs``.

    Examples
    --------
    >>> r = run_game("gaussian-step", epsilon=1.0, delta=1e-5, trials=1000, rng=0)
    >>> r.trials, r.mechanism, bool(r.scores1.mean() > r.scores0.mean())
    ((1000, 1000), 'gaussian-step', True)
    """
    if not isinstance(name, str) or name not in GAMES:
        raise ValueError(f"`name` must be one of {', '.join(map(repr, GAMES))}; got {name!r}")
    return GAMES[name](**kwargs)
