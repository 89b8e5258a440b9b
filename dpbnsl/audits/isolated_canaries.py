"""One-run audits of the covariance releases with isolated canaries: the learner's whole run, read
as the server reads it.

DP-Fed-BNSL (and DP-Fed-Sparse-BNSL's warm start) releases, per participant, the upper triangle of
clip(X)ᵀclip(X)/n plus Gaussian noise, calibrated to the replace-one sensitivity √2·R²/n. That
bound is attained only by rows x = R·e_a and x′ = R·e_b (a ≠ b): their difference touches the two
diagonal entries (a, a) and (b, b) and nothing else. A canary here owns such a pair of variables
and one row *slot* of one participant; its fair coin puts R·e_a ("in") or R·e_b ("out") in the
slot — one record of one participant either way, the learner's neighbouring relation. A
participant holds ⌊d/2⌋ canaries on disjoint pairs, so no canary's coin moves another canary's
entries: the canaries are *isolated* (Keinan, Shenfeld & Ligett, NeurIPS 2025: one-run audits are
tight only when each canary's effect can be isolated). The score of a canary is
n·(S̃_aa − S̃_bb)/R², ±1 plus Gaussian noise of standard deviation 2z for the noise multiplier z:
its coin is exactly a 1/z-GDP test, the most the claim allows.

The other rows are a public background, R·e_l for every variable l, the same number b per variable
(b = ⌈6z√d⌉). They keep each participant's matrix far enough from singular that the learner's PSD
projection, whose action would mix the canaries' entries, is a no-op with high probability:
the background's eigenvalues, R²b/n, exceed the noise's spectral edge 2σ√d about twofold. The
audit checks the released matrices and reports how many were projected.

The auditor sees what the server sees: the learner's transcript, from which the covariance
reconstruction attack (:func:`~dpbnsl.attacks.server_covariances`) recovers every participant's
released matrix exactly (Fed-Sparse-BNSL App. A.1, eq. 10). Nothing else is read. Guesses: the
highest ``guess_fraction`` of the scores are guessed "in", the rest abstain (fixed in advance).
Canaries of several independent runs may be pooled (``runs``): a coin is then still one record of
one participant of one run, covered by that run's guarantee.

Bounds: :func:`~dpbnsl.audits.one_run_gdp_bound` (the claimed Gaussian curve; the release's
curve is exactly Gaussian, so its ε(δ) bounds the release's) and, beside it,
:func:`~dpbnsl.audits.one_run_bound` (Steinke, Nasr & Jagielski's (ε, δ) test).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._validation import as_generator
from ..accounting.gaussian import gaussian_epsilon
from ._covariance_canaries import (
    LEARNERS,
    as_trials,
    background_size,
    check_settings,
    deficit_epsilon,
    multiplier,
    released,
    secure_claim,
    secure_release,
    top_guesses,
)
from .bounds import OneRunBound, one_run_bound
from .gaussian_fit import GaussianFitEstimate
from .gdp import GDPLowerBound
from .gdp_one_run import OneRunGDPBound, one_run_gdp_bound

__all__ = ["CovarianceOneRunAudit", "covariance_one_run_audit", "LEARNERS"]


@dataclass(frozen=True)
class CovarianceOneRunAudit:
    """Result of :func:`covariance_one_run_audit`.

    ``gdp`` and ``snj``: the Gaussian-curve and the (ε, δ) one-run bounds. ``trials``: the
    canaries read as independent trials (:func:`~dpbnsl.audits.gdp_lower_bound`, out-scores
    against in-scores; the canaries' entries get independent noise, so they are); ``estimate``:
    Andrew et al.'s Gaussian-fit ε estimate (:func:`~dpbnsl.audits.gaussian_fit_epsilon`, no
    confidence level). ``claimed_mu`` = 1/z
    and ``claimed_epsilon`` = ε(δ) of that curve: the release's claim (for the warm start, its share
    of the run's budget; ``run_epsilon`` is the whole run's). ``truths``, ``scores`` and
    ``guesses`` per canary (runs pooled); ``projected``: released matrices the PSD projection
    changed; ``cpu_seconds``: the process time of the runs and the attack.
    """

    learner: str
    gdp: OneRunGDPBound
    snj: OneRunBound
    trials: GDPLowerBound | None
    estimate: GaussianFitEstimate | None
    claimed_mu: float
    claimed_epsilon: float
    run_epsilon: float
    delta: float
    noise_deficit: float
    truths: np.ndarray
    scores: np.ndarray
    guesses: np.ndarray
    runs: int
    projected: int
    cpu_seconds: float

    @property
    def flagged(self) -> bool:
        """Whether a bound exceeds the claim: either bound for a local release (a Gaussian
        mechanism, whose curve the Gaussian-curve test assumes), the (ε, δ) bound alone for the
        secure release (its Skellam curve is only close to Gaussian; ``gdp`` is then evidence)."""
        snj = self.snj.epsilon_lb > self.claimed_epsilon
        if self.learner == "dp-fed-bnsl-secure":
            return snj
        return snj or self.gdp.epsilon_lb > self.claimed_epsilon

    @property
    def trials_flagged(self) -> bool:
        """``trials``'s μ lower bound above the claimed μ = 1/z, for a local release the PSD
        projection left alone: its canaries are then independent, as the claimed release makes
        them (each canary's two diagonal entries get their own noise). Never for the secure
        release (its Skellam curve is only close to the Gaussian one; ``trials`` is evidence)."""
        if self.learner == "dp-fed-bnsl-secure" or self.projected > 0:
            return False
        return self.trials is not None and self.trials.mu_lb > self.claimed_mu


def covariance_one_run_audit(
    *,
    epsilon: float,
    delta: float = 1e-5,
    learner: str = "dp-fed-bnsl",
    d: int = 60,
    participants: int = 40,
    runs: int = 1,
    guess_fraction: float = 0.02,
    alpha: float = 0.05,
    noise_deficit: float = 0.0,
    rng: np.random.Generator | int | None = None,
) -> CovarianceOneRunAudit:
    """One-run audit of a covariance release with isolated canaries (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The learner's target (ε ≤ 100; for DP-Fed-Sparse-BNSL the whole run's, of which the warm
        start's release gets the learner's default share).
    learner : one of :data:`LEARNERS`
        DP-Fed-BNSL's release (read back from its Fed-BNSL messages by the attack);
        ``"dp-fed-bnsl-secure"``, its jointly noised release under secure aggregation (the
        decoded sum the server reads; the canaries of a run share it, so a run holds ⌊d/2⌋ of
        them, dealt to the participants in turn; its claim is the RDP accountant's, and the
        Gaussian-curve bound assumes the Skellam release's curve is Gaussian); the local
        release of the private sorting baselines or of PC on a private covariance (each
        participant's released matrix is its message to the server); or DP-Fed-Sparse-BNSL's
        covariance warm start (run with ``warm_start="covariance"``, its smoothness constants
        declared from the public design; read back from the warm start's Fed-BNSL messages).
    d, participants : int
        Variables (d ≥ 2; ⌊d/2⌋ canaries per participant) and participants per run.
    runs : int ≥ 1
        Independent runs whose canaries are pooled: m = runs · participants · ⌊d/2⌋ canaries.
    guess_fraction : float in (0, 1]
        The share of canaries guessed "in" (the highest scores; at least one).
    alpha : float in (0, 1)
        Failure probability of each bound.
    noise_deficit : float in [0, 1)
        A negative control: the release made with (1 − p)·z, the multiplier of a larger ε′ found
        from the learner's own plan, while the claim stays that of ``epsilon``.
    rng : None, int or Generator
        The coins and the runs' noise (fresh entropy by default).

    Notes
    -----
    Defaults: 40 participants of 60 variables, 1,200 canaries per run, each run about 0.8 s of
    CPU for DP-Fed-BNSL. At ε = 4 (δ = 10⁻⁵) 9 runs pooled (10,800 canaries) give a median
    Gaussian-curve bound of 0.65 ε over five seeds (``docs/results/audits.md``).
    """
    e, dl, d, P, T, frac, a, p = check_settings(
        epsilon, delta, learner, d, participants, runs, guess_fraction, alpha, noise_deficit
    )
    gen = as_generator(rng)
    if learner == "dp-fed-bnsl-secure":
        return _secure_audit(e, dl, d, P, T, frac, a, gen)

    R = 1.0  # both learners' default clip norm of the release
    # the release's multiplier does not depend on the smoothness constants or on n (the DP-PGCD
    # schedule does): a first plan sizes the design, the second is the run's own
    z0 = multiplier(learner, e, dl, d, np.ones(d), 10**6)
    b, per = background_size(d, z0, R)
    n = b * d + per
    # public smoothness constants of the design (DP-Fed-Sparse-BNSL): E[x_a²] over the rows
    m = np.full(d, (b + 0.5) * R * R / n)
    m[2 * per :] = b * R * R / n
    z = multiplier(learner, e, dl, d, m, n)
    e_run = deficit_epsilon(learner, e, dl, d, m, n, (1.0 - p) * z) if p > 0 else e
    background = np.zeros((b * d, d))
    background[np.arange(b * d), np.arange(b * d) % d] = R

    truths, scores, projected = [], [], 0
    start = time.process_time()
    for _ in range(T):
        coins = gen.random((P, per)) < 0.5
        data = []
        for k in range(P):
            X = np.zeros((n, d))
            X[: b * d] = background
            cols = 2 * np.arange(per) + np.where(coins[k], 0, 1)
            X[b * d + np.arange(per), cols] = R
            data.append(X)
        with warnings.catch_warnings():  # the design is not centred; the learner says so
            warnings.simplefilter("ignore")
            matrices = released(learner, data, e_run, dl, m, R, gen.spawn(1)[0])
        for k, S in enumerate(matrices):
            projected += int(np.linalg.eigvalsh(S)[0] < 1e-12)
            diag = np.diag(S) * n / (R * R)
            scores.append(diag[0 : 2 * per : 2] - diag[1 : 2 * per : 2])
            truths.append(np.where(coins[k], 1, -1))
    cpu = time.process_time() - start
    mu = 1.0 / z
    claimed = gaussian_epsilon(mu, dl)
    return _result(learner, scores, truths, frac, a, dl, mu, claimed, e, p, T, projected, cpu)


def _secure_audit(
    e: float, dl: float, d: int, P: int, T: int, frac: float, a: float, gen: np.random.Generator
) -> CovarianceOneRunAudit:
    """:func:`covariance_one_run_audit` of the jointly noised release: one matrix per run."""
    R, per = 1.0, d // 2
    owner = np.arange(per) % P  # canary j sits in participant j mod P, after d background rows
    truths, scores, claims = [], [], []
    start = time.process_time()
    for _ in range(T):
        coins = gen.random(per) < 0.5
        data = [np.vstack([R * np.eye(d), np.zeros((int(np.sum(owner == k)), d))]) for k in range(P)]
        for j in range(per):
            k = owner[j]
            data[k][d + int(np.sum(owner[:j] == k)), 2 * j + (0 if coins[j] else 1)] = R
        with warnings.catch_warnings():  # the design is not centred; the learner says so
            warnings.simplefilter("ignore")
            S, n_total, claim = secure_release(data, e, dl, R, gen.spawn(1)[0])
        diag = np.diag(S) * n_total / (R * R)
        scores.append(diag[0 : 2 * per : 2] - diag[1 : 2 * per : 2])
        truths.append(np.where(coins, 1, -1))
        claims.append(claim)
    cpu = time.process_time() - start
    claimed, mu = secure_claim(claims, dl)
    return _result("dp-fed-bnsl-secure", scores, truths, frac, a, dl, mu, claimed, e, 0.0, T, 0, cpu)


def _result(
    learner: str,
    scores: list,
    truths: list,
    frac: float,
    alpha: float,
    delta: float,
    mu: float,
    claimed: float,
    run_epsilon: float,
    deficit: float,
    runs: int,
    projected: int,
    cpu: float,
) -> CovarianceOneRunAudit:
    """The pooled canaries' guesses (the top ``frac`` "in": a one-signed strategy) and bounds."""
    s, t = np.concatenate(scores), np.concatenate(truths)
    guesses = top_guesses(s, frac)
    return CovarianceOneRunAudit(
        learner=learner,
        gdp=one_run_gdp_bound(guesses, t, alpha=alpha, delta=delta, one_sided=True),
        snj=one_run_bound(guesses, t, alpha=alpha, delta=delta),
        **as_trials(s, t, delta=delta, alpha=alpha),
        claimed_mu=mu,
        claimed_epsilon=claimed,
        run_epsilon=run_epsilon,
        delta=delta,
        noise_deficit=deficit,
        truths=t,
        scores=s,
        guesses=guesses,
        runs=runs,
        projected=projected,
        cpu_seconds=cpu,
    )
