"""What goes into Flower's records: protocol payloads, requests, uploads and a participant's saved
state, converted exactly (arrays travel as numpy's own format, so bits are kept)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, RecordDict

from ..federation import Dense, Masked, Payload, Sparse
from ..federation.secure_sum import SecureShare

__all__ = ["put_payload", "get_payload", "put_state", "get_state"]

STATE_ARRAYS, STATE_CONFIG = "dpbnsl.state.arrays", "dpbnsl.state.config"


def put_payload(payload: Payload | None) -> ArrayRecord:
    """A payload as an ArrayRecord (dense: its values; sparse: shape, flat index and values)."""
    if payload is None:
        return ArrayRecord({})
    if isinstance(payload, Dense):
        return ArrayRecord({"values": Array.from_numpy_ndarray(np.array(payload.values))})
    if isinstance(payload, (Masked, SecureShare)):
        raise ValueError("a masked share is only ever summed by secure aggregation; it has no record")
    return ArrayRecord(
        {
            "shape": Array.from_numpy_ndarray(np.array(payload.shape, dtype=np.int64)),
            "index": Array.from_numpy_ndarray(np.array(payload.index)),
            "values": Array.from_numpy_ndarray(np.array(payload.values)),
        }
    )


def get_payload(record: ArrayRecord) -> Payload | None:
    """The payload :func:`put_payload` stored (None for an empty record)."""
    if not record:
        return None
    if "index" in record:
        shape = tuple(int(s) for s in record["shape"].numpy())
        return Sparse(shape, record["index"].numpy(), record["values"].numpy())
    return Dense(record["values"].numpy())


def put_state(store: RecordDict, state: Mapping[str, Any]) -> None:
    """Save a participant's :meth:`state_dict` into ``store`` (a node's ``context.state``): arrays
    in one ArrayRecord, everything else (numbers, strings, None) as one JSON string (exact for
    floats: JSON keeps their repr)."""
    arrays = {
        k: Array.from_numpy_ndarray(np.asarray(v)) for k, v in state.items() if isinstance(v, np.ndarray)
    }
    rest = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    store[STATE_ARRAYS] = ArrayRecord(arrays)
    store[STATE_CONFIG] = ConfigRecord({"json": json.dumps(rest)})


def get_state(store: RecordDict) -> dict[str, Any]:
    """The state :func:`put_state` saved in ``store`` ({} when nothing was saved yet)."""
    if STATE_CONFIG not in store:
        return {}
    out: dict[str, Any] = json.loads(str(store[STATE_CONFIG]["json"]))
    out.update({k: a.numpy() for k, a in store[STATE_ARRAYS].items()})
    return out
