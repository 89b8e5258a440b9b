"""The secure-sum seam: uploads the server can only read summed.

A participant answers a secure round with ``("secure_share", SecureShare(residues, bits))``: its
integer statistic plus its noise share (:func:`dpbnsl.mechanisms.distributed.noisy_share`), as
residues modulo M = 2^bits. The aggregator adds the shares modulo M and hands the server the sum
and the ids whose shares it holds; the server never receives a share.

:class:`InProcessSum` computes exactly what a secure-aggregation protocol delivers (the modular
sum of the shares that reached it) without the cryptography, for in-process runs and tests; a
deployment runs the same shares through a real secure-aggregation protocol (Flower's SecAgg+) in
its place. The transcript records what the server sees under this trust model: each share as
:class:`~dpbnsl.federation.messages.Masked` (its size only) and the sum, sent by
:data:`~dpbnsl.federation.messages.SECURE_SUM`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..mechanisms.distributed import MAX_MODULUS_BITS, modular_sum
from .messages import SECURE_SUM, SERVER, Dense, Masked, Message, Transcript

__all__ = [
    "SECURE_SHARE",
    "SecureShare",
    "SecureRound",
    "SecureSum",
    "InProcessSum",
    "is_secure_round",
    "record_secure_round",
]

#: the kind of a secure-sum upload
SECURE_SHARE = "secure_share"


@dataclass(frozen=True, eq=False)
class SecureShare:
    """One participant's share: int64 residues modulo 2^``bits`` (copied, read-only)."""

    residues: np.ndarray
    bits: int

    def __post_init__(self) -> None:
        r = np.array(self.residues, dtype=np.int64, copy=True).ravel()
        if not 2 <= int(self.bits) <= MAX_MODULUS_BITS:
            raise ValueError(f"`bits` must lie in [2, {MAX_MODULUS_BITS}]; got {self.bits!r}")
        if r.size and (r.min() < 0 or r.max() >= 1 << int(self.bits)):
            raise ValueError(f"a secure share holds values outside [0, 2^{self.bits})")
        r.setflags(write=False)
        object.__setattr__(self, "residues", r)
        object.__setattr__(self, "bits", int(self.bits))

    @property
    def nbytes(self) -> int:
        return Masked(self.residues.size, self.bits).nbytes


@dataclass(frozen=True)
class SecureRound:
    """What a server declares about a secure round before it asks for it: the shares' modulus
    2^``bits`` and the study's bound ``dropouts`` (t) on missing or colluding participants."""

    bits: int
    dropouts: int


@dataclass(frozen=True)
class SecureSum:
    """What the server reads in a secure round: the modular sum of the shares of
    ``contributors`` (participant ids), residues modulo 2^``bits``."""

    total: np.ndarray
    bits: int
    contributors: tuple[int, ...]


class InProcessSum:
    """The modular sum of the shares, as a secure-aggregation protocol delivers it (no cryptography:
    for in-process runs)."""

    def __call__(self, shares: Mapping[int, SecureShare]) -> SecureSum:
        if not shares:
            raise ValueError("a secure sum needs at least one share")
        bits = {s.bits for s in shares.values()}
        sizes = {s.residues.size for s in shares.values()}
        if len(bits) != 1 or len(sizes) != 1:
            raise ValueError("the shares of a secure sum must have one modulus and one size")
        ids = tuple(sorted(shares))
        b = bits.pop()
        return SecureSum(modular_sum([shares[k].residues for k in ids], bits=b), b, ids)


def is_secure_round(answers: Mapping[int, list[tuple[str, object]]]) -> bool:
    """True when every participant answered with one secure share; a mix of secure shares and
    other uploads is refused (a share must never reach the server alone)."""
    kinds = [isinstance(p, SecureShare) for msgs in answers.values() for _, p in msgs]
    if any(kinds) and not (all(kinds) and all(len(m) == 1 for m in answers.values())):
        raise ValueError("a round mixes secure shares with other uploads")
    return bool(kinds) and all(kinds)


def record_secure_round(record: Transcript, t: int, total: SecureSum, participants: list[int]) -> None:
    """The transcript of a secure round: one masked share per participant, then the sum."""
    size = total.total.size
    for k in participants:
        record.append(Message(t, k, SERVER, SECURE_SHARE, Masked(size, total.bits)))
    record.append(Message(t, SECURE_SUM, SERVER, "secure_sum", Dense(total.total.astype(float))))
