"""The privacy ledger: an append-only record of releases, with ε(δ) and an optional budget filter.

What the events mean and how the accountants compose them is in :mod:`dpbnsl.accounting.compose`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from dp_accounting.dp_event import ComposedDpEvent, DpEvent, NoOpDpEvent, SelfComposedDpEvent

from .._validation import check_choice, check_int, check_real
from .compose import (
    ACCOUNTANTS,
    NEIGHBOURING,
    SAMPLED_RELATION,
    Accountant,
    LedgerEntry,
    UnsupportedEventError,
    compose_epsilon,
    event_rho,
    flatten_event,
    merged,
)
from .events_json import event_from_dict, event_to_dict

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BudgetExceededError",
    "PrivacyLedger",
]


class BudgetExceededError(ValueError):
    """Recording the event would take the ledger over its (ε, δ) budget; nothing was recorded."""


class PrivacyLedger:
    """An append-only record of (label, event, count) with ε(δ) under a chosen accountant.

    With ``budget=(epsilon, delta)`` it is a privacy filter: :meth:`record` first computes the ε of
    everything recorded plus the new event under ``accountant``, and raises
    :class:`BudgetExceededError` without recording when it exceeds the budget.

    ``neighbouring`` (``"replace-one"`` or ``"add-remove"``; None: not stated) is the relation the
    recorded releases are stated for. A sampled event amplifies under one relation only (Poisson:
    add/remove-one; without replacement: replace-one), so a ledger that states its relation
    refuses sampled events of the other. The private learners' ledgers state ``"replace-one"``.

    Examples
    --------
    >>> from dp_accounting import GaussianDpEvent
    >>> ledger = PrivacyLedger()
    >>> ledger.record("gradient", GaussianDpEvent(10.0), count=100)
    >>> round(ledger.rho(), 6), ledger.epsilon(1e-5, accountant="zcdp") > ledger.epsilon(1e-5)
    (0.5, True)
    """

    def __init__(
        self,
        *,
        budget: tuple[float, float] | None = None,
        accountant: Accountant = "rdp",
        neighbouring: str | None = None,
    ) -> None:
        self.accountant = cast(Accountant, check_choice(accountant, "accountant", ACCOUNTANTS))
        if neighbouring is not None:
            check_choice(neighbouring, "neighbouring", NEIGHBOURING)
        self.neighbouring = neighbouring
        if budget is not None:
            if not (isinstance(budget, Sequence) and len(budget) == 2):
                raise TypeError(f"`budget` must be a pair (epsilon, delta); got {budget!r}")
            budget = (
                check_real(budget[0], "epsilon", low=0.0, low_open=True),
                check_real(budget[1], "delta", low=0.0, high=1.0, low_open=True, high_open=True),
            )
        self.budget = budget
        self._entries: list[LedgerEntry] = []
        self._index: dict[tuple[str, DpEvent], int] = {}

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def record(self, label: str, event: DpEvent, count: int = 1) -> None:
        """Record ``count`` independent runs of the mechanism described by ``event``. A record
        repeating an earlier one (same label and event) increases that entry's count.

        dp-accounting's ``ComposedDpEvent`` and ``SelfComposedDpEvent`` are flattened into their
        parts (all recorded, or none when the budget would be exceeded); ``NoOpDpEvent`` records
        nothing. The leaf events may be this package's (``GaussianDpEvent``, ``ZCDpEvent``,
        ``BoundedRangeDpEvent``, and ``RandomizedResponseDpEvent`` for pure-DP releases) or a user's
        ``LaplaceDpEvent``, ``PoissonSampledDpEvent`` and
        ``SampledWithoutReplacementDpEvent``; other types raise :class:`UnsupportedEventError`.
        Which accountants support which events: :mod:`dpbnsl.accounting.compose`."""
        if isinstance(event, (ComposedDpEvent, SelfComposedDpEvent, NoOpDpEvent)):
            if not isinstance(label, str) or not label:
                raise TypeError(f"`label` must be a non-empty string; got {label!r}")
            count = check_int(count, "count", low=1)
            leaves = flatten_event(event, count)
            for e, _ in leaves:
                self._check_relation(e)
            self._record_all([(label, e, c) for e, c in leaves])
            return
        self._check_relation(event)
        key = (label, event)
        try:
            i = self._index.get(key) if isinstance(label, str) else None
        except TypeError:  # an unhashable event: invalid, and LedgerEntry below says why
            i = None
        if i is None:
            entry = LedgerEntry(label, event, count)  # validates label, event and count
        else:  # label and event were validated when first recorded: only the count is new
            count = check_int(count, "count", low=1)
            entry = merged(self._entries[i], count)
        if self.budget is not None:
            prospective = list(self._entries)
            if i is None:
                prospective.append(entry)
            else:
                prospective[i] = entry
            self._check_budget(prospective, f"{count} × {event!r} ({label!r})")
        # count = k composes exactly as k records and composition is commutative, so a repeat of
        # an existing (label, event) only increases that entry's count
        if i is None:
            self._index[key] = len(self._entries)
            self._entries.append(entry)
        else:
            self._entries[i] = entry

    def _check_relation(self, event: DpEvent) -> None:
        needs = SAMPLED_RELATION.get(type(event))
        if needs is not None and self.neighbouring is not None and needs != self.neighbouring:
            raise UnsupportedEventError(
                f"{type(event).__name__} is accounted under {needs} neighbours, but this "
                f"ledger's releases are stated for {self.neighbouring}: one ε cannot cover both"
            )

    def _record_all(self, records: list[tuple[str, DpEvent, int]]) -> None:
        """Record several (label, event, count) at once: all of them, or none."""
        entries, index = self._prospective(records)
        if self.budget is not None and records:
            self._check_budget(entries, f"{len(records)} composed event(s) ({records[0][0]!r})")
        self._entries, self._index = entries, index

    def _prospective(
        self, records: Sequence[tuple[str, DpEvent, int]]
    ) -> tuple[list[LedgerEntry], dict[tuple[str, DpEvent], int]]:
        entries = list(self._entries)
        index = dict(self._index)
        for label, event, count in records:
            entry = LedgerEntry(label, event, count)
            i = index.get((label, event))
            if i is None:
                index[(label, event)] = len(entries)
                entries.append(entry)
            else:
                entries[i] = merged(entries[i], count)
        return entries, index

    def fits(self, records: Sequence[tuple[str, DpEvent, int]]) -> bool:
        """Whether recording every ``(label, event, count)`` of ``records`` would keep the ledger
        within its budget (always True without one). Records nothing. A caller about to make
        many releases checks them at once here, then records them together.

        Examples
        --------
        >>> from dp_accounting import GaussianDpEvent
        >>> ledger = PrivacyLedger(budget=(1.0, 1e-5))
        >>> ledger.fits([("g", GaussianDpEvent(50.0), 10)]), ledger.fits([("g", GaussianDpEvent(5.0), 10)])
        (True, False)
        """
        if self.budget is None:
            return True
        entries, _ = self._prospective(records)
        eps_budget, delta = self.budget
        return compose_epsilon(entries, delta, self.accountant) <= eps_budget

    def _check_budget(self, prospective: list[LedgerEntry], what: str) -> None:
        assert self.budget is not None  # the callers check it first
        eps_budget, delta = self.budget
        eps = compose_epsilon(prospective, delta, self.accountant)
        if eps > eps_budget:
            raise BudgetExceededError(
                f"recording {what} would spend ε = {eps:.6g} > budget {eps_budget:g} at "
                f"δ = {delta:g} ({self.accountant}); nothing recorded"
            )

    def rho(self) -> float:
        """Total ρ of the composition (zCDP; ξ-terms excluded, see :meth:`xi`). A ledger holding
        sampled events has no zCDP bound: :class:`UnsupportedEventError`."""
        return float(sum(e.count * event_rho(e.event)[0] for e in self._entries))

    def xi(self) -> float:
        return float(sum(e.count * event_rho(e.event)[1] for e in self._entries))

    def epsilon(self, delta: float, *, accountant: Accountant | None = None) -> float:
        """ε(δ) of everything recorded (default accountant: the ledger's)."""
        return compose_epsilon(self._entries, delta, accountant or self.accountant)

    def summary(self) -> pd.DataFrame:
        """One row per label and event: event type, its parameter, total count and ρ (zCDP; NaN for
        sampled events, which have no zCDP bound)."""
        import pandas as pd

        rows: dict[tuple[str, DpEvent], dict[str, Any]] = {}
        for e in self._entries:
            param, value = _parameter(e.event)
            row = rows.setdefault(
                (e.label, e.event),
                {
                    "label": e.label,
                    "event": type(e.event).__name__,
                    "parameter": param,
                    "value": value,
                    "count": 0,
                    "rho": 0.0,
                },
            )
            row["count"] += e.count
            try:
                row["rho"] += e.count * event_rho(e.event)[0]
            except UnsupportedEventError:
                row["rho"] = math.nan
        cols = ["label", "event", "parameter", "value", "count", "rho"]
        return pd.DataFrame(list(rows.values()), columns=cols)

    def as_dp_event(self) -> DpEvent:
        """Everything recorded as one dp-accounting event: a ``ComposedDpEvent`` of the entries
        (``SelfComposedDpEvent(event, count)`` for repeated ones; ``NoOpDpEvent`` when empty), to
        compose in an accountant with other events — for a DP-PGCD ledger, one that knows
        bounded-range selections (:class:`~dpbnsl.accounting.BoundedRangeRdpAccountant`).

        Examples
        --------
        >>> from dp_accounting import GaussianDpEvent
        >>> ledger = PrivacyLedger()
        >>> ledger.record("gradient", GaussianDpEvent(10.0), count=3)
        >>> ledger.as_dp_event()
        ComposedDpEvent(events=[SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=10.0), count=3)])
        """
        if not self._entries:
            return NoOpDpEvent()
        return ComposedDpEvent(
            [e.event if e.count == 1 else SelfComposedDpEvent(e.event, e.count) for e in self._entries]
        )

    def to_json(self) -> str:
        """The ledger as JSON (events with their type names, nested events included)."""
        return json.dumps(
            {
                "accountant": self.accountant,
                "budget": self.budget,
                "neighbouring": self.neighbouring,
                "entries": [
                    {"label": e.label, "count": e.count, "event": event_to_dict(e.event)}
                    for e in self._entries
                ],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """The ledger written by :meth:`to_json`; anything else raises ``ValueError`` (or
        ``TypeError`` for a non-string) naming what is wrong."""
        if not isinstance(text, (str, bytes, bytearray)):
            raise TypeError(f"`text` must be a JSON string; got {type(text).__name__}")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"`text` is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not {"accountant", "entries"} <= set(data):
            raise ValueError(
                "`text` is not a PrivacyLedger JSON object (it needs the keys "
                "'accountant', 'budget' and 'entries')"
            )
        budget = data.get("budget")
        if budget is not None and not isinstance(budget, list):
            raise ValueError(f"`text`: 'budget' must be null or [epsilon, delta]; got {budget!r}")
        ledger = cls(
            accountant=data["accountant"],
            budget=tuple(budget) if budget else None,
            neighbouring=data.get("neighbouring"),
        )
        entries = data["entries"]
        if not isinstance(entries, list):
            raise ValueError(f"`text`: 'entries' must be a list; got {type(entries).__name__}")
        for n, e in enumerate(entries):
            try:
                label, count, fields = e["label"], e["count"], e["event"]
            except (KeyError, TypeError):
                raise ValueError(
                    f"`text`: entry {n} must have 'label', 'count' and 'event' (with its 'type'); got {e!r}"
                ) from None
            ledger.record(label, event_from_dict(fields, f"`text`: entry {n}"), count)
        return ledger

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        b = f", budget={self.budget}" if self.budget else ""
        try:
            rho = f"ρ={self.rho():.6g}"
        except UnsupportedEventError:
            rho = "sampled events"
        return f"PrivacyLedger({len(self)} entries, {rho}{b})"


def _parameter(event: DpEvent) -> tuple[str, Any]:
    """The name and value of the parameter that sets an event's privacy loss."""
    for name in ("noise_multiplier", "rho", "epsilon0", "sampling_probability", "noise_parameter"):
        if hasattr(event, name):
            return name, getattr(event, name)
    return "sampling_fraction", event.sample_size / event.source_dataset_size
