"""One call from a distinguishing game to a verdict: run the game, bound ε from below, compare.

:func:`audit` runs a game of :mod:`dpbnsl.audits.games` and summarises it as an :class:`Audit`:
the claimed ε (what the package's accounting says the audited release costs), the Clopper–Pearson
lower bound ε_lb (with its failure probability α), the Gaussian-DP point estimate, for games whose
release is Gaussian the μ-GDP lower bound (:func:`~dpbnsl.audits.gdp.gdp_lower_bound`), for the
selection game the bound on its bounded-range parameter
(:func:`~dpbnsl.audits.bounded_range.bounded_range_lower_bound`), and the verdict. A correct
mechanism must *pass* (ε_lb ≤ claimed ε); a broken variant must be *flagged*. The verdict rests
on the Clopper–Pearson bound, which assumes nothing about the mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from .._validation import as_generator, check_real
from .bounded_range import BoundedRangeLowerBound, bounded_range_lower_bound
from .bounds import EpsilonEstimate, EpsilonLowerBound, clopper_pearson_bound, gdp_estimate
from .game_base import MIN_TRIALS
from .games import GAMES
from .gdp import GDPLowerBound, gdp_lower_bound
from .parallel import play

__all__ = ["Audit", "audit", "MIN_TRIALS", "GAUSSIAN_GAMES", "BOUNDED_RANGE_GAMES"]

#: Fewer trials per world cannot bound anything useful; the CLI refuses them.

#: Games whose release is a Gaussian mechanism (one release, or a composition of Gaussian
#: releases), with the broken variants that keep it one: the release's trade-off curve is
#: Gaussian and the claim is its Gaussian profile, which is what the ε of
#: :func:`~dpbnsl.audits.gdp.gdp_lower_bound` assumes. (The games' scores post-process the
#: release, which the bound allows: a test on a score is a test on the release.) Not listed:
#: ``"noise-before-clipping"``, whose release is a clipped Gaussian, not a Gaussian. Listed as
#: nearly Gaussian: ``"secure-covariance"``, a Skellam (or discrete Gaussian) sum of large
#: variance μ (about 10¹⁵ at the game's defaults, 32-bit modulus), whose privacy loss is the
#: Gaussian's up to the 3Δ₁/(2μ) term of its RDP curve; its claim is the RDP accountant's ε,
#: above the Gaussian profile of the same variance. At small moduli (μ of a few thousand at 12
#: bits) the approximation weakens: read the Clopper–Pearson bound there.
GAUSSIAN_GAMES: Mapping[str, frozenset[str | None]] = MappingProxyType(
    {
        "gaussian-step": frozenset({None, "noise-halved", "no-clipping"}),
        "covariance": frozenset({None, "noise-halved", "no-clipping"}),
        "smoothness": frozenset({None, "noise-halved", "no-clipping"}),
        "secure-covariance": frozenset({None, "missing-share"}),
        "secure-kendall": frozenset({None, "missing-share", "noise-halved"}),
    }
)

#: Games whose release is one selection by the exponential mechanism, whose claim is a
#: bounded-range parameter ε₀ (``details["epsilon0"]``): every variant (a broken one is still an
#: exponential mechanism, with a wider privacy loss). The bound on ε₀ assumes nothing.
BOUNDED_RANGE_GAMES: frozenset[str] = frozenset({"selection"})


@dataclass(frozen=True)
class Audit:
    """Result of :func:`audit`. ``flagged`` is ``bound.violates(claimed_epsilon)``; ``expected``
    says whether that is the outcome a correct implementation should give (pass for the real
    mechanism, flagged for a broken variant)."""

    mechanism: str
    broken: str | None
    claimed_epsilon: float
    delta: float
    trials: tuple[int, int]
    bound: EpsilonLowerBound
    estimate: EpsilonEstimate | None
    flagged: bool
    gdp: GDPLowerBound | None = None
    bounded_range: BoundedRangeLowerBound | None = None
    claimed_epsilon0: float | None = None

    @property
    def gdp_flagged(self) -> bool | None:
        """Whether the μ-GDP bound exceeds the claim (None for a game without one)."""
        return None if self.gdp is None else self.gdp.violates(self.claimed_epsilon)

    @property
    def bounded_range_flagged(self) -> bool | None:
        """Whether the bound on the bounded-range parameter exceeds the claimed ε₀ (None for a game
        without one)."""
        if self.bounded_range is None or self.claimed_epsilon0 is None:
            return None
        return self.bounded_range.violates(self.claimed_epsilon0)

    @property
    def verdict(self) -> str:
        return "FLAGGED (ε_lb > claimed ε)" if self.flagged else "pass (ε_lb ≤ claimed ε)"

    @property
    def expected(self) -> bool:
        return self.flagged == (self.broken is not None)


def audit(
    mechanism: str,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    trials: int = 100_000,
    broken: str | None = None,
    alpha: float = 0.05,
    rng: np.random.Generator | int | None = None,
    executor: Executor | None = None,
    chunk: int = 1,
    **game_options: Any,
) -> Audit:
    """Run the game ``mechanism`` (a key of :data:`~dpbnsl.audits.games.GAMES`) and bound ε.

    For the games and variants of :data:`GAUSSIAN_GAMES` the μ-GDP bound is computed too (``gdp``,
    ``gdp_flagged``; at the same α), which is much closer to the claim on a correct mechanism and
    flags much smaller noise deficits (the audits' negative-control table); it assumes the Gaussian
    trade-off curve these games have, so the verdict stays with Clopper–Pearson. For the
    selection game (:data:`BOUNDED_RANGE_GAMES`) the lower bound on its bounded-range parameter ε₀
    is computed too (``bounded_range``, ``bounded_range_flagged`` against ``claimed_epsilon0``, the
    ε₀ its accounting records; same α, same threshold rule as the Clopper–Pearson bound); it
    assumes nothing, and tests the claim the accountant composes rather than its ε(δ).

    Continuous scores use the Bonferroni rule of
    :func:`~dpbnsl.audits.bounds.clopper_pearson_bound` (no held-out split needed). Scores with
    at most ten distinct values (a selection: which coordinate won) make the Bonferroni
    thresholds fall on ties, which loosens that rule a lot (0.27 against 0.92 at ε = 1 on the
    selection game), so they use the split rule; two values use the fixed threshold between them.

    The whole-protocol games draw their trials in independently seeded blocks; ``executor`` runs
    the blocks (``chunk`` per task) in parallel on any ``concurrent.futures`` executor (a process
    pool, a Dask cluster's). The result depends on ``rng`` only, never on the executor or on
    ``chunk`` (:mod:`dpbnsl.audits.parallel`).

    Examples
    --------
    >>> a = audit("gaussian-step", epsilon=1.0, trials=20_000, rng=0)
    >>> a.flagged, a.bound.epsilon_lb <= 1.0
    (False, True)
    """
    if not isinstance(mechanism, str) or mechanism not in GAMES:
        raise ValueError(f"`mechanism` must be one of {', '.join(map(repr, GAMES))}; got {mechanism!r}")
    alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    rng = as_generator(rng)
    game = play(
        mechanism,
        epsilon=epsilon,
        delta=delta,
        trials=trials,
        broken=broken,
        rng=rng,
        executor=executor,
        chunk=chunk,
        **game_options,
    )
    s0, s1 = np.asarray(game.scores0, float), np.asarray(game.scores1, float)
    values = np.unique(np.concatenate([s0, s1]))
    estimate = None
    rule: dict[str, Any]
    if values.size <= 2:
        rule = {"rule": "fixed", "threshold": float(values.mean()) if values.size == 2 else float(values[0])}
    elif values.size <= 10:
        rule = {"rule": "split", "rng": rng}
    else:
        rule = {}
        estimate = gdp_estimate(s0, s1, delta=game.delta)
    bound = clopper_pearson_bound(s0, s1, delta=game.delta, alpha=alpha, **rule)
    gdp = br = epsilon0 = None
    if broken in GAUSSIAN_GAMES.get(mechanism, ()) and values.size > 10:
        gdp = gdp_lower_bound(s0, s1, delta=game.delta, alpha=alpha)
    if mechanism in BOUNDED_RANGE_GAMES:
        br = bounded_range_lower_bound(s0, s1, alpha=alpha, **rule)
        epsilon0 = float(game.details["epsilon0"])
    return Audit(
        mechanism,
        game.broken,
        game.claimed_epsilon,
        game.delta,
        game.trials,
        bound,
        estimate,
        bound.violates(game.claimed_epsilon),
        gdp,
        br,
        epsilon0,
    )
