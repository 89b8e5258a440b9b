"""Privacy events, ledger entries, and ε(δ) of a composition under three accountants.

Events are dp-accounting ``DpEvent`` objects. This package's releases are
``GaussianDpEvent(noise_multiplier)`` with the multiplier σ/Δ taken against the release's *own*
ℓ2-sensitivity Δ under the neighbouring relation in force (so it is accounted as a sensitivity-1
Gaussian), ``ZCDpEvent(rho, xi)``, :class:`~dpbnsl.mechanisms.BoundedRangeDpEvent` (an
ε₀-bounded-range selection such as Gumbel-max) and
:class:`~dpbnsl.mechanisms.distributed.SkellamDpEvent` (a jointly noised integer release under
secure aggregation). A user's own events may be recorded beside them:
``LaplaceDpEvent``, ``PoissonSampledDpEvent`` and ``SampledWithoutReplacementDpEvent`` (and any of
these inside ``ComposedDpEvent`` / ``SelfComposedDpEvent``). Pure ε-DP releases (the sparse vector
technique and the Laplace releases of Priv-PC) are ``RandomizedResponseDpEvent``: binary randomized
response is the pair that dominates every pure ε-DP mechanism
(:func:`dpbnsl.mechanisms.sparse_vector.pure_dp_event`); it is stated under replace-one.

Accountants, ε(δ) of a list of entries:

- ``"zcdp"``: total ρ (and ξ), Bun–Steinke conversion ε = ξ + ρ + 2√(ρ ln 1/δ) — the one
  Fed-Sparse-BNSL uses. Laplace and randomized response count as pure ε-DP, i.e. ε²/2-zCDP;
  sampled events have no zCDP bound here and are refused;
- ``"rdp"``: the composed RDP curve on a grid of orders (:class:`BoundedRangeRdpAccountant`: Gaussian
  α/(2z²), zCDP ξ + ρα, the exact bounded-range curve for selections, dp-accounting's curves for
  the rest), converted with dp-accounting's CKS conversion;
- ``"pld"``: exact for Gaussian-only compositions (they compose into one Gaussian, whose privacy
  profile is closed-form: :mod:`dpbnsl.accounting.gaussian`); otherwise dp-accounting's
  privacy-loss-distribution accountant (Gaussian, Laplace, randomized response and
  Poisson-subsampled events). dp-accounting 0.6's PLD accountant composes a
  ``RandomizedResponseDpEvent`` once whatever its count, so its k-fold composition is built here
  with the distribution's own ``self_compose(k)``. Randomized response is stated under
  replace-one, and dp-accounting's PLD then doubles the sensitivity of Gaussian events composed
  with it: conservative (a ledger mixing both reads a larger ε under "pld" than under "rdp").

Sampled events amplify under their own neighbouring relation (Poisson: add/remove-one; without
replacement: replace-one), so one composition cannot hold both kinds.

The stateful bookkeeping (records, budget filter, JSON) is :class:`dpbnsl.accounting.PrivacyLedger`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
from dp_accounting import GaussianDpEvent, NeighboringRelation, ZCDpEvent
from dp_accounting.dp_event import (
    ComposedDpEvent,
    DpEvent,
    LaplaceDpEvent,
    NoOpDpEvent,
    PoissonSampledDpEvent,
    RandomizedResponseDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
)

from .._validation import check_choice, check_int, check_real
from ..mechanisms import BoundedRangeDpEvent
from ..mechanisms.distributed import SkellamDpEvent
from ..mechanisms.sparse_vector import pure_dp_epsilon
from .gaussian import composed_mu, gaussian_epsilon
from .rdp_accountant import ORDERS, BoundedRangeRdpAccountant
from .skellam import skellam_zcdp
from .zcdp import cks_epsilon_from_rdp, pure_dp_rho, rho_to_epsilon

__all__ = [
    "UnsupportedEventError",
    "LedgerEntry",
    "ORDERS",
    "LEAF_EVENTS",
    "event_rho",
    "event_rdp",
    "compose_epsilon",
    "flatten_event",
]


class UnsupportedEventError(dp_accounting.UnsupportedEventError, ValueError):
    """An event (or a δ) an accountant cannot handle. dp-accounting's exception, and a
    ``ValueError`` like every other refusal of this package's API."""


Accountant = Literal["zcdp", "rdp", "pld"]
#: dp-accounting's PLD squares the noise multiplier; beyond this it overflows float64.
PLD_MAX_MULTIPLIER = 1e100
ACCOUNTANTS = ("zcdp", "rdp", "pld")
#: the event types a ledger records (also inside ComposedDpEvent and SelfComposedDpEvent)
LEAF_EVENTS = (
    GaussianDpEvent,
    ZCDpEvent,
    BoundedRangeDpEvent,
    SkellamDpEvent,
    LaplaceDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    RandomizedResponseDpEvent,
)
_SAMPLED = (PoissonSampledDpEvent, SampledWithoutReplacementDpEvent)
#: the neighbouring relations a ledger may state, and the one each sampled event amplifies under
NEIGHBOURING = ("replace-one", "add-remove")
SAMPLED_RELATION = {
    PoissonSampledDpEvent: "add-remove",
    SampledWithoutReplacementDpEvent: "replace-one",
    RandomizedResponseDpEvent: "replace-one",  # dp-accounting accounts it under replace-one only
}


@dataclass(frozen=True)
class LedgerEntry:
    """``count`` independent runs of the mechanism ``event``, under ``label`` (validated)."""

    label: str
    event: DpEvent
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"`label` must be a non-empty string; got {self.label!r}")
        _check_event(self.event)
        object.__setattr__(self, "count", int(check_int(self.count, "count", low=1)))


def merged(entry: LedgerEntry, count: int) -> LedgerEntry:
    """``entry`` with ``count`` more runs, without re-validating its (already valid) event."""
    out = object.__new__(LedgerEntry)
    object.__setattr__(out, "label", entry.label)
    object.__setattr__(out, "event", entry.event)
    object.__setattr__(out, "count", int(entry.count + count))
    return out


def flatten_event(event: DpEvent, count: int = 1) -> list[tuple[DpEvent, int]]:
    """(leaf event, count) pairs of a dp-accounting composition: ``ComposedDpEvent`` is the list
    of its parts, ``SelfComposedDpEvent(e, k)`` is ``e`` k times, ``NoOpDpEvent`` nothing; any
    other event is a leaf (validated: one of the three supported types)."""
    if isinstance(event, ComposedDpEvent):
        if not isinstance(event.events, (list, tuple)):
            raise UnsupportedEventError(
                f"`event` ComposedDpEvent must hold a list of events; got {event.events!r}"
            )
        return [leaf for part in event.events for leaf in flatten_event(part, count)]
    if isinstance(event, SelfComposedDpEvent):
        k = check_int(event.count, "SelfComposedDpEvent.count", low=0)
        return [] if k == 0 else flatten_event(event.event, count * k)
    if isinstance(event, NoOpDpEvent):
        return []
    return [(_check_event(event), count)]


def _check_event(event: DpEvent) -> DpEvent:
    if isinstance(event, (GaussianDpEvent, LaplaceDpEvent)):
        check_real(event.noise_multiplier, "noise_multiplier", low=0.0, allow_inf=True)
    elif isinstance(event, ZCDpEvent):
        check_real(event.rho, "rho", low=0.0, allow_inf=True)
        check_real(event.xi, "xi", low=0.0)
    elif isinstance(event, BoundedRangeDpEvent):
        check_real(event.epsilon0, "epsilon0", low=0.0, allow_inf=True)
    elif isinstance(event, RandomizedResponseDpEvent):
        check_real(event.noise_parameter, "noise_parameter", low=0.0, high=1.0)
        check_int(event.num_buckets, "num_buckets", low=1)
    elif isinstance(event, SkellamDpEvent):
        check_real(event.l2_sensitivity, "l2_sensitivity", low=0.0)
        check_real(event.l1_sensitivity, "l1_sensitivity", low=0.0)
        check_real(event.variance, "variance", low=0.0)
    elif isinstance(event, PoissonSampledDpEvent):
        check_real(event.sampling_probability, "sampling_probability", low=0.0, high=1.0)
        _check_sampled_inner(event)
    elif isinstance(event, SampledWithoutReplacementDpEvent):
        n = check_int(event.source_dataset_size, "source_dataset_size", low=1)
        check_int(event.sample_size, "sample_size", low=0, high=n)
        _check_sampled_inner(event)
    else:
        raise UnsupportedEventError(
            f"`event` of type {type(event).__name__} is not supported: the ledger composes "
            f"{', '.join(t.__name__ for t in LEAF_EVENTS)} (also inside ComposedDpEvent and "
            f"SelfComposedDpEvent); got {event!r}"
        )
    return event


def _check_sampled_inner(event: DpEvent) -> None:
    leaves = flatten_event(event.event)
    bad = [e for e, _ in leaves if not isinstance(e, (GaussianDpEvent, LaplaceDpEvent))]
    if bad:
        raise UnsupportedEventError(
            f"`event` {type(event).__name__} must sample Gaussian or Laplace releases; it holds {bad[0]!r}"
        )


def event_rho(event: DpEvent) -> tuple[float, float]:
    """(ρ, ξ) of one event as (ξ, ρ)-zCDP (a Laplace release of multiplier b is pure 1/b-DP, hence
    1/(2b²)-zCDP). Sampled events have no zCDP bound here: :class:`UnsupportedEventError`."""
    _check_event(event)
    if isinstance(event, GaussianDpEvent):
        z = event.noise_multiplier
        return (math.inf if z == 0 else 0.5 / z / z), 0.0  # not z*z: it underflows to 0
    if isinstance(event, ZCDpEvent):
        return float(event.rho), float(event.xi)
    if isinstance(event, SkellamDpEvent):
        return skellam_zcdp(event)
    if isinstance(event, LaplaceDpEvent):
        b = event.noise_multiplier
        return (math.inf if b == 0 else pure_dp_rho(1.0 / b)), 0.0
    if isinstance(event, RandomizedResponseDpEvent):
        return pure_dp_rho(pure_dp_epsilon(event)), 0.0
    if isinstance(event, _SAMPLED):
        raise UnsupportedEventError(
            f"{type(event).__name__} has no zCDP bound here (privacy amplification by sampling is "
            f"not a zCDP statement): use accountant='rdp' or 'pld'"
        )
    return event.epsilon0 * event.epsilon0 / 8.0, 0.0  # ∞ rather than OverflowError


def _relation(events: Sequence[DpEvent]) -> NeighboringRelation:
    """The neighbouring relation the sampled (and randomized-response) events among ``events``
    are stated under."""
    poisson = any(isinstance(e, PoissonSampledDpEvent) for e in events)
    wor = any(isinstance(e, SampledWithoutReplacementDpEvent) for e in events)
    rr = any(isinstance(e, RandomizedResponseDpEvent) for e in events)
    if poisson and (wor or rr):
        other = "SampledWithoutReplacementDpEvent" if wor else "RandomizedResponseDpEvent"
        raise UnsupportedEventError(
            f"the composition holds both PoissonSampledDpEvent (amplified under add/remove-one) and "
            f"{other} (replace-one): one ε cannot cover both relations"
        )
    return NeighboringRelation.REPLACE_ONE if wor or rr else NeighboringRelation.ADD_OR_REMOVE_ONE


def _rdp_accountant(entries: Sequence[LedgerEntry], orders: np.ndarray = ORDERS) -> BoundedRangeRdpAccountant:
    acct = BoundedRangeRdpAccountant(orders, _relation([e.event for e in entries]))
    for e in entries:
        try:
            acct.compose(e.event, e.count)
        except dp_accounting.UnsupportedEventError as exc:
            raise UnsupportedEventError(
                f"the 'rdp' accountant cannot compose entry {e.label!r}: {exc}"
            ) from None
    return acct


def event_rdp(event: DpEvent, orders: np.ndarray = ORDERS) -> np.ndarray:
    """The event's RDP curve at ``orders``."""
    _check_event(event)
    return _rdp_accountant([LedgerEntry("event", event, 1)], np.asarray(orders, float)).rdp


def compose_epsilon(entries: Sequence[LedgerEntry], delta: float, accountant: Accountant) -> float:
    """ε(δ) of the composition of ``entries`` under ``accountant`` (see the module docstring)."""
    check_choice(accountant, "accountant", ACCOUNTANTS)
    delta = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    if not entries:
        return 0.0
    if accountant == "zcdp":
        rho = sum(e.count * event_rho(e.event)[0] for e in entries)
        xi = sum(e.count * event_rho(e.event)[1] for e in entries)
        return xi + rho_to_epsilon(rho, delta, conversion="bun-steinke")
    if accountant == "rdp":
        rdp = _rdp_accountant(entries).rdp
        if not np.isfinite(rdp).any():
            return math.inf
        return cks_epsilon_from_rdp(ORDERS, rdp, delta)
    if all(isinstance(e.event, GaussianDpEvent) for e in entries):
        mu = composed_mu([e.event.noise_multiplier for e in entries], [e.count for e in entries])
        return gaussian_epsilon(mu, delta)
    return _pld_epsilon(entries, delta)


def _randomized_response_pld(entry: LedgerEntry, acct: Any) -> Any:
    """The PLD of ``entry.count`` randomized-response releases (None: no privacy loss; ``math.inf``:
    no noise), composed with ``self_compose`` (module docstring)."""
    from dp_accounting.pld import privacy_loss_distribution

    event = entry.event
    if event.num_buckets == 1 or event.noise_parameter == 1.0:
        return None
    if event.noise_parameter == 0.0:
        return math.inf
    try:
        pld = privacy_loss_distribution.from_randomized_response(
            noise_parameter=event.noise_parameter,
            num_buckets=event.num_buckets,
            value_discretization_interval=acct._value_discretization_interval,
            neighboring_relation=NeighboringRelation.REPLACE_ONE,
        )
        return pld.self_compose(entry.count) if entry.count > 1 else pld
    except Exception as exc:  # dp-accounting's PLD fails in several ways at extreme parameters
        raise UnsupportedEventError(
            f"the 'pld' accountant cannot compose entry {entry.label!r} ({type(exc).__name__}: "
            f"{exc}); use accountant='rdp' or 'zcdp'"
        ) from None


def _pld_epsilon(entries: Sequence[LedgerEntry], delta: float) -> float:
    """dp-accounting's PLD accountant on a composition that is not Gaussian-only."""
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    acct = PLDAccountant(_relation([e.event for e in entries]))
    rr_plds = []
    for e in entries:
        if isinstance(e.event, RandomizedResponseDpEvent):
            rr = _randomized_response_pld(e, acct)
            if rr is math.inf:
                return math.inf
            if rr is not None:
                rr_plds.append(rr)
            continue
        leaves = [
            leaf for leaf, _ in flatten_event(e.event.event if isinstance(e.event, _SAMPLED) else e.event)
        ]
        if all(
            isinstance(leaf, (GaussianDpEvent, LaplaceDpEvent)) and math.isinf(leaf.noise_multiplier)
            for leaf in leaves
        ):
            continue  # infinite noise releases nothing
        for leaf in leaves:
            if not isinstance(leaf, (GaussianDpEvent, LaplaceDpEvent)):
                raise UnsupportedEventError(
                    f"the 'pld' accountant supports Gaussian, Laplace and Poisson-subsampled events; "
                    f"entry {e.label!r} is {type(e.event).__name__} (use accountant='rdp' or 'zcdp')"
                )
            multiplier = leaf.noise_multiplier
            if multiplier == 0 and not isinstance(e.event, _SAMPLED):
                return math.inf
            if multiplier > PLD_MAX_MULTIPLIER:
                raise UnsupportedEventError(
                    f"the 'pld' accountant cannot represent a noise multiplier {multiplier:g} > "
                    f"{PLD_MAX_MULTIPLIER:g} (entry {e.label!r}): use accountant='rdp' or 'zcdp'"
                )
        try:
            acct.compose(e.event, e.count)
        except Exception as exc:  # dp-accounting's PLD fails in several ways at extreme noise
            raise UnsupportedEventError(
                f"the 'pld' accountant cannot compose entry {e.label!r} ({type(exc).__name__}: "
                f"{exc}); use accountant='rdp' or 'zcdp'"
            ) from None
    if rr_plds:
        if getattr(acct, "_contains_non_dp_event", False):
            return math.inf
        total = acct._pld  # the accountant's composed distribution (dp-accounting 0.6)
        for pld in rr_plds:
            total = total.compose(pld)
        eps = float(total.get_epsilon_for_delta(delta))
    else:
        eps = float(acct.get_epsilon(delta))
    if math.isinf(eps):  # finite noise has finite ε: the accountant's tail truncation at work
        raise UnsupportedEventError(
            f"the 'pld' accountant cannot resolve `delta` = {delta:g}: dp-accounting's PLD "
            f"truncates tails below about 1e-15 and reports ε = ∞ (use accountant='rdp' or "
            f"'zcdp', or a larger delta)"
        )
    return eps
