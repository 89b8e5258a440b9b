"""The covariance releases that several learners fit: one Gaussian release per participant (local
DP), or one jointly noised integer release under secure aggregation (distributed DP).

Secure: each participant clips its rows to ‖x‖₂ ≤ R, maps them to the public integer grid
(:func:`~dpbnsl.mechanisms.distributed.quantise_rows`), and uploads the upper triangle of
Σ_i q_i q_iᵀ plus its share of Skellam (or discrete Gaussian) noise, modulo 2^bits, as a secure
share. The server reads only the sum: S̃ = Σ_k Σ_i q_i q_iᵀ / (γ²N) + E, with one noise E of the
calibrated variance for the pooled data, instead of the average of P local releases (√P times less
noise at the same ε when no participant drops out). Exchanges: the setup (n_k up, all n_k down),
then one secure round (the shares up, nothing down).

Local: each participant releases XᵀX/n_k of its clipped rows with Gaussian noise; the server
averages by the rows (:mod:`dpbnsl.learners.local_release`).

Everything after the release is post-processing: DP-Fed-BNSL's NOTEARS fit
(:mod:`dpbnsl.learners.linear.secure_covariance`) and PC with noise-aware Fisher-z tests
(:mod:`dpbnsl.learners.constraint.dp_cov_pc`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_float_matrix, as_generator, check_choice, check_epsilon, check_int, check_real
from ..accounting import LedgerEntry, PrivacyLedger, PrivacySummary, summarize_privacy
from ..accounting.distributed import NOISES, DistributedPlan, calibrate_distributed
from ..federation import Payload, Transcript
from ..federation.guard import (
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
from ..federation.protocol import (
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
    run_protocol,
    shape_upload,
)
from ..federation.secure_sum import SECURE_SHARE, SecureRound, SecureShare, SecureSum
from ..mechanisms import CLIP_RANGE
from ..mechanisms.distributed import centred, integer_gram, integer_grid, noisy_share, quantise_rows
from .scale_checks import check_declared_centre, check_row_norm

__all__ = [
    "AGGREGATIONS",
    "RELEASE_DEFAULTS",
    "RELEASE_KEYS",
    "release_settings",
    "refuse_secure_only",
    "secure_plan",
    "Release",
    "secure_share",
    "check_contributors",
    "check_counts",
    "decode_release",
    "SecureCovarianceParticipant",
    "SumServer",
    "SecureCovarianceServer",
    "SecureRun",
    "run_secure_release",
]

#: the trust models of a covariance release
AGGREGATIONS = ("local", "secure")

#: the public settings of the joint release and their defaults (ε, δ, R and P have none); the
#: participants read these only: what the server does with the sum is post-processing
RELEASE_DEFAULTS: dict[str, Any] = dict(noise="skellam", dropouts=0, modulus_bits=31)
#: the settings every participant declares: with ``participants`` (P) and ``n_total`` (N, the
#: pooled rows; row counts are public under replace-one) fixed by the study, every honest
#: participant computes the same plan, so a server cannot size one participant's share differently
#: from the others' by sending it other counts
REQUIRED = ("epsilon", "delta", "clip_norm", "participants", "n_total")
RELEASE_KEYS = (*REQUIRED, *RELEASE_DEFAULTS)


def release_settings(**settings: Any) -> dict[str, Any]:
    """The joint release's public settings (:data:`RELEASE_KEYS`), validated, defaults filled
    (``epsilon``, ``delta``, ``clip_norm``, ``participants`` and ``n_total`` are required)."""
    unknown = sorted(set(settings) - set(RELEASE_KEYS))
    if unknown:
        raise TypeError(f"unknown secure-aggregation setting(s) {unknown}; known: {sorted(RELEASE_KEYS)}")
    missing = sorted(set(REQUIRED) - set(settings))
    if missing:
        raise TypeError(f"missing secure-aggregation setting(s) {missing}")
    s = {**RELEASE_DEFAULTS, **settings}
    s["epsilon"] = check_epsilon(s["epsilon"])
    s["delta"] = check_real(s["delta"], "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    s["clip_norm"] = check_real(s["clip_norm"], "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    s["participants"] = check_int(s["participants"], "participants", low=1)
    s["n_total"] = check_int(s["n_total"], "n_total", low=s["participants"])
    s["dropouts"] = check_int(s["dropouts"], "dropouts", low=0, high=s["participants"] - 1)
    check_choice(s["noise"], "noise", NOISES)
    s["modulus_bits"] = check_int(s["modulus_bits"], "modulus_bits", low=8, high=53)
    return s


def refuse_secure_only(**given: Any) -> None:
    """Under local aggregation, refuse the secure release's settings given away from their
    defaults (naming them)."""
    changed = [k for k, v in given.items() if v != RELEASE_DEFAULTS[k]]
    if changed:
        names = ", ".join(f"`{k}`" for k in changed)
        raise ValueError(f'{names} appl{"ies" if len(changed) == 1 else "y"} to aggregation="secure" only')


def secure_plan(settings: Mapping[str, Any], *, d: int) -> DistributedPlan:
    """The release's plan from the declared public settings (:func:`release_settings`) and d."""
    s = settings
    return calibrate_distributed(
        s["epsilon"],
        s["delta"],
        d=d,
        n_total=s["n_total"],
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


def secure_share(X: np.ndarray, plan: DistributedPlan, *, rng: np.random.Generator) -> SecureShare:
    """One participant's secure share of the joint release: its rows clipped and rounded onto the
    plan's grid, the upper triangle of Σ qqᵀ, plus its noise share, modulo 2^bits."""
    grid = integer_grid(clip_norm=plan.clip_norm, d=plan.d, norm_bound=plan.norm_bound)
    stat = integer_gram(quantise_rows(X, grid, rng=rng))
    share = noisy_share(stat, noise=plan.noise, share=plan.share, bits=plan.modulus_bits, rng=rng)
    return SecureShare(share, plan.modulus_bits)


def check_counts(n: Sequence[int], declared: Mapping[str, Any], *, k: int, rows: int) -> None:
    """Participant k's check of the setup reply against the study: P counts, its own count its
    rows, and their sum the declared N (otherwise the plan would differ from the others')."""
    P, N = declared["participants"], declared["n_total"]
    if len(n) != P or not (0 <= k < len(n) and n[k] == rows) or sum(n) != N:
        raise Refusal(
            f"participant {k}: the server reports row counts {list(n)[:8]}{'…' if len(n) > 8 else ''} "
            f"(P = {len(n)}, N = {sum(n)}); the study declared P = {P}, N = {N} and this participant "
            f"holds {rows} rows; nothing released"
        )


def check_contributors(total: SecureSum, *, honest: int) -> None:
    """Refuse a secure sum with fewer than the P − t shares the guarantee needs."""
    if len(total.contributors) < honest:
        raise ProtocolError(
            f"the secure sum holds {len(total.contributors)} shares; the guarantee needs "
            f"{honest} (P − t); nothing is released"
        )


def decode_release(plan: DistributedPlan, n: Sequence[int], total: SecureSum) -> Release:
    """The server's reading of the secure sum: the residues centred, the symmetric matrix divided
    by γ²·(the contributors' rows), and the public noise sd of its entries (the contributing
    shares' variance)."""
    d = plan.d
    n_c = sum(n[k] for k in total.contributors)
    U = np.zeros((d, d))
    iu = np.triu_indices(d)
    U[iu] = centred(total.total, bits=plan.modulus_bits)
    U.T[iu] = U[iu]
    scale = plan.scale**2 * n_c
    sd = math.sqrt(plan.variance / plan.honest * len(total.contributors)) / scale
    return Release(U / scale, n_c, sd, total.contributors)


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
        self.params = release_settings(**{k: v for k, v in self.settings.items() if k in RELEASE_KEYS})
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
        check_counts(read_n_vector(inbox, self.k), self.params, k=self.k, rows=self.X.shape[0])
        plan = secure_plan(self.params, d=self.X.shape[1])
        entries = [LedgerEntry("covariance", plan.event, 1)]
        if self.reserve is not None:
            self.reserve(entries, self.budget)
        self.ledger.record("covariance", plan.event)  # the filter refuses before any release
        check_declared_centre(self.X, participant=self.k, columns=self.columns)
        check_row_norm(self.X, clip_norm=plan.clip_norm, participant=self.k)
        return SECURE_SHARE, secure_share(self.X, plan, rng=self.rng)

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


class SumServer(HostedServer):
    """The server of a one-round covariance sum: the setup exchange (n_k up, all n_k down), one
    secure round it reads only summed, then ``fit`` on the decoded
    :class:`Release` (post-processing); :meth:`learned` returns what ``fit`` returned.
    Subclasses decode the sum (:meth:`decode`)."""

    def __init__(
        self, params: Mapping[str, Any], *, n_participants: int, fit: Callable[[Release], Any]
    ) -> None:
        self.params = dict(params)
        self.fit = fit
        self.n_participants = check_int(n_participants, "n_participants", low=1)
        if self.n_participants != self.params["participants"]:
            raise ValueError(
                f"the study declares {self.params['participants']} participants; the server has "
                f"{self.n_participants}"
            )
        self.n: tuple[int, ...] | None = None
        self.d = 0
        self.release: Release | None = None
        self.result: Any = None

    def decode(self, n: tuple[int, ...], total: SecureSum) -> Release:
        raise NotImplementedError

    def receive(self, phase: str, t: int, uploads: Mapping[int, Payload]) -> Reply:
        ordered = self.check_uploads(phase, t, uploads)
        if t != SETUP_ROUND:
            raise ProtocolError(f"{phase} round {t}: the covariance travels as secure shares only")
        self.n, self.d = read_shapes(ordered)
        return n_samples_reply(self.n, ("covariance", 0))

    def secure_round(self, phase: str, t: int) -> SecureRound | None:
        if (phase, t) != ("covariance", 0):
            return None
        return SecureRound(self.params["modulus_bits"], self.params["dropouts"])

    def receive_sum(self, phase: str, t: int, total: SecureSum) -> Reply:
        if self.n is None or (phase, t) != ("covariance", 0):
            raise ProtocolError(f"unexpected secure sum at {phase} round {t}")
        p = self.params
        check_contributors(total, honest=p["participants"] - p["dropouts"])
        if sum(self.n) != p["n_total"]:
            raise ProtocolError(
                f"the participants hold {sum(self.n)} rows; the study declared {p['n_total']}"
            )
        self.release = self.decode(self.n, total)
        self.result = self.fit(self.release)
        return Reply("done", None, None)

    def planned_rounds(self, phase: str) -> int | None:
        return 1

    def transcript_of(self, phase: str) -> str:
        return "rounds"  # the setup exchange and the secure round, in one transcript

    def learned(self) -> Any:
        if self.result is None:
            raise ProtocolError("the server has not read the secure sum")
        return self.result


class SecureCovarianceServer(SumServer):
    """The server of the joint release: reads the secure sum, decodes the noisy covariance with
    the study's plan, fits it (post-processing).

    ``fit`` turns the :class:`Release` into the result :meth:`learned` returns (post-processing:
    DP-Fed-BNSL passes its NOTEARS fit, ``dp-cov-pc`` PC with noise-aware tests).
    """

    def __init__(
        self,
        *,
        settings: Mapping[str, Any],
        n_participants: int,
        fit: Callable[[Release], Any],
    ) -> None:
        super().__init__(release_settings(**settings), n_participants=n_participants, fit=fit)
        self.plan: DistributedPlan | None = None

    def decode(self, n: tuple[int, ...], total: SecureSum) -> Release:
        self.plan = plan = secure_plan(self.params, d=self.d)
        return decode_release(plan, n, total)


@dataclass(frozen=True)
class SecureRun:
    """One run of the joint release: what the server fitted (``result``: whatever ``fit``
    returned), the release and its plan, the transcript, the participants' ledgers and the
    privacy statement."""

    result: Any
    release: Release
    plan: DistributedPlan
    transcript: Transcript
    ledgers: tuple[PrivacyLedger, ...]
    privacy: PrivacySummary
    seconds: float


def run_secure_release(
    arrays: Sequence[np.ndarray],
    columns: tuple[str, ...] | None,
    settings: Mapping[str, Any],
    *,
    rng: np.random.Generator | int | None,
    fit: Callable[[Release], Any],
) -> SecureRun:
    """The secure protocol in process: participant k (drawing from stream k of ``rng.spawn(P)``)
    uploads its share, the server reads the sum and runs ``fit`` on the release. ``settings``
    holds the release's settings (others are ignored); every participant defends the budget
    (ε, δ) of the settings."""
    release_only = {k: v for k, v in settings.items() if k in RELEASE_KEYS}
    params = release_settings(**release_only)
    P, d = len(arrays), arrays[0].shape[1]
    budget = (params["epsilon"], params["delta"])
    start = time.perf_counter()
    clients = [
        SecureCovarianceParticipant(
            X, settings=release_only, participant=k, rng=g, budget=budget, columns=columns
        )
        for k, (X, g) in enumerate(zip(arrays, as_generator(rng).spawn(P)))
    ]
    server = SecureCovarianceServer(settings=release_only, n_participants=P, fit=fit)
    transcript = run_protocol(server, clients)["rounds"]
    result = server.learned()
    plan, release = server.plan, server.release
    if plan is None or release is None:  # pragma: no cover - learned() has refused already
        raise ProtocolError("the server has not read the secure sum")
    ledgers = tuple(c.ledger for c in clients)
    privacy = summarize_privacy(
        ledgers,
        delta=params["delta"],
        target_epsilon=params["epsilon"],
        neighbouring="replace-one",
        calibration="secure-sum",
        accountants=("rdp", "zcdp"),
        public=dict(
            d=d,
            n_k=tuple(X.shape[0] for X in arrays),
            clip_norm=params["clip_norm"],
            centre="declared",
            releases="one jointly noised covariance (secure aggregation)",
            trust=(
                f"secure aggregation: the server reads only the sum; DP against the server and up "
                f"to t = {params['dropouts']} colluding or missing participants, while at least "
                f"{plan.honest} honest shares reach the sum"
            ),
            noise=params["noise"],
            modulus_bits=plan.modulus_bits,
        ),
    )
    if privacy.bounds["rdp"] > params["epsilon"]:  # pragma: no cover - the calibration guarantees it
        raise RuntimeError(f"the release spent ε = {privacy.bounds['rdp']!r} > target {params['epsilon']!r}")
    return SecureRun(result, release, plan, transcript, ledgers, privacy, time.perf_counter() - start)
