"""The distinguishing game of the jointly noised covariance under secure aggregation, end to end:
clipping, the randomised rounding onto the integer grid, each participant's noise share, the
modular sum and its decoding — the functions the participants and the server call
(:mod:`dpbnsl.mechanisms.distributed`), vectorised over trials.
"""

from __future__ import annotations

from typing import Literal, cast

import numpy as np

from .._validation import as_generator, check_choice, check_int, check_real
from ..accounting.distributed import NOISES, calibrate_distributed
from ..mechanisms import clip_rows
from ..mechanisms.distributed import centred, integer_grid, modular_sum, noisy_share, quantise_rows
from .game_base import EXCESS, GameResult, base_rows, check_broken, check_target, check_trials

__all__ = ["secure_covariance_game"]

_CHUNK = 1 << 13  # trials per batch (each holds P × n × d rounded entries)


def secure_covariance_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    n: int = 20,
    d: int = 3,
    participants: int = 2,
    dropouts: int = 0,
    clip_norm: float = 1.0,
    noise: str = "skellam",
    modulus_bits: int = 31,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """The joint covariance release of DP-Fed-BNSL under secure aggregation, calibrated to
    (ε, δ) for P participants of n rows with t = ``dropouts`` declared.

    Participant 0 holds n − 1 shared rows (norm ≤ R/2) and the canary, 2R·e₀ in D and 2R·e₁ in D′
    (clipped to R·e₀ vs R·e₁, then scaled by γ and rounded: the integer statistic moves by
    nearly the sensitivity √2·B, by (γR)² = (√B − √d)² per entry); the others hold n shared rows.
    Every trial rounds every row afresh, draws every share's noise, sums the residues modulo
    2^bits and decodes the sum, as the protocol does. Score: the projection of the decoded sum on
    e₀₀ − e₁₁, centred at world 0's noiseless value. The claim is the plan's ε under the RDP
    accountant (the noise of the P − t honest shares the plan sizes each share for).

    The game plays the worst case the claim covers: the t declared participants collude with the
    server, which subtracts their noise, so only the P − t honest shares' noise protects the canary
    (their data stays in the sum, the same in both worlds). Broken variant ``"missing-share"``: one
    more share's noise is missing (a participant beyond the declared t colludes or drops out): P − t − 1
    shares protect the canary.

    Parameters
    ----------
    epsilon, delta, trials, broken, rng
        As in :func:`~dpbnsl.audits.games.gaussian_step_game`.
    n : int >= 2, d : int >= 2
        Rows per participant and columns.
    participants : int >= 2, dropouts : int in [0, P − 1]
        P and the declared t.
    clip_norm : float > 0
        R.
    noise : {"skellam", "ddg"}, modulus_bits : int in [8, 53]
        The shares' noise and the modular range.
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "secure-covariance")
    n, d = check_int(n, "n", low=2), check_int(d, "d", low=2)
    P = check_int(participants, "participants", low=2)
    t = check_int(dropouts, "dropouts", low=0, high=P - 1)
    R = check_real(clip_norm, "clip_norm", low=0.0, low_open=True)
    check_choice(noise, "noise", NOISES)
    bits = check_int(modulus_bits, "modulus_bits", low=8, high=53)
    rng = as_generator(rng)
    plan = calibrate_distributed(
        e,
        dl,
        d=d,
        n_total=P * n,
        participants=P,
        dropouts=t,
        clip_norm=R,
        noise=cast(Literal["skellam", "ddg"], noise),
        modulus_bits=bits,
    )
    grid = integer_grid(clip_norm=R, d=d, norm_bound=plan.norm_bound)
    shared = base_rows(n + 1, d, 0.5 * R / np.sqrt(d))  # n rows
    canary = np.sqrt(EXCESS) * R * np.eye(d)[:2]
    worlds = [[np.vstack([shared[1:], row])] + [shared] * (P - 1) for row in canary]
    iu = np.triu_indices(d)
    D = iu[0].size
    # the worst case the claim covers: t participants collude (the server subtracts their noise),
    # so only the P − t honest shares' noise protects the canary; one fewer when broken
    contributing = P - t - (1 if broken == "missing-share" else 0)

    def expected(parts: list[np.ndarray]) -> np.ndarray:  # E Σ qqᵀ without noise (rounding unbiased
        # per entry, but E q_a² = (γx_a)² + frac(1 − frac): the exact mean of the squares)
        total = np.zeros(D)
        for X in parts:
            Y = clip_rows(X, norm=R) * grid.scale
            f = Y - np.floor(Y)
            G = Y.T @ Y + np.diag(np.sum(f * (1.0 - f), axis=0))
            total += G[iu]
        return total

    means = [expected(w) for w in worlds]
    direction = (means[1] - means[0]) / np.linalg.norm(means[1] - means[0])
    scores = [np.empty(trials), np.empty(trials)]
    for w, parts in enumerate(worlds):
        for start in range(0, trials, _CHUNK):
            k = min(_CHUNK, trials - start)
            residues = []
            for p, X in enumerate(parts):
                Q = quantise_rows(np.tile(X, (k, 1)), grid, rng=rng).reshape(k, X.shape[0], d)
                stat = np.rint(np.einsum("tia,tib->tab", Q, Q)[:, iu[0], iu[1]]).astype(np.int64)
                share = noisy_share(stat, noise=noise, share=plan.share, bits=bits, rng=rng)
                if p >= contributing:  # a colluder's noise, known to the server, protects nothing
                    share = np.mod(stat, 1 << bits)
                residues.append(share)
            decoded = centred(modular_sum(residues, bits=bits), bits=bits).astype(float)
            scores[w][start : start + k] = (decoded - means[0]) @ direction
    return GameResult(
        "secure-covariance",
        scores[0],
        scores[1],
        plan.spent,
        dl,
        broken,
        {
            "participants": P,
            "dropouts": t,
            "noise": noise,
            "share": plan.share,
            "variance": plan.variance,
            "sensitivity": plan.l2_sensitivity,
            "scale": plan.scale,
            "norm_bound": plan.norm_bound,
            "modulus_bits": bits,
            "shift": float((means[1] - means[0]) @ direction),
            "direction": direction,
            "mean0": means[0],
            "rows": tuple(tuple(parts) for parts in worlds),
            "accountant": "rdp",
            "score": "projection of the decoded secure sum on e00 - e11",
        },
    )
