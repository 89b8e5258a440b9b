"""Privacy events, ledger entries, and ε(δ) of a composition under three accountants.

Events are dp-accounting ``DpEvent`` objects: ``GaussianDpEvent(noise_multiplier)`` with the
multiplier σ/Δ taken against the release's *own* ℓ2-sensitivity Δ under the neighbouring relation
in force (so it is accounted as a sensitivity-1 Gaussian), ``ZCDpEvent(rho, xi)``, and
:class:`~dpbnsl.mechanisms.BoundedRangeDpEvent` (an ε₀-bounded-range selection such as Gumbel-max).

Accountants, ε(δ) of a list of entries:

- ``"zcdp"``: total ρ (and ξ), Bun–Steinke conversion ε = ξ + ρ + 2√(ρ ln 1/δ) — the one
  Fed-Sparse-BNSL uses;
- ``"rdp"``: the composed RDP curve on a grid of orders (Gaussian α/(2z²), zCDP ξ + ρα, the exact
  bounded-range curve for selections), converted with dp-accounting's CKS conversion;
- ``"pld"``: dp-accounting's privacy-loss-distribution accountant; Gaussian events only.

The stateful bookkeeping (records, budget filter, JSON) is :class:`dpbnsl.accounting.PrivacyLedger`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import dp_accounting
import numpy as np
from dp_accounting import GaussianDpEvent, ZCDpEvent
from dp_accounting.dp_event import ComposedDpEvent, DpEvent, NoOpDpEvent, SelfComposedDpEvent
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

from .._validation import check_choice, check_int, check_real
from ..mechanisms import BoundedRangeDpEvent
from .bounded_range import bounded_range_rdp
from .zcdp import cks_epsilon_from_rdp, rho_to_epsilon

__all__ = [
    "UnsupportedEventError",
    "LedgerEntry",
    "ORDERS",
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
#: Rényi orders of the "rdp" accountant: dp-accounting's defaults plus a geometric tail, so that the
#: small per-step losses of long runs (optimal order in the thousands) are covered.
ORDERS = np.unique(np.concatenate([np.asarray(DEFAULT_RDP_ORDERS, float), np.geomspace(1.05, 1e6, 240)]))


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
        check_int(self.count, "count", low=1)


def merged(entry: LedgerEntry, count: int) -> LedgerEntry:
    """``entry`` with ``count`` more runs, without re-validating its (already valid) event."""
    out = object.__new__(LedgerEntry)
    object.__setattr__(out, "label", entry.label)
    object.__setattr__(out, "event", entry.event)
    object.__setattr__(out, "count", entry.count + count)
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
    if isinstance(event, GaussianDpEvent):
        check_real(event.noise_multiplier, "noise_multiplier", low=0.0, allow_inf=True)
    elif isinstance(event, ZCDpEvent):
        check_real(event.rho, "rho", low=0.0, allow_inf=True)
        check_real(event.xi, "xi", low=0.0)
    elif isinstance(event, BoundedRangeDpEvent):
        check_real(event.epsilon0, "epsilon0", low=0.0, allow_inf=True)
    else:
        raise UnsupportedEventError(
            f"`event` of type {type(event).__name__} is not supported: the ledger composes "
            f"GaussianDpEvent, ZCDpEvent and BoundedRangeDpEvent (also inside ComposedDpEvent and "
            f"SelfComposedDpEvent); got {event!r}"
        )
    return event


def event_rho(event: DpEvent) -> tuple[float, float]:
    """(ρ, ξ) of one event as (ξ, ρ)-zCDP."""
    _check_event(event)
    if isinstance(event, GaussianDpEvent):
        z = event.noise_multiplier
        return (math.inf if z == 0 else 0.5 / z / z), 0.0  # not z*z: it underflows to 0
    if isinstance(event, ZCDpEvent):
        return float(event.rho), float(event.xi)
    return event.epsilon0 * event.epsilon0 / 8.0, 0.0  # ∞ rather than OverflowError


def event_rdp(event: DpEvent, orders: np.ndarray = ORDERS) -> np.ndarray:
    """The event's RDP curve at ``orders``."""
    _check_event(event)
    orders = np.asarray(orders, float)
    if isinstance(event, GaussianDpEvent):
        z = event.noise_multiplier
        return np.full(orders.shape, math.inf) if z == 0 else orders / 2.0 / z / z
    if isinstance(event, ZCDpEvent):
        return event.xi + event.rho * orders
    if math.isinf(event.epsilon0):
        return np.full(orders.shape, math.inf)
    return np.asarray(bounded_range_rdp(orders, event.epsilon0))


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
        rdp = sum(e.count * event_rdp(e.event) for e in entries)
        if not np.isfinite(rdp).any():
            return math.inf
        return cks_epsilon_from_rdp(ORDERS, rdp, delta)
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    acct = PLDAccountant()
    for e in entries:
        if not isinstance(e.event, GaussianDpEvent):
            raise UnsupportedEventError(
                f"the 'pld' accountant supports Gaussian events only; entry {e.label!r} is "
                f"{type(e.event).__name__} (use accountant='rdp' or 'zcdp')"
            )
        if e.event.noise_multiplier == 0:
            return math.inf
        if math.isinf(e.event.noise_multiplier):
            continue  # infinite noise releases nothing
        if e.event.noise_multiplier > PLD_MAX_MULTIPLIER:
            raise UnsupportedEventError(
                f"the 'pld' accountant cannot represent a Gaussian with noise multiplier "
                f"{e.event.noise_multiplier:g} > {PLD_MAX_MULTIPLIER:g} (entry {e.label!r}; its "
                f"variance overflows): use accountant='rdp' or 'zcdp'"
            )
        acct.compose(e.event, e.count)
    eps = float(acct.get_epsilon(delta))
    if math.isinf(eps):  # finite noise has finite ε: the accountant's tail truncation at work
        raise UnsupportedEventError(
            f"the 'pld' accountant cannot resolve `delta` = {delta:g}: dp-accounting's PLD "
            f"truncates tails below about 1e-15 and reports ε = ∞ (use accountant='rdp' or "
            f"'zcdp', or a larger delta)"
        )
    return eps
