"""One-run audits of the covariance releases with canary participants (Andrew et al., ICLR 2024).

Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar audit federated learning in one run by adding
*canary clients* whose upload is a random isotropic direction, and scoring each canary by the
cosine between its direction and the final release. The package's guarantees are per record, not
per participant, so a canary participant here is a participant whose private data is one record
slot (or a few) on top of a public background: each slot's fair coin puts the canary record
x = R·u ("in", u uniform on the unit sphere, drawn afresh for every canary) or the zero record
("out") in it. Either way the participant's data change by one record, the learner's neighbouring
relation, and a participant with one slot is a participant-level canary whose guarantee is the
record-level one.

The canary's contribution to the release is the rank-one matrix R²uuᵀ/n: its direction is random
but not isotropic in the space of symmetric matrices (no single record's is). Its score is the
cosine between the upper triangle of (released matrix − public background's contribution) and the
upper triangle t = triu(uuᵀ). Under the claimed Gaussian release (noise z·√2R²/n on each entry of
the upper triangle) the canary's in/out pair is μ_u-GDP with μ_u = ‖t‖/(√2·z), and
‖t‖² = (1 + Σᵢuᵢ⁴)/2 ≈ ½: random-direction canaries see about half of the claimed μ (the
replace-one sensitivity is reached only by swapping two axis-aligned rows, which
:func:`~dpbnsl.audits.covariance_one_run_audit` does).

Two claims are therefore tested, and kept apart:

- **the privacy claim** (``flagged``): the release is 1/z-GDP per record, ε(δ) = ``claimed_epsilon``.
  Any implementation that meets it keeps every canary below it, whatever its noise looks like.
  Random-direction canaries reach only about half of it, so they rarely refute it.
- **the stated mechanism** (``mechanism_flagged``): independent Gaussian noise z·√2R²/n on every
  upper-triangle entry, which allows these canaries μ_c = the largest μ_u and no more. An
  implementation can break this and still meet the privacy claim (with less noise off the
  diagonal, down to 1/√2 of it, the Mahalanobis norm of every record swap stays within the
  claim's); with less than that off the diagonal, the claim fails on an off-diagonal pair (rows
  R(e_a ± e_b)/√2) that the isolated canaries do not test. Every entry of the release moves these
  canaries' scores, so such an implementation is seen here.

Three readings of the same scores:

- ``snj`` and ``gdp``: Steinke, Nasr & Jagielski's (ε, δ) one-run bound and Mahloujifar, Melis &
  Chaudhuri's one-run test of the Gaussian curve (guesses: the top ``guess_fraction`` of the
  cosines "in"). They assume nothing about how canaries interact.
- ``trials``: :func:`~dpbnsl.audits.gdp_lower_bound` (area-under-the-ROC rule) with the canaries
  as independent trials, out-scores against in-scores. Valid when the canaries are independent
  (``independent``): one canary per participant of a local release, unprojected (each canary has
  its own noise draw). With several per participant or under secure aggregation (one release)
  they share the noise, and their directions are nearly but not exactly orthogonal: the reading
  is then approximate, reported, and never used by a flag.
- ``estimate``: Andrew et al.'s ε estimate from normals fitted to the in- and out-scores
  (:func:`~dpbnsl.audits.gaussian_fit_epsilon`); no confidence level, never used by a flag.

``trials`` is None unless each side holds a canary; ``estimate`` unless each side holds two with
scores that are not all equal.

The public background (R·e_l rows, ⌈6z√d⌉ per variable, as for the isolated canaries) keeps the
PSD projection idle; the released matrices are recovered from the server's view as in
:func:`~dpbnsl.audits.covariance_one_run_audit`.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._validation import as_generator, check_int
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

__all__ = ["CanaryParticipantAudit", "canary_participant_audit", "LEARNERS"]


@dataclass(frozen=True)
class CanaryParticipantAudit:
    """Result of :func:`canary_participant_audit` (module docstring for the readings).

    ``canary_mu``/``canary_epsilon``: what the stated mechanism allows these canaries (μ_c and
    ε(δ) of μ_c-GDP);
    ``claimed_mu``/``claimed_epsilon``: the release's whole claim (1/z and its ε(δ); for the
    secure release, the RDP accountant's ε and the μ of its Gaussian curve); ``run_epsilon``: the
    ε the run was made at (above the claim under ``noise_deficit``). ``scores`` (cosines),
    ``truths`` (+1 in, −1 out), ``guesses`` and ``norms`` (‖t‖ per canary) for the pooled
    canaries; ``projected``: released matrices the PSD projection changed.
    """

    learner: str
    snj: OneRunBound
    gdp: OneRunGDPBound
    trials: GDPLowerBound | None
    estimate: GaussianFitEstimate | None
    canary_mu: float
    canary_epsilon: float
    claimed_mu: float
    claimed_epsilon: float
    run_epsilon: float
    delta: float
    noise_deficit: float
    scores: np.ndarray
    truths: np.ndarray
    guesses: np.ndarray
    norms: np.ndarray
    canaries_per_participant: int
    runs: int
    projected: int
    cpu_seconds: float

    @property
    def independent(self) -> bool:
        """Whether the canaries are independent trials: one per participant of a local release
        that the PSD projection left alone (each canary then has its own noise draw)."""
        return (
            self.canaries_per_participant == 1
            and self.learner != "dp-fed-bnsl-secure"
            and self.projected == 0
        )

    @property
    def flagged(self) -> bool:
        """The learner's privacy claim refuted: a one-run bound above the release's whole claim
        (``claimed_epsilon``, ``claimed_mu``), which any implementation meeting the claim satisfies
        whatever its canaries see; or, with independent canaries, ``trials``'s μ lower bound above
        ``claimed_mu``. For the secure release (Skellam noise) the (ε, δ) bound alone."""
        if self.learner == "dp-fed-bnsl-secure":
            return self.snj.epsilon_lb > self.claimed_epsilon
        trials = self.independent and self.trials is not None and self.trials.mu_lb > self.claimed_mu
        return trials or self.snj.epsilon_lb > self.claimed_epsilon or self.gdp.mu_lb > self.claimed_mu

    @property
    def mechanism_flagged(self) -> bool:
        """The *stated mechanism* refuted: the Gaussian-curve one-run bound, or (with independent
        canaries) ``trials``'s μ lower bound, above μ_c, what independent Gaussian noise of
        z·√2R²/n on every upper-triangle entry allows these canaries. This is not a refutation of
        the privacy claim: an implementation with, say, less noise off the diagonal (down to 1/√2
        of it) still meets its claim, and is flagged here. Local releases only."""
        if self.learner == "dp-fed-bnsl-secure":
            return False
        trials = self.independent and self.trials is not None and self.trials.mu_lb > self.canary_mu
        return trials or self.gdp.mu_lb > self.canary_mu


def _unit_rows(k: int, d: int, gen: np.random.Generator) -> np.ndarray:
    """k directions uniform on the unit sphere of R^d."""
    u = gen.standard_normal((k, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _cosines(Delta: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos(triu(Δ), triu(uuᵀ)) for every row u of U, and ‖triu(uuᵀ)‖."""
    iu = np.triu_indices(Delta.shape[0])
    v = Delta[iu]
    T = U[:, iu[0]] * U[:, iu[1]]  # triu(uuᵀ) per canary
    norms = np.linalg.norm(T, axis=1)
    return (T @ v) / (norms * max(float(np.linalg.norm(v)), 1e-300)), norms


def canary_participant_audit(
    *,
    epsilon: float,
    delta: float = 1e-5,
    learner: str = "dp-fed-bnsl",
    d: int = 60,
    participants: int = 40,
    canaries: int = 1,
    runs: int = 1,
    guess_fraction: float = 0.02,
    alpha: float = 0.05,
    noise_deficit: float = 0.0,
    rng: np.random.Generator | int | None = None,
) -> CanaryParticipantAudit:
    """One-run audit of a covariance release with canary participants (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The learner's target (ε ≤ 100), as in :func:`~dpbnsl.audits.covariance_one_run_audit`.
    learner : one of :data:`LEARNERS`
        The release audited and how it is read, as in
        :func:`~dpbnsl.audits.covariance_one_run_audit` (``"dp-fed-bnsl-secure"``: every canary of a
        run is in the one jointly noised sum).
    d, participants : int
        Variables (d ≥ 2) and participants per run; every participant is a canary participant.
    canaries : int ≥ 1
        Canary slots per participant (1: the canaries are independent; more: more canaries per
        run, nearly orthogonal but sharing a release).
    runs : int ≥ 1
        Independent runs whose canaries are pooled.
    guess_fraction, alpha, noise_deficit, rng
        As in :func:`~dpbnsl.audits.covariance_one_run_audit` (``noise_deficit`` for the local
        releases only).

    Notes
    -----
    The cost is the isolated-canary audit's per run (about 0.8 s of CPU for DP-Fed-BNSL with the
    defaults); with one canary per participant a run yields ``participants`` canaries.
    """
    e, dl, d, P, T, frac, a, p = check_settings(
        epsilon, delta, learner, d, participants, runs, guess_fraction, alpha, noise_deficit
    )
    c = check_int(canaries, "canaries", low=1)
    gen = as_generator(rng)
    R = 1.0  # the learners' default clip norm of the release
    secure = learner == "dp-fed-bnsl-secure"
    # background rows per variable per participant: one under secure aggregation (as the isolated
    # secure audit), ⌈6z√d⌉ for a local release
    b = 1 if secure else background_size(d, multiplier(learner, e, dl, d, np.ones(d), 10**6), R)[0]
    n = b * d + c
    m = np.full(d, (b + 0.5 * c / d) * R * R / n)  # public: E[x_a²] over the design's rows
    z = math.nan if secure else multiplier(learner, e, dl, d, m, n)
    e_run = deficit_epsilon(learner, e, dl, d, m, n, (1.0 - p) * z) if p > 0 else e

    scores, truths, norms, claims, projected = [], [], [], [], 0
    start = time.process_time()
    for _ in range(T):
        coins = gen.random((P, c)) < 0.5
        U = _unit_rows(P * c, d, gen).reshape(P, c, d)
        data = []
        for k in range(P):
            data.append(np.vstack([np.tile(R * np.eye(d), (b, 1)), R * U[k] * coins[k][:, None]]))
        with warnings.catch_warnings():  # the design is not centred; the learner says so
            warnings.simplefilter("ignore")
            seed = gen.spawn(1)[0]
            if secure:
                S, n_total, claim = secure_release(data, e, dl, R, seed)
                Delta = S - np.eye(d) * (P * R * R / n_total)
                cos, nrm = _cosines(Delta, U.reshape(P * c, d))
                scores.append(cos)
                norms.append(nrm)
                claims.append(claim)
            else:
                for k, S in enumerate(released(learner, data, e_run, dl, m, R, seed)):
                    projected += int(np.linalg.eigvalsh(S)[0] < 1e-12)
                    cos, nrm = _cosines(S - np.eye(d) * (b * R * R / n), U[k])
                    scores.append(cos)
                    norms.append(nrm)
        truths.append(np.where(coins.ravel(), 1, -1))
    cpu = time.process_time() - start

    s, t, nr = np.concatenate(scores), np.concatenate(truths), np.concatenate(norms)
    if secure:
        claimed, mu = secure_claim(claims, dl)
    else:
        mu = 1.0 / z
        claimed = gaussian_epsilon(mu, dl)
    # the record's move in the release's units: ‖t‖·R²/n against the sensitivity √2·R²/n
    mu_c = float(np.max(nr)) / math.sqrt(2.0) * mu
    guesses = top_guesses(s, frac)
    return CanaryParticipantAudit(
        learner=learner,
        snj=one_run_bound(guesses, t, alpha=a, delta=dl),
        gdp=one_run_gdp_bound(guesses, t, alpha=a, delta=dl, one_sided=True),
        **as_trials(s, t, delta=dl, alpha=a),
        canary_mu=mu_c,
        canary_epsilon=gaussian_epsilon(mu_c, dl),
        claimed_mu=mu,
        claimed_epsilon=claimed,
        run_epsilon=e_run,
        delta=dl,
        noise_deficit=p,
        scores=s,
        truths=t,
        guesses=guesses,
        norms=nr,
        canaries_per_participant=c,
        runs=T,
        projected=projected,
        cpu_seconds=cpu,
    )
