"""DS-FCD's hyperparameters: the defaults (the paper's Tables 6 and 7, the authors' linear settings)
and their validation into an :class:`~dpbnsl.learners.nonlinear._fcd_protocol.FCDConfig`."""

from __future__ import annotations

from typing import Any

from ..._validation import check_bool, check_choice, check_int, check_real
from ._fcd_protocol import FCDConfig

__all__ = ["fcd_defaults", "resolve_config", "MECHANISMS", "SCHEDULES", "ACYCLICITY", "DTYPES"]

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


def resolve_config(d: int, P: int, share_phi: bool, kw: dict) -> FCDConfig:
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
