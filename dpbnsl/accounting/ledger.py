"""Privacy events and the ledger that composes them.

Events are dp-accounting ``DpEvent`` objects: ``GaussianDpEvent(noise_multiplier)`` with the
multiplier σ/Δ taken against the release's *own* ℓ2-sensitivity Δ under the neighbouring relation
in force (so it is accounted as a sensitivity-1 Gaussian), ``ZCDpEvent(rho, xi)``, and this module's
:class:`BoundedRangeDpEvent` (an ε₀-bounded-range selection such as Gumbel-max).

Accountants, ε(δ) of everything recorded:

- ``"zcdp"``: total ρ (and ξ), Bun–Steinke conversion ε = ξ + ρ + 2√(ρ ln 1/δ) — the seed paper's;
- ``"rdp"``: the composed RDP curve on a grid of orders (Gaussian α/(2z²), zCDP ξ + ρα, the exact
  bounded-range curve for selections), converted with dp-accounting's CKS conversion;
- ``"pld"``: dp-accounting's privacy-loss-distribution accountant; Gaussian events only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import attr
import numpy as np
import pandas as pd
from dp_accounting import GaussianDpEvent, UnsupportedEventError, ZCDpEvent
from dp_accounting.dp_event import DpEvent
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

from .._validation import check_choice, check_int, check_real
from ..mechanisms import BoundedRangeDpEvent
from .zcdp import bounded_range_rdp, cks_epsilon_from_rdp, rho_to_epsilon

__all__ = [
    "BoundedRangeDpEvent",
    "BudgetExceededError",
    "UnsupportedEventError",
    "LedgerEntry",
    "PrivacyLedger",
    "ORDERS",
    "event_rho",
    "event_rdp",
    "compose_epsilon",
]

Accountant = Literal["zcdp", "rdp", "pld"]
ACCOUNTANTS = ("zcdp", "rdp", "pld")
#: Rényi orders of the "rdp" accountant: dp-accounting's defaults plus a geometric tail, so that the
#: small per-step losses of long runs (optimal order in the thousands) are covered.
ORDERS = np.unique(np.concatenate([np.asarray(DEFAULT_RDP_ORDERS, float),
                                   np.geomspace(1.05, 1e6, 240)]))


class BudgetExceededError(ValueError):
    """Recording the event would take the ledger over its (ε, δ) budget; nothing was recorded."""


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


def _merged(entry: LedgerEntry, count: int) -> LedgerEntry:
    """``entry`` with ``count`` more runs, without re-validating its (already valid) event."""
    merged = object.__new__(LedgerEntry)
    object.__setattr__(merged, "label", entry.label)
    object.__setattr__(merged, "event", entry.event)
    object.__setattr__(merged, "count", entry.count + count)
    return merged


def _check_event(event) -> DpEvent:
    if isinstance(event, GaussianDpEvent):
        check_real(event.noise_multiplier, "noise_multiplier", low=0.0, allow_inf=True)
    elif isinstance(event, ZCDpEvent):
        check_real(event.rho, "rho", low=0.0, allow_inf=True)
        check_real(event.xi, "xi", low=0.0)
    elif isinstance(event, BoundedRangeDpEvent):
        check_real(event.epsilon0, "epsilon0", low=0.0, allow_inf=True)
    else:
        raise UnsupportedEventError(
            f"`event` must be a GaussianDpEvent, ZCDpEvent or BoundedRangeDpEvent; got {event!r}")
    return event


def event_rho(event: DpEvent) -> tuple[float, float]:
    """(ρ, ξ) of one event as (ξ, ρ)-zCDP."""
    _check_event(event)
    if isinstance(event, GaussianDpEvent):
        z = event.noise_multiplier
        return (math.inf if z == 0 else 0.5 / (z * z)), 0.0
    if isinstance(event, ZCDpEvent):
        return float(event.rho), float(event.xi)
    return event.epsilon0 ** 2 / 8.0, 0.0


def event_rdp(event: DpEvent, orders: np.ndarray = ORDERS) -> np.ndarray:
    """The event's RDP curve at ``orders``."""
    _check_event(event)
    orders = np.asarray(orders, float)
    if isinstance(event, GaussianDpEvent):
        z = event.noise_multiplier
        return np.full(orders.shape, math.inf) if z == 0 else orders / (2.0 * z * z)
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
                f"{type(e.event).__name__} (use accountant='rdp' or 'zcdp')")
        if e.event.noise_multiplier == 0:
            return math.inf
        if math.isinf(e.event.noise_multiplier):
            continue  # infinite noise releases nothing
        acct.compose(e.event, e.count)
    return float(acct.get_epsilon(delta))


class PrivacyLedger:
    """An append-only record of (label, event, count) with ε(δ) under a chosen accountant.

    With ``budget=(epsilon, delta)`` it is a privacy filter: :meth:`record` first computes the ε of
    everything recorded plus the new event under ``accountant``, and raises
    :class:`BudgetExceededError` without recording when it exceeds the budget.

    Examples
    --------
    >>> from dp_accounting import GaussianDpEvent
    >>> ledger = PrivacyLedger()
    >>> ledger.record("gradient", GaussianDpEvent(10.0), count=100)
    >>> round(ledger.rho(), 6), ledger.epsilon(1e-5, accountant="zcdp") > ledger.epsilon(1e-5)
    (0.5, True)
    """

    def __init__(self, *, budget: tuple[float, float] | None = None,
                 accountant: Accountant = "rdp") -> None:
        self.accountant = check_choice(accountant, "accountant", ACCOUNTANTS)
        if budget is not None:
            if not (isinstance(budget, Sequence) and len(budget) == 2):
                raise TypeError(f"`budget` must be a pair (epsilon, delta); got {budget!r}")
            budget = (check_real(budget[0], "epsilon", low=0.0, low_open=True),
                      check_real(budget[1], "delta", low=0.0, high=1.0, low_open=True,
                                 high_open=True))
        self.budget = budget
        self._entries: list[LedgerEntry] = []
        self._index: dict[tuple[str, DpEvent], int] = {}

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def record(self, label: str, event: DpEvent, count: int = 1) -> None:
        """Record ``count`` independent runs of the mechanism described by ``event``. A record
        repeating an earlier one (same label and event) increases that entry's count."""
        key = (label, event)
        i = self._index.get(key) if isinstance(label, str) else None
        if i is None:
            entry = LedgerEntry(label, event, count)  # validates label, event and count
        else:  # label and event were validated when first recorded: only the count is new
            count = check_int(count, "count", low=1)
            entry = _merged(self._entries[i], count)
        if self.budget is not None:
            eps_budget, delta = self.budget
            prospective = list(self._entries)
            if i is None:
                prospective.append(entry)
            else:
                prospective[i] = entry
            eps = compose_epsilon(prospective, delta, self.accountant)
            if eps > eps_budget:
                raise BudgetExceededError(
                    f"recording {count} × {event!r} ({label!r}) would spend ε = {eps:.6g} > "
                    f"budget {eps_budget:g} at δ = {delta:g} ({self.accountant}); nothing recorded")
        # count = k composes exactly as k records and composition is commutative, so a repeat of
        # an existing (label, event) only increases that entry's count
        if i is None:
            self._index[key] = len(self._entries)
            self._entries.append(entry)
        else:
            self._entries[i] = entry

    def rho(self) -> float:
        """Total ρ of the composition (zCDP; ξ-terms excluded, see :meth:`xi`)."""
        return float(sum(e.count * event_rho(e.event)[0] for e in self._entries))

    def xi(self) -> float:
        return float(sum(e.count * event_rho(e.event)[1] for e in self._entries))

    def epsilon(self, delta: float, *, accountant: Accountant | None = None) -> float:
        """ε(δ) of everything recorded (default accountant: the ledger's)."""
        return compose_epsilon(self._entries, delta, accountant or self.accountant)

    def summary(self) -> pd.DataFrame:
        """One row per label: event type and parameter, total count, ρ (zCDP)."""
        rows = {}
        for e in self._entries:
            name = type(e.event).__name__
            param = {"GaussianDpEvent": "noise_multiplier", "ZCDpEvent": "rho",
                     "BoundedRangeDpEvent": "epsilon0"}[name]
            key = (e.label, name, getattr(e.event, param))
            row = rows.setdefault(key, {"label": e.label, "event": name, "parameter": param,
                                        "value": getattr(e.event, param), "count": 0, "rho": 0.0})
            row["count"] += e.count
            row["rho"] += e.count * event_rho(e.event)[0]
        cols = ["label", "event", "parameter", "value", "count", "rho"]
        return pd.DataFrame(list(rows.values()), columns=cols)

    def to_json(self) -> str:
        def enc(ev: DpEvent) -> dict:
            return {"type": type(ev).__name__, **attr.asdict(ev)}

        return json.dumps({"accountant": self.accountant, "budget": self.budget,
                           "entries": [{"label": e.label, "count": e.count, "event": enc(e.event)}
                                       for e in self._entries]})

    @classmethod
    def from_json(cls, text: str) -> "PrivacyLedger":
        data = json.loads(text)
        types = {"GaussianDpEvent": GaussianDpEvent, "ZCDpEvent": ZCDpEvent,
                 "BoundedRangeDpEvent": BoundedRangeDpEvent}
        ledger = cls(accountant=data["accountant"],
                     budget=tuple(data["budget"]) if data["budget"] else None)
        for e in data["entries"]:
            fields = dict(e["event"])
            kind = fields.pop("type")
            if kind not in types:
                raise UnsupportedEventError(f"unknown event type {kind!r} in the JSON ledger")
            ledger.record(e["label"], types[kind](**fields), int(e["count"]))
        return ledger

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        b = f", budget={self.budget}" if self.budget else ""
        return f"PrivacyLedger({len(self)} entries, ρ={self.rho():.6g}{b})"
