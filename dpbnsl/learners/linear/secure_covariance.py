"""DP-Fed-BNSL under secure aggregation: one jointly noised covariance, fitted by the server.

Each participant clips its rows to ‖x‖₂ ≤ R, maps them to the public integer grid
(:func:`~dpbnsl.mechanisms.distributed.quantise_rows`), and uploads the upper triangle of
Σ_i q_i q_iᵀ plus its share of Skellam (or discrete Gaussian) noise, modulo 2^bits, as a secure
share. The server reads only the sum: S̃ = Σ_k Σ_i q_i q_iᵀ / (γ²N) + E, with one noise E of the
calibrated variance for the pooled data, instead of the average of P local releases
(√P times less noise at the same ε when no participant drops out). Everything after the sum is
post-processing: the server's fit (:func:`fit_release`), and any other learner that needs the data
only through the covariance (``dpbnsl.learners.constraint.pc_from_covariance``).

Exchanges: the setup (n_k up, all n_k down), then one secure round (the shares up, nothing down).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import as_float_matrix, check_choice, check_epsilon, check_int, check_real
from ...accounting import LedgerEntry, PrivacyLedger
from ...accounting.distributed import NOISES, DistributedPlan, calibrate_distributed
from ...federation import Payload, run_rounds
from ...federation.guard import (
    Refusal,
    RequestGuard,
    Reserve,
    SettingsLock,
    check_study,
    defence_state,
    ledger_budget,
    own_budget,
    restore_defence,
    study_of,
)
from ...federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    HostedServer,
    ProtocolError,
    Reply,
    StateValue,
    generator_state,
    n_samples_reply,
    read_n_vector,
    read_shapes,
    restore_generator,
    shape_upload,
)
from ...federation.secure_sum import SECURE_SHARE, SecureShare, SecureSum
from ...graphs import threshold as threshold_weights
from ...graphs import threshold_to_dag
from ...mechanisms import CLIP_RANGE
from ...mechanisms.distributed import centred, integer_gram, integer_grid, noisy_share, quantise_rows
from ..admm import PenaltySchedule, check_hyperparameters
from .hosted_fed_bnsl import CovarianceParticipant, make_server
from .scale_checks import check_declared_centre, check_row_norm

__all__ = [
    "SECURE_DEFAULTS",
    "secure_settings",
    "secure_plan",
    "Release",
    "fit_release",
    "noise_aware_lambda",
    "SecureCovarianceParticipant",
    "SecureCovarianceServer",
]

#: the public settings of the secure protocol and their defaults (ε, δ, R and P have none)
SECURE_DEFAULTS: dict[str, Any] = dict(
    noise="skellam",
    dropouts=0,
    modulus_bits=32,
    lambda1="auto",
    threshold=0.3,
    max_rounds=200,
    h_tol=1e-8,
    rho_max=1e16,
)
#: the noise-aware penalty λ = LAMBDA_BASE + LAMBDA_NOISE · s · √(2 ln d²) (s: the released entries'
#: noise sd; √(2 ln d²) the scale of the largest of d² noise terms in the least-squares gradient);
#: LAMBDA_NOISE was chosen on simulated seeds 100-104 (d = 20, ε = 1), not on those the
#: documentation reports
LAMBDA_BASE = 0.01
LAMBDA_NOISE = 0.7


def secure_settings(**settings: Any) -> dict[str, Any]:
    """The secure protocol's public settings, validated, defaults filled (``epsilon``, ``delta``,
    ``clip_norm`` and ``participants`` are required)."""
    known = {"epsilon", "delta", "clip_norm", "participants", *SECURE_DEFAULTS}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"unknown secure-aggregation setting(s) {unknown}; known: {sorted(known)}")
    missing = sorted({"epsilon", "delta", "clip_norm", "participants"} - set(settings))
    if missing:
        raise TypeError(f"missing secure-aggregation setting(s) {missing}")
    s = {**SECURE_DEFAULTS, **settings}
    s["epsilon"] = check_epsilon(s["epsilon"])
    s["delta"] = check_real(s["delta"], "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    s["clip_norm"] = check_real(s["clip_norm"], "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    s["participants"] = check_int(s["participants"], "participants", low=1)
    s["dropouts"] = check_int(s["dropouts"], "dropouts", low=0, high=s["participants"] - 1)
    check_choice(s["noise"], "noise", NOISES)
    s["modulus_bits"] = check_int(s["modulus_bits"], "modulus_bits", low=8, high=53)
    if s["lambda1"] != "auto":
        s["lambda1"] = check_real(s["lambda1"], "lambda1", low=0.0)
    s["threshold"] = check_real(s["threshold"], "threshold", low=0.0)
    s["max_rounds"] = check_int(s["max_rounds"], "max_rounds", low=1)
    s["h_tol"] = check_real(s["h_tol"], "h_tol", low=0.0, low_open=True)
    s["rho_max"] = check_real(s["rho_max"], "rho_max", low=1.0)
    return s


def secure_plan(settings: Mapping[str, Any], *, d: int, n_total: int) -> DistributedPlan:
    """The release's plan from the public settings, d and the pooled row count."""
    s = settings
    return calibrate_distributed(
        s["epsilon"],
        s["delta"],
        d=d,
        n_total=n_total,
        participants=s["participants"],
        dropouts=s["dropouts"],
        clip_norm=s["clip_norm"],
        noise=s["noise"],
        modulus_bits=s["modulus_bits"],
    )


@dataclass(frozen=True)
class Release:
    """The jointly noised covariance as the server reads it: ``S`` = Σ qqᵀ/(γ²N) + E (symmetric,
    not projected), ``n`` the rows of the contributors, ``noise_sd`` the public standard deviation
    of each entry of E, ``contributors`` whose shares are in the sum."""

    S: np.ndarray
    n: int
    noise_sd: float
    contributors: tuple[int, ...]


def noise_aware_lambda(noise_sd: float, d: int) -> float:
    """The ℓ1 penalty of the server's fit for a d × d release of entry noise sd ``s``:
    LAMBDA_BASE + LAMBDA_NOISE·s·√(2 ln d²) — the least-squares gradient's noise grows with s, and
    the largest of its d² terms with √(2 ln d²). Public: s and d are."""
    return LAMBDA_BASE + LAMBDA_NOISE * float(noise_sd) * math.sqrt(2.0 * math.log(max(d, 2) ** 2))


def psd_repair(S: np.ndarray) -> np.ndarray:
    """The nearest matrix with eigenvalues ≥ 0 (post-processing of a noisy covariance)."""
    evals, Q = np.linalg.eigh((S + S.T) / 2.0)
    out = (Q * np.maximum(evals, 0.0)) @ Q.T
    return (out + out.T) / 2.0


def fit_release(
    release: Release,
    *,
    lambda1: float | str = "auto",
    threshold: float = 0.3,
    max_rounds: int = 200,
    h_tol: float = 1e-8,
    rho_max: float = 1e16,
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """The NOTEARS least-squares problem on the released covariance (projected to PSD), solved by
    Fed-BNSL's consensus ADMM with one covariance (its tuned server; the other penalties at
    Fed-BNSL's defaults), with the noise-aware penalty when ``lambda1="auto"``. Post-processing.
    Returns (thresholded DAG W, raw W, history; ``history.attrs["lambda1"]`` the penalty used)."""
    lam = noise_aware_lambda(release.noise_sd, release.S.shape[0]) if lambda1 == "auto" else float(lambda1)
    hyper = check_hyperparameters(
        lambda1=lam,
        rho1=1e-3,
        rho2=1e-3,
        gamma1=1.75,
        gamma2=1.25,
        rho_max=rho_max,
        max_rounds=max_rounds,
        h_tol=h_tol,
        gap_tol=1e-6,
        threshold=threshold,
    )
    schedule = PenaltySchedule(
        hyper["rho1"], hyper["rho2"], hyper["gamma1"], hyper["gamma2"], hyper["rho_max"]
    )
    d = release.S.shape[0]
    server = make_server(1, d, schedule, lambda1=lam, h_tol=hyper["h_tol"], gap_tol=hyper["gap_tol"])
    run_rounds([CovarianceParticipant(psd_repair(release.S), schedule)], server, rounds=hyper["max_rounds"])
    W_raw = np.array(server.W)
    history = pd.DataFrame(server.rows)
    history.attrs["lambda1"] = lam
    return threshold_to_dag(threshold_weights(W_raw, threshold=threshold)), W_raw, history


class SecureCovarianceParticipant(HostedParticipant):
    """Participant ``participant`` of DP-Fed-BNSL under secure aggregation: one secure share of its
    integer Gram matrix plus its noise share; its guarantee is the sum's, provided P − t honest
    shares reach the sum. Defends its budget as every private participant does
    (:mod:`dpbnsl.federation.guard`); the study's ``participants`` (P) is a public setting it
    checks against the setup reply (a server claiming more participants would shrink every share).
    """

    def __init__(
        self,
        X: Any,
        *,
        settings: Mapping[str, Any],
        participant: int,
        rng: np.random.Generator,
        budget: tuple[float, float] | str | None,
        columns: tuple[str, ...] | None = None,
        reserve: Reserve | None = None,
    ) -> None:
        self.X = as_float_matrix(X, "X")
        self.k = check_int(participant, "participant", low=0)
        self.settings, self.columns, self.rng, self.reserve = dict(settings), columns, rng, reserve
        self.params = secure_settings(**self.settings)
        self.budget = own_budget(
            budget, participant=self.k, n_rows=self.X.shape[0], study=study_of(self.settings)
        )
        check_study((self.params["epsilon"], self.params["delta"]), self.budget, participant=self.k)
        self.ledger = PrivacyLedger(
            budget=ledger_budget(self.budget), accountant="rdp", neighbouring="replace-one"
        )
        self.lock = SettingsLock(self.k, self.settings)
        self.guard = RequestGuard(self.k, [("covariance", 1)])

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Any]:
        self.guard.admit(phase, t)
        if t == SETUP_ROUND:
            return shape_upload(self.X)
        n = read_n_vector(inbox, self.k)
        if len(n) != self.params["participants"]:
            raise Refusal(
                f"participant {self.k}: the server reports {len(n)} participants, the study declared "
                f"{self.params['participants']}; nothing released"
            )
        plan = secure_plan(self.params, d=self.X.shape[1], n_total=sum(n))
        entries = [LedgerEntry("covariance", plan.event, 1)]
        if self.reserve is not None:
            self.reserve(entries, self.budget)
        self.ledger.record("covariance", plan.event)  # the filter refuses before any release
        check_declared_centre(self.X, participant=self.k, columns=self.columns)
        check_row_norm(self.X, clip_norm=plan.clip_norm, participant=self.k)
        grid = integer_grid(clip_norm=plan.clip_norm, d=plan.d, norm_bound=plan.norm_bound)
        stat = integer_gram(quantise_rows(self.X, grid, rng=self.rng))
        share = noisy_share(stat, noise=plan.noise, share=plan.share, bits=plan.modulus_bits, rng=self.rng)
        return SECURE_SHARE, SecureShare(share, plan.modulus_bits)

    def state_dict(self) -> dict[str, StateValue]:
        return dict(
            defence_state(self.lock, self.guard), rng=generator_state(self.rng), ledger=self.ledger.to_json()
        )

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        restore_defence(state, self.lock, self.guard)
        restore_generator(self.rng, state.get("rng"))  # type: ignore[arg-type]
        if state.get("ledger") is not None:
            self.ledger = PrivacyLedger.from_json(str(state["ledger"]))

    def report(self) -> dict[str, Any]:
        delta = self.params["delta"]
        return {"epsilon": self.ledger.epsilon(delta), "delta": delta, "ledger": self.ledger.to_json()}


class SecureCovarianceServer(HostedServer):
    """The server: reads the secure sum, decodes the covariance, fits it (post-processing)."""

    def __init__(self, *, settings: Mapping[str, Any], n_participants: int) -> None:
        self.params = secure_settings(**settings)
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        if self.n_participants != self.params["participants"]:
            raise ValueError(
                f"the study declares {self.params['participants']} participants; the server has "
                f"{self.n_participants}"
            )
        self.n: tuple[int, ...] | None = None
        self.d = 0
        self.release: Release | None = None
        self.plan: DistributedPlan | None = None
        self.result: tuple[np.ndarray, np.ndarray, pd.DataFrame] | None = None

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t != SETUP_ROUND:
            raise ProtocolError(f"{phase} round {t}: the covariance travels as secure shares only")
        self.n, self.d = read_shapes(ordered)
        return n_samples_reply(self.n, ("covariance", 0))

    def receive_sum(self, phase: str, t: int, total: SecureSum) -> Reply:
        if self.n is None or (phase, t) != ("covariance", 0):
            raise ProtocolError(f"unexpected secure sum at {phase} round {t}")
        p = self.params
        honest = p["participants"] - p["dropouts"]
        if len(total.contributors) < honest:
            raise ProtocolError(
                f"the secure sum holds {len(total.contributors)} shares; the guarantee needs "
                f"{honest} (P − t); nothing is released"
            )
        self.plan = plan = secure_plan(p, d=self.d, n_total=sum(self.n))
        n_c = sum(self.n[k] for k in total.contributors)
        U = np.zeros((self.d, self.d))
        iu = np.triu_indices(self.d)
        U[iu] = centred(total.total, bits=plan.modulus_bits)
        U.T[iu] = U[iu]
        scale = plan.scale**2 * n_c
        per_share = plan.variance / honest
        sd = math.sqrt(per_share * len(total.contributors)) / scale
        self.release = Release(U / scale, n_c, sd, total.contributors)
        self.result = fit_release(
            self.release,
            lambda1=p["lambda1"],
            threshold=p["threshold"],
            max_rounds=p["max_rounds"],
            h_tol=p["h_tol"],
            rho_max=p["rho_max"],
        )
        return Reply("done", None, None)

    def planned_rounds(self, phase: str) -> int | None:
        return 1

    def transcript_of(self, phase: str) -> str:
        return "rounds"  # the setup exchange and the secure round, in one transcript

    def learned(self) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        if self.result is None:
            raise ProtocolError("the server has not read the secure sum")
        return self.result
