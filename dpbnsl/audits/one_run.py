"""A one-run audit of a whole DP-Fed-Sparse-BNSL run: many canaries, one run, one bound.

Steinke, Nasr & Jagielski (NeurIPS 2023) audit a mechanism from a single run: m canary records are
each included or left out by an independent fair coin S_i, the mechanism runs once, and the auditor
guesses the coins from what the run released. If the mechanism is (ε, δ)-DP with respect to each
coin (flipping one coin is a pair of neighbouring datasets), the number of correct guesses is
stochastically dominated by a binomial with success probability e^ε/(1 + e^ε) (plus a δ term), so
many correct guesses refute small ε (:func:`~dpbnsl.audits.one_run_bound`).

Here the mechanism is the learner itself, :func:`~dpbnsl.learners.dp_fed_sparse_bnsl`,
run once on simulated data (d variables, fixed seed 0: public) to which 2m *canary variables* are
appended, zero in every ordinary row; canary i owns the pair (a_i, b_i) of them and one *slot*, a
row of one participant (dealt in turn). The slot holds either the canary — zero except
x_a = x_b = v, with v² far beyond the clip bound, so that its per-sample gradients on (a, b) and
(b, a) are clipped — or, when its coin says "out", a row of zeros; the two differ in one record of
one participant, which is the learner's replace-one neighbouring, so each coin is covered by that
participant's (ε, δ) guarantee. No other record touches the pair, and no other canary shares its
variables, so a present canary alone moves the data gradient of (a, b) and (b, a), by the clip
bound over n. The auditor sees what the server sees; the score of canary i is the sum of its
participant's uploaded B_ab + B_ba over the rounds. The guesses are fixed in proportion in
advance: the highest scores guessed "in", the lowest "out", the rest abstained.

This is the audit the method was designed for — one run of the real protocol, no retraining — and
it is weak by nature: a canary's coordinate must win the exponential mechanism's selection among
all d_total(d_total − 1) coordinates, and its pull (C_a/n per record) must exceed the ℓ1
threshold λ₁ before the update moves B at all. The bound cannot exceed what m guesses allow: with
every guess right, about ln(q/(1 − q)) for q = α^{1/r} (r guesses). With the noise removed
(``epsilon=inf``) the run shows how much of that ceiling the design reaches.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._validation import as_generator, check_int, check_real
from ..learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from ..simulation import simulate
from .bounds import OneRunBound, one_run_bound

__all__ = ["OneRunAudit", "one_run_audit"]


@dataclass(frozen=True)
class OneRunAudit:
    """Result of :func:`one_run_audit`: the bound, the claim it is compared with, and the run's
    canaries (participant, row, a, b), coins (+1 in, −1 out), scores and guesses (+1, −1, 0), and
    the number of variables the learner saw (d + 2m)."""

    bound: OneRunBound
    claimed_epsilon: float
    delta: float
    canaries: tuple[tuple[int, int, int, int], ...]
    truths: np.ndarray
    scores: np.ndarray
    guesses: np.ndarray
    variables: int

    @property
    def flagged(self) -> bool:
        """Whether the bound exceeds the learner's claimed ε."""
        return self.bound.epsilon_lb > self.claimed_epsilon


def one_run_audit(
    *,
    epsilon: float,
    delta: float = 1e-5,
    canaries: int = 20,
    d: int = 10,
    n: int = 40,
    participants: int = 2,
    rounds: int | None = None,
    local_iters: int | None = None,
    clip: float = 5.0,
    lambda1: float = 0.1,
    guess_fraction: float = 1.0,
    alpha: float = 0.05,
    broken: str | None = None,
    rng: np.random.Generator | int | None = None,
) -> OneRunAudit:
    """One run of DP-Fed-Sparse-BNSL with canaries, and the one-run lower bound on its ε.

    Parameters
    ----------
    epsilon, delta : float
        The learner's per-participant target (``epsilon=inf``: the learner's noiseless reference,
        which claims no privacy: the audit's ceiling).
    canaries : int ≥ 1
        m, the number of canaries (2m canary variables are appended to the d ordinary ones).
    d, n, participants : int
        Ordinary variables, rows per participant (ordinary rows and canary slots together; each
        participant needs more rows than slots) and participants.
    rounds, local_iters, clip, lambda1 : optional
        The learner's T, K (unset: its own public default schedule), global clip bound C and ℓ1
        weight λ₁.
    guess_fraction : float in (0, 1]
        The fraction of canaries guessed, half "in" (highest scores) and half "out" (lowest).
    alpha : float in (0, 1)
        Failure probability of the bound.
    broken : {None, "no-noise"}
        ``"no-noise"``: a negative control, the run made without noise (the learner's noiseless
        reference) while claiming the target ``epsilon``, as an implementation that forgot its
        noise would.
    rng : None, int or Generator
        The coins and the run's noise (fresh entropy by default).

    Notes
    -----
    With the defaults (d = 10 ordinary variables, 20 canaries, so 50 variables; 2 participants of
    40 rows), seeds 0 and 1: the bound is 0 at ε = 1 and ε = 16 (the canaries' coordinates are
    rarely selected, and their releases are drowned in the noise), 0.93 for the noiseless run
    (18 of 20 guesses right), which flags ``broken="no-noise"`` at a claimed ε of 0.5. The bound
    for m canaries all guessed right is about 1.8 at α = 0.05 (q = 0.05^{1/20} = 0.861).
    """
    if broken not in (None, "no-noise"):
        raise ValueError(f"`broken` must be None or 'no-noise'; got {broken!r}")
    e = check_real(epsilon, "epsilon", low=0.0, low_open=True, allow_inf=True)
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    m = check_int(canaries, "canaries", low=1)
    d, n = check_int(d, "d", low=2), check_int(n, "n", low=2)
    P = check_int(participants, "participants", low=1)
    C = check_real(clip, "clip", low=0.0, low_open=True)
    lam = check_real(lambda1, "lambda1", low=0.0)
    frac = check_real(guess_fraction, "guess_fraction", low=0.0, high=1.0, low_open=True)
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    if -(-m // P) >= n:
        raise ValueError(f"{m} canaries need more than {-(-m // P)} rows per participant; got n = {n}")
    gen = as_generator(rng)

    sim = simulate(d, n * P, participants=P, rng=0)  # public: a fixed seed
    total = d + 2 * m
    # canary i: participant i mod P, row i // P, variables d + 2i and d + 2i + 1
    slots = tuple((i % P, i // P, d + 2 * i, d + 2 * i + 1) for i in range(m))
    data = [np.hstack([np.asarray(X, dtype=float), np.zeros((n, 2 * m))]) for X in sim.participants]
    # public constants: the ordinary variables' raw second moments, without any canary; 1 for the
    # canary variables (their ordinary rows are 0, and the learner refuses a constant of 0)
    smooth = np.mean([(X * X).mean(axis=0) for X in data], axis=0)
    smooth[d:] = 1.0
    v = math.sqrt(100.0 * n * float(np.max(smooth + 1.0)))  # every touched gradient is clipped
    truths = np.where(gen.random(m) < 0.5, 1, -1)
    for (k, row, pa, pb), s in zip(slots, truths):
        data[k][row] = 0.0
        if s > 0:
            data[k][row, [pa, pb]] = v
    with warnings.catch_warnings():  # the design's few rows: the learner warns of its utility
        warnings.filterwarnings("ignore", message=".*DP-PGCD can afford only")
        run = dp_fed_sparse_bnsl(
            data,
            epsilon=math.inf if broken == "no-noise" else e,
            delta=dl,
            rounds=rounds,
            local_iters=local_iters,
            clip=C,
            lambda1=lam,
            smoothness=smooth,
            centre="declared",
            warm_start="none",
            rng=gen,
        )
    if run.transcript is None or run.privacy is None:  # pragma: no cover - the learner keeps both
        raise RuntimeError("the learner returned no transcript or privacy statement")
    uploads = [
        np.stack(
            [msg.to_dense() for msg in run.transcript.filter(participant=k, direction="up") if msg.round >= 0]
        )
        for k in range(P)
    ]
    scores = np.array([uploads[k][:, pa, pb].sum() + uploads[k][:, pb, pa].sum() for k, _, pa, pb in slots])
    half = max(1, round(frac * m / 2))
    order = np.argsort(scores, kind="stable")
    guesses = np.zeros(m, dtype=int)
    guesses[order[m - half :]] = 1
    guesses[order[: min(half, m - half)]] = -1
    bound = one_run_bound(guesses, truths, alpha=a, delta=dl)
    return OneRunAudit(
        bound=bound,
        claimed_epsilon=e if broken == "no-noise" else float(run.privacy.epsilon),
        delta=dl,
        canaries=slots,
        truths=truths,
        scores=scores,
        guesses=guesses,
        variables=total,
    )
