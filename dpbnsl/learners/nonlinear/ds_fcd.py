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

import functools
import time
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from ..._validation import ArrayLike, as_float_matrix, as_generator, as_participants, check_data_scale
from ...blas import one_blas_thread
from ...federation.protocol import run_protocol
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ..result import LearnResult
from ._fcd_config import fcd_defaults, resolve_config
from ._fcd_model import Parts, sigmoid
from ._fcd_protocol import FCDConfig, FCDParticipant, FCDServer

__all__ = ["ds_fcd", "as_fcd", "fcd_centralized", "fcd_defaults"]


def _resolve(d: int, P: int, *, share_phi: bool, kw: dict) -> FCDConfig:
    return resolve_config(d, P, share_phi, kw)


def _fcd(
    participants: Any, method: str, share_phi: bool, rng: np.random.Generator | int | None, kw: dict
) -> LearnResult:
    arrays, columns = as_participants(participants)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    d = arrays[0].shape[1]
    if d < 2:
        raise ValueError(f"`participants` must have at least 2 columns; got {d}")
    P = len(arrays)
    cfg = resolve_config(d, P, share_phi, kw)  # every setting validated before any work
    rng = as_generator(rng)
    start = time.perf_counter()
    config = functools.partial(_resolve, share_phi=share_phi, kw=kw)
    init_rng, select_rng, h_rng, *streams = rng.spawn(3 + P)
    clients = [
        FCDParticipant(X, config=config, participant=k, rng=g)
        for k, (X, g) in enumerate(zip(arrays, streams))
    ]

    def diagnostics() -> tuple[float, float, float]:  # the participants' last local losses
        last = [cast(Parts, c.last) for c in clients]
        return (
            float(np.mean([p.total for p in last])),
            float(np.mean([p.mse for p in last])),
            float(np.mean([p.h for p in last])),
        )

    server = FCDServer(
        config=config, n_participants=P, streams=(init_rng, select_rng, h_rng), diagnostics=diagnostics
    )
    recorded = run_protocol(server, clients)["rounds"]
    transcript = recorded if cfg.record_transcript else None
    run = server
    if run.rows:
        W, W_raw, _ = run.learned()
    else:  # no aggregation at all (only a scripted solver does that): the initial U
        scores = sigmoid(run.U / cfg.tau) if cfg.mechanism == "mlp" else run.U
        W_raw = np.where(np.eye(d, dtype=bool), 0.0, scores)
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
    return LearnResult(method, W, W_raw, pd.DataFrame(run.rows), columns, transcript, None, params, info)


@one_blas_thread
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
    >>> sorted(set(res.transcript.learning().to_frame()["kind"]))  # the means, and (α, ρ, steps, selected)
    ['U', 'schedule']
    """
    kw = dict(locals())
    return _fcd(kw.pop("participants"), "ds-fcd", False, kw.pop("rng"), kw)


@one_blas_thread
def as_fcd(participants: Any, *, rng: np.random.Generator | int | None = None, **options: Any) -> LearnResult:
    """AS-FCD (all-shared): DS-FCD where the server also averages the mechanisms ``Φ`` at every
    aggregation (FedAvg on all parameters; meant for IID data). Same options as :func:`ds_fcd`;
    the transcript holds ``"U"`` and ``"phi"`` messages."""
    kw = _options(options)
    return _fcd(participants, "as-fcd", True, rng, kw)


@one_blas_thread
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


def hosted_participant(
    X: Any,
    *,
    settings: Mapping[str, Any],
    participant: int,
    rng: np.random.Generator | int | None = None,
    budget: Any = None,
    columns: tuple[str, ...] | None = None,
    share_phi: bool = False,
) -> FCDParticipant:
    """A DS-FCD (``share_phi``: AS-FCD) participant from its data and the public keywords of
    :func:`ds_fcd` (``rng``: its own Gumbel stream, child 3 + k of the study's seed)."""
    if budget is not None:
        raise ValueError("`budget` applies to private protocols only")
    config = functools.partial(_resolve, share_phi=share_phi, kw=_options(dict(settings)))
    return FCDParticipant(X, config=config, participant=participant, rng=as_generator(rng))


def hosted_server(
    *,
    settings: Mapping[str, Any],
    n_participants: int,
    rng: np.random.Generator | int | None = None,
    share_phi: bool = False,
) -> FCDServer:
    """The DS-FCD (AS-FCD) server; ``rng``'s children 0–2 draw θ⁰, the selections and ``E h``."""
    config = functools.partial(_resolve, share_phi=share_phi, kw=_options(dict(settings)))
    streams = as_generator(rng).spawn(3 + n_participants)[:3]
    return FCDServer(config=config, n_participants=n_participants, streams=streams)
