"""Games for Priv-PC's releases: one sparse-vector round, the Laplace examination of the stratified
Kendall statistic on crafted neighbours, and the same statistic jointly noised under secure
aggregation (secure DP-FedPC's test).

The first two report as ``claimed_epsilon`` the release's own pure ε (a pure ε-DP release is (ε, δ)-DP for
every δ). ``noise_deficit`` p (and ``broken="noise-halved"``, p = ½) releases with (1 − p) times
the calibrated noise scales while the claim stays ε: the negative controls.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._validation import as_generator, check_int, check_real
from ..learners.constraint.kendall import StratifiedKendall, kendall_sensitivity
from ..learners.constraint.secure_kendall import batch_shares, integer_numerators, plan_secure_tests
from ..mechanisms.distributed import centred, modular_sum
from ..mechanisms.sparse_vector import laplace_mechanism
from .game_base import GameResult, check_broken, check_target, check_trials

__all__ = ["sparse_vector_game", "priv_pc_examine_game", "secure_kendall_game", "sparse_vector_design"]


def _deficit(broken: str | None, noise_deficit: float) -> float:
    p = check_real(noise_deficit, "noise_deficit", low=0.0, high=1.0, high_open=True)
    return 0.5 if broken == "noise-halved" else p


def sparse_vector_design(epsilon: float, queries: int, *, floor: float = 0.01) -> tuple[float, float, float]:
    """The last query's value c (in units of Δ, threshold 0) that maximises the exact log-ratio of
    the event "the round stops at the last query" between the two worlds of
    :func:`sparse_vector_game`, among the c whose event has probability ≥ ``floor`` in world 1.
    Returns (c, log-ratio, probability in world 1), by numerical integration over the threshold
    noise (public: it depends on ε and the number of queries only)."""
    b1, b2 = 2.0 / epsilon, 4.0 / epsilon
    r = np.linspace(-60.0 * b2, 60.0 * b2, 40_001)
    dr = r[1] - r[0]
    dens = np.exp(-np.abs(r) / b1) / (2.0 * b1)

    def cdf(x: np.ndarray) -> np.ndarray:
        return np.where(
            x < 0, 0.5 * np.exp(np.minimum(x, 0) / b2), 1.0 - 0.5 * np.exp(-np.maximum(x, 0) / b2)
        )

    def prob(below: float, last: float) -> float:
        return float((dens * cdf(r - below) ** (queries - 1) * (1.0 - cdf(r - last))).sum() * dr)

    best = None
    for c in np.linspace(-15.0 * b2, 15.0 * b2, 241):
        p1, p0 = prob(0.0, c), prob(1.0, c - 1.0)
        if p1 >= floor and p0 > 0:
            cand = (math.log(p1 / p0), float(c), p1)
            if best is None or cand > best:
                best = cand
    if best is None:  # pragma: no cover - some c always reaches the floor
        raise ValueError("no design reaches the probability floor")
    return best[1], best[0], best[2]


def sparse_vector_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    noise_deficit: float = 0.0,
    queries: int = 10,
    sensitivity: float = 0.05,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """One round of :class:`~dpbnsl.mechanisms.sparse_vector.AboveThreshold` (Priv-PC's sieve) at
    pure ε, on ``queries`` queries of sensitivity Δ that move by exactly Δ between the worlds.

    World 1 (D′): the first k − 1 queries at the threshold 0, the last at c·Δ; world 0 (D): the
    first k − 1 at +Δ, the last at (c − 1)·Δ. This is the shift of the SVT proof: moving the
    threshold noise by Δ costs ε/2, and the last query, 2Δ from its threshold, the other ε/2, so
    the log-ratio of "the round stops at the last query" tends to ε once the k − 1 "below" answers
    push the threshold noise into its tail (k = 10: 0.97–0.99 ε at an event probability of 1 %;
    c from :func:`sparse_vector_design`). The trials follow the class's law exactly (threshold
    noise Lap(2Δ/ε), query noise Lap(4Δ/ε)), drawn for all trials at once; the tests compare the
    two. Score: 1 if the round stopped at the last query, else 0.
    """
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "sparse-vector")
    k = check_int(queries, "queries", low=1, high=1000)
    s = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
    scale = 1.0 - _deficit(broken, noise_deficit)
    rng = as_generator(rng)
    c, log_ratio, p1 = sparse_vector_design(e, k)
    b1, b2 = scale * 2.0 * s / e, scale * 4.0 * s / e
    values = {1: np.r_[np.zeros(k - 1), c * s], 0: np.r_[np.full(k - 1, s), (c - 1.0) * s]}
    scores = []
    for world in (0, 1):
        threshold = rng.laplace(0.0, b1, trials)
        noisy = values[world][None, :] + rng.laplace(0.0, b2, (trials, k))
        above = noisy >= threshold[:, None]
        stopped_last = above[:, -1] & ~above[:, :-1].any(axis=1)
        scores.append(stopped_last.astype(float))
    return GameResult(
        "sparse-vector",
        scores[0],
        scores[1],
        e,
        dl,
        broken,
        {
            "queries": k,
            "sensitivity": s,
            "threshold_scale": b1,
            "query_scale": b2,
            "noise_deficit": 1.0 - scale,
            "last_query": c,
            "exact_log_ratio": log_ratio if scale == 1.0 else None,
            "event_probability": p1 if scale == 1.0 else None,
            "accountant": "pure",
            "score": "1 if the round stopped at the last query",
        },
    )


def _crafted_neighbours(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two datasets of about n rows whose conditional statistic z(0, 1 | 2) differs by
    2·9(h − 1)(3h + 1)/((2h + 5)(2h + 3))/√w(n), the bound's worst case (see
    :mod:`dpbnsl.learners.constraint.kendall`), with z > 0 in both, and the strata codes: stratum 0
    is discordant, stratum 1 concordant (h − 1 rows each), the replaced row joins one or the other;
    stratum 2, the same in both, is concordant and keeps z positive, so that |z| moves as z does.
    Column 2 holds the strata codes."""
    h = n // 3 + 1
    up = np.arange(h - 1, dtype=float)
    base = np.vstack(
        [
            np.column_stack([up, -up, np.zeros(h - 1)]),
            np.column_stack([up, up, np.ones(h - 1)]),
            np.column_stack([up, up, np.full(h - 1, 2.0)]),
        ]
    )
    D = np.vstack([base, [h, h, 0.0]])
    E = np.vstack([base, [h, -h, 1.0]])
    return D, E


def _strata(X: np.ndarray) -> np.ndarray:
    """No strata for columns 0 and 1 (their values are compared), column 2's codes for the strata."""
    return np.column_stack([np.zeros((len(X), 2), int), X[:, 2].astype(int)])


def priv_pc_examine_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    noise_deficit: float = 0.0,
    n: int = 4001,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """Priv-PC's examination: ``|z| + Lap(Δ/ε)`` of the conditional Kendall statistic, on two
    replace-one neighbours crafted so that |z| moves by more than 0.99 Δ (n ≥ 3000).

    The neighbours: a stratum whose pairs are all discordant plus a row concordant with all of
    them, and a stratum whose pairs are all concordant; the row moves to the second stratum and
    becomes discordant with all of it (both strata move by the most the sensitivity proof
    allows); a third, concordant stratum keeps z away from 0. The statistics come from the package's
    :class:`~dpbnsl.learners.constraint.kendall.StratifiedKendall`, the noise from
    :func:`~dpbnsl.mechanisms.sparse_vector.laplace_mechanism` (all trials in one call). Score: the
    released value (the Laplace likelihood ratio is monotone in it)."""
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "priv-pc-examine")
    n = check_int(n, "n", low=7, high=10**6)
    scale = 1.0 - _deficit(broken, noise_deficit)
    rng = as_generator(rng)
    D, E = _crafted_neighbours(n)
    n = len(D)
    z = sorted(abs(StratifiedKendall(X, _strata(X)).z(0, 1, (2,))) for X in (D, E))
    sens = kendall_sensitivity(n, conditional=True)
    scores = [
        laplace_mechanism(np.full(trials, v), sensitivity=sens * scale, epsilon=e, rng=rng).value for v in z
    ]
    return GameResult(
        "priv-pc-examine",
        scores[0],
        scores[1],
        e,
        dl,
        broken,
        {
            "n": n,
            "statistics": tuple(z),
            "moved": z[1] - z[0],
            "sensitivity": sens,
            "laplace_scale": sens * scale / e,
            "noise_deficit": 1.0 - scale,
            "accountant": "pure",
            "score": "released |z| + Lap(Δ/ε)",
        },
    )


def secure_kendall_game(
    *,
    epsilon: float,
    delta: float,
    trials: int,
    broken: str | None = None,
    noise_deficit: float = 0.0,
    n: int = 4001,
    participants: int = 3,
    dropouts: int = 0,
    rng: np.random.Generator | int | None = None,
) -> GameResult:
    """Secure DP-FedPC's test: one conditional Kendall statistic summed over P participants by
        secure aggregation, calibrated as one reserved test to (ε, δ)
        (:func:`~dpbnsl.learners.constraint.secure_kendall.plan_secure_tests`), end to end:
        the participants' integer numerators ⌊γ T_p⌋ (from
        :class:`~dpbnsl.learners.constraint.kendall.StratifiedKendall`), their Skellam shares, the
        modular sum and its decoding, as the protocol runs them.

        Participant 0 holds the crafted neighbours of :func:`priv_pc_examine_game` (its numerator
        moves by more than 0.98 of the integer sensitivity); the others hold the same concordant rows
        in both worlds. The t = ``dropouts`` declared participants collude with the server (their
        noise is subtracted), so only the P − t honest shares protect the canary, the worst case the
        claim covers. Broken variants: ``"missing-share"`` (one more share's noise missing) and
        ``"noise-halved"``; ``noise_deficit`` p shrinks every share's sd by (1 − p) while the claim
        stays. Score: the decoded sum, signed so that world 1 scores higher (its likelihood ratio is
    monotone in it, up to the lattice).
        The claim is the plan's ε under the RDP accountant."""
    e, dl = check_target(epsilon, delta)
    trials, broken = check_trials(trials), check_broken(broken, "secure-kendall")
    n = check_int(n, "n", low=7, high=10**6)
    P = check_int(participants, "participants", low=2, high=100)
    t = check_int(dropouts, "dropouts", low=0, high=P - 2)
    scale = 1.0 - _deficit(broken, noise_deficit)
    rng = as_generator(rng)
    D, E = _crafted_neighbours(n)
    n = len(D)
    others = [np.column_stack([np.arange(n, dtype=float), np.arange(n, dtype=float), np.zeros(n)])] * (P - 1)
    plan = plan_secure_tests(
        epsilon=e, delta=dl, participants=P, n_total=P * n, d=3, tests=1, dropouts=t, unconditional=0
    )
    honest = plan.honest - (1 if broken == "missing-share" else 0)
    shrunk = dataclasses.replace(plan, share=plan.share * scale * scale)
    test = [(0, 1, (2,))]
    stats = []
    for X in (D, E):
        values = [
            int(integer_numerators(StratifiedKendall(Y, _strata(Y)), test, plan.scale)[0])
            for Y in (X, *others)
        ]
        stats.append(values)
    scores = []
    for values in stats:
        # the honest shares carry noise; the colluders' (and a missing one's) noise is subtracted
        shares = [
            batch_shares(np.full(trials, v, dtype=np.int64), shrunk, rng=rng)
            if k < honest
            else np.mod(np.full(trials, v, dtype=np.int64), 1 << plan.modulus_bits)
            for k, v in enumerate(values)
        ]
        total = centred(modular_sum(shares, bits=plan.modulus_bits), bits=plan.modulus_bits)
        scores.append(total.astype(float) - float(sum(stats[0])))
    moved = abs(stats[1][0] - stats[0][0])
    if stats[1][0] < stats[0][0]:  # higher means world 1
        scores = [-x for x in scores]
    return GameResult(
        "secure-kendall",
        scores[0],
        scores[1],
        plan.accounted,
        dl,
        broken,
        {
            "n": n,
            "participants": P,
            "dropouts": t,
            "numerators": (stats[0][0], stats[1][0]),
            "moved": moved,
            "sensitivity": plan.sensitivity[1],
            "share_variance": shrunk.share,
            "honest_shares": honest,
            "noise_deficit": 1.0 - scale,
            "accountant": "rdp",
            "score": "decoded secure sum of the participants' numerators and noise shares",
        },
    )
