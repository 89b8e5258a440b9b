"""The privacy loss of a DP-PGCD run's releases: the auditor's most powerful statistic.

A DP-PGCD run releases, at each iteration, a coordinate j chosen by the exponential mechanism and
the noisy gradient g̃ of j; the update that follows is a function of these and of public values.
Its ledger composes exactly these releases, so the claimed ε covers an observer who sees all of
them — more than the server, which sees the local matrix B at the end of the run. For two
neighbouring datasets D and D′ fixed in advance, the log-likelihood ratio of the whole transcript,

    ℓ = Σ_k [ln P′(j_k | past) − ln P(j_k | past)] + Σ_k [ln φ_σ′(g̃_k − g′_k) − ln φ_σ(g̃_k − g_k)],

is the privacy-loss random variable of the run on that pair; by the Neyman–Pearson lemma, tests
on ℓ are the most powerful tests between D and D′ at every false-positive rate, so an audit on ℓ
bounds the run's ε from below as sharply as any distinguisher of that pair can. Each term needs
the state of the run on both datasets after the same past releases: the run's own state, and a
*shadow* state on the other dataset that applies the same releases (the update rule is public).

The run itself is the package's: :func:`~dpbnsl.learners.linear.pgcd.run_iterations`, one
iteration at a time, which hands the auditor each released g̃ (its ``trace`` list).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import ArrayLike
from ..accounting import PrivacyLedger
from ..federation import Payload, Sparse
from ..learners.admm import PenaltySchedule
from ..learners.linear.pgcd import PGCDNoise, PGCDState, run_iterations, score_sensitivity
from ..learners.linear.sparse_admm import SparseParticipant

__all__ = ["selection_log_probabilities", "transcript_loss", "ShadowedParticipant"]


def selection_log_probabilities(state: PGCDState, multiplier: float) -> np.ndarray:
    """ln P(j) of DP-PGCD's selection on ``state`` for every flat coordinate j (−∞ on the
    diagonal): the exponential mechanism with scale λ = m·Δ_s(state)."""
    logits = state.S.ravel() / (multiplier * score_sensitivity(state))
    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def _log_normal(x: float, mean: float, sd: float) -> float:
    z = (x - mean) / sd
    return -0.5 * z * z - math.log(sd)


def transcript_loss(
    run: PGCDState,
    shadow: PGCDState,
    *,
    world: int,
    iters: int,
    noise: PGCDNoise,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
) -> float:
    """Run ``iters`` private iterations on ``run`` (the state on world ``world``'s data, 0 for D or
    1 for D′) and return ℓ = ln p_{D′}/p_D of their releases; ``shadow`` is the state on the other
    world's data, at the same point, and follows the run's releases (the same public update)."""
    if not noise.multiplier > 0:
        raise ValueError(f"transcript_loss needs a positive noise multiplier; got {noise.multiplier!r}")
    if run.C_a is None or shadow.C_a is None:
        raise ValueError("transcript_loss needs private states (clip bounds C_a set)")
    bounds = (shadow.C_a, run.C_a) if world else (run.C_a, shadow.C_a)  # on D, on D′
    d = run.d
    states = (run, shadow) if world == 0 else (shadow, run)
    m = noise.multiplier
    loss = 0.0
    for _ in range(iters):
        logp = [selection_log_probabilities(s, m) for s in states]
        # the run's gradient changes with its update; the shadow's only when it follows, below
        G = (run.G.copy(), shadow.G) if world == 0 else (shadow.G, run.G.copy())
        out: list[float] = []
        (flat,) = run_iterations(run, 1, noise=noise, rng=rng, ledger=ledger, trace=out)
        a, b = divmod(int(flat), d)
        (released,) = out
        loss += float(logp[1][flat] - logp[0][flat])
        sd = [m * 2.0 * float(c[a]) / s.n for c, s in zip(bounds, states)]  # σ = m·Δ_g,a in each world
        loss += _log_normal(released, G[1][a, b], sd[1]) - _log_normal(released, G[0][a, b], sd[0])
        shadow.update(a, b, released)
    return loss


class ShadowedParticipant(SparseParticipant):
    """A DP-Fed-Sparse-BNSL participant (:class:`~dpbnsl.learners.linear.sparse_admm.SparseParticipant`,
    the learner's own) that carries a shadow of itself on the other world's data and sums the
    privacy loss of its releases over the rounds (``loss``): each round both start from the same
    server message (dual update, PGCD state), the participant runs its K iterations through
    :func:`transcript_loss`, and the shadow follows its releases. Its uploads are the
    participant's, so the protocol around it runs as it would without the auditor. The other
    participants hold the same data in both worlds, so their releases add nothing to the loss."""

    def __init__(
        self,
        X: np.ndarray,
        m: ArrayLike,
        schedule: PenaltySchedule,
        *,
        other_X: np.ndarray,
        other_m: ArrayLike,
        world: int,
        lambda1: float,
        local_iters: int,
        noise: PGCDNoise,
        rng: np.random.Generator,
        ledger: PrivacyLedger,
        init: ArrayLike | None = None,
    ) -> None:
        super().__init__(
            X,
            m,
            schedule,
            lambda1=lambda1,
            local_iters=local_iters,
            noise=noise,
            rng=rng,
            ledger=ledger,
            init=init,
        )
        self.shadow = SparseParticipant(
            other_X, other_m, schedule, lambda1=lambda1, local_iters=local_iters, noise=noise, init=init
        )
        self.world, self.loss = world, 0.0

    def __call__(self, t: int, inbox: Payload | None) -> tuple[str, Payload]:
        state, other = self.start_round(t, inbox), self.shadow.start_round(t, inbox)
        noise, rng, ledger = self.noise, self.rng, self.ledger
        if noise is None or rng is None or ledger is None:  # pragma: no cover - set by __init__
            raise ValueError("a shadowed participant runs DP-PGCD: noise, rng and ledger are needed")
        self.loss += transcript_loss(
            state, other, world=self.world, iters=self.local_iters, noise=noise, rng=rng, ledger=ledger
        )
        return "local_B", Sparse.from_dense(self.B)
