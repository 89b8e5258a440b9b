"""DP-Fed-Sparse-BNSL (Fassy El Fehri et al.): Fed-Sparse-BNSL with DP-PGCD local steps, for (ε, δ).

One budget per participant covers everything that touches its data: optional private centring,
optional private smoothness constants (Theorem D.1), and the T·K DP-PGCD iterations. Pre-processing
releases take fixed shares of the zCDP budget ρ*; DP-PGCD's noise multiplier is then calibrated
(``"tight"`` RDP search or the paper's ``"paper"`` Theorem 5.1) with those releases as prior spend.
All calibration happens before any data is touched, so a budget that cannot cover the request is
refused up front. The messages, W, β and α are post-processing.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from dp_accounting import GaussianDpEvent

from ..._validation import (
    ArrayLike,
    as_generator,
    as_participants,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
)
from ...accounting import (
    LedgerEntry,
    NoiseScales,
    PrivacyLedger,
    calibrate_dp_pgcd,
    dp_pgcd_entries,
    event_rho,
    split_budget,
    summarize_privacy,
)
from ...mechanisms import CLIP_RANGE, check_neighbouring
from ...mechanisms.moments import as_bounds, private_mean, private_smoothness, public_smoothness
from ..result import LearnResult
from .fed_sparse_bnsl import run_sparse_admm, sparse_hyperparameters
from .pgcd import CLIP_SCHEMES, PGCDNoise
from .scale_checks import check_declared_centre, check_feature_bound
from .warm_start import LABEL as WARM_LABEL
from .warm_start import covariance_warm_start, default_warm_share, warm_start_applies

__all__ = ["dp_fed_sparse_bnsl", "plan", "SparsePlan", "default_schedule", "SNR_KAPPA"]

#: The public-defaults rule of :func:`default_schedule`: DP-PGCD's noise multiplier m is kept at
#: about SNR_KAPPA·n_k/ln(d(d − 1)), where the exponential mechanism still favours coordinates whose
#: clipped gradients are a fraction of the clip bound (see the function).
SNR_KAPPA = 0.45
#: Bounds of the default number of DP-PGCD steps T·K. Below MIN_STEPS nothing is learned (a run
#: that cannot afford more is warned about: more steps of near-random selection only add false
#: edges); above MAX_STEPS (reached only at large ε) the noise is already small and time grows.
MIN_STEPS, MAX_STEPS = 10, 5000


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
    pl = plan(
        d,
        epsilon=epsilon,
        delta=delta,
        n_k=tuple(X.shape[0] for X in arrays),
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
    e, dl, C, hyper, noise = pl.epsilon, pl.delta, pl.clip, pl.hyper, pl.noise
    public_m, bound, m_centre, m_smooth = pl.smoothness, pl.feature_bound, pl.m_centre, pl.m_smooth
    s_share, c_share = pl.shares

    # --- per participant: private pre-processing, then the protocol ----------------------------
    start = time.perf_counter()
    streams = as_generator(rng).spawn(P)
    ledgers = tuple(PrivacyLedger() for _ in range(P))
    ready, ms = [], []
    for k, (X, g, ledger) in enumerate(zip(arrays, streams, ledgers)):
        # local warnings to the data owner (nothing is released): bounds or centre off-scale
        if bound is not None and (centre == "private" or public_m is None):
            check_feature_bound(X, bound=bound, participant=k, columns=columns)
        if centre == "declared":
            check_declared_centre(X, participant=k, columns=columns)
        if centre == "private":
            assert m_centre is not None  # plan() calibrates it whenever centre="private"
            X = X - private_mean(X, bound=bound, multiplier=m_centre, rng=g, ledger=ledger)
        if public_m is not None:
            m = public_m
        elif smoothness == "bounds":
            m = public_smoothness(bound, d)
        else:  # smoothness="private" without public constants: plan() calibrated m_smooth
            assert m_smooth is not None
            m = private_smoothness(X, bound=bound, multiplier=m_smooth, rng=g, ledger=ledger)
        ready.append(X)
        ms.append(m)
    W0 = warm_transcript = None
    if pl.m_warm is not None:  # one covariance release each; W₀ is post-processing
        W0, warm_transcript = covariance_warm_start(
            ready, clip_norm=pl.warm_clip_norm, multiplier=pl.m_warm, rngs=streams, ledgers=ledgers
        )
    pgcd_noise = PGCDNoise(C, noise.gumbel_multiplier, pl.clip_scheme)
    W, server, transcript = run_sparse_admm(
        ready, ms, **hyper, noises=[pgcd_noise] * P, rngs=streams, ledgers=ledgers, init=W0
    )
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
        }
    )
    return LearnResult(
        "dp-fed-sparse-bnsl",
        W,
        server.W,
        pd.DataFrame(server.rows),
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


@dataclass(frozen=True)
class SparsePlan:
    """Everything :func:`dp_fed_sparse_bnsl` decides before touching data: the validated public
    settings and the noise multipliers (``m_centre`` / ``m_smooth``: None when that step is not
    private; ``smoothness``: declared public constants or None)."""

    epsilon: float
    delta: float
    clip: float
    clip_scheme: str
    neighbouring: str
    hyper: dict
    smoothness: np.ndarray | None
    feature_bound: np.ndarray | None
    shares: tuple[float, float]
    m_centre: float | None
    m_smooth: float | None
    noise: NoiseScales
    prior: tuple[LedgerEntry, ...] = ()
    warm_share: float | None = None  # None: no warm start
    warm_clip_norm: float = 1.0
    m_warm: float | None = None

    def entries(self) -> list[LedgerEntry]:
        """The ledger entries one participant will spend: the private pre-processing and the
        T·K DP-PGCD steps."""
        steps = self.hyper["rounds"] * self.hyper["local_iters"]
        return list(self.prior) + dp_pgcd_entries(self.noise.gumbel_multiplier, steps)


def plan(
    d: int,
    *,
    epsilon: float,
    delta: float,
    n_k: int | Sequence[int] | None = None,
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
    lambda1: float = 0.1,
    rho1: float = 1.0,
    rho2: float = 1.0,
    threshold: float = 0.3,
    server_solver: Literal["lbfgs", "gradient"] = "lbfgs",
    eta: float = 1e-2,
    server_steps: int = 10,
    neighbouring: str = "replace-one",
) -> SparsePlan:
    """Validate the public settings of :func:`dp_fed_sparse_bnsl` for d variables and calibrate
    its noise, touching no data (same parameters, same errors). Sweeps call it for every setting
    before running any, so that a bad setting is refused before any work. ``n_k`` (the
    participants' row counts, public under replace-one) is needed only when ``rounds`` or
    ``local_iters`` is None (then :func:`default_schedule` chooses them)."""
    d = check_int(d, "d", low=2)
    e = check_epsilon(epsilon, allow_inf=True)  # inf: the same pipeline, noise switched off
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    C = check_real(clip, "clip", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    scheme = check_choice(clip_scheme, "clip_scheme", CLIP_SCHEMES)
    relation = check_neighbouring(neighbouring)
    check_choice(calibration, "calibration", ("tight", "paper"))
    check_choice(centre, "centre", ("declared", "private"))
    if (rounds is None or local_iters is None) and n_k is None:
        raise ValueError(
            "`n_k` (the smallest participant's number of rows) is needed to choose "
            "`rounds` and `local_iters` from public information"
        )
    hyper = sparse_hyperparameters(
        lambda1,
        rho1,
        rho2,
        1.0,
        1.0,
        math.inf,
        1 if rounds is None else rounds,
        1 if local_iters is None else local_iters,
        threshold,
        server_solver,
        eta,
        server_steps,
    )
    if isinstance(smoothness, str):
        check_choice(smoothness, "smoothness", ("private", "bounds"))
        public_m = None
    else:
        public_m = as_bounds(smoothness, d, "smoothness")
    if feature_bound is None:  # name only what needs it
        needs = (
            [f"smoothness={smoothness!r} (or pass public constants as smoothness=<array>)"]
            if public_m is None
            else []
        ) + (["centre='private'"] if centre == "private" else [])
        if needs:
            raise ValueError(
                "`feature_bound` (a public bound on x_ia²) is required by " + " and by ".join(needs)
            )
    bound = None if feature_bound is None else as_bounds(feature_bound, d, "feature_bound")
    if not (isinstance(shares, (tuple, list)) and len(shares) == 2):
        raise ValueError(f"`shares` must be a pair (smoothness, centring) of fractions; got {shares!r}")
    s_share, c_share = (
        check_real(x, "shares", low=0.0, high=1.0, low_open=True, high_open=True) for x in shares
    )
    private_smooth = public_m is None and smoothness == "private"
    check_choice(warm_start, "warm_start", ("auto", "covariance", "none"))
    if warm_share is not None:
        check_real(warm_share, "warm_share", low=0.0, high=1.0, low_open=True, high_open=True)
    R = check_real(warm_clip_norm, "warm_clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    warm = warm_start_applies(warm_start, d)
    used = s_share * private_smooth + c_share * (centre == "private")
    if used >= 1.0:
        raise ValueError(
            f"`shares` = {tuple(shares)!r} leave nothing of the budget for DP-PGCD "
            f"(the pre-processing shares in use sum to {used:g} >= 1)"
        )
    # the warm start takes its share of what the pre-processing leaves
    w_rel = (default_warm_share(e) if warm_share is None else float(warm_share)) if warm else 0.0
    w_share = w_rel * (1.0 - used)
    used += w_share

    # --- calibrate everything before touching data -------------------------------------------
    parts = {
        "smoothness": s_share if private_smooth else 0.0,
        "centring": c_share if centre == "private" else 0.0,
        "warm-start": w_share,
    }
    no_noise = math.isinf(e)  # every multiplier 0; the releases are exact (no privacy)
    split = (
        None
        if no_noise
        else split_budget(e, dl, {**{k: v for k, v in parts.items() if v > 0}, "dp-pgcd": 1.0 - used})
    )
    budget = {} if split is None else split.rho

    def multiplier(part: str, count: int = 1) -> float:  # ρ = count/(2m²) for the part's share
        return 0.0 if no_noise else math.sqrt(count / (2.0 * budget[part]))

    prior: list[LedgerEntry] = []
    m_centre = m_smooth = None
    if centre == "private":  # one release of ρ = 1/(2m²)
        m_centre = multiplier("centring")
        prior.append(LedgerEntry("centring", GaussianDpEvent(m_centre), 1))
    if private_smooth:  # d releases of ρ = 1/(2m²) each
        m_smooth = multiplier("smoothness", d)
        prior.append(LedgerEntry("smoothness", GaussianDpEvent(m_smooth), d))
    m_warm = None
    if warm:  # one covariance release of ρ = 1/(2m²)
        m_warm = multiplier("warm-start")
        prior.append(LedgerEntry(WARM_LABEL, GaussianDpEvent(m_warm), 1))
    if rounds is None or local_iters is None:
        n_min = min(n_k) if isinstance(n_k, (tuple, list)) else n_k
        rho_left = (
            math.inf
            if split is None
            else split.rho_total - sum(x.count * event_rho(x.event)[0] for x in prior)
        )
        T, K = default_schedule(d=d, n_k=check_int(n_min, "n_k", low=1), rho=rho_left, warm=warm)
        hyper["rounds"] = T if rounds is None else hyper["rounds"]
        hyper["local_iters"] = K if local_iters is None else hyper["local_iters"]
    if no_noise:
        T, K = hyper["rounds"], hyper["local_iters"]
        inf = math.inf
        noise = NoiseScales(calibration, T, K, 0.0, 0.0, inf, inf, inf, inf, dl)
    else:
        noise = calibrate_dp_pgcd(
            e, dl, rounds=hyper["rounds"], local_iters=hyper["local_iters"], method=calibration, prior=prior
        )

    return SparsePlan(
        e,
        dl,
        C,
        scheme,
        relation.value,
        hyper,
        public_m,
        bound,
        (s_share, c_share),
        m_centre,
        m_smooth,
        noise,
        tuple(prior),
        w_rel if warm else None,
        R,
        m_warm,
    )


def default_schedule(*, d: int, n_k: int, rho: float, warm: bool = False) -> tuple[int, int]:
    """(T, K) chosen from public quantities only: d, the smallest n_k, and the zCDP budget ρ left
    for DP-PGCD (from ε, δ and the pre-processing shares).

    Rationale. A selection on scores measured in units of their sensitivity, u_ab = s_ab/Δ_s, is
    informative when the best scores exceed the rest by about m·ln N (N = d(d − 1) candidates,
    m the noise multiplier). With clip thresholds proportional to each parent's scale, u_ab ≤
    n_k/2, and an edge whose clipped mean gradient is a fraction of the bound reaches a fraction
    of that: the target is m* = SNR_KAPPA·n_k/ln N. The budget then allows T·K = m*²·ρ steps
    (Theorem 5.1: m = √(TK/ρ); the tight calibration lowers m further), kept within
    [MIN_STEPS, MAX_STEPS] (a budget below MIN_STEPS useful steps raises a ``UserWarning``: the
    selections are then close to random; not with ``warm=True``, when the run starts from a warm
    start and the steps only refine it). Rounds: T = ⌊T·K/50⌋ within [10, 50] (at most T·K),
    K = ⌊T·K/T⌋.

    SNR_KAPPA = 0.45 and the round rule come from the clipping study on tuning seeds
    (``experiments/clipping_study.py``, ``docs/results/clipping_study.md``): at ε = 5 and
    n_k = 1000 the best m was about 63, 63, 44 and 63 at d = 20, 50, 100 and 200, i.e.
    κ ≈ 0.37–0.67, and 20–50 rounds beat 100–200 from d = 50 on.
    """
    d = check_int(d, "d", low=2)
    n_k = check_int(n_k, "n_k", low=1)
    rho = check_real(rho, "rho", low=0.0, low_open=True, allow_inf=True)
    m_star = SNR_KAPPA * n_k / math.log(d * (d - 1))
    useful = MAX_STEPS if math.isinf(rho) else int(m_star * m_star * rho)
    if useful < MIN_STEPS and not warm:
        warnings.warn(
            f"with n_k = {n_k}, d = {d} and this budget, DP-PGCD can afford only "
            f"{useful} step(s) at a noise level where its selections still favour the "
            f"edges; running {MIN_STEPS}, expect a nearly empty or random graph (more "
            f"rows per participant or a larger ε would help)",
            UserWarning,
            stacklevel=4,
        )
    steps = max(MIN_STEPS, min(MAX_STEPS, useful))
    T = min(steps, max(10, min(50, steps // 50)))
    return T, max(1, steps // T)
