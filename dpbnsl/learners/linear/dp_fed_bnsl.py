"""DP-Fed-BNSL (the baseline of Fassy El Fehri et al.): Fed-BNSL run on privately released covariances.

Each participant clips its rows to ‖x_i‖₂ ≤ R, releases ``S̃_k = X_kᵀX_k/n_k + E`` once (E symmetric,
i.i.d. N(0, σ_k²) on and above the diagonal), optionally projects S̃_k onto the PSD cone, and then
takes part in Fed-BNSL with S̃_k in place of S_k. Everything after the release is post-processing,
so the privacy cost does not depend on the number of rounds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from ..._validation import as_generator, as_participants, check_choice
from ...accounting import (
    summarize_privacy,
)
from ...blas import one_blas_thread
from ...federation import Transcript, run_rounds
from ...federation.protocol import run_protocol
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...mechanisms.covariance import covariance_sensitivity, release_covariance
from ..admm import ConsensusServer, PenaltySchedule
from ..covariance_plan import ACCOUNTANT, CovariancePlan, plan
from ..result import LearnResult
from .hosted_fed_bnsl import CovarianceParticipant, DPFedBNSLParticipant, FedBNSLServer, make_server

__all__ = [
    "dp_fed_bnsl",
    "covariance_sensitivity",
    "release_covariance",
    "fit_covariances",
    "plan",
    "CovariancePlan",
]


@one_blas_thread
def dp_fed_bnsl(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float = 1.0,
    calibration: Literal["tight", "classic", "zcdp"] = "tight",
    psd: bool | float = True,
    centre: Literal["declared", "private"] = "declared",
    centre_share: float = 0.1,
    rng: np.random.Generator | int | None = None,
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    noise: Literal["skellam", "ddg"] = "skellam",
    modulus_bits: int = 31,
    lambda1: float | Literal["auto"] | None = None,
    rho1: float = 1e-3,
    rho2: float = 1e-3,
    gamma1: float = 1.75,
    gamma2: float = 1.25,
    rho_max: float = 1e16,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    gap_tol: float = 1e-6,
    threshold: float = 0.3,
    neighbouring: str = "replace-one",
) -> LearnResult:
    """Learn one DAG with DP-Fed-BNSL; each participant's dataset is (ε, δ)-DP.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
    epsilon : float in [1e-6, 100] (``inf`` releases without noise), delta : float in (0, 1)
        The per-participant privacy target.
    clip_norm : float > 0, default 1.0
        R: each row is scaled down to ‖x_i‖₂ ≤ R before anything else. **Public**: choose it from
        the data's known scale, never from the participants' data. When more than half of a
        participant's rows are longer, that participant's process warns
        (:class:`DataScaleWarning`, a local message; nothing is released).
    calibration : {"tight", "classic", "zcdp"}, default "tight"
        σ from :func:`~dpbnsl.accounting.calibrate_gaussian`: ``"tight"`` is its analytic
        Gaussian calibration (exact for one Gaussian release; the name every private learner
        uses for its tightest calibration), ``"classic"`` the textbook bound (ε < 1), ``"zcdp"``
        the zCDP conversion; ε is reported by the ledger under ``ACCOUNTANT[calibration]``
        ("pld" for the first two, "zcdp" for the last).
    psd : bool or float >= 0, default True
        Project each S̃_k onto {S ⪰ floor·I} (eigenvalues raised to the floor: 0 for True, the value
        for a float; False: none). Post-processing. With a floor, S̃_k + ρ₂I is invertible.
    centre : {"declared", "private"}, default "declared"
        "declared": the data are declared centred, nothing is subtracted (the raw mean is never
        used; the participant's process warns when a column's mean is more than one standard
        deviation from 0); "private": subtract the mean of the clipped rows released by a Gaussian mechanism
        (sensitivity 2R/n_k) with the share ``centre_share`` of the budget (in 1/z²), then clip.
    rng : None, int or numpy Generator, default None
        The source of the privacy noise; participant k draws from stream k of ``rng.spawn(P)``.
        None (the default) draws fresh entropy from the operating system. **A fixed seed voids
        the guarantee** against anyone who knows it (they regenerate the noise and subtract it):
        give one only for experiments on simulated data.
    neighbouring : {"replace-one"}, default "replace-one"
        The neighbouring relation of the guarantee (the only one the sensitivity is derived for).
    aggregation : {"local", "secure"}, default "local"
        The trust model. "local": each participant's release is DP on its own (against everyone).
        "secure": the participants' integer covariances and noise shares are summed by secure
        aggregation, and the server reads one jointly noised covariance (about √P less noise),
        under the trust assumptions of
        :func:`~dpbnsl.learners.linear.dp_fed_bnsl_secure.dp_fed_bnsl_secure`, which runs it
        (with declared centring, and the server's NOTEARS fit of the release).
    dropouts, noise, modulus_bits
        With ``aggregation="secure"``: the declared number t of participants that may drop out or
        collude, the shared noise ("skellam" or "ddg") and the modular range (refused otherwise
        unless at their defaults).
    lambda1 : float, "auto" or None, default None
        The ℓ1 penalty: None is 0.01 (local) or "auto", the release's noise-aware penalty (secure).
    rho1, rho2, gamma1, gamma2, rho_max, max_rounds, h_tol, gap_tol, threshold
        As in :func:`~dpbnsl.learners.linear.fed_bnsl.fed_bnsl` (run with ``normalize="local"``).

    Returns
    -------
    LearnResult
        ``transcript``: the Fed-BNSL messages on the S̃_k; ``ledger``: a tuple of P
        :class:`~dpbnsl.accounting.PrivacyLedger` , all equal, since every
        participant spends the same multiplier; ``privacy``: the
        :class:`~dpbnsl.accounting.PrivacySummary` (the guaranteed (ε, δ) and what was public);
        ``info``: ``"epsilon"`` (every ledger's ε(δ) under
        ``info["accountant"]``, ≤ ``epsilon``), ``"sigma"`` and ``"sensitivity"`` per
        participant, ``"noise_multiplier"`` σ/Δ, ``"covariances"`` (the released S̃_k).

    Raises
    ------
    ValueError
        Bad ε, δ, R, calibration (``"classic"`` needs ε < 1), or, with ``psd=False``, a released
        S̃_k with an eigenvalue ≤ −rho2 (then S̃_k + ρ₂I is not positive definite).

    Privacy
    -------
    Neighbours: replace-one within one participant's dataset (n_k fixed). Clipping is row-wise and
    "declared" centring uses no data, so neighbouring clipped datasets differ in one row, x vs x'
    with ‖x‖, ‖x'‖ ≤ R, and ΔS = (xxᵀ − x'x'ᵀ)/n_k. Expanding the trace,
    ‖xxᵀ − x'x'ᵀ‖²_F = ‖x‖⁴ + ‖x'‖⁴ − 2(xᵀx')² ≤ 2R⁴, so ‖ΔS‖_F ≤ √2·R²/n_k (tighter than the
    triangle-inequality bound (‖x‖² + ‖x'‖²)/n_k ≤ 2R²/n_k). The released vector
    u = (S_ij)_{i≤j} omits the strictly lower entries, each a non-negative term of ‖ΔS‖²_F, so
    ‖Δu‖₂ ≤ ‖ΔS‖_F ≤ Δ_k = √2·R²/n_k, attained by x = R e_a, x' = R e_b (a ≠ b). The release
    u + N(0, σ_k² I) with σ_k = z·Δ_k is ρ = 1/(2z²)-zCDP and (ε, δ)-DP for z from the calibration
    (Fassy El Fehri et al., the DP-Fed-BNSL baseline: S̃_k = clip(X_k)ᵀclip(X_k)/n_k + E, E = Eᵀ).
    Private centring adds
    one Gaussian release of the clipped mean (Δ = 2R/n_k); the two compose exactly into one
    Gaussian of multiplier z. Records of different participants lie in disjoint datasets, so each
    record's guarantee is its own participant's ledger. PSD projection, the ADMM rounds, W and
    thresholding are post-processing: the cost is the same for any ``max_rounds``.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 4000, participants=2, rng=0)
    >>> r = dp_fed_bnsl(data.participants, epsilon=1.0, delta=1e-5, clip_norm=10.0,
    ...                 max_rounds=50)   # rng=None: fresh noise
    >>> r.method, r.privacy.epsilon <= 1.0, r.privacy.accountant, len(r.ledger)
    ('dp-fed-bnsl', True, 'pld', 2)
    """
    check_choice(aggregation, "aggregation", ("local", "secure"))
    if aggregation == "secure":
        return _secure(participants, locals())
    from ..covariance_release import refuse_secure_only

    refuse_secure_only(dropouts=dropouts, noise=noise, modulus_bits=modulus_bits)
    if lambda1 is None:
        lambda1 = 0.01
    arrays, columns = as_participants(participants, min_rows=1)
    P, d = len(arrays), arrays[0].shape[1]
    settings: dict[str, Any] = dict(
        epsilon=epsilon,
        delta=delta,
        clip_norm=clip_norm,
        calibration=calibration,
        psd=psd,
        centre=centre,
        centre_share=centre_share,
        lambda1=lambda1,
        rho1=rho1,
        rho2=rho2,
        gamma1=gamma1,
        gamma2=gamma2,
        rho_max=rho_max,
        max_rounds=max_rounds,
        h_tol=h_tol,
        gap_tol=gap_tol,
        threshold=threshold,
        neighbouring=neighbouring,
    )
    pl = plan(**settings)
    e, dl, R, floor, share, params = pl.epsilon, pl.delta, pl.clip_norm, pl.psd, pl.share, dict(pl.hyper)
    z_cov, z_mean = pl.z_cov, pl.z_mean

    start = time.perf_counter()
    clients = [
        DPFedBNSLParticipant(
            X, settings=settings, participant=k, rng=g, budget=(e, dl), columns=columns, plan=pl
        )
        for k, (X, g) in enumerate(zip(arrays, as_generator(rng).spawn(P)))
    ]
    server = FedBNSLServer(settings=params, n_participants=P)
    transcript = run_protocol(server, clients)["rounds"]
    assert server.core is not None  # round 0 always runs (max_rounds >= 1)
    ledgers = tuple(c.ledger for c in clients)
    released = [cast(CovarianceParticipant, c.core).S for c in clients]
    repaired = [k for k, c in enumerate(clients) if c.repaired]
    W = threshold_to_dag(threshold_weights(server.core.W, threshold=params["threshold"]))
    # ε is computed from what the ledgers hold (identical for every participant: composed once)
    accountants = (ACCOUNTANT[calibration],) + tuple(
        a for a in ("rdp", "zcdp") if a != ACCOUNTANT[calibration]
    )
    public = dict(
        d=d,
        n_k=tuple(X.shape[0] for X in arrays),
        clip_norm=R,
        centre=centre,
        releases="one covariance" + (" and one mean" if z_mean is not None else ""),
    )
    privacy = summarize_privacy(
        ledgers,
        delta=dl,
        target_epsilon=e,
        neighbouring=pl.neighbouring,
        calibration=calibration,
        accountants=accountants,
        public=public,
    )
    spent = privacy.bounds[ACCOUNTANT[calibration]]
    if spent > e:  # pragma: no cover - the calibration above guarantees it; never report silently
        raise RuntimeError(f"the releases spent ε = {spent!r} > target {e!r}")
    sens = tuple(covariance_sensitivity(X.shape[0], clip_norm=R) for X in arrays)
    params.update(
        epsilon=e,
        delta=dl,
        clip_norm=R,
        calibration=calibration,
        psd=floor,
        centre=centre,
        centre_share=share,
        normalize="local",
        neighbouring=pl.neighbouring,
    )
    info = {
        "epsilon": {ACCOUNTANT[calibration]: spent},
        "accountant": ACCOUNTANT[calibration],
        "delta": dl,
        "repaired": tuple(repaired),
        "noise_multiplier": z_cov,
        "sigma": tuple(z_cov * s for s in sens),
        "sensitivity": sens,
        "mean_multiplier": z_mean,
        "covariances": tuple(released),
        "seconds": time.perf_counter() - start,
        "n_samples": tuple(X.shape[0] for X in arrays),
    }
    return LearnResult(
        "dp-fed-bnsl",
        W,
        server.core.W,
        pd.DataFrame(server.core.rows),
        columns,
        transcript,
        ledgers,
        params,
        info,
        privacy,
    )


#: the settings of the local release that the secure protocol does not have, at their defaults
_LOCAL_ONLY = dict(
    calibration="tight",
    psd=True,
    centre="declared",
    centre_share=0.1,
    rho1=1e-3,
    rho2=1e-3,
    gamma1=1.75,
    gamma2=1.25,
    gap_tol=1e-6,
    neighbouring="replace-one",
)


def _secure(participants: Any, given: dict[str, Any]) -> LearnResult:
    """``dp_fed_bnsl(aggregation="secure")``: refuse settings of the local protocol the secure one
    does not have, then run :func:`dp_fed_bnsl_secure`."""
    from .dp_fed_bnsl_secure import dp_fed_bnsl_secure

    changed = sorted(k for k, v in _LOCAL_ONLY.items() if given[k] != v)
    if changed:
        raise ValueError(
            f'aggregation="secure" releases one covariance of declared-centred data and fits it by '
            f"NOTEARS on the server; it does not take {changed}"
        )
    return dp_fed_bnsl_secure(
        participants,
        epsilon=given["epsilon"],
        delta=given["delta"],
        clip_norm=given["clip_norm"],
        noise=given["noise"],
        dropouts=given["dropouts"],
        modulus_bits=given["modulus_bits"],
        rng=given["rng"],
        lambda1="auto" if given["lambda1"] is None else given["lambda1"],
        threshold=given["threshold"],
        max_rounds=given["max_rounds"],
        h_tol=given["h_tol"],
        rho_max=given["rho_max"],
    )


def fit_covariances(
    released: Sequence[np.ndarray], hyper: dict
) -> tuple[np.ndarray, ConsensusServer, Transcript]:
    """Fed-BNSL's protocol on released (public) covariances S̃_k, with the validated
    hyperparameters ``hyper`` (those of :func:`plan`). Post-processing only: no data is touched.
    Returns (thresholded DAG weights, server, transcript)."""
    P, d = len(released), released[0].shape[0]
    schedule = PenaltySchedule(
        hyper["rho1"], hyper["rho2"], hyper["gamma1"], hyper["gamma2"], hyper["rho_max"]
    )
    server = make_server(
        P, d, schedule, lambda1=hyper["lambda1"], h_tol=hyper["h_tol"], gap_tol=hyper["gap_tol"]
    )
    _, transcript = run_rounds(
        [CovarianceParticipant(S, schedule) for S in released], server, rounds=hyper["max_rounds"]
    )
    W = threshold_to_dag(threshold_weights(server.W, threshold=hyper["threshold"]))
    return W, server, transcript
