"""What every distinguishing game shares: its result, the broken variants, argument checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._validation import check_epsilon, check_int, check_real, readonly_copy

__all__ = [
    "GameResult",
    "BROKEN",
    "EXCESS",
    "base_rows",
    "check_broken",
    "check_target",
    "check_trials",
    "MAX_TRIALS",
    "MIN_TRIALS",
    "GAME_NAMES",
]

#: The crafted row exceeds the clip bound by this factor (in the clipped statistic: a per-sample
#: gradient, a squared row norm, a squared feature), so clipping always binds on it.
EXCESS = 4.0

#: Broken variants the games can build (negative controls), and the games each applies to.
#:
#: - ``"noise-halved"``: the release adds half the calibrated noise (σ/2, or λ_G/2);
#: - ``"no-clipping"``: the clipping step is skipped (per-sample gradients, rows, x_ia²), while the
#:   noise is still calibrated to the declared sensitivity;
#: - ``"raw-smoothness"``: DP-PGCD takes m_a = (1/n_k)Σx_ia² from the raw data (the clip
#:   thresholds C_ab, the Gumbel scale and the step 1/M_ab then depend on the data);
#: - ``"noise-before-clipping"``: the covariance noise is added to the raw XᵀX/n and the release is
#:   clipped afterwards (eigenvalues to [0, R²], where covariances of rows of norm ≤ R lie), which
#:   bounds the output but not the sensitivity;
#: - ``"missing-share"``: under secure aggregation, one participant's noise share never reaches the
#:   sum (it dropped out, or colludes with the server, while t = 0 was declared).
BROKEN: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "noise-halved": (
            "gaussian-step",
            "selection",
            "covariance",
            "smoothness",
            "sparse-vector",
            "priv-pc-examine",
            "secure-kendall",
        ),
        "no-clipping": (
            "gaussian-step",
            "selection",
            "covariance",
            "smoothness",
            "dp-pgcd",
            "dp-pgcd-transcript",
            "dp-pgcd-worst",
        ),
        "raw-smoothness": (
            "selection",
            "dp-pgcd",
            "dp-pgcd-transcript",
            "dp-fed-sparse-bnsl",
            "dp-fed-sparse-bnsl-transcript",
        ),
        "noise-before-clipping": ("covariance",),
        "missing-share": ("secure-covariance", "secure-kendall"),
    }
)


def _readonly(a: Any) -> np.ndarray:
    a = readonly_copy(a)
    if a.ndim != 1:
        raise ValueError(f"scores must be 1-dimensional; got shape {a.shape}")
    return a


@dataclass(frozen=True, eq=False)
class GameResult:
    """Scores of one distinguishing game, one per trial and world (higher means "world 1").

    Attributes
    ----------
    mechanism : str
        The game's name (a key of :data:`~dpbnsl.audits.games.GAMES`).
    scores0, scores1 : read-only arrays of shape (trials,)
        The test statistic of each run on world 0 (dataset D) and world 1 (its neighbour D′).
    claimed_epsilon, delta : float
        The package's accounted ε of the audited release at ``delta``. An empirical lower bound
        above ``claimed_epsilon`` refutes the claim.
    broken : str or None
        The negative-control variant that was run (a key of :data:`BROKEN`), or None.
    details : mapping
        Calibration and construction: noise multiplier, sensitivity, the neighbouring rows, what
        the score is, and game-specific quantities (read-only).
    """

    mechanism: str
    scores0: np.ndarray
    scores1: np.ndarray
    claimed_epsilon: float
    delta: float
    broken: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scores0", _readonly(self.scores0))
        object.__setattr__(self, "scores1", _readonly(self.scores1))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def trials(self) -> tuple[int, int]:
        """Runs per world, (n₀, n₁)."""
        return self.scores0.size, self.scores1.size


def base_rows(n: int, d: int, scale: float) -> np.ndarray:
    """n − 1 fixed, non-degenerate rows with entries in [−scale, scale] (shared by D and D′)."""
    i, a = np.arange(1, n)[:, None], np.arange(1, d + 1)[None, :]
    return scale * np.cos(0.7 * i * a + a)


def check_broken(broken: str | None, game: str) -> str | None:
    """None, or a broken variant that applies to ``game`` (``ValueError`` listing the allowed)."""
    if broken is None:
        return None
    allowed = [name for name, games in BROKEN.items() if game in games]
    if not isinstance(broken, str) or broken not in allowed:
        known = "" if broken in BROKEN else f" (known variants: {', '.join(map(repr, BROKEN))})"
        raise ValueError(
            f"`broken` must be None or one of {', '.join(map(repr, allowed))} for "
            f"the {game!r} game; got {broken!r}{known}"
        )
    return broken


#: Trials per world at most: the games hold a few float64 arrays of this length (~0.3 GB at
#: 10^7), and whole-protocol games take hours there.
MAX_TRIALS = 10**7
#: The fewest runs per world an audit takes (fewer bound nothing; see :mod:`dpbnsl.audits.power`).
MIN_TRIALS = 100
#: The games' names, in the order of :data:`dpbnsl.audits.games.GAMES` (a light table for the
#: command line; a test checks that the two agree).
GAME_NAMES = (
    "gaussian-step",
    "selection",
    "covariance",
    "smoothness",
    "dp-pgcd",
    "dp-pgcd-transcript",
    "dp-pgcd-worst",
    "dp-fed-sparse-bnsl",
    "dp-fed-sparse-bnsl-transcript",
    "dp-fed-sparse-bnsl-worst",
    "secure-covariance",
    "sparse-vector",
    "priv-pc-examine",
    "secure-kendall",
)


def check_target(epsilon: float, delta: float) -> tuple[float, float]:
    """The (ε, δ) target of a game: ε in [1e-6, 100], δ in (0, 1)."""
    e = check_epsilon(epsilon)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return e, d


def check_trials(trials: int) -> int:
    return check_int(trials, "trials", low=1, high=MAX_TRIALS)
