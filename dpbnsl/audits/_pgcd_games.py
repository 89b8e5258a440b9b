"""Games on DP-PGCD's selection and on whole runs (see :mod:`dpbnsl.audits.games`).

The canary design shared by the selection and DP-PGCD games. Participant data: n − 1 fixed rows
and one canary row; B = W = 0, λ₁ = 0 (so s_ab = |g_ab|/√M_ab and an update sets
B_ab = −g̃_ab/M_ab), public constants m_a declared equal to D's raw means. In D the canary is
s·(1, …, 1); in D′ the entries in the first half S of the variables are negated and entry a* is
moreover extreme (magnitude v, with v²/n_k ≫ M). With s² ≥ 4C/√(d−1) ≥ 4C_a every per-sample
gradient −x_a x_b of the canary is clipped, and it flips from −C_a to +C_a exactly on the *cross*
coordinates (one of a, b in S): their gradients move by Δ_g,a = 2C_a/n_k, their scores by
Δ_s = 2C/(n_k√ΣM). The public dual β places world 0's scores (others exactly 0):

- selection: canary coordinate (a*, b*) at L with g > 0 (its score rises by Δ_s in D′), the other
  cross coordinates at L + Δ_s with g < 0 (theirs fall by Δ_s), L = 30λ_G: P₁(a*)/P₀(a*) =
  e^{ε₀/2}(1 + Ne^{ε₀/2})/(e^{ε₀/2} + N) with N = 2⌊d/2⌋⌈d/2⌉ − 1, → e^{ε₀} as N grows;
- dp-pgcd: (a*, b*) at L + 10λ_G with g < 0 (selected first almost surely; its gradient rises by
  Δ_g in D′, so its score falls by Δ_s), the other cross coordinates at L with g < 0.

Under ``"raw-smoothness"`` the extreme entry inflates M_a* = m_a* + ρ₂ in D′ only: C_a, λ_G and the
step 1/M_a* then all depend on the canary.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._validation import ArrayLike, as_generator, check_int, check_real
from ..accounting import (
    NoiseScales,
    PrivacyLedger,
    calibrate_dp_pgcd,
    compose_epsilon,
    dp_pgcd_entries,
)
from ..federation import Dense, Masked, Payload, Sparse, Transcript
from ..learners.admm import ConsensusServer, PenaltySchedule, gradient_steps, solve_server
from ..learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from ..learners.linear.dp_fed_sparse_bnsl import plan as sparse_plan
from ..learners.linear.pgcd import PGCDNoise, PGCDState, new_state, run_iterations, score_sensitivity
from ..learners.linear.sparse_admm import SparseParticipant, run_sparse_admm, sparse_hyperparameters
from ..learners.linear.warm_start import covariance_warm_start
from ..mechanisms import clip_bounds, clip_score_sensitivity
from ..simulation import simulate
from ._worst_pairs import WORST_ROWS, WORST_UP, worst_run_rows, worst_step_design
from .game_base import EXCESS, GameResult, base_rows, check_broken, check_target, check_trials
from .transcript import ShadowedParticipant, transcript_loss

__all__ = [
    "selection_game",
    "dp_pgcd_game",
    "dp_pgcd_transcript_game",
    "dp_pgcd_worst_game",
    "dp_fed_sparse_bnsl_game",
    "dp_fed_sparse_bnsl_worst_game",
    "dp_fed_sparse_bnsl_transcript_game",
    "pair_epsilon",
    "sparse_run",
]

_RHO2 = 1.0


class _Unrecorded(PrivacyLedger):
    """The ledger of a game's runs: records nothing. A game states its claimed ε once, from the
    calibration the learner makes (the same events its runs would record); keeping a ledger per
    run would only repeat that per trial."""

    def record(self, label: str, event: Any, count: int = 1) -> None:
        return None


@functools.lru_cache(maxsize=32)
def _calibration(epsilon: float, delta: float, rounds: int, local_iters: int) -> NoiseScales:
    """:func:`~dpbnsl.accounting.calibrate_dp_pgcd` ("tight"), once per process for each set of
    public parameters (a few tenths of a second each; the seeded blocks of
    :func:`~dpbnsl.audits.parallel.play` would otherwise repeat it per block)."""
    return calibrate_dp_pgcd(epsilon, delta, rounds=rounds, local_iters=local_iters)


@dataclass(frozen=True)
class _Design:
    worlds: tuple  # (X of D, X of D′), each (n, d)
    beta: np.ndarray
    m: np.ndarray  # public smoothness constants (D's raw means)
    canary: tuple  # (a*, b*)
    cross: np.ndarray  # (d, d) bool: coordinates whose clipped canary gradient flips


def _design(*, d: int, n: int, clip: float, multiplier: float, top: float | None) -> _Design:
    flipped = np.arange(d) < d // 2
    a, b = 0, d - 1
    s = math.sqrt(EXCESS * clip / math.sqrt(d - 1))
    v = math.sqrt(100.0 * n * (_RHO2 + s * s))
    x0, x1 = np.full(d, s), np.where(flipped, -s, s)
    x1[a] = -v
    base = base_rows(n, d, 0.3)
    X0, X1 = np.vstack([base, x0]), np.vstack([base, x1])
    m = (X0 * X0).mean(axis=0)
    M, zero = m + _RHO2, np.zeros((d, d))
    state = new_state(
        X0, zero.copy(), zero, zero, M=M, lambda1=0.0, rho2=_RHO2, noise=PGCDNoise(clip, multiplier)
    )
    Gd, delta_s = state.Gd, score_sensitivity(state)
    lam, cross = multiplier * delta_s, flipped[:, None] != flipped[None, :]
    level = np.where(cross, -(30.0 * lam + (delta_s if top is None else 0.0)), 0.0)
    level[a, b] = 30.0 * lam if top is None else -(30.0 + top) * lam
    beta = level * np.sqrt(M)[:, None] - Gd  # world 0: g_ab = level_ab·√M_a
    np.fill_diagonal(beta, 0.0)
    for arr in (X0, X1, beta, m, cross):
        arr.setflags(write=False)
    return _Design((X0, X1), beta, m, (a, b), cross)


def pair_epsilon(p0: ArrayLike, p1: ArrayLike, delta: float) -> float:
    """Exact ε(δ) of the pair of discrete distributions (p0, p1), both directions:
    the least ε with Σ max(p_i − e^ε q_i, 0) ≤ δ for (p, q) = (p1, p0) and (p0, p1)."""
    p0, p1 = np.asarray(p0, float).ravel(), np.asarray(p1, float).ravel()

    def excess(e: float) -> float:
        f = math.exp(e)
        return max(np.maximum(p1 - f * p0, 0).sum(), np.maximum(p0 - f * p1, 0).sum())

    if excess(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > delta:
        if hi >= 512.0:  # e^1024 overflows: the pair is not (ε, δ)-close for any finite ε here
            return math.inf
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * max(hi, 1.0):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > delta else (lo, mid)
    return hi


def selection_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    noise_deficit: float = 0.0,
    d: int = 10,
    n: int = 50,
    clip: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """One DP-PGCD selection: the exponential mechanism P(j) ∝ exp(s_j/λ_G) on the scores.

    λ_G = mΔ_s with m = 2/ε, i.e. ε₀ = 2Δ_s/λ_G = ε (the package's selection event); the claimed ε
    is the RDP accountant's ε(δ) of that event (at most ε₀; tight for one bounded-range event).
    The scores come from the package's DP-PGCD state on the canary design (module docstring); the
    selection is sampled for all trials at once by inverting the CDF, the distribution both
    package samplers draw. Score: the log-likelihood ratio log P₁(j)/P₀(j) of the selected j under
    the mechanism run (the Neyman–Pearson statistic; ``details["probabilities"]`` holds P₀, P₁ and
    ``details["pair_epsilon"]`` the exact ε(δ) of the pair).

    Broken variants: ``"noise-halved"`` (λ_G/2); ``"no-clipping"`` (unclipped gradients);
    ``"raw-smoothness"`` (m_a from each world's raw data: the extreme entry of D′ inflates M_a*).
    ``noise_deficit`` p is a graded negative control: λ_G(1 − p), a selection whose privacy loss
    spans ε₀/(1 − p) (``details["epsilon0"]`` stays the claim ε₀).

    Parameters
    ----------
    epsilon, delta, trials, broken, noise_deficit, rng
        As in :func:`~dpbnsl.audits.games.gaussian_step_game`; ``epsilon`` is ε₀.
    d, n : int
        Variables (d ≥ 3; N = 2⌊d/2⌋⌈d/2⌉ − 1 cross coordinates compete with the canary) and rows.
    clip : float
        Global clip bound C.
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "selection")
    d, n = check_int(d, "d", low=3), check_int(n, "n", low=2)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    deficit = check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True)
    rng = as_generator(rng)
    m = 2.0 / e
    claimed = compose_epsilon(dp_pgcd_entries(m, 1)[:1], dl, "rdp")
    design = _design(d=d, n=n, clip=C, multiplier=m, top=None)
    m_used = (m / 2.0 if broken == "noise-halved" else m) * (1.0 - deficit)
    logp, zero = [], np.zeros((d, d))
    for X in design.worlds:
        M = (X * X).mean(axis=0) + _RHO2 if broken == "raw-smoothness" else design.m + _RHO2
        state = new_state(
            X,
            zero.copy(),
            zero,
            design.beta,
            M=M,
            lambda1=0.0,
            rho2=_RHO2,
            noise=None if broken == "no-clipping" else PGCDNoise(C, m_used),
        )
        logits = state.S.ravel() / (m_used * clip_score_sensitivity(M, C, n))  # λ_G = mΔ_s(M)
        logp.append(logits - logsumexp(logits))
    off = np.isfinite(logp[0])
    llr = np.where(off, logp[1] - np.where(off, logp[0], 0.0), 0.0)
    probs = [np.exp(lp) for lp in logp]
    scores = []
    for p in probs:
        cdf = np.cumsum(p)
        pick = np.searchsorted(cdf, rng.random(trials) * cdf[-1], side="right")
        scores.append(llr[np.minimum(pick, p.size - 1)])
    a, b = design.canary
    return GameResult(
        "selection",
        scores[0],
        scores[1],
        claimed,
        dl,
        broken,
        {
            "multiplier": m,
            "multiplier_used": m_used,
            "noise_deficit": deficit,
            "epsilon0": 2.0 / m,
            "canary": (a, b),
            "probabilities": tuple(p.reshape(d, d) for p in probs),
            "accountant": "rdp",
            "pair_epsilon": pair_epsilon(probs[0], probs[1], dl),
            "rows": design.worlds,
            "score": "log P1(j)/P0(j) of the selected coordinate j",
        },
    )


class UnclippedState(PGCDState):
    """DP-PGCD's state with the per-sample clipping removed (the ``"no-clipping"`` bug): the noise
    is still calibrated to the clip bounds ``C_a``, the data gradient is not clipped."""

    def data_gradient(self, b: int) -> np.ndarray:
        return -(self.X.T @ self.R[:, b]) / self.n


def dp_pgcd_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    local_iters: int = 3,
    d: int | None = None,
    n: int | None = None,
    clip: float = 1.0,
    score: str = "server",
    pair: str = "canary",
    noise_deficit: float = 0.0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """A whole DP-PGCD local run (K iterations from B = 0) seen by the server: the message B.

    Noise from :func:`~dpbnsl.accounting.calibrate_dp_pgcd` (tight, T = 1, K = ``local_iters``);
    the claimed ε is its RDP accountant's ε(δ) for the run's 2K events (what the run's ledger
    reports). Canary design of the module docstring with (a*, b*) on top. Each trial runs the
    package's DP-PGCD (``new_state`` + ``run_iterations``, the code :func:`pgcd` and the learners
    use); every run starts from the same state, built once per world and copied
    (:meth:`PGCDState.restore`, bitwise the state ``new_state`` builds). Score: −M_a*·B_a*b* of
    the released B (= g̃_a*b* < 0 when (a*, b*) was selected, else 0), higher in D′ where the
    canary raises g_a*b* by Δ_g. Not tight (it sees one of 2K releases).

    Broken variants: ``"no-clipping"`` (the state's data gradient unclipped: g_a*b* rises by far
    more than Δ_g); ``"raw-smoothness"`` (m_a from each world's raw data: in D′ the inflated M_a*
    makes B_a*b* vanish, score 0). Both move the score up, like the canary under the correct
    mechanism, so one-sided tests (``direction="greater"``) see them.

    Parameters
    ----------
    epsilon, delta, trials, broken, rng
        As in :func:`~dpbnsl.audits.games.gaussian_step_game`; (ε, δ) is the target of the run.
    local_iters : int
        K, the DP-PGCD iterations of the run (2K releases).
    d, n, clip : int, int, float
        As in :func:`selection_game`. A trial is a run in each world (~0.25 ms of CPU together
        with the defaults; the calibration is made once per process).
    score : {"server", "transcript"}
        ``"server"``: the score above, from the message the server receives. ``"transcript"``
        (the game ``dp-pgcd-transcript``): the privacy loss ℓ = ln p_{D′}/p_D of all 2K releases
        of the run (:func:`~dpbnsl.audits.transcript.transcript_loss`), the most powerful
        statistic for this pair, for an observer who sees every release (what the ledger
        accounts for); about twice the CPU of a ``"server"`` trial (one iteration at a time).
    pair : {"canary", "worst"}
        ``"canary"``: the canary design of the module docstring, on which the selections carry
        almost no loss. ``"worst"`` (the game ``dp-pgcd-worst``, transcript score only): the
        pair of :func:`~dpbnsl.audits._worst_pairs.worst_step_design`, on which every selection
        and every gradient release carries its full loss. ``d`` and ``n`` default to 10 and 400
        there, 6 and 50 otherwise.
    noise_deficit : float in [0, 1)
        A graded negative control: the run's multiplier is (1 − p)·m (both releases), while the
        claim stays that of m.
    """
    e, dl = check_target(epsilon, delta)
    # the negative controls of the game actually played (the worst pair has only no-clipping: its
    # two canaries have the same squares, so raw smoothness constants change nothing)
    game = "dp-pgcd-worst" if pair == "worst" else "dp-pgcd"
    trials, broken = check_trials(trials), check_broken(broken, game)
    K = check_int(local_iters, "local_iters", low=1)
    if pair not in ("canary", "worst"):
        raise ValueError(f"`pair` must be 'canary' or 'worst'; got {pair!r}")
    if d is None:
        d = 10 if pair == "worst" else 6
    if n is None:
        n = WORST_ROWS if pair == "worst" else 50
    d, n = check_int(d, "d", low=3), check_int(n, "n", low=2)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    if score not in ("server", "transcript"):
        raise ValueError(f"`score` must be 'server' or 'transcript'; got {score!r}")
    if pair == "worst" and score != "transcript":
        raise ValueError("`pair='worst'` is scored by the transcript's privacy loss: use score='transcript'")
    deficit = check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True)
    rng = as_generator(rng)
    noise = _calibration(e, dl, 1, K)
    claimed_m = noise.gumbel_multiplier
    pgcd_noise = PGCDNoise(C, claimed_m * (1.0 - deficit))
    if pair == "worst":
        design = _Design(*worst_step_design(d=d, n=n, clip=C, multiplier=claimed_m, up=WORST_UP))
        a = b = -1
        weight = 0.0
    else:
        design = _design(d=d, n=n, clip=C, multiplier=claimed_m, top=10.0)
        (a, b), weight = design.canary, float(design.m[design.canary[0]] + _RHO2)
    ledger, zero, scores = _Unrecorded(), np.zeros((d, d)), []
    cls: type[PGCDState] = UnclippedState if broken == "no-clipping" else PGCDState
    saved = []
    for X in design.worlds:
        M = (X * X).mean(axis=0) + _RHO2 if broken == "raw-smoothness" else design.m + _RHO2
        # every run starts from B = W = 0 and the design's β: the O(n·d²) start (residual,
        # clipped gradient, scores) is the same in every trial, built once and copied per trial
        start: PGCDState
        if broken == "no-clipping":
            start = UnclippedState(X, zero.copy(), zero, design.beta, M, 0.0, _RHO2, clip_bounds(M, C))
        else:
            start = new_state(
                X, zero.copy(), zero, design.beta, M=M, lambda1=0.0, rho2=_RHO2, noise=pgcd_noise
            )
        saved.append(start.arrays())

    def restore(w: int) -> PGCDState:
        return cls.restore(design.worlds[w], zero.copy(), zero, design.beta, saved[w])

    for w in (0, 1):
        out = np.empty(trials)
        for t in range(trials):
            state = restore(w)
            if score == "transcript":
                out[t] = transcript_loss(
                    state, restore(1 - w), world=w, iters=K, noise=pgcd_noise, rng=rng, ledger=ledger
                )
            else:
                run_iterations(state, K, noise=pgcd_noise, rng=rng, ledger=ledger)
                out[t] = -weight * state.B[a, b]
        scores.append(out)
    name = "dp-pgcd" if score == "server" else "dp-pgcd-transcript" if pair == "canary" else "dp-pgcd-worst"
    return GameResult(
        name,
        scores[0],
        scores[1],
        noise.epsilon_rdp,
        dl,
        broken,
        {
            "multiplier": claimed_m,
            "multiplier_used": pgcd_noise.multiplier,
            "noise_deficit": deficit,
            "pair": pair,
            "local_iters": K,
            "canary": (a, b),
            "rows": design.worlds,
            "beta": design.beta,
            "m": design.m,
            "accountant": "rdp",
            "score": "-M_a* B_a*b* of the released local matrix"
            if score == "server"
            else "ln p(D')/p(D) of the run's releases (selections and noisy gradients)",
        },
    )


def dp_pgcd_worst_game(**kwargs: Any) -> GameResult:
    """:func:`dp_pgcd_game` with ``pair="worst"`` and ``score="transcript"``: the privacy loss of
    every release of a run on the pair under which each release carries its full loss."""
    return dp_pgcd_game(score="transcript", pair="worst", **kwargs)


def dp_pgcd_transcript_game(**kwargs: Any) -> GameResult:
    """:func:`dp_pgcd_game` with ``score="transcript"``: the privacy loss of all the run's
    releases, the most powerful statistic for the game's pair of datasets."""
    return dp_pgcd_game(score="transcript", **kwargs)


def _learner_hyper(rounds: int, local_iters: int) -> dict:
    """:func:`dp_fed_sparse_bnsl`'s protocol hyperparameters at its defaults, validated by it."""
    sig = inspect.signature(dp_fed_sparse_bnsl).parameters
    hp = {
        k: sig[k].default
        for k in ("lambda1", "rho1", "rho2", "threshold", "server_solver", "eta", "server_steps")
    }
    return sparse_hyperparameters(
        hp["lambda1"],
        hp["rho1"],
        hp["rho2"],
        1.0,
        1.0,
        math.inf,
        rounds,
        local_iters,
        hp["threshold"],
        hp["server_solver"],
        hp["eta"],
        hp["server_steps"],
    )


def sparse_run(
    data: Sequence[np.ndarray],
    m: np.ndarray,
    *,
    hyper: dict,
    noise: PGCDNoise,
    rng: np.random.Generator,
    warm: tuple[float, float] | None = None,
) -> tuple[Transcript, np.ndarray | None]:
    """One DP-Fed-Sparse-BNSL run after calibration: what :func:`dp_fed_sparse_bnsl` does with
    ``smoothness=m`` (public constants), ``centre="declared"`` and the multiplier in ``noise``
    (same streams ``rng.spawn(P)``, same protocol); ``warm`` = (row clip norm, multiplier) adds
    its covariance warm start. Returns the transcript of the DP-PGCD rounds and the warm start
    W₀ (None without one; the server computed it, so an auditor sees it)."""
    P = len(data)
    ledgers = [PrivacyLedger() for _ in range(P)]
    streams = rng.spawn(P)
    W0 = None
    if warm is not None:
        W0, _ = covariance_warm_start(
            list(data), clip_norm=warm[0], multiplier=warm[1], rngs=streams, ledgers=ledgers
        )
    transcript = run_sparse_admm(
        list(data), [m] * P, **hyper, noises=[noise] * P, rngs=streams, ledgers=ledgers, init=W0
    )[2]
    return transcript, W0


@dataclass(frozen=True)
class _SparseSetup:
    """What a ``dp-fed-sparse-bnsl`` game fixes before its first trial, from public parameters
    only (the data are simulated with a fixed seed): the two worlds (read-only), the canary's
    node p, D's pooled smoothness constants, the learner's hyperparameters, its calibration and
    its warm start's (row clip norm, multiplier)."""

    worlds: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]
    p: int
    m0: np.ndarray
    hyper: Mapping[str, Any]
    noise: NoiseScales
    warm: tuple[float, float] | None


@functools.lru_cache(maxsize=16)
def _sparse_setup(
    e: float,
    dl: float,
    d: int,
    n: int,
    P: int,
    rounds: int,
    local_iters: int,
    C: float,
    warm_start: bool,
    pair: str = "canary",
) -> _SparseSetup:
    """The game's set-up, once per process for each design (seeded blocks of
    :func:`~dpbnsl.audits.parallel.play` share it): every array is read-only."""
    hyper = _learner_hyper(rounds, local_iters)
    if pair == "worst":  # participant 0 holds the worst-case rows; the others their rows, no canary
        noise = _calibration(e, dl, hyper["rounds"], hyper["local_iters"])
        X0, X1, m0 = worst_run_rows(
            d=d, clip=C, multiplier=noise.gumbel_multiplier, lambda1=hyper["lambda1"], rho2=hyper["rho2"]
        )
        others = np.array(X0)
        others[-1] = 0.0
        others.setflags(write=False)
        worlds = ((X0,) + (others,) * (P - 1), (X1,) + (others,) * (P - 1))
        m_pool = np.mean([(X * X).mean(axis=0) for X in worlds[0]], axis=0)
        m_pool.setflags(write=False)
        return _SparseSetup(worlds, -1, m_pool, hyper, noise, None)
    sim = simulate(d, n * P, participants=P, rng=0)
    D = [np.array(X) for X in sim.participants]
    p = int(np.argmax(sim.B_true.sum(axis=1)))
    m0 = np.mean([(X * X).mean(axis=0) for X in D], axis=0)
    warm = None
    if warm_start:  # the learner's own calibration of both releases
        pl = sparse_plan(
            d,
            epsilon=e,
            delta=dl,
            rounds=hyper["rounds"],
            local_iters=hyper["local_iters"],
            clip=C,
            smoothness=m0,
            warm_start="covariance",
        )
        assert pl.m_warm is not None  # warm_start="covariance" always plans the warm start
        noise, warm = pl.noise, (pl.warm_clip_norm, pl.m_warm)
    else:
        noise = _calibration(e, dl, hyper["rounds"], hyper["local_iters"])
    D1 = [X.copy() for X in D]
    D1[0][0, p] = math.sqrt(100.0 * n * float(np.max(m0 + hyper["rho2"])))
    for X in (*D, *D1, m0):
        X.setflags(write=False)
    return _SparseSetup((tuple(D), tuple(D1)), p, m0, hyper, noise, warm)


def _sparse_score(
    data: Sequence[np.ndarray],
    m: np.ndarray,
    *,
    hyper: Mapping[str, Any],
    noise: PGCDNoise,
    rng: np.random.Generator,
    warm: tuple[float, float] | None,
    row: int,
    ledger: PrivacyLedger,
    shadow: tuple[np.ndarray, np.ndarray, int] | None = None,
) -> float:
    """The score of one run of :func:`sparse_run` (same streams ``rng.spawn(P)``, same protocol
    objects, bitwise the same messages): −Σ_t Σ_b |B^{(t)}_row,b − W₀_row,b| over participant
    0's uploads, computed without what it does not depend on.

    The protocol is :func:`~dpbnsl.learners.linear.sparse_admm.run_sparse_admm`'s, on its
    participant and server objects (:class:`SparseParticipant`, DP-PGCD's mechanisms;
    with ``shadow`` = (participant 0's data in the other world, its constants there, this
    world's index), participant 0 is a :class:`~dpbnsl.audits.transcript.ShadowedParticipant`
    and the score is the privacy loss of its releases;
    :class:`ConsensusServer`), driven round by round as
    :func:`~dpbnsl.federation.run_rounds` does, minus what the score never sees: no transcript,
    no per-run accounting (the game passes a ledger that records nothing), and in the last round only
    participant 0's step (the other participants draw from their own streams, and the server's
    last reply reaches no upload)."""
    P, d, T = len(data), data[0].shape[1], hyper["rounds"]
    streams = rng.spawn(P)
    W0 = None
    if warm is not None:
        W0, _ = covariance_warm_start(
            list(data), clip_norm=warm[0], multiplier=warm[1], rngs=streams, ledgers=[ledger] * P
        )
    schedule = PenaltySchedule(
        hyper["rho1"], hyper["rho2"], hyper["gamma1"], hyper["gamma2"], hyper["rho_max"]
    )
    clients = [
        SparseParticipant(
            X,
            m,
            schedule,
            lambda1=hyper["lambda1"],
            local_iters=hyper["local_iters"],
            noise=noise,
            rng=g,
            ledger=ledger,
            init=W0,
        )
        for X, g in zip(data, streams)
    ]
    if shadow is not None:
        clients[0] = ShadowedParticipant(
            data[0],
            m,
            schedule,
            other_X=shadow[0],
            other_m=shadow[1],
            world=shadow[2],
            lambda1=hyper["lambda1"],
            local_iters=hyper["local_iters"],
            noise=noise,
            rng=streams[0],
            ledger=ledger,
            init=W0,
        )
    solver = (
        solve_server
        if hyper["server_solver"] == "lbfgs"
        else gradient_steps(hyper["eta"], hyper["server_steps"])
    )
    server = ConsensusServer(P, d, schedule, sparse=True, solver=solver)
    if W0 is not None:
        server.W = np.array(W0, float)
    rows = np.empty((T, d))
    inbox: list[Payload | None] = [None] * P
    for t in range(T):
        last = t == T - 1
        uploads = [c(t, x)[1] for c, x in zip(clients[:1] if last else clients, inbox)]
        rows[t] = clients[0].B[row]  # the upload's row (B_k is the upload, updated in place)
        if last:
            break
        reply = server(t, uploads)
        if reply.stop:  # as run_rounds: the protocol ends after this round
            rows = rows[: t + 1]
            break
        sent = reply.payload
        inbox = [sent] * P if isinstance(sent, (Dense, Sparse, Masked)) else list(sent)
    if isinstance(clients[0], ShadowedParticipant):
        return clients[0].loss
    start = 0.0 if W0 is None else W0[row]
    return -float(np.abs(rows - start).sum())


def dp_fed_sparse_bnsl_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    d: int = 5,
    n: int = 200,
    participants: int = 2,
    rounds: int = 5,
    local_iters: int = 3,
    clip: float = 5.0,
    warm_start: bool = False,
    score: str = "server",
    pair: str = "canary",
    noise_deficit: float = 0.0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """A whole DP-Fed-Sparse-BNSL run with a canary row in participant 0, seen from the server.

    Data: :func:`~dpbnsl.simulation.simulate` (d nodes, n rows per participant, fixed seed 0). The
    canary is participant 0's first row; in D′ its entry p (the node with most children) is
    replaced by an extreme value (v²/n = 100·max(m + ρ₂)). Smoothness constants are declared
    public and equal to D's pooled raw means of x_ia²; the learner's defaults otherwise. The noise
    is calibrated once (:func:`~dpbnsl.accounting.calibrate_dp_pgcd`, "tight", as the learner
    does); the data, constants and calibration depend on public parameters only and are built once
    per process (the seeded blocks of :func:`~dpbnsl.audits.parallel.play` share them). Each trial
    then runs the learner's protocol on its own participant and server objects: the run of
    :func:`sparse_run` (the same transcript as
    :func:`~dpbnsl.learners.linear.dp_fed_sparse_bnsl.dp_fed_sparse_bnsl` for the same ``rng``),
    without what the score does not read (no transcript or per-run ledger; the last round's other
    uploads and the server's last reply are not computed), so the scores are bitwise those of the
    whole run. The claimed ε is the learner's reported RDP ε.
    Score: −Σ_t Σ_b |B^{(t)}_pb − W₀_pb| over participant 0's uploads (W₀ = 0 without the warm
    start), higher when row p is absent.
    Trials are expensive: a run in each world, ~4 ms of CPU each with the default design, nearly
    all of it the server's L-BFGS-B W-steps and the DP-PGCD iterations
    (``benchmarks/bench_audit_game.py``). With ``warm_start=True`` each run starts with the
    learner's covariance warm start (its default at small d), calibrated by the learner's own plan,
    and the claimed ε covers both; a trial then also runs Fed-BNSL on the released covariances
    (~10× slower). The warm start's release alone is audited by the covariance game.

    Broken variant: ``"raw-smoothness"`` (the constants passed as "public" are the raw pooled means
    of each world's data, so D′'s extreme entry inflates M_p and silences row p).

    Parameters
    ----------
    epsilon, delta, trials, broken, rng
        As in :func:`~dpbnsl.audits.games.gaussian_step_game`; (ε, δ) is the learner's target.
    d, n, participants : int
        Nodes, rows per participant, participants.
    rounds, local_iters : int
        T and K of the learner.
    clip : float
        The learner's global clip bound C.
    score : {"server", "transcript"}
        ``"server"``: the score above. ``"transcript"`` (the game
        ``dp-fed-sparse-bnsl-transcript``; without the warm start): the privacy loss of all of
        participant 0's releases over the run (:class:`~dpbnsl.audits.transcript.ShadowedParticipant`),
        the most powerful statistic for this pair, for an observer who sees every release; about
        1.3× the CPU of a ``"server"`` trial.
    pair : {"canary", "worst"}
        ``"canary"``: the simulated data and canary row above. ``"worst"`` (the game
        ``dp-fed-sparse-bnsl-worst``; transcript score, no warm start): participant 0 holds the
        rows of :func:`~dpbnsl.audits._worst_pairs.worst_run_rows` (``n`` is the design's, d = 10
        and one participant by default), under which every selection and every gradient release of
        every round carries its full loss; other participants hold the same rows without the
        canary (their messages move participant 0's consensus terms, which weakens the pair).
    noise_deficit : float in [0, 1)
        A graded negative control: every participant's DP-PGCD releases use (1 − p)·m while the
        claim stays that of m (the warm start, if any, keeps its own multiplier).
    """
    e, dl = check_target(epsilon, delta)
    if score not in ("server", "transcript"):
        raise ValueError(f"`score` must be 'server' or 'transcript'; got {score!r}")
    if pair not in ("canary", "worst"):
        raise ValueError(f"`pair` must be 'canary' or 'worst'; got {pair!r}")
    if pair == "worst" and (score != "transcript" or warm_start):
        raise ValueError("`pair='worst'` is scored by the transcript's privacy loss, without the warm start")
    if score == "transcript" and warm_start:
        raise ValueError("`score='transcript'` covers DP-PGCD's releases only: use it with warm_start=False")
    game = "dp-fed-sparse-bnsl-worst" if pair == "worst" else "dp-fed-sparse-bnsl"
    trials, broken = check_trials(trials), check_broken(broken, game)
    d, n = check_int(d, "d", low=2), check_int(n, "n", low=2)
    P = check_int(participants, "participants", low=1)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    deficit = check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True)
    if not isinstance(warm_start, (bool, np.bool_)):
        raise TypeError(f"`warm_start` must be a bool; got {warm_start!r}")
    setup = _sparse_setup(
        e,
        dl,
        d,
        n,
        P,
        check_int(rounds, "rounds"),
        check_int(local_iters, "local_iters"),
        C,
        bool(warm_start),
        pair,
    )
    rng = as_generator(rng)
    hyper, noise, warm, p, m0 = setup.hyper, setup.noise, setup.warm, setup.p, setup.m0
    pgcd_noise = PGCDNoise(C, noise.gumbel_multiplier * (1.0 - deficit))
    D, D1 = setup.worlds
    ledger, scores = _Unrecorded(), []
    raw = broken == "raw-smoothness"
    ms = [np.mean([(X * X).mean(axis=0) for X in data], axis=0) if raw else m0 for data in (D, D1)]
    for w, data in enumerate((D, D1)):
        other = (D, D1)[1 - w]
        shadow = (other[0], ms[1 - w], w) if score == "transcript" else None
        out = np.empty(trials)
        for t in range(trials):
            out[t] = _sparse_score(
                data,
                ms[w],
                hyper=hyper,
                noise=pgcd_noise,
                rng=rng,
                warm=warm,
                row=p,
                ledger=ledger,
                shadow=shadow,
            )
        scores.append(out)
    name = "dp-fed-sparse-bnsl" if score == "server" else "dp-fed-sparse-bnsl-transcript"
    return GameResult(
        name if pair == "canary" else "dp-fed-sparse-bnsl-worst",
        scores[0],
        scores[1],
        noise.epsilon_rdp,
        dl,
        broken,
        {
            "multiplier": pgcd_noise.multiplier,
            "noise_deficit": deficit,
            "canary_entry": (0, 0, p) if pair == "canary" else (0, D[0].shape[0] - 1, -1),
            "rows": (D, D1),
            "canary_value": float(D1[0][0, p]) if pair == "canary" else float(D1[0][-1, 0]),
            "pair": pair,
            "smoothness": m0,
            "hyper": dict(hyper),
            "warm": warm,
            "accountant": "rdp",
            "score": "minus the mass of row p in participant 0's uploads, measured from W₀"
            if score == "server"
            else "ln p(D')/p(D) of participant 0's releases (selections and noisy gradients)",
        },
    )


def dp_fed_sparse_bnsl_worst_game(**kwargs: Any) -> GameResult:
    """:func:`dp_fed_sparse_bnsl_game` on the worst-case pair (``pair="worst"``), scored by the
    privacy loss of all of participant 0's releases; d = 10 and one participant by default."""
    kwargs.setdefault("d", 10)
    kwargs.setdefault("participants", 1)
    return dp_fed_sparse_bnsl_game(score="transcript", pair="worst", **kwargs)


def dp_fed_sparse_bnsl_transcript_game(**kwargs: Any) -> GameResult:
    """:func:`dp_fed_sparse_bnsl_game` with ``score="transcript"``: the privacy loss of all of
    participant 0's releases, the most powerful statistic for the game's pair of datasets."""
    return dp_fed_sparse_bnsl_game(score="transcript", **kwargs)
