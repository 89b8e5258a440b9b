"""The pooled covariance by secure aggregation alone, with no noise (not private).

Each participant clips its rows to ‖x‖₂ ≤ R, rounds them to the nearest point of a public integer
grid, and uploads the upper triangle of Σ_i q_i q_iᵀ modulo 2^bits as a secure share; the server
reads the sum, Σ_k Σ_i q_i q_iᵀ, and fits NOTEARS on S = sum/(γ²N) — the pooled objective that
Fed-BNSL's consensus rounds converge to, in one exchange. Secure aggregation hides each
participant's statistic from the server, but the sum is exact: the server learns the pooled
covariance to the grid's resolution, and a participant colluding with it learns the others' sum
(:mod:`dpbnsl.attacks.secagg`). This is the "secure aggregation only" defence of the package's
comparisons; the private one adds distributed noise (:mod:`.covariance_release`).

The grid: with B = ⌊(2^(bits−1) − 1)/N⌋ every entry of the sum lies in [−N·B, N·B] (each
|q_i q_j| ≤ ‖q‖² ≤ B), so the centred residues decode it without wrapping; nearest rounding moves
a row by at most √d/2, inside the room γ = (√B − √d)/R leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_float_matrix, check_bool, check_int, check_real
from ..federation import Payload
from ..federation.protocol import (
    SETUP_ROUND,
    HostedParticipant,
    ProtocolError,
    StateValue,
    read_n_vector,
    shape_upload,
)
from ..federation.secure_sum import SECURE_SHARE, SecureShare, SecureSum
from ..mechanisms import CLIP_RANGE
from ..mechanisms.distributed import MAX_MODULUS_BITS, centred, integer_gram, integer_grid, to_residues
from ..mechanisms.releases import clip_rows
from ..scores import centre as centre_data
from .covariance_release import Release, SumServer, check_counts

__all__ = [
    "PLAIN_KEYS",
    "PlainPlan",
    "plain_settings",
    "plain_plan",
    "plain_share",
    "decode_plain",
    "PlainSecureParticipant",
    "PlainSecureServer",
]

#: the settings of the plain secure sum: the public row bound R, P and N (declared, as in the
#: private release), the modulus, t (the dropouts the sum tolerates) and whether each participant
#: centres its own columns first
PLAIN_KEYS = ("clip_norm", "participants", "n_total", "modulus_bits", "dropouts", "centre")


def plain_settings(**settings: Any) -> dict[str, Any]:
    """The plain secure sum's settings (:data:`PLAIN_KEYS`; others are ignored), validated."""
    missing = [k for k in ("clip_norm", "participants", "n_total") if settings.get(k) is None]
    if missing:
        raise ValueError(f"secure aggregation needs the public setting(s) {missing}")
    s: dict[str, Any] = {k: settings.get(k) for k in PLAIN_KEYS}
    s["clip_norm"] = check_real(s["clip_norm"], "clip_norm", low=CLIP_RANGE[0], high=CLIP_RANGE[1])
    s["participants"] = check_int(s["participants"], "participants", low=1)
    s["n_total"] = check_int(s["n_total"], "n_total", low=1)
    s["modulus_bits"] = check_int(
        31 if s["modulus_bits"] is None else s["modulus_bits"], "modulus_bits", low=8, high=MAX_MODULUS_BITS
    )
    s["dropouts"] = check_int(s["dropouts"] or 0, "dropouts", low=0, high=s["participants"] - 1)
    s["centre"] = check_bool(True if s["centre"] is None else s["centre"], "centre")
    return s


@dataclass(frozen=True)
class PlainPlan:
    """The public grid of the plain secure sum: scale γ, squared-norm bound B, modulus 2^bits."""

    d: int
    n_total: int
    participants: int
    dropouts: int
    clip_norm: float
    scale: float
    norm_bound: int
    modulus_bits: int


def plain_plan(settings: Mapping[str, Any], *, d: int) -> PlainPlan:
    """The grid for :func:`plain_settings` ``settings`` in dimension d (module docstring)."""
    s = plain_settings(**settings)
    N, bits = s["n_total"], s["modulus_bits"]
    B = (2 ** (bits - 1) - 1) // N
    if B <= d:
        raise ValueError(
            f"{bits} modulus bits cannot hold the exact sum of {N} rows in dimension {d}: use more "
            f"modulus bits (in process) or fewer rows"
        )
    grid = integer_grid(clip_norm=s["clip_norm"], d=d, norm_bound=B)
    return PlainPlan(d, N, s["participants"], s["dropouts"], s["clip_norm"], grid.scale, B, bits)


def plain_share(X: np.ndarray, plan: PlainPlan) -> SecureShare:
    """A participant's share: Σ q qᵀ (upper triangle) of its rows clipped and rounded to the nearest
    grid point, modulo 2^bits (no noise)."""
    Q = np.rint(clip_rows(np.asarray(X, float), norm=plan.clip_norm) * plan.scale)
    if Q.size and float(np.max(np.einsum("ij,ij->i", Q, Q))) > plan.norm_bound:  # pragma: no cover
        raise RuntimeError("a rounded row exceeds the grid's norm bound")
    return SecureShare(to_residues(integer_gram(Q), bits=plan.modulus_bits), plan.modulus_bits)


def decode_plain(plan: PlainPlan, n: tuple[int, ...], total: SecureSum) -> Release:
    """The pooled covariance Σ qqᵀ/(γ²·n_c) of the contributors' rows (noise sd 0)."""
    d = plan.d
    U = np.zeros((d, d))
    iu = np.triu_indices(d)
    U[iu] = centred(total.total, bits=plan.modulus_bits)
    U.T[iu] = U[iu]
    n_c = sum(n[k] for k in total.contributors)
    return Release(U / (plan.scale**2 * n_c), n_c, 0.0, total.contributors)


class PlainSecureParticipant(HostedParticipant):
    """A participant of the plain secure sum: the setup, then its one share (no noise, no ledger).
    It checks the setup reply against the declared P and N, as the private participant does."""

    def __init__(
        self, X: Any, *, settings: Mapping[str, Any], participant: int, columns: tuple[str, ...] | None = None
    ) -> None:
        self.k = check_int(participant, "participant", low=0)
        self.params = plain_settings(**settings)
        self.X = as_float_matrix(X, "X")
        if self.params["centre"]:
            self.X = centre_data(self.X)
        self.stage = 0  # 0: before the setup, 1: after it, 2: share sent

    def respond(self, phase: str, t: int, inbox: Payload | None) -> tuple[str, Any]:
        if (self.stage, phase, t) == (0, "rounds", SETUP_ROUND):
            self.stage = 1
            return shape_upload(self.X)
        if (self.stage, phase, t) != (1, "covariance", 0):
            raise ProtocolError(f"participant {self.k}: unexpected request {phase} round {t}")
        check_counts(read_n_vector(inbox, self.k), self.params, k=self.k, rows=self.X.shape[0])
        self.stage = 2
        return SECURE_SHARE, plain_share(self.X, plain_plan(self.params, d=self.X.shape[1]))

    def state_dict(self) -> dict[str, StateValue]:
        return {"stage": self.stage}

    def load_state_dict(self, state: Mapping[str, StateValue]) -> None:
        self.stage = int(state.get("stage", 0) or 0)


class PlainSecureServer(SumServer):
    """The server of the plain secure sum: the setup, one secure round, then ``fit`` on the
    :class:`~dpbnsl.learners.covariance_release.Release` (noise sd 0)."""

    def __init__(
        self, *, settings: Mapping[str, Any], n_participants: int, fit: Callable[[Release], Any]
    ) -> None:
        super().__init__(plain_settings(**settings), n_participants=n_participants, fit=fit)

    def decode(self, n: tuple[int, ...], total: SecureSum) -> Release:
        return decode_plain(plain_plan(self.params, d=self.d), n, total)
