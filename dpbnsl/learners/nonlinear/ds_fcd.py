"""DS-FCD and AS-FCD ("Federated Causal Discovery with Additive Noise Models").

Every participant fits the same two-level model to its own data: graph logits ``U`` (d×d) turned
into a soft adjacency by the Gumbel-sigmoid ``M = σ((U + g¹ − g⁰)/τ)`` (diagonal 0), and one MLP per
node predicting ``x_j`` from ``M[:, j] ∘ x`` (Eq. 8). The local loss is the least-squares data term
plus ``λ Σ M`` and the augmented-Lagrangian terms ``α h + ρ/2 h²`` with ``h = tr e^{M∘M} − d``
(Eq. 7). Participants take ``it_in`` full-batch Adam steps per sub-problem; every ``it_fl`` steps the
server averages the ``U`` of ``r`` randomly chosen participants and broadcasts the mean (DS-FCD: the
MLPs ``Φ`` never leave the participant; AS-FCD: ``Φ`` is averaged too). The output is
``σ(U/τ) > 0.5``, then the weakest edges are removed until the graph is acyclic.

Implementation modules: ``_fcd_model.py`` (loss, hand-written gradient, Adam) and
``_fcd_protocol.py`` (Algorithm 2 and the ALM outer loop). Defaults are Tables 6 and 7 of the paper;
the resolved values are in ``LearnResult.params``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import (
    ArrayLike,
    as_float_matrix,
    as_generator,
    as_participants,
    check_bool,
    check_choice,
    check_int,
    check_real,
)
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..result import LearnResult
from ._fcd_model import sigmoid
from ._fcd_protocol import FCDConfig, run_fcd

__all__ = ["ds_fcd", "as_fcd", "fcd_centralized", "fcd_defaults"]

MECHANISMS = ("mlp", "linear")
SCHEDULES = ("mcsl", "printed")
ACYCLICITY = ("exp-sq", "exp")
DTYPES = ("float32", "float64")

# Table 6 (nonlinear) and the authors' code (linear variant)
_COMMON = {
    "mlp": dict(
        lambda1=0.01, h_tol=1e-10, rho_max=1e14, it_max=25, it_in=1000, it_fl=200, lr=3e-2, threshold=0.5
    ),
    "linear": dict(
        lambda1=0.1,
        h_tol=1e-8,
        rho_max=1e16,
        it_max=20,
        it_in=1500,
        it_fl=300,
        lr=1e-3,
        threshold=0.3,
        rho_init=1.0,
        beta=10.0,
    ),
}


def fcd_defaults(d: int, mechanism: str = "mlp") -> dict:
    """The default hyperparameters for ``d`` variables.

    ``"mlp"``: Table 6, and ``(ρ_init, β)`` from Table 7 by scale: ``(6e-3, 10)`` for d < 15,
    ``(6e-3, 20)`` for d < 30, ``(1e-11, 120)`` otherwise. ``"linear"``: the authors' linear settings
    (λ = 0.1, Adam lr 1e-3, ``it_in = 1500``, ``it_fl = 300``, ``ρ_init = 1``, β = 10, threshold 0.3).
    """
    check_choice(mechanism, "mechanism", MECHANISMS)
    out = dict(_COMMON[mechanism])
    if mechanism == "mlp":
        out["rho_init"], out["beta"] = (
            (6e-3, 10.0) if d < 15 else ((6e-3, 20.0) if d < 30 else (1e-11, 120.0))
        )
    return out


def _config(d: int, P: int, share_phi: bool, kw: dict) -> FCDConfig:
    mech = check_choice(kw["mechanism"], "mechanism", MECHANISMS)
    dflt = fcd_defaults(d, mech)
    v = {k: (dflt[k] if kw.get(k) is None else kw[k]) for k in dflt}
    pos: dict[str, Any] = dict(low=0.0, low_open=True)
    per_round = kw["participants_per_round"]
    per_round = P if per_round is None else check_int(per_round, "participants_per_round", low=1, high=P)
    cfg = FCDConfig(
        mechanism=mech,
        share_phi=share_phi,
        lambda1=check_real(v["lambda1"], "lambda1", low=0.0),
        rho_init=check_real(v["rho_init"], "rho_init", **pos),
        beta=check_real(v["beta"], "beta", low=1.0, low_open=True),
        alpha_init=check_real(kw["alpha_init"], "alpha_init", low=0.0),
        gamma=check_real(kw["gamma"], "gamma", low=0.0, high=1.0, low_open=True),
        h_tol=check_real(v["h_tol"], "h_tol", low=0.0),
        rho_max=check_real(v["rho_max"], "rho_max", **pos),
        it_max=check_int(v["it_max"], "it_max", low=1),
        it_in=check_int(v["it_in"], "it_in", low=1),
        it_fl=check_int(v["it_fl"], "it_fl", low=1),
        lr=check_real(v["lr"], "lr", **pos),
        tau=check_real(kw["tau"], "tau", **pos),
        hidden=check_int(kw["hidden"], "hidden", low=1),
        layers=check_int(kw["layers"], "layers", low=1),
        per_round=per_round,
        schedule=check_choice(kw["schedule"], "schedule", SCHEDULES),
        init_iter=check_int(kw["init_iter"], "init_iter", low=0),
        acyclicity=check_choice(kw["acyclicity"], "acyclicity", ACYCLICITY),
        h_samples=check_int(kw["h_samples"], "h_samples", low=0),
        dtype=check_choice(kw["dtype"], "dtype", DTYPES),
        record_transcript=check_bool(kw["record_transcript"], "record_transcript"),
        threshold=check_real(v["threshold"], "threshold", low=0.0),
    )
    if mech == "mlp" and cfg.threshold >= 1.0:
        raise ValueError(
            f"`threshold` must be < 1 for mechanism='mlp' (σ(U/τ) lies in (0, 1)); got {v['threshold']!r}"
        )
    if mech == "linear" and cfg.acyclicity == "exp":
        # tr e^W − d detects cycles only for W >= 0; signed cycles cancel and h can go negative
        raise ValueError(
            "`acyclicity` must be 'exp-sq' for mechanism='linear' (tr e^W − d does "
            "not detect cycles of signed weights); got 'exp'"
        )
    return cfg


def _fcd(
    participants: Any, method: str, share_phi: bool, rng: np.random.Generator | int | None, kw: dict
) -> LearnResult:
    arrays, columns = as_participants(participants)
    d = arrays[0].shape[1]
    if d < 2:
        raise ValueError(f"`participants` must have at least 2 columns; got {d}")
    cfg = _config(d, len(arrays), share_phi, kw)
    rng = as_generator(rng)
    start = time.perf_counter()
    run = run_fcd(arrays, cfg, rng)
    if cfg.mechanism == "mlp":
        W_raw = np.where(np.eye(d, dtype=bool), 0.0, sigmoid(run.U / cfg.tau))
    else:
        W_raw = np.where(np.eye(d, dtype=bool), 0.0, run.U)
    W = threshold_to_dag(threshold_weights(W_raw, threshold=cfg.threshold))
    params = {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}
    params.pop("share_phi")
    info = {
        "seconds": time.perf_counter() - start,
        "rounds": run.rounds,
        "solves": run.solves,
        "bytes_up": run.bytes_up,
        "bytes_down": run.bytes_down,
        "U": run.U.copy(),
        "n_samples": tuple(X.shape[0] for X in arrays),
        "participants": len(arrays),
    }
    return LearnResult(method, W, W_raw, pd.DataFrame(run.rows), columns, run.transcript, None, params, info)


def ds_fcd(
    participants: Any,
    *,
    mechanism: str = "mlp",
    lambda1: float | None = None,
    rho_init: float | None = None,
    beta: float | None = None,
    alpha_init: float = 0.0,
    gamma: float = 0.25,
    h_tol: float | None = None,
    rho_max: float | None = None,
    it_max: int | None = None,
    it_in: int | None = None,
    it_fl: int | None = None,
    lr: float | None = None,
    tau: float = 0.2,
    hidden: int = 16,
    layers: int = 4,
    participants_per_round: int | None = None,
    schedule: str = "mcsl",
    init_iter: int = 3,
    acyclicity: str = "exp-sq",
    h_samples: int = 0,
    threshold: float | None = None,
    dtype: str = "float32",
    record_transcript: bool = True,
    rng: np.random.Generator | int | None = None,
) -> LearnResult:
    """Learn one DAG with DS-FCD (DAG-shared federated causal discovery).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        One dataset per participant (``n_k`` may differ; each loss is normalised by its own n_k).
    mechanism : {"mlp", "linear"}, default "mlp"
        Per-node MLPs behind Gumbel-sigmoid masks (Eq. 8), or the linear variant whose whole model
        is one weighted matrix ``W`` (NOTEARS least squares + ℓ1; DS and AS coincide).
    lambda1, rho_init, beta, h_tol, rho_max, it_max, it_in, it_fl, lr, threshold : optional
        ``None`` takes :func:`fcd_defaults` (Tables 6–7): λ = 0.01, ``it_in`` = 1000 local steps per
        sub-problem, an aggregation every ``it_fl`` = 200 steps, at most ``it_max`` = 25 outer
        iterations, Adam lr 3e-2, ``(ρ_init, β)`` by d, output threshold 0.5 on ``σ(U/τ)``.
        ``beta`` must be > 1 (ρ has to grow for the schedule to end).
    alpha_init, gamma : float, default 0, 0.25
        Initial Lagrange multiplier; ρ grows by β when ``E h`` did not shrink below γ times its
        previous value.
    tau : float, default 0.2
        Gumbel-sigmoid temperature.
    hidden, layers : int, default 16, 4
        Width and number of hidden LeakyReLU(0.05) layers of each node's MLP.
    participants_per_round : int, optional
        ``r``: participants drawn uniformly at random per aggregation (default all).
    schedule : {"mcsl", "printed"}, default "mcsl"
        The authors' code's ALM loop (re-solve with ρ·β until ``E h`` shrinks by γ; at least
        ``init_iter`` + 1 outer iterations) or Algorithm 1 as printed (one solve per iteration).
    acyclicity : {"exp-sq", "exp"}, default "exp-sq"
        ``h = tr e^{M∘M} − d`` (the authors' code) or ``tr e^{M} − d`` (the paper's Eq. 5; only
        for ``mechanism="mlp"``, where ``M ≥ 0``: on the linear variant's signed ``W`` the trace of
        ``e^W`` misses cycles).
    h_samples : int, default 0
        The ``h`` the server uses in the ALM updates and stopping test: 0 = ``h(σ(U/τ))`` (the
        Gumbel noise at its median); k ≥ 1 = a k-draw Monte-Carlo estimate of ``E h(g_τ(U))``,
        which heavy Logistic tails keep far above ``h_tol`` long after ``σ(U/τ)`` is a DAG.
    dtype : {"float32", "float64"}, default "float32"
        Precision of the data-term passes, MLP or linear (the authors ran float32); parameters and
        Adam are float64.
    record_transcript : bool, default True
        Record every message (AS-FCD's Φ messages are large); byte counts are kept either way in
        ``history`` and ``info``.
    rng : None, int or numpy Generator
        Spawned into: the common initialisation, participant selection, the server's ``E h``
        draws, and one Gumbel stream per participant.

    Returns
    -------
    LearnResult
        ``W`` = the scores ``σ(U/τ)`` above the threshold, cycle-repaired (weakest first);
        ``W_raw`` = ``σ(U/τ)`` (linear: ``W``). ``σ(U/τ) > 0.5`` exactly when ``U > 0``, i.e. when
        the Gumbel-sigmoid mask exceeds 0.5 with probability above one half; the scores are the
        authors' output, not edge probabilities; ``history`` one row per communication round (loss,
        data term, ``h`` of σ(U/τ), ρ, α, edges, bytes); ``transcript`` has only ``"U"`` messages
        (``"W"`` for the linear variant; plus ``"phi"`` for AS-FCD); ``info["U"]`` the final logits.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(4, 400, participants=2, rng=0)
    >>> res = ds_fcd(data.participants, it_in=40, it_fl=20, it_max=2, hidden=4, layers=1, rng=0)
    >>> sorted(set(res.transcript.to_frame()["kind"]))
    ['U']
    """
    kw = dict(locals())
    return _fcd(kw.pop("participants"), "ds-fcd", False, kw.pop("rng"), kw)


def as_fcd(participants: Any, *, rng: np.random.Generator | int | None = None, **options: Any) -> LearnResult:
    """AS-FCD (all-shared): DS-FCD where the server also averages the mechanisms ``Φ`` at every
    aggregation (FedAvg on all parameters; meant for IID data). Same options as :func:`ds_fcd`;
    the transcript holds ``"U"`` and ``"phi"`` messages."""
    kw = _options(options)
    return _fcd(participants, "as-fcd", True, rng, kw)


def fcd_centralized(
    X: ArrayLike, *, rng: np.random.Generator | int | None = None, **options: Any
) -> LearnResult:
    """The centralised model (MCSL-style): DS-FCD with a single participant holding all of ``X``.

    With one participant every aggregation is the identity, so this equals
    ``ds_fcd([X], ...)`` and ``as_fcd([X], ...)`` for the same seed (whatever ``it_fl``). No
    transcript is returned. ``participants_per_round`` is not accepted.
    """
    if "participants_per_round" in options:
        raise TypeError("`participants_per_round` is not an option of fcd_centralized")
    X = as_float_matrix(X, "X") if not isinstance(X, pd.DataFrame) else X
    kw = _options({**options, "record_transcript": False})
    res = _fcd([X], "fcd-centralized", False, rng, kw)
    return LearnResult(
        res.method, res.W, res.W_raw, res.history, res.columns, None, None, res.params, res.info
    )


def _options(options: dict) -> dict:
    import inspect

    sig = inspect.signature(ds_fcd)
    names = [p for p in sig.parameters if p not in ("participants", "rng")]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown}; allowed: {', '.join(names)}")
    return {p: options.get(p, sig.parameters[p].default) for p in names}
