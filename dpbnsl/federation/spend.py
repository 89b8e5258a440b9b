"""A participant's spend across studies: the node's own ledger file.

A participant's budget is for its data, not for one study. On Flower the state a participant keeps
between messages belongs to one run, and a server can start as many runs as it likes; so a
deployed private participant also records every run's planned spend in a file on its own machine
(:class:`NodeLedger`), one per dataset (named by a hash of the data), and refuses a run whose
plan, composed with everything recorded before, would exceed its budget. The whole plan is
charged at the first release of a run, before that release is made: a run that ends early, or
fails, has still spent what it planned (its noise may already be out).

The file holds events only (never data): which mechanisms, with which noise, how many times.
Composition is sound whatever the runs were: ε(δ) of the recorded events by the RDP accountant,
or by the exact Gaussian profile when every event is a Gaussian release, whichever is smaller
(both are upper bounds).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from dp_accounting import GaussianDpEvent

from ..accounting import LedgerEntry, PrivacyLedger, compose_epsilon
from .guard import Refusal

__all__ = ["NodeLedger", "data_key", "spent_epsilon", "DEFAULT_LEDGER_DIR"]

#: Where a deployed participant keeps its ledgers unless its node config says ``ledger-dir``.
DEFAULT_LEDGER_DIR = Path("~/.dpbnsl/ledgers")

FORMAT = "dpbnsl-node-ledger"


def data_key(X: Any) -> str:
    """A key for a dataset: the SHA-256 of its shape and float64 values (the same rows in the same
    order give the same key; any other change gives another)."""
    arr = np.ascontiguousarray(np.asarray(X, dtype=float))
    h = hashlib.sha256(repr(arr.shape).encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def spent_epsilon(entries: Sequence[LedgerEntry], delta: float) -> float:
    """ε(δ) of ``entries`` as a node's ledger counts it: the smaller of two sound upper bounds (the
    RDP accountant's, and the exact Gaussian profile's when every event is Gaussian)."""
    bound = compose_epsilon(entries, delta, "rdp")
    if entries and all(isinstance(e.event, GaussianDpEvent) for e in entries):
        bound = min(bound, compose_epsilon(entries, delta, "pld"))
    return bound


class NodeLedger:
    """The participant's ledger files in ``directory`` (created when needed, for the owner only)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        import fcntl

        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.directory / f".{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self, key: str) -> dict[str, Any]:
        path = self.path(key)
        if not path.exists():
            return {
                "format": FORMAT,
                "version": 1,
                "data": key,
                "runs": [],
                "ledger": PrivacyLedger().to_json(),
            }
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            PrivacyLedger.from_json(doc["ledger"])
            if doc.get("format") != FORMAT or doc.get("data") != key:
                raise ValueError("not this dataset's ledger")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # never start from zero over a damaged record: that would reset the budget
            raise Refusal(
                f"the participant's ledger file {str(path)!r} cannot be read ({type(exc).__name__}); "
                f"it refuses to run until its operator restores or removes it"
            ) from None
        return doc

    def spent(self, key: str, delta: float) -> float:
        """ε(δ) of everything recorded for dataset ``key``."""
        ledger = PrivacyLedger.from_json(self._read(key)["ledger"])
        return spent_epsilon(ledger.entries, delta)

    def reserve(
        self,
        key: str,
        entries: Sequence[LedgerEntry],
        *,
        budget: tuple[float, float],
        participant: int,
        what: str,
    ) -> float:
        """Charge ``entries`` (a run's whole plan) to dataset ``key`` if everything recorded plus
        them stays within ``budget``; else refuse (:class:`Refusal`) and record nothing. Returns
        the ε(δ) spent on the dataset after the charge."""
        eps_budget, delta = budget
        with self._locked(key):
            doc = self._read(key)
            ledger = PrivacyLedger.from_json(doc["ledger"])
            before = spent_epsilon(ledger.entries, delta)
            for e in entries:
                ledger.record(e.label, e.event, e.count)
            after = spent_epsilon(ledger.entries, delta)
            if math.isfinite(eps_budget) and after > eps_budget:
                raise Refusal(
                    f"participant {participant}: this study ({what}) would bring its data's spend to "
                    f"ε = {after:.4g} at δ = {delta:g}, beyond its budget ({eps_budget:g}, {delta:g}) "
                    f"(ε = {before:.4g} spent by {len(doc['runs'])} earlier run(s)); nothing released"
                )
            doc["ledger"] = ledger.to_json()
            doc["runs"].append({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "what": what})
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path(key))
            return after
