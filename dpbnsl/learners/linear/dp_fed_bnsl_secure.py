"""The in-process driver of the joint covariance release under secure aggregation
(:mod:`.secure_covariance`), and DP-Fed-BNSL on it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..._validation import as_participants
from ...blas import one_blas_thread
from ..covariance_release import run_secure_release
from ..result import LearnResult
from .secure_covariance import notears_fit, secure_settings

__all__ = ["dp_fed_bnsl_secure"]


@one_blas_thread
def dp_fed_bnsl_secure(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    noise: str = "skellam",
    dropouts: int = 0,
    modulus_bits: int = 31,
    rng: np.random.Generator | int | None = None,
    lambda1: float | str = "auto",
    threshold: float = 0.3,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
) -> LearnResult:
    """Learn one DAG from one jointly noised covariance released under secure aggregation.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        Declared centred (nothing is subtracted).
    epsilon : float in [1e-6, 100], delta : float in (0, 1)
        The guarantee of every record of every participant, against the server and any
        ``dropouts`` participants colluding with it.
    clip_norm : float > 0
        R, a **public** bound on each row's norm in the data's units (rows are clipped to it).
    noise : {"skellam", "ddg"}, default "skellam"
        The integer noise the participants share: Skellam (exact sum, Agarwal et al. 2021) or
        the distributed discrete Gaussian (Kairouz et al. 2021).
    dropouts : int in [0, P − 1], default 0
        t: participants that may drop out or collude with the server. Each share is sized so that
        P − t honest shares carry the whole noise (the released noise is P/(P − t) times the
        needed variance when everyone contributes).
    modulus_bits : int in [8, 53], default 31
        The secure sum's modular range 2^bits. 31 is the widest Flower's SecAgg+ carries (its
        quantised values are 32-bit integers); wider moduli run in process only.
    rng : None, int or numpy Generator
        The source of the noise and of the randomised rounding; participant k draws from stream k
        of ``rng.spawn(P)``. None: fresh entropy. **A fixed seed voids the guarantee.**
    lambda1 : float or "auto", default "auto"
        The server's ℓ1 penalty; "auto" follows the release's public noise level
        (:func:`~dpbnsl.learners.linear.secure_covariance.noise_aware_lambda`).
    threshold, max_rounds, h_tol, rho_max
        The server's fit (:func:`~dpbnsl.learners.linear.secure_covariance.fit_release`).

    Returns
    -------
    LearnResult
        ``method`` "dp-fed-bnsl" with ``params["aggregation"] = "secure"``; ``transcript``: the
        setup exchange and the secure round (masked shares, then the sum: all the server reads);
        ``ledger``: one per participant; ``info["release"]``: the
        :class:`~dpbnsl.learners.linear.secure_covariance.Release` (free for any other fit),
        ``info["plan"]``: the :class:`~dpbnsl.accounting.distributed.DistributedPlan`.

    Privacy
    -------
    Replace-one within one participant's dataset. Participant k's integer statistic is the upper
    triangle of Σ_i q_i q_iᵀ with ‖q_i‖₂² ≤ B, whose replace-one sensitivities are Δ₂ = √2·B and
    Δ₁ = (d + 1)·B (:func:`~dpbnsl.mechanisms.distributed.integer_gram_sensitivity`; the rounding
    of the other rows is independent of the replaced one, and Rényi divergence is jointly
    quasi-convex, so the bound holds for the randomised rounding). The sum carries the noise of at
    least P − t honest shares: Skellam of variance μ (ε(α) of Agarwal et al. Thm 3.5) or the sum of
    P − t discrete Gaussians (Kairouz et al. Thm 1). Trust: the server and up to t participants
    are honest-but-curious, secure aggregation reveals nothing but the sum, and at least P − t
    honest shares are in it. The modular reduction, the decoding and the fit are post-processing.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 2000, participants=4, rng=0)
    >>> r = dp_fed_bnsl_secure(data.participants, epsilon=1.0, delta=1e-5, clip_norm=10.0)
    >>> r.params["aggregation"], r.privacy.epsilon <= 1.0, len(r.ledger)
    ('secure', True, 4)
    """
    arrays, columns = as_participants(participants, min_rows=1)
    settings: dict[str, Any] = dict(
        epsilon=epsilon,
        delta=delta,
        clip_norm=clip_norm,
        participants=len(arrays),
        n_total=sum(X.shape[0] for X in arrays),
        noise=noise,
        dropouts=dropouts,
        modulus_bits=modulus_bits,
        lambda1=lambda1,
        threshold=threshold,
        max_rounds=max_rounds,
        h_tol=h_tol,
        rho_max=rho_max,
    )
    params = secure_settings(**settings)
    run = run_secure_release(arrays, columns, settings, rng=rng, fit=notears_fit(params))
    W, W_raw, history = run.result
    plan, release, privacy = run.plan, run.release, run.privacy
    spent = privacy.bounds["rdp"]
    out_params = dict(params, aggregation="secure", neighbouring="replace-one")
    info = {
        "epsilon": {"rdp": spent},
        "accountant": "rdp",
        "delta": params["delta"],
        "plan": plan,
        "release": release,
        "noise_sd": release.noise_sd,
        "lambda1": history.attrs.get("lambda1"),
        "seconds": run.seconds,
        "n_samples": tuple(X.shape[0] for X in arrays),
    }
    return LearnResult(
        "dp-fed-bnsl",
        W,
        W_raw,
        pd.DataFrame(history),
        columns,
        run.transcript,
        run.ledgers,
        out_params,
        info,
        privacy,
    )
