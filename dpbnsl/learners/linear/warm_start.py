"""Covariance warm start for DP-Fed-Sparse-BNSL: a share of each participant's budget buys one
private covariance release; Fed-BNSL on the released covariances gives a public starting graph W₀,
from which the DP-PGCD rounds start (every B_k and the server's W).

Why it helps at small d. A covariance release is averaged over all P participants by the server,
and its noise per entry does not depend on how many edges there are to find; DP-PGCD's selections
are made by each participant alone, on scores measured against a Gumbel scale that grows with the
noise multiplier. At d = 20 (10 × 1000 rows) the release finds most edges and DP-PGCD, starting
from them, removes the false ones; from d ≈ 50 the d(d + 1)/2 noisy entries drown the edges and a
cold start is better (``docs/results/clipping_study.md``). Privacy: the release is the Gaussian
mechanism of :func:`~dpbnsl.learners.linear.dp_fed_bnsl.release_covariance` (sensitivity √2·R²/n_k for
rows clipped to ‖x‖₂ ≤ R); W₀ and everything computed from it is post-processing.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...federation import Transcript
from ..admm import check_hyperparameters
from .dp_fed_bnsl import dp_fed_bnsl, fit_covariances, release_covariance

if TYPE_CHECKING:
    from ...accounting.ledger import PrivacyLedger

__all__ = [
    "covariance_warm_start",
    "fed_bnsl_hyper",
    "default_warm_share",
    "warm_start_applies",
    "WARM_START_MAX_D",
]

#: ``warm_start="auto"`` warm-starts when d is at most this: on the tuning seeds of the clipping
#: study the warm start was better at d = 20, level at d = 30 and worse at d = 50 (ε = 5).
WARM_START_MAX_D = 30
#: Label of the release in the participants' ledgers.
LABEL = "warm-start/covariance"


def default_warm_share(epsilon: float) -> float:
    """The warm start's default fraction of the budget left after the private pre-processing:
    0.8 below ε = 2 (DP-PGCD can then afford only a few informative selections, so the release
    should find the edges), 0.5 from ε = 2 (enough is left for DP-PGCD to prune the release's
    false edges). From the tuning seeds of the clipping study (d = 20: at ε = 1, 0.8 found 66 %
    of the edges and 0.5 found 55 %; at ε = 5, 0.5 gave SHD 4.2 and 0.7 gave 6.8)."""
    return 0.8 if epsilon < 2.0 else 0.5


def warm_start_applies(mode: str, d: int, *, secure: bool = False) -> bool:
    """Whether ``warm_start=mode`` warm-starts a d-variable problem. ``"auto"`` stops at
    :data:`WARM_START_MAX_D` for the local release, whose average over P participants carries
    √P times the noise of one release of the pooled rows; the joint release under secure
    aggregation (``secure``) does not, so "auto" warm-starts at every d there (a choice made on
    that argument, not tuned on data)."""
    return mode == "covariance" or (mode == "auto" and (secure or d <= WARM_START_MAX_D))


def fed_bnsl_hyper() -> dict:
    """DP-Fed-BNSL's protocol defaults (the server that turns released covariances into W₀)."""
    sig = inspect.signature(dp_fed_bnsl).parameters
    names = (
        "lambda1",
        "rho1",
        "rho2",
        "gamma1",
        "gamma2",
        "rho_max",
        "max_rounds",
        "h_tol",
        "gap_tol",
        "threshold",
    )
    defaults = {k: sig[k].default for k in names}
    if defaults["lambda1"] is None:  # None: the local release's 0.01
        defaults["lambda1"] = 0.01
    return check_hyperparameters(**defaults)


def covariance_warm_start(
    arrays: Sequence[np.ndarray],
    *,
    clip_norm: float,
    multiplier: float,
    rngs: Sequence[np.random.Generator],
    ledgers: Sequence[PrivacyLedger],
) -> tuple[np.ndarray, Transcript]:
    """Each participant releases its covariance once (rows clipped to ‖x‖₂ ≤ ``clip_norm``,
    Gaussian noise of ``multiplier`` × the sensitivity, recorded in its ledger); Fed-BNSL with
    DP-Fed-BNSL's defaults fits the released matrices. Returns W₀ (thresholded, acyclic) and the
    warm start's transcript."""
    released = []
    for X, g, ledger in zip(arrays, rngs, ledgers):
        S, release = release_covariance(X, clip_norm=clip_norm, multiplier=multiplier, psd_floor=0.0, rng=g)
        ledger.record(LABEL, release.event)
        released.append(S)
    W0, _, transcript = fit_covariances(released, fed_bnsl_hyper())
    return W0, transcript
