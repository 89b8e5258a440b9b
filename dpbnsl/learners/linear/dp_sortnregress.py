"""SortnRegress and R²-SortnRegress on one differentially private covariance (post-processing).

The participants release their covariance once, as DP-Fed-BNSL and PC on a private covariance do:
each its own Gaussian release (local DP) or one jointly noised integer release under secure
aggregation (:mod:`dpbnsl.learners.covariance_release`). The server repairs the release to a
positive definite matrix (eigenvalues raised to the noise's spectral edge 2·s·√d, s the public
noise sd per entry), optionally rescales it to a correlation (``standardise=True``: a
standardisation paid for by the release itself, nothing looked up on the raw data), and runs
:func:`~dpbnsl.learners.linear.sortnregress.sortnregress_from_covariance`. The whole run spends
the release's (ε, δ) and nothing more.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ..._validation import as_participants, check_bool, check_choice, check_real
from ...blas import one_blas_thread
from ..covariance_release import AGGREGATIONS
from ..covariance_repair import noise_floor, repair_covariance
from ..release_fit import release_and_fit
from ..result import LearnResult
from .sortnregress import CRITERIA, sortnregress_from_covariance

__all__ = ["dp_sortnregress", "fit_released_covariance"]

_METHOD = {"var": "dp-sortnregress", "r2": "dp-r2-sortnregress"}


def fit_released_covariance(
    S: np.ndarray, n: int, noise_sd: float, *, criterion: str, standardise: bool, threshold: float
) -> tuple[np.ndarray, np.ndarray, Any, dict[str, Any]]:
    """SortnRegress on a released covariance (module docstring): (W, W_raw, history, info)."""
    scale = float(np.max(np.abs(S))) or 1.0
    floor = max(noise_floor(noise_sd, S.shape[0]), 1e-9 * scale)
    S, repaired = repair_covariance(S, floor=floor)
    if standardise:
        s = np.sqrt(np.diag(S))
        S = S / np.outer(s, s)
        np.fill_diagonal(S, 1.0)  # exactly: the variance sort then keeps the index order
    W_raw, order, regressions = sortnregress_from_covariance(S, n, criterion=criterion)
    W = np.where(np.abs(W_raw) > threshold, W_raw, 0.0)
    return (
        W,
        W_raw,
        pd.DataFrame(),
        dict(order=order, regressions=regressions, repaired=repaired, floor=floor),
    )


@one_blas_thread
def dp_sortnregress(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    criterion: str = "var",
    standardise: bool = False,
    threshold: float = 0.0,
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    noise: str = "skellam",
    modulus_bits: int = 31,
    calibration: Literal["tight", "classic", "zcdp"] = "tight",
    rng: np.random.Generator | int | None = None,
) -> LearnResult:
    """SortnRegress (``criterion="var"``) or R²-SortnRegress (``"r2"``) on one private covariance
    of the participants' pooled rows (module docstring).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        Declared centred (nothing is subtracted).
    epsilon : float in [1e-6, 100], delta : float in (0, 1)
        Every record's guarantee (replace-one within a participant's dataset).
    clip_norm : float > 0
        R, a **public** bound on each row's norm (rows are clipped to it).
    criterion : {"var", "r2"}, default "var"
    standardise : bool, default False
        Fit the correlation matrix of the release (post-processing) instead of the covariance.
        Every variance is then 1, so ``criterion="var"`` sorts in index order (uninformative, the
        point of standardising against SortnRegress); ``"r2"`` is unchanged by it.
    threshold : float >= 0, default 0
        Weights with ``|w| <= threshold`` are removed after the BIC selection.
    aggregation, dropouts, noise, modulus_bits, calibration
        As for :func:`~dpbnsl.learners.constraint.dp_cov_pc.dp_cov_pc`.
    rng : None, int or numpy Generator
        The noise source. **A fixed seed voids the guarantee.**

    Returns
    -------
    LearnResult
        ``method`` "dp-sortnregress" or "dp-r2-sortnregress"; ``ledger`` one per participant;
        ``info``: ``noise_sd``, ``order``, ``regressions`` (one row per regression), ``repaired``,
        ``floor``.

    Privacy
    -------
    One covariance release per run (local: the Gaussian mechanism on XᵀX/n_k of rows clipped to R,
    ℓ2 sensitivity √2·R²/n_k per participant; secure: the distributed integer mechanism). The
    repair, the standardisation, the sort and the regressions use the release and public numbers
    only (post-processing).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(6, 4000, participants=4, rng=0)
    >>> r = dp_sortnregress(data.participants, epsilon=2.0, delta=1e-5, clip_norm=10.0)
    >>> r.method, r.privacy.epsilon <= 2.0, r.is_dag
    ('dp-sortnregress', True, True)
    """
    check_choice(aggregation, "aggregation", AGGREGATIONS)
    criterion = check_choice(criterion, "criterion", CRITERIA)
    standardise = check_bool(standardise, "standardise")
    threshold = check_real(threshold, "threshold", low=0.0)
    arrays, columns = as_participants(participants, min_rows=1)
    n_k = tuple(X.shape[0] for X in arrays)
    if sum(n_k) < 2:
        raise ValueError(f"`participants` hold {sum(n_k)} row(s) in all; the regressions need at least 2")
    options: dict[str, Any] = dict(criterion=criterion, standardise=standardise, threshold=threshold)
    fitted: dict[str, Any] = {}

    def fit(S: np.ndarray, n: int, noise_sd: float) -> LearnResult:
        W, W_raw, history, info = fit_released_covariance(S, n, noise_sd, **options)
        fitted.update(info)
        return LearnResult(_METHOD[criterion], W, W_raw, history, columns)

    run = release_and_fit(
        arrays,
        columns,
        fit,
        epsilon=epsilon,
        delta=delta,
        clip_norm=clip_norm,
        aggregation=aggregation,
        dropouts=dropouts,
        noise=noise,
        modulus_bits=modulus_bits,
        calibration=calibration,
        rng=rng,
    )
    return run.result(_METHOD[criterion], columns, options, fitted, n_k)
