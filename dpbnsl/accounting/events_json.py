"""Privacy events to and from JSON-ready dictionaries: ``{"type": <class name>, <fields>}``, with
nested events (inside sampled, composed and self-composed events) written the same way."""

from __future__ import annotations

from typing import Any

import attr
import numpy as np
from dp_accounting import dp_event
from dp_accounting.dp_event import DpEvent

from ..mechanisms import BoundedRangeDpEvent
from ..mechanisms.distributed import SkellamDpEvent
from .compose import UnsupportedEventError

__all__ = ["event_from_dict", "event_to_dict"]

#: the event types a JSON ledger may name
_TYPES: dict[str, type[DpEvent]] = {
    t.__name__: t
    for t in (
        dp_event.GaussianDpEvent,
        dp_event.ZCDpEvent,
        dp_event.LaplaceDpEvent,
        dp_event.RandomizedResponseDpEvent,
        dp_event.PoissonSampledDpEvent,
        dp_event.SampledWithoutReplacementDpEvent,
        dp_event.ComposedDpEvent,
        dp_event.SelfComposedDpEvent,
        dp_event.NoOpDpEvent,
        BoundedRangeDpEvent,
        SkellamDpEvent,
    )
}


def event_to_dict(event: DpEvent) -> dict[str, Any]:
    """``{"type": ..., **fields}`` of an attrs event, nested events included."""
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in attr.fields(type(event)):
        value = getattr(event, f.name)
        if isinstance(value, DpEvent):
            value = event_to_dict(value)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, DpEvent) for v in value):
            value = [event_to_dict(v) for v in value]
        elif isinstance(value, np.generic):  # numpy parameters: JSON has Python numbers only
            value = value.item()
        out[f.name] = value
    return out


def event_from_dict(data: Any, where: str = "`event`") -> DpEvent:
    """The event :func:`event_to_dict` wrote; anything else raises ``ValueError`` naming ``where``
    (:class:`~dpbnsl.accounting.UnsupportedEventError` for an unknown type)."""
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"{where} must be an object with a 'type'; got {data!r}")
    fields = dict(data)
    kind = fields.pop("type")
    if kind not in _TYPES:
        raise UnsupportedEventError(f"{where}: unknown event type {kind!r} (known: {', '.join(_TYPES)})")
    for name, value in fields.items():
        if isinstance(value, dict):
            fields[name] = event_from_dict(value, f"{where}.{name}")
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            fields[name] = [event_from_dict(v, f"{where}.{name}[{i}]") for i, v in enumerate(value)]
    try:
        return _TYPES[kind](**fields)
    except TypeError:
        raise ValueError(f"{where} has bad fields for {kind}: {fields!r}") from None
