"""What a server learns under secure aggregation: the sum is exact, and sums can be subtracted.

Secure aggregation (Flower's SecAgg+, or the in-process seam) hides each participant's upload from
the server, and nothing more. Every function here reads only what the server reads — the setup
exchange (each n_k, and d) and the secure sum of a covariance release
(:mod:`dpbnsl.learners.plain_release` without noise, :mod:`dpbnsl.learners.covariance_release`
with distributed noise) — plus, for a coalition, the colluding participants' own shares:

- :func:`read_sum`: the pooled covariance Σ_k Σ_i q_i q_iᵀ/(γ²N), exact without noise (to the
  public grid's resolution), noisy at the release's public noise level with it;
- :func:`isolate_by_coalition`: the server with P − 1 colluding participants (or the partner of a
  two-party study) subtracts their shares from the sum modulo 2^b and reads the remaining
  participant's statistic — carrying only that participant's own noise share, which is sized for
  P − t honest shares: against a coalition larger than the declared t it is weaker than the claim;
- :func:`isolate_by_difference`: two sums whose contributor sets differ by one participant (a run
  repeated after a dropout, or two rounds) subtracted — that participant's upload, with the noise
  of both sums (two releases: each is accounted in its ledger, and the composition is the bound).

Without noise each of these is exact; with distributed DP each estimate is noisy at a level the
public plan states (``noise_sd``), and the release's (ε, δ) bounds what any test on it can learn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .._validation import as_generator
from ..federation import Transcript
from ..federation.messages import SECURE_SUM
from ..federation.protocol import SETUP_ROUND
from ..federation.secure_sum import SecureShare
from ..mechanisms.distributed import centred

__all__ = [
    "SumView",
    "IsolatedStatistic",
    "read_sum",
    "isolate_by_coalition",
    "isolate_by_difference",
    "replay_shares",
    "with_sum",
]


@dataclass(frozen=True)
class SumView:
    """A secure sum as the server reads it: ``residues`` modulo 2^``bits``, whose shares came
    from ``contributors``; the public grid (``scale`` γ) and row counts ``n_k``; ``S`` the pooled
    covariance it decodes to and ``noise_sd`` the public sd of each of its entries (0: no noise);
    ``share_sd`` the public sd one participant's noise share adds to its statistic (in Gram units,
    before the division by γ²n)."""

    residues: np.ndarray
    bits: int
    contributors: tuple[int, ...]
    n_k: tuple[int, ...]
    d: int
    scale: float
    S: np.ndarray
    noise_sd: float
    share_sd: float

    @property
    def n(self) -> int:
        return sum(self.n_k[k] for k in self.contributors)


@dataclass(frozen=True)
class IsolatedStatistic:
    """One participant's covariance Σ_i q_i q_iᵀ/(γ²n_k) read off secure sums, and the public sd of
    the noise left on each entry (0 without distributed noise)."""

    participant: int
    covariance: np.ndarray
    noise_sd: float


def _symmetric(upper: np.ndarray, d: int) -> np.ndarray:
    U = np.zeros((d, d))
    iu = np.triu_indices(d)
    U[iu] = upper
    U.T[iu] = U[iu]
    return U


def _plan(settings: Mapping[str, Any], d: int) -> tuple[float, int, float]:
    """(γ, bits, share sd in Gram units) of the study's public settings: a private release when
    they hold ε, the plain secure sum otherwise."""
    if "epsilon" in settings:
        from ..learners.covariance_release import RELEASE_KEYS, release_settings, secure_plan

        plan = secure_plan(release_settings(**{k: v for k, v in settings.items() if k in RELEASE_KEYS}), d=d)
        per_share = plan.variance / plan.honest  # the variance each share adds
        return plan.scale, plan.modulus_bits, math.sqrt(per_share)
    from ..learners.plain_release import PLAIN_KEYS, plain_plan

    plain = plain_plan({k: v for k, v in settings.items() if k in PLAIN_KEYS}, d=d)
    return plain.scale, plain.modulus_bits, 0.0


def read_sum(transcript: Transcript, settings: Mapping[str, Any]) -> SumView:
    """The secure sum in a covariance release's transcript (the setup exchange and one secure
    round), decoded with the study's public ``settings`` (those the participants declared:
    ``clip_norm``, ``participants``, ``n_total``, ``modulus_bits``, and ε, δ, ``noise``,
    ``dropouts`` for a private release)."""
    sums = [m for m in transcript if m.sender == SECURE_SUM]
    if len(sums) != 1:
        raise ValueError(
            f"`transcript` holds {len(sums)} secure sums; read_sum reads the covariance release "
            f"of dp-fed-bnsl, fed-bnsl or dp-cov-pc with aggregation='secure' (one sum)"
        )
    shapes = [m for m in transcript if m.round == SETUP_ROUND and m.kind == "data_shape"]
    if not shapes:
        raise ValueError("`transcript` has no setup exchange: the row counts are unknown")
    n_k = tuple(int(m.payload.to_dense()[0]) for m in sorted(shapes, key=lambda m: m.sender))
    d = int(shapes[0].payload.to_dense()[1])
    total = sums[0]
    contributors = tuple(
        sorted(int(m.sender) for m in transcript if m.kind == "secure_share" and m.round == total.round)
    )
    scale, bits, share_sd = _plan(settings, d)
    residues = np.rint(total.payload.to_dense()).astype(np.int64)
    n = sum(n_k[k] for k in contributors)
    S = _symmetric(centred(residues, bits=bits), d) / (scale**2 * n)
    noise_sd = share_sd * math.sqrt(len(contributors)) / (scale**2 * n)
    return SumView(residues, bits, contributors, n_k, d, scale, S, noise_sd, share_sd)


def _isolated(view: SumView, k: int, residues: np.ndarray, shares: int) -> IsolatedStatistic:
    gram = _symmetric(centred(residues, bits=view.bits), view.d)
    unit = view.scale**2 * view.n_k[k]
    return IsolatedStatistic(k, gram / unit, view.share_sd * math.sqrt(shares) / unit)


def isolate_by_coalition(view: SumView, shares: Mapping[int, SecureShare]) -> IsolatedStatistic:
    """The statistic of the one contributor outside the coalition: the sum minus the colluding
    participants' own ``shares`` (participant id → the share it uploaded), modulo 2^bits. The
    coalition must hold every contributor's share but one."""
    outside = sorted(set(view.contributors) - set(shares))
    if len(outside) != 1 or not set(shares) <= set(view.contributors):
        raise ValueError(
            f"a coalition isolates one participant: it must hold the shares of every contributor "
            f"{list(view.contributors)} but one; it holds {sorted(shares)}"
        )
    M = 1 << view.bits
    rest = view.residues.copy()
    for share in shares.values():
        if share.bits != view.bits or share.residues.size != rest.size:
            raise ValueError("a coalition share does not match the sum's modulus and size")
        rest = (rest - share.residues) % M
    return _isolated(view, outside[0], rest, 1)


def isolate_by_difference(larger: SumView, smaller: SumView) -> IsolatedStatistic:
    """The upload of the one participant in ``larger``'s contributors and not in ``smaller``'s:
    the difference of the two sums modulo 2^bits (each carries its own noise; the estimate carries
    both)."""
    extra = sorted(set(larger.contributors) - set(smaller.contributors))
    if len(extra) != 1 or not set(smaller.contributors) <= set(larger.contributors):
        raise ValueError(
            f"differencing isolates one participant: the contributors {list(larger.contributors)} "
            f"and {list(smaller.contributors)} must differ by exactly one"
        )
    if (larger.bits, larger.d, larger.scale) != (smaller.bits, smaller.d, smaller.scale):
        raise ValueError("the two sums differ in modulus, dimension or grid")
    diff = (larger.residues - smaller.residues) % (1 << larger.bits)
    return _isolated(larger, extra[0], diff, len(larger.contributors) + len(smaller.contributors))


def replay_shares(
    protocol: str,
    participants: Sequence[np.ndarray],
    settings: Mapping[str, Any],
    *,
    rng: np.random.Generator | int | None = None,
) -> tuple[dict[int, SecureShare], Transcript]:
    """Every participant's share of a secure covariance release, as it made it from its own data
    and noise stream (participant k: stream k of ``rng.spawn(P)``, as the learners draw), and the
    setup transcript: what a coalition's members hold of their own. For simulations, where one
    person plays every side."""
    from ..federation.messages import SERVER, Message
    from ..federation.protocol import record_reply
    from ..learners.hosted import hosted

    proto = hosted(protocol)
    gens = as_generator(rng).spawn(len(participants))
    clients = [
        proto.participant(
            X, settings=settings, participant=k, **({"rng": g, "budget": "study"} if proto.private else {})
        )
        for k, (X, g) in enumerate(zip(participants, gens))
    ]
    server = proto.server(settings=settings, n_participants=len(participants))
    setup, sent = Transcript(), {}
    for k, c in enumerate(clients):
        kind, payload = cast(tuple[str, Any], c.respond("rounds", SETUP_ROUND, None))
        setup.append(Message(SETUP_ROUND, k, SERVER, kind, payload))
        sent[k] = payload
    reply = server.receive("rounds", SETUP_ROUND, sent)
    record_reply(setup, SETUP_ROUND, reply, len(participants))
    shares: dict[int, SecureShare] = {}
    for k, c in enumerate(clients):
        _, share = cast(tuple[str, Any], c.respond("covariance", 0, reply.for_participant(k)))
        if not isinstance(share, SecureShare):
            raise ValueError(f"{protocol!r} with these settings does not answer with a secure share")
        shares[k] = share
    return shares, setup


def with_sum(setup: Transcript, shares: Mapping[int, SecureShare], contributors: Sequence[int]) -> Transcript:
    """The setup transcript with one secure round of ``contributors``' shares (in process)."""
    from ..federation.secure_sum import InProcessSum, record_secure_round

    t = Transcript(list(setup))
    record_secure_round(t, 0, InProcessSum()({k: shares[k] for k in contributors}), list(contributors))
    return t
