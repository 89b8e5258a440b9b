"""Exact JSON encoding of the values a result carries, with arrays kept aside for an ``.npz`` file.

:func:`encode` turns a value into JSON-ready data and collects its arrays into ``arrays`` (name →
ndarray); :func:`decode` inverts it. Round trips are exact: floats are written with ``repr`` (or
tagged when not finite), arrays keep their dtype and bits, tuples stay tuples, dictionaries keep
non-string keys, and this package's frozen dataclasses (results, noise scales, privacy summaries),
ledgers, transcripts and DataFrames are rebuilt. Tags are one-key objects whose key starts with
``$``; a plain dictionary with such a key is itself tagged, so nothing is ambiguous.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CodecError", "decode", "encode"]


#: the classes a result may carry as tagged dataclasses: written by name, rebuilt only from this
#: list (reading a file never imports or builds anything else)
DATACLASSES = (
    "dpbnsl.learners.result:LearnResult",
    "dpbnsl.accounting.summary:PrivacySummary",
    "dpbnsl.accounting.calibrate_pgcd:NoiseScales",
    "dpbnsl.accounting.calibrate_pgcd:LaplaceScales",
    "dpbnsl.metrics:Accuracy",
    "dpbnsl.learners.constraint.priv_pc:PrivPCPlan",
)


class CodecError(ValueError):
    """A value that cannot be written, or data that was not written by :func:`encode`."""


def _store(a: np.ndarray, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    if a.dtype == object:
        return {"$objarray": {"shape": list(a.shape), "items": [encode(v, arrays) for v in a.ravel()]}}
    key = f"a{len(arrays)}"
    arrays[key] = np.array(a)  # a writable copy: np.savez keeps dtype, shape and bits
    return {"$array": key}


def _index(index: pd.Index, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(index, pd.RangeIndex):
        return {"range": [index.start, index.stop, index.step]}
    if type(index) is not pd.Index:
        raise CodecError(f"cannot write a DataFrame indexed by a {type(index).__name__}")
    return {"values": _store(index.to_numpy(), arrays)}


def _unindex(data: Any, arrays: Mapping[str, np.ndarray]) -> pd.Index:
    if "range" in data:
        return pd.RangeIndex(*data["range"])
    return pd.Index(_array(data["values"], arrays))


def encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """JSON-ready data for ``value``; arrays go into ``arrays`` (see the module docstring)."""
    from ..accounting.ledger import PrivacyLedger
    from ..federation import Dense, Masked, Sparse, Transcript

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, np.integer):
        return value
    if isinstance(value, float) and not isinstance(value, np.floating):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, np.generic):
        return {"$scalar": {"dtype": value.dtype.str, "value": encode(value.item(), arrays)}}
    if isinstance(value, np.ndarray):
        return _store(value, arrays)
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [encode(v, arrays) for v in value]
    if isinstance(value, (set, frozenset)):
        kind = "$frozenset" if isinstance(value, frozenset) else "$set"
        return {kind: [encode(v, arrays) for v in sorted(value, key=repr)]}
    if isinstance(value, pd.DataFrame):
        return {
            "$frame": {
                "columns": _index(value.columns, arrays),
                "index": _index(value.index, arrays),
                "data": [_store(value[c].to_numpy(), arrays) for c in value.columns],
            }
        }
    if isinstance(value, PrivacyLedger):
        return {"$ledger": json.loads(value.to_json())}
    if isinstance(value, Transcript):
        msgs = []
        for m in value:
            p = m.payload
            payload = (
                {"sparse": [list(p.shape), _store(p.index, arrays), _store(p.values, arrays)]}
                if isinstance(p, Sparse)
                else {"masked": [p.size, p.bits]}
                if isinstance(p, Masked)
                else {"dense": _store(p.values, arrays)}
            )
            msgs.append([m.round, m.sender, m.receiver, m.kind, payload])
        return {"$transcript": msgs}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if f"{cls.__module__}:{cls.__qualname__}" not in DATACLASSES or isinstance(value, (Dense, Sparse)):
            raise CodecError(f"cannot write a {cls.__module__}.{cls.__qualname__}")
        fields = {f.name: encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}
        return {"$dataclass": {"type": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v, arrays) for k, v in value.items()}
        return {"$dict": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    raise CodecError(f"cannot write a value of type {type(value).__name__}: {value!r}"[:300])


def decode(data: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """The value :func:`encode` wrote (``arrays``: the arrays it collected)."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v, arrays) for v in data]
    if not isinstance(data, dict):
        raise CodecError(f"unexpected JSON value {data!r}"[:300])
    if len(data) == 1:
        ((tag, body),) = data.items()
        if tag.startswith("$"):
            return _decode_tagged(tag, body, arrays)
    return {k: decode(v, arrays) for k, v in data.items()}


def _array(ref: Any, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    if isinstance(ref, dict) and "$objarray" in ref:
        body = ref["$objarray"]
        out = np.empty(len(body["items"]), dtype=object)
        out[:] = [decode(v, arrays) for v in body["items"]]
        return out.reshape(body["shape"])
    try:
        return np.array(arrays[ref["$array"]])
    except (KeyError, TypeError):
        raise CodecError(f"missing array {ref!r}") from None


def _decode_tagged(tag: str, body: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    from ..accounting.ledger import PrivacyLedger
    from ..federation import Dense, Masked, Message, Sparse, Transcript

    if tag == "$float":
        return float(body)
    if tag == "$scalar":
        return np.dtype(body["dtype"]).type(decode(body["value"], arrays))
    if tag in ("$array", "$objarray"):
        return _array({tag: body}, arrays)
    if tag == "$tuple":
        return tuple(decode(v, arrays) for v in body)
    if tag == "$set":
        return {decode(v, arrays) for v in body}
    if tag == "$frozenset":
        return frozenset(decode(v, arrays) for v in body)
    if tag == "$dict":
        return {decode(k, arrays): decode(v, arrays) for k, v in body}
    if tag == "$frame":
        data = {i: _array(ref, arrays) for i, ref in enumerate(body["data"])}
        frame = pd.DataFrame(data, index=_unindex(body["index"], arrays))
        frame.columns = _unindex(body["columns"], arrays)
        return frame
    if tag == "$ledger":
        return PrivacyLedger.from_json(json.dumps(body))
    if tag == "$transcript":
        msgs = []
        for rnd, sender, receiver, kind, payload in body:
            if "sparse" in payload:
                shape, index, values = payload["sparse"]
                p: Any = Sparse(tuple(shape), _array(index, arrays), _array(values, arrays))
            elif "masked" in payload:
                p = Masked(int(payload["masked"][0]), int(payload["masked"][1]))
            else:
                p = Dense(_array(payload["dense"], arrays))
            msgs.append(Message(rnd, sender, receiver, kind, p))
        return Transcript(msgs)
    if tag == "$dataclass":
        if body.get("type") not in DATACLASSES:
            raise CodecError(f"refusing to build {body.get('type')!r}: not a class a result carries")
        module, _, name = str(body["type"]).partition(":")
        cls: Any = getattr(importlib.import_module(module), name)
        fields = {k: decode(v, arrays) for k, v in dict(body["fields"]).items()}
        declared = {f.name for f in dataclasses.fields(cls) if f.init}
        if not set(fields) <= declared:
            raise CodecError(f"{name} has no fields {sorted(set(fields) - declared)}")
        return cls(**fields)
    raise CodecError(f"unknown tag {tag!r}")
