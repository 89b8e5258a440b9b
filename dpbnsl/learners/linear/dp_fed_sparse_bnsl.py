"""DP-Fed-Sparse-BNSL (Fassy El Fehri et al.): Fed-Sparse-BNSL with DP-PGCD local steps, for (ε, δ).

One budget per participant covers everything that touches its data: optional private centring,
optional private smoothness constants (Theorem D.1), and the T·K DP-PGCD iterations. Pre-processing
releases take fixed shares of the zCDP budget ρ*; DP-PGCD's noise multiplier is then calibrated
(``"tight"`` RDP search or the paper's ``"paper"`` Theorem 5.1) with those releases as prior spend.
All calibration happens before any data is touched, so a budget that cannot cover the request is
refused up front. The messages, W, β and α are post-processing.
"""

from __future__ import annotations

import time
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from ..._validation import (
    ArrayLike,
    as_generator,
    as_participants,
)
from ...accounting import (
    PrivacyLedger,
    summarize_privacy,
)
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..result import LearnResult
from .hosted_sparse import DPFedSparseParticipant, SparseServer
from .sparse_plan import MAX_STEPS, MIN_STEPS, SNR_KAPPA, SparsePlan, default_schedule, plan

__all__ = [
    "dp_fed_sparse_bnsl",
    "plan",
    "SparsePlan",
    "default_schedule",
    "SNR_KAPPA",
    "MIN_STEPS",
    "MAX_STEPS",
]


@one_blas_thread
def dp_fed_sparse_bnsl(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    rounds: int | None = None,
    local_iters: int | None = None,
    clip: float = 1.0,
    clip_scheme: Literal["relative", "parents", "coordinates"] = "relative",
    calibration: Literal["tight", "paper"] = "tight",
    smoothness: str | ArrayLike = "private",
    feature_bound: float | ArrayLike | None = None,
    centre: Literal["declared", "private"] = "declared",
    shares: tuple[float, float] = (0.1, 0.1),
    warm_start: Literal["auto", "covariance", "none"] = "auto",
    warm_share: float | None = None,
    warm_clip_norm: float = 1.0,
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    lambda1: float = 0.1,
    rho1: float = 1.0,
    rho2: float = 1.0,
    threshold: float = 0.3,
    server_solver: Literal["lbfgs", "gradient"] = "lbfgs",
    eta: float = 1e-2,
    server_steps: int = 10,
    rng: np.random.Generator | int | None = None,
    neighbouring: str = "replace-one",
) -> LearnResult:
    """Learn one DAG with DP-Fed-Sparse-BNSL; each participant's data is (ε, δ)-DP.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
    epsilon, delta : float
        The per-participant privacy target: ε in [1e-6, 100], δ in (0, 1). ``epsilon=inf``
        runs the same pipeline (clipping, warm start, schedule) with every noise multiplier 0:
        a reference for what clipping alone costs, stated as no privacy guarantee (as in
        :func:`~dpbnsl.learners.dp_fed_bnsl`; ``fed_sparse_bnsl`` is the non-private twin).
    rounds, local_iters : int, optional
        T ADMM rounds and K DP-PGCD iterations per round. Unset, they are chosen from public
        quantities only (d, the smallest n_k, ε, δ) by :func:`default_schedule`.
    clip : float, default 1.0
        Global clip bound; per-sample gradient coordinates x_ia·r_ib are clipped at C_a = c√M_a
        (see ``clip_scheme``). With the default ``"relative"`` scheme c = ``clip``: a per-sample
        gradient is clipped beyond ``clip`` times its parent's scale, whatever d and the data's
        units. **Public**: choose it without looking at the participants' data (the default
        comes from a study on simulated data, ``docs/results/clipping_study.md``).
    clip_scheme : {"relative", "parents", "coordinates"}, default "relative"
        c = C (``"relative"``), c = C/√(Σ_a M_a) (``"parents"``, the normalisation under which the
        DP-Fed-Sparse-BNSL paper's published C values work as the paper describes) or
        c = C/√((d−1)Σ_a M_a) (``"coordinates"``, DP-CD's normalisation over all coordinates,
        this package's earlier default; it starves the learner as d grows).
    calibration : {"tight", "paper"}, default "tight"
        How DP-PGCD's noise is calibrated (see :func:`dpbnsl.accounting.calibrate_dp_pgcd`).
    smoothness : {"private", "bounds"} or array of shape (d,), default "private"
        Source of m_a: estimated privately from clipped x_ia² (Theorem D.1, needs
        ``feature_bound``), the declared public bounds themselves (``"bounds"``), or constants
        declared public. **An array must be public**: never computed from the participants' data
        (it sets the clip thresholds; use ``"private"`` to estimate it within the budget).
    feature_bound : float or array of shape (d,), optional
        Public bound X_a on x_ia² (needed by ``"private"``/``"bounds"`` and private centring).
        **Public**: from the measurement's known range or a domain expert, never computed from
        the participants' data. When more than half of a participant's rows exceed it in some
        column, that participant's process warns (:class:`DataScaleWarning`, a local message).
    centre : {"declared", "private"}, default "declared"
        ``"declared"``: the data are declared centred (nothing is subtracted; the participant's
        process warns when a column's mean is more than one standard deviation from 0);
        ``"private"``: subtract privately released means (entries clipped to ±√X_a).
    shares : (float, float), default (0.1, 0.1)
        Fractions of the zCDP budget ρ* given to private smoothness and private centring (used
        only when those are private).
    warm_start : {"auto", "covariance", "none"}, default "auto"
        ``"covariance"``: each participant first releases its covariance once (rows clipped to
        ``warm_clip_norm``, Gaussian noise), Fed-BNSL fits the released matrices, and the DP-PGCD
        rounds start from that graph W₀ (every B_k and the server's W) instead of zero;
        ``"auto"`` does so when d ≤ 30 (:data:`~dpbnsl.learners.linear.warm_start.WARM_START_MAX_D`),
        where it helped on simulated data (from d ≈ 50 it hurt); ``"none"``: start from zero.
        See :mod:`dpbnsl.learners.linear.warm_start`.
    warm_share : float in (0, 1), optional
        The warm start's fraction of the budget left after the private pre-processing (ρ*
        minus the ``shares`` in use). Unset: 0.8 below ε = 2, else 0.5
        (:func:`~dpbnsl.learners.linear.warm_start.default_warm_share`).
    warm_clip_norm : float, default 1.0
        **Public** row clipping norm R of the warm start's release. The default 1 scales every
        row of ordinary data onto the unit sphere (the release then describes the rows'
        directions, whatever the units), which worked better than a looser R in the study.
    aggregation : {"local", "secure"}, default "local"
        How the warm start's covariance is released: by each participant with its own Gaussian
        noise (local DP), or once for the pooled rows under secure aggregation (the distributed
        discrete Gaussian of Kairouz et al., calibrated to the warm start's ρ: about √P less
        noise; the server fits the sum with DP-Fed-BNSL's noise-aware NOTEARS fit, see
        :mod:`dpbnsl.learners.linear.secure_covariance`). With "secure", ``warm_start="auto"``
        warm-starts at every d. The DP-PGCD rounds are local DP either way.
    dropouts : int in [0, P − 1], default 0
        With ``aggregation="secure"``: t, the participants that may drop out of the warm start's
        secure sum or collude with the server (each share is sized for P − t honest shares).
    lambda1, rho1, rho2, threshold, server_solver, eta, server_steps
        As in :func:`~dpbnsl.learners.linear.fed_sparse_bnsl.fed_sparse_bnsl`.
    rng : None, int or numpy Generator, default None
        The source of the privacy noise; participants draw from independent streams
        ``rng.spawn(P)``. None (the default) draws fresh entropy from the operating system. **A
        fixed seed voids the guarantee** against anyone who knows it (they can regenerate the
        noise and subtract it): give one only for experiments on simulated data.
    neighbouring : {"replace-one"}, default "replace-one"
        The neighbouring relation of the guarantee (the only one the sensitivities are derived for;
        explicit so that results say what they promise).

    Returns
    -------
    LearnResult
        ``ledger``: one :class:`~dpbnsl.accounting.PrivacyLedger` per participant (a tuple);
        ``privacy``: the :class:`~dpbnsl.accounting.PrivacySummary` (the guaranteed (ε, δ), the
        accountant that certifies it, what was public); ``info["epsilon"]``: ε per accountant
        (``"zcdp"`` is the paper's, ``"rdp"`` the tight one; the largest over participants; each
        is an upper bound on the same spend); ``info["noise"]``: the :class:`NoiseScales`.

    Privacy
    -------
    Replace-one neighbours within one participant's dataset. Warm start: one Gaussian release of
    the clipped covariance's upper triangle (sensitivity √2·R²/n_k, see
    :func:`~dpbnsl.learners.linear.dp_fed_bnsl.dp_fed_bnsl`); W₀ is post-processing. DP-PGCD per
    iteration: an exponential
    mechanism selection (ε₀ = 2/m bounded range) and a Gaussian release of one clipped gradient
    coordinate (multiplier m), Fassy El Fehri et al. eqs. (11)–(13); smoothness: d Gaussian
    releases of sensitivity X_a/n_k (Theorem D.1); centring: one Gaussian release of sensitivity
    2‖√X‖₂/n_k. Composition: Theorem 5.1 (``"paper"``) or RDP with the exact bounded-range curve
    and the CKS conversion (``"tight"``). Public, i.e. not derived from the data: n_k, d, ``clip``,
    ``feature_bound``, ``smoothness`` constants, the declared centre, and all hyperparameters.
    The clipping is non-finite-safe (see :func:`~dpbnsl.learners.linear.pgcd.clipped_products`), so the
    sensitivities hold for every finite record, including entries near ±1e308.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(8, 2000, participants=4, rng=0)
    >>> r = dp_fed_sparse_bnsl(data.participants, epsilon=5.0, delta=1e-5, smoothness="bounds",
    ...                        feature_bound=25.0, rounds=5)   # rng=None: fresh noise
    >>> print(r.privacy)
    (ε, δ) = (5, 1e-05)-DP per participant, replace-one; accountant: rdp (tight)
    """
    arrays, columns = as_participants(participants)
    P, d = len(arrays), arrays[0].shape[1]
    if d < 2:
        raise ValueError(f"`participants` must have at least 2 columns; got {d}")
    settings: dict[str, Any] = dict(
        epsilon=epsilon,
        delta=delta,
        rounds=rounds,
        local_iters=local_iters,
        clip=clip,
        clip_scheme=clip_scheme,
        calibration=calibration,
        smoothness=smoothness,
        feature_bound=feature_bound,
        centre=centre,
        shares=shares,
        warm_start=warm_start,
        warm_share=warm_share,
        warm_clip_norm=warm_clip_norm,
        lambda1=lambda1,
        rho1=rho1,
        rho2=rho2,
        threshold=threshold,
        server_solver=server_solver,
        eta=eta,
        server_steps=server_steps,
        neighbouring=neighbouring,
    )
    if aggregation != "local" or dropouts != 0:  # the participants check the declared P
        settings.update(
            aggregation=aggregation,
            dropouts=dropouts,
            participants=P,
            n_total=sum(X.shape[0] for X in arrays),
        )
    pl = plan(d, n_k=tuple(X.shape[0] for X in arrays), **settings)
    e, dl, C, hyper, noise = pl.epsilon, pl.delta, pl.clip, pl.hyper, pl.noise
    public_m, bound, m_centre, m_smooth = pl.smoothness, pl.feature_bound, pl.m_centre, pl.m_smooth
    s_share, c_share = pl.shares

    # --- the hosted protocol, in process: each participant prepares (private centring and
    # smoothness, the warm start's release) on its own stream, then the rounds run ------------
    start = time.perf_counter()
    streams = as_generator(rng).spawn(P)
    clients = [
        DPFedSparseParticipant(
            X, settings=settings, participant=k, rng=g, budget=(e, dl), columns=columns, plan=pl
        )
        for k, (X, g) in enumerate(zip(arrays, streams))
    ]
    server = SparseServer(settings=settings, n_participants=P, private=True, plan=pl)
    transcripts = run_protocol(server, clients)
    transcript, warm_transcript = transcripts["rounds"], transcripts.get("warm")
    ledgers = tuple(cast(PrivacyLedger, c.ledger) for c in clients)
    assert server.core is not None  # round 0 always runs (rounds >= 1)
    W0 = server.W0
    W = threshold_to_dag(threshold_weights(server.core.W, threshold=hyper["threshold"]))
    public = dict(
        d=d,
        n_k=tuple(X.shape[0] for X in arrays),
        clip=C,
        clip_scheme=pl.clip_scheme,
        feature_bound=None if bound is None else _compact(bound),
        smoothness=(
            "declared constants"
            if public_m is not None
            else "declared bounds"
            if smoothness == "bounds"
            else "private estimate"
        ),
        centre=centre,
        releases=("one covariance (warm start) and " if W0 is not None else "")
        + f"{hyper['rounds'] * hyper['local_iters']} DP-PGCD steps",
    )
    if W0 is not None:
        public["warm_clip_norm"] = pl.warm_clip_norm
    if pl.warm_joint is not None:
        public["releases"] = "one jointly noised covariance (warm start, secure aggregation) and " + (
            f"{hyper['rounds'] * hyper['local_iters']} DP-PGCD steps"
        )
        public["trust"] = (
            f"the warm start under secure aggregation: the server reads only the sum; DP against the "
            f"server and up to t = {pl.warm_joint.dropouts} colluding or missing participants, while "
            f"at least {pl.warm_joint.honest} honest shares reach it; the DP-PGCD rounds are local DP"
        )
    privacy = summarize_privacy(
        ledgers,
        delta=dl,
        target_epsilon=e,
        neighbouring=pl.neighbouring,
        calibration=calibration,
        accountants=("rdp", "zcdp"),
        public=public,
    )
    if privacy.epsilon > e:  # pragma: no cover - the calibration guarantees it; never silently
        raise RuntimeError(f"the releases spent ε = {privacy.epsilon!r} > target {e!r}")
    spent = {acc: privacy.bounds[acc] for acc in ("zcdp", "rdp")}
    params = dict(
        hyper,
        epsilon=e,
        delta=dl,
        clip=C,
        clip_scheme=pl.clip_scheme,
        calibration=calibration,
        smoothness=smoothness if public_m is None else "public constants",
        centre=centre,
        shares=(s_share, c_share),
        neighbouring=pl.neighbouring,
        warm_start=warm_start,
        warm_share=pl.warm_share,
        warm_clip_norm=pl.warm_clip_norm,
        aggregation=pl.aggregation,
        dropouts=dropouts,
    )
    warm = (
        None
        if W0 is None
        else {
            "W0": W0,
            "edges": int(np.count_nonzero(W0)),
            "share": pl.warm_share,
            "multiplier": pl.m_warm,
            "clip_norm": pl.warm_clip_norm,
            "transcript": warm_transcript,
            "aggregation": pl.aggregation,
            "plan": pl.warm_joint,
            "release": server.release,
        }
    )
    return LearnResult(
        "dp-fed-sparse-bnsl",
        W,
        server.core.W,
        pd.DataFrame(server.core.rows),
        columns,
        transcript,
        ledgers,
        params,
        {
            "epsilon": spent,
            "noise": noise,
            "smoothness_multiplier": m_smooth,
            "centring_multiplier": m_centre,
            "warm_start": warm,
            "seconds": time.perf_counter() - start,
        },
        privacy,
    )


def _compact(bound: np.ndarray) -> float | tuple[float, ...]:
    """A bound vector as one float when all entries are equal, else a tuple."""
    return float(bound[0]) if (bound == bound[0]).all() else tuple(float(b) for b in bound)
