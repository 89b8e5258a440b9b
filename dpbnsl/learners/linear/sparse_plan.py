"""What DP-Fed-Sparse-BNSL decides before touching data: the validated public settings, the
budget split among its private releases, the public-defaults schedule (T, K), and the noise
multipliers (:func:`plan`). Sweeps call it for every setting before running any."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from dp_accounting import GaussianDpEvent

from ..._validation import ArrayLike, check_choice, check_epsilon, check_int, check_real
from ...accounting import (
    LedgerEntry,
    NoiseScales,
    calibrate_dp_pgcd,
    dp_pgcd_entries,
    event_rho,
    split_budget,
)
from ...accounting.distributed import DistributedPlan, calibrate_distributed_rho
from ...mechanisms import CLIP_RANGE, check_neighbouring
from ...mechanisms.moments import as_bounds
from ..covariance_release import refuse_secure_only
from .pgcd import CLIP_SCHEMES
from .sparse_admm import sparse_hyperparameters
from .warm_start import LABEL as WARM_LABEL
from .warm_start import default_warm_share, warm_start_applies

__all__ = ["plan", "SparsePlan", "default_schedule", "SNR_KAPPA", "MIN_STEPS", "MAX_STEPS"]

#: The public-defaults rule of :func:`default_schedule`: DP-PGCD's noise multiplier m is kept at
#: about SNR_KAPPA·n_k/ln(d(d − 1)), where the exponential mechanism still favours coordinates whose
#: clipped gradients are a fraction of the clip bound (see the function).
SNR_KAPPA = 0.45
#: Bounds of the default number of DP-PGCD steps T·K. Below MIN_STEPS nothing is learned (a run
#: that cannot afford more is warned about: more steps of near-random selection only add false
#: edges); above MAX_STEPS (reached only at large ε) the noise is already small and time grows.
MIN_STEPS, MAX_STEPS = 10, 5000


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
    m_warm: float | None = None  # the local warm start's Gaussian multiplier
    aggregation: str = "local"
    warm_joint: DistributedPlan | None = None  # the joint warm start's plan (secure aggregation)

    @property
    def has_warm(self) -> bool:
        """Whether the run starts with a warm start (local or joint)."""
        return self.m_warm is not None or self.warm_joint is not None

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
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    participants: int | None = None,
    n_total: int | None = None,
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
    ``local_iters`` is None (then :func:`default_schedule` chooses them). With
    ``aggregation="secure"`` the warm start's covariance is one joint release under secure
    aggregation (:func:`~dpbnsl.accounting.distributed.calibrate_distributed_rho`: the distributed
    discrete Gaussian for the warm start's ρ), which needs every participant's n_k, tolerates
    ``dropouts`` = t, and is checked against the declared ``participants`` and ``n_total`` when
    given."""
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
    check_choice(aggregation, "aggregation", ("local", "secure"))
    secure = aggregation == "secure"
    warm = warm_start_applies(warm_start, d, secure=secure)
    sizes: tuple[int, ...] = ()
    if secure:
        if not warm:
            raise ValueError(
                'aggregation="secure" applies to the warm start\'s covariance release; '
                'warm_start="none" has none'
            )
        if math.isinf(e):
            raise ValueError('aggregation="secure" needs a finite `epsilon` (its noise is the guarantee)')
        if not isinstance(n_k, (tuple, list)):
            raise ValueError('aggregation="secure" needs `n_k`, every participant\'s row count')
        sizes = tuple(check_int(n, "n_k", low=1) for n in n_k)
        if participants is not None and check_int(participants, "participants", low=1) != len(sizes):
            raise ValueError(
                f"the study declares {participants} participants; the row counts name {len(sizes)}"
            )
        if n_total is not None and check_int(n_total, "n_total", low=1) != sum(sizes):
            raise ValueError(f"the study declares {n_total} rows; the row counts sum to {sum(sizes)}")
        dropouts = check_int(dropouts, "dropouts", low=0, high=len(sizes) - 1)
    else:
        refuse_secure_only(dropouts=dropouts)
        if participants is not None or n_total is not None:
            raise ValueError('`participants` and `n_total` apply to aggregation="secure" only')
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
    m_warm, joint = None, None
    if warm and secure:  # one joint release under secure aggregation, ρ′ ≤ the warm start's ρ
        joint = calibrate_distributed_rho(
            budget["warm-start"],
            dl,
            d=d,
            n_total=sum(sizes),
            participants=len(sizes),
            dropouts=dropouts,
            clip_norm=R,
        )
        prior.append(LedgerEntry(WARM_LABEL, joint.event, 1))
    elif warm:  # one covariance release of ρ = 1/(2m²)
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
        aggregation,
        joint,
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
