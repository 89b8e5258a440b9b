"""What the canary audits of the covariance releases share: the learners, their noise plan, the
public background's size, the run read back from the server's view, and the readings of canaries
as trials. Used by :mod:`~dpbnsl.audits.isolated_canaries` and
:mod:`~dpbnsl.audits.canary_participants`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_choice, check_int, check_real
from ..accounting.calibrate import calibrate_gaussian
from ..federation import Transcript
from .gaussian_fit import gaussian_fit_epsilon
from .gdp import gdp_lower_bound

if TYPE_CHECKING:
    from ..learners.result import LearnResult

#: the learners audited: DP-Fed-BNSL and the learners that fit one local release (their release is
#: the same function, read from its own message), and DP-Fed-Sparse-BNSL's warm start
LEARNERS = (
    "dp-fed-bnsl",
    "dp-fed-bnsl-secure",
    "dp-sortnregress",
    "dp-r2-sortnregress",
    "dp-cov-pc",
    "dp-fed-sparse-bnsl",
)
EPS_MAX = 100.0  # the learners' largest finite ε


def check_settings(
    epsilon: Any,
    delta: Any,
    learner: Any,
    d: Any,
    participants: Any,
    runs: Any,
    guess_fraction: Any,
    alpha: Any,
    noise_deficit: Any,
) -> tuple[float, float, int, int, int, float, float, float]:
    """The audits' common settings, validated before any run: (ε, δ, d, P, runs, guess fraction,
    α, noise deficit)."""
    e = check_real(epsilon, "epsilon", low=0.0, high=EPS_MAX, low_open=True)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    check_choice(learner, "learner", LEARNERS)
    out = (
        e,
        dl,
        check_int(d, "d", low=2),
        check_int(participants, "participants", low=1),
        check_int(runs, "runs", low=1),
        check_real(guess_fraction, "guess_fraction", low=0.0, high=1.0, low_open=True),
        check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True),
        check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True),
    )
    if learner == "dp-fed-bnsl-secure" and out[-1] > 0:
        raise ValueError("`noise_deficit` is built for the local releases only (their plan sets z)")
    return out


def secure_release(
    data: list, epsilon: float, delta: float, R: float, rng: np.random.Generator
) -> tuple[np.ndarray, int, float]:
    """DP-Fed-BNSL under secure aggregation: the decoded noisy sum the server reads (its matrix
    and row count) and the run's claimed ε (the ledger's RDP ε)."""
    from ..learners.linear.dp_fed_bnsl import dp_fed_bnsl

    res = dp_fed_bnsl(data, epsilon=epsilon, delta=delta, clip_norm=R, aggregation="secure", rng=rng)
    if res.privacy is None:  # pragma: no cover - the learner always states it
        raise RuntimeError("the learner returned no privacy statement")
    release = res.info["release"]
    return np.asarray(release.S), int(release.n), float(res.privacy.epsilon)


def secure_claim(claims: list[float], delta: float) -> tuple[float, float]:
    """The secure runs' claim: the largest ledger ε, and the μ of the Gaussian curve with that
    ε(δ) (what the Gaussian-curve readings compare with)."""
    claimed = max(claims)
    return claimed, 1.0 / calibrate_gaussian(claimed, delta)


def multiplier(learner: str, epsilon: float, delta: float, d: int, m: np.ndarray, n: int) -> float:
    """The release's noise multiplier z at (ε, δ), from the learner's own plan (no data)."""
    if learner != "dp-fed-sparse-bnsl":  # every local release is calibrated by this plan
        from ..learners.covariance_plan import plan

        return float(plan(epsilon=epsilon, delta=delta).z_cov)
    from ..learners.linear.sparse_plan import plan as sparse_plan

    pl = sparse_plan(d, epsilon=epsilon, delta=delta, n_k=n, smoothness=m, warm_start="covariance")
    assert pl.m_warm is not None  # warm_start="covariance" always plans the release
    return float(pl.m_warm)


def deficit_epsilon(
    learner: str, epsilon: float, delta: float, d: int, m: np.ndarray, n: int, target: float
) -> float:
    """The ε′ ≥ ε at which the learner's plan gives the multiplier ``target`` (< z(ε)): a run at
    ε′ that claims ε is an implementation short of noise by 1 − target/z(ε)."""
    if multiplier(learner, EPS_MAX, delta, d, m, n) > target:
        raise ValueError(
            f"the noise deficit asks for a multiplier {target:.4g} below what ε = {EPS_MAX:g} gives; "
            f"use a smaller `noise_deficit` or a smaller `epsilon`"
        )
    lo, hi = epsilon, EPS_MAX
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if multiplier(learner, mid, delta, d, m, n) > target else (lo, mid)
    return hi


def background_size(d: int, z: float, R: float) -> tuple[int, int]:
    """(background rows per variable b, canaries per participant)."""
    b = max(1, math.ceil(6.0 * z * math.sqrt(d)))
    return b, d // 2


def as_trials(scores: np.ndarray, truths: np.ndarray, *, delta: float, alpha: float) -> dict[str, Any]:
    """The readings of canaries as independent trials: ``trials`` (μ lower bound, out-scores
    against in-scores; None unless each side has a canary) and ``estimate`` (Gaussian fit; None
    unless each side has two canaries whose scores are not all equal)."""
    s_in, s_out = scores[truths > 0], scores[truths < 0]
    out: dict[str, Any] = {"trials": None, "estimate": None}
    if min(s_in.size, s_out.size) >= 1:
        out["trials"] = gdp_lower_bound(s_out, s_in, delta=delta, alpha=alpha, direction="greater")
    if min(s_in.size, s_out.size) >= 2 and np.ptp(s_in) > 0 and np.ptp(s_out) > 0:
        out["estimate"] = gaussian_fit_epsilon(s_in, s_out, delta=delta)
    return out


def top_guesses(scores: np.ndarray, frac: float) -> np.ndarray:
    """+1 on the highest ``frac`` of the scores (at least one), 0 elsewhere."""
    k_in = max(1, round(frac * scores.size))
    guesses = np.zeros(scores.size, dtype=int)
    guesses[np.argsort(scores, kind="stable")[scores.size - k_in :]] = 1
    return guesses


def released(
    learner: str, data: list, epsilon: float, delta: float, m: np.ndarray, R: float, rng: np.random.Generator
) -> tuple[np.ndarray, ...]:
    """Run the learner once and recover every participant's released matrix from the server's
    view: the transcript of DP-Fed-BNSL, or of the warm start's Fed-BNSL, inverted at round 0
    with the protocol's public penalty schedule."""
    from ..attacks.covariance import reconstruct_covariances

    if learner in _RELEASE_ONLY:
        res = _RELEASE_ONLY[learner](data, epsilon=epsilon, delta=delta, clip_norm=R, rng=rng)
        if res.transcript is None:  # pragma: no cover - the learners keep it
            raise RuntimeError("the learner returned no transcript")
        return tuple(
            next(msg for msg in res.transcript.filter(participant=k, direction="up")).to_dense()
            for k in range(len(data))
        )
    if learner == "dp-fed-bnsl":
        res = _dp_fed_bnsl(data, epsilon, delta, R, rng)
        transcript, hp = res.transcript, res.params
    else:
        from ..learners.linear.warm_start import fed_bnsl_hyper

        res = _warm_started(data, epsilon, delta, m, R, rng)
        transcript, hp = res.info["warm_start"]["transcript"], fed_bnsl_hyper()
    if not isinstance(transcript, Transcript):  # pragma: no cover - both learners keep it
        raise RuntimeError("the learner returned no transcript")
    recs = reconstruct_covariances(
        transcript,
        rho2=hp["rho2"],
        gamma2=hp["gamma2"],
        rho_max=hp["rho_max"],
        round=0,
        normalization="local",  # both fit the released S̃_k per row
        n_samples=[X.shape[0] for X in data],
    )
    return tuple(np.asarray(r.covariance) for r in recs)


def _release_only(name: str) -> Callable[..., LearnResult]:
    def run(data: list, **kwargs: Any) -> LearnResult:
        from ..learners.constraint.dp_cov_pc import dp_cov_pc
        from ..learners.linear.dp_sortnregress import dp_sortnregress

        if name == "dp-cov-pc":
            return dp_cov_pc(data, **kwargs)
        return dp_sortnregress(data, criterion="r2" if name == "dp-r2-sortnregress" else "var", **kwargs)

    return run


#: the learners whose participants send their released matrix as their one message
_RELEASE_ONLY = {name: _release_only(name) for name in ("dp-sortnregress", "dp-r2-sortnregress", "dp-cov-pc")}


def _dp_fed_bnsl(data: list, epsilon: float, delta: float, R: float, rng: np.random.Generator) -> LearnResult:
    from ..learners.linear.dp_fed_bnsl import dp_fed_bnsl

    return dp_fed_bnsl(data, epsilon=epsilon, delta=delta, clip_norm=R, rng=rng)


def _warm_started(
    data: list, epsilon: float, delta: float, m: np.ndarray, R: float, rng: np.random.Generator
) -> LearnResult:
    from ..learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl

    return dp_fed_sparse_bnsl(
        data,
        epsilon=epsilon,
        delta=delta,
        smoothness=m,
        warm_start="covariance",
        warm_clip_norm=R,
        rng=rng,
    )
