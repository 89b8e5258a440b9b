"""The result every learner returns."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import readonly_copy
from ..accounting.ledger import PrivacyLedger
from ..accounting.summary import PrivacySummary
from ..federation import Transcript
from ..graphs import is_dag

__all__ = ["LearnResult"]

# typed field -> the info key the learners also fill
_FROM_INFO = {"lagged": "A", "lagged_index": "A_index", "cpdag": "cpdag", "votes": "votes"}


@dataclass(frozen=True, eq=False)
class LearnResult:
    """A learned structure.

    Attributes
    ----------
    method : str
        The learner's name (e.g. ``"fed-bnsl"``).
    W : array of shape (d, d)
        Thresholded weighted adjacency (``W[i, j] != 0`` ⇔ edge i → j); read-only.
    W_raw : array of shape (d, d)
        The estimate before thresholding; read-only.
    history : DataFrame
        One row per round (federated learners) or per outer iteration (centralised learners).
    columns : tuple of str or None
        Variable names, when the input carried them.
    transcript : Transcript or None
        Every message that crossed the wire (federated learners only).
    ledger : tuple of PrivacyLedger or None
        One privacy ledger per participant (private learners only): every release made from
        that participant's data.
    params : mapping
        The hyperparameters the learner ran with.
    info : mapping
        Learner-specific extras (e.g. ``oracle=True`` for NOTEARS-Best, per-participant results).
    privacy : PrivacySummary or None
        What a private run guarantees: (ε, δ) per participant, the neighbouring relation, the
        accountant that certifies it and what was taken as public (None for non-private runs).
        ``str(result.privacy)`` is the one-line statement.
    lagged : array of shape (p·d, d) or None
        Time-series learners: the thresholded lagged weights A (row ``i·d + a`` is variable a at
        lag i + 1); read-only.
    lagged_index : tuple of str or None
        The row labels of ``lagged``, ``"<name>(t-i)"``.
    cpdag : array of shape (d, d) or None
        Constraint-based learners: the learned equivalence class (``W`` is one DAG in it).
    votes : array of shape (d, d) or None
        Voting baselines: how many participants' fits hold each edge.

    The typed fields are filled from the learners' ``info`` entries of the same meaning
    (``"A"``, ``"A_index"``, ``"cpdag"``, ``"votes"``) when not given, so both spellings agree.
    """

    method: str
    W: np.ndarray
    W_raw: np.ndarray
    history: pd.DataFrame
    columns: tuple[str, ...] | None = None
    transcript: Transcript | None = None
    ledger: tuple[PrivacyLedger, ...] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    privacy: PrivacySummary | None = None
    lagged: np.ndarray | None = None
    lagged_index: tuple[str, ...] | None = None
    cpdag: np.ndarray | None = None
    votes: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "W", readonly_copy(self.W))
        object.__setattr__(self, "W_raw", readonly_copy(self.W_raw))
        if self.ledger is not None:
            object.__setattr__(self, "ledger", tuple(self.ledger))
        for name, key in _FROM_INFO.items():
            value = getattr(self, name)
            if value is None and key in self.info:
                value = self.info[key]
            if value is not None:
                value = (
                    tuple(str(v) for v in value)
                    if name == "lagged_index"
                    else readonly_copy(np.asarray(value))
                )
            object.__setattr__(self, name, value)

    @property
    def adjacency(self) -> np.ndarray:
        """0/1 integer adjacency of the thresholded estimate."""
        return (self.W != 0).astype(int)

    @property
    def is_dag(self) -> bool:
        return is_dag(self.W)

    @property
    def n_edges(self) -> int:
        return int(np.count_nonzero(self.W))

    @property
    def transcripts(self) -> dict[str, Transcript]:
        """Every phase's transcript, in the order the phases ran: a warm start's (``"warm"``,
        DP-Fed-Sparse-BNSL's covariance phase) and the learning rounds' (``"rounds"``, the
        :attr:`transcript`); empty for a learner that sends nothing."""
        out: dict[str, Transcript] = {}
        warm = self.info.get("warm_start")
        if isinstance(warm, dict) and isinstance(warm.get("transcript"), Transcript):
            out["warm"] = warm["transcript"]
        if self.transcript is not None:
            out["rounds"] = self.transcript
        return out

    @property
    def communication_mb(self) -> float | None:
        """Megabytes of every message of the run, all phases (the one figure every report
        prints; per phase: :attr:`transcripts`); None for a learner that sends nothing."""
        parts = self.transcripts
        return None if not parts else float(sum(t.total_mb for t in parts.values()))

    def communication_text(self) -> str:
        """``"0.304 MB"``, with the phases when there are several: ``"0.304 MB (warm start 0.271
        + rounds 0.033)"``."""
        total, parts = self.communication_mb, self.transcripts
        if total is None:
            return "none"
        text = f"{total:.3f} MB"
        if len(parts) > 1:
            names = {"warm": "warm start", "rounds": "rounds"}
            text += " (" + " + ".join(f"{names.get(k, k)} {t.total_mb:.3f}" for k, t in parts.items()) + ")"
        return text

    def to_frame(self, *, raw: bool = False) -> pd.DataFrame:
        """The (raw or thresholded) weights as a DataFrame labelled by variable names."""
        names = self.names
        return pd.DataFrame(np.array(self.W_raw if raw else self.W), index=names, columns=names)

    def save(self, path: str | os.PathLike[str], *, truth: Any = None, overwrite: bool = False) -> Path:
        """Write this result as a run bundle (a directory; see :mod:`dpbnsl.io.bundle`) that
        :meth:`load` reads back exactly: weights, history, transcript, ledgers, privacy
        statement, params, info and the package versions, with ``truth`` (a (d, d) matrix or
        DataFrame) when given. All or nothing; an existing non-empty directory is refused unless
        ``overwrite``.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> from dpbnsl import fed_bnsl, simulate
        >>> data = simulate(5, 200, participants=2, rng=0)
        >>> r = fed_bnsl(data.participants, max_rounds=5)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     back = LearnResult.load(r.save(f"{tmp}/run"))
        >>> np.array_equal(back.W, r.W), len(back.transcript) == len(r.transcript)
        (True, True)
        """
        from ..io.bundle import write_bundle

        return write_bundle(path, "learn", result=self, truth=truth, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LearnResult:
        """The result saved at ``path`` by :meth:`save` (or by ``dpbnsl learn --out-dir``)."""
        from ..io.bundle import BundleError, read_bundle

        bundle = read_bundle(path)
        if not isinstance(bundle.result, LearnResult):
            raise BundleError(f"{str(path)!r} is a {bundle.kind!r} bundle, not a learning result")
        return bundle.result

    def to_networkx(self, *, weights: bool = True) -> Any:
        """The thresholded graph as a ``networkx.DiGraph`` named by variable (needs networkx;
        see :func:`dpbnsl.io.graph_export.to_networkx`)."""
        from ..io.graph_export import to_networkx

        return to_networkx(self.W, names=self.names, weights=weights)

    def to_dot(self, *, truth: Any = None, weights: bool = False, title: str | None = None) -> str:
        """Graphviz DOT text of the learned graph (its CPDAG's undirected edges for
        constraint-based learners), coloured against ``truth`` when given (see
        :func:`dpbnsl.io.graph_export.to_dot`)."""
        from ..io.graph_export import to_dot

        return to_dot(self.W, names=self.names, truth=truth, cpdag=self.cpdag, weights=weights, title=title)

    def to_causallearn(self) -> np.ndarray:
        """The learned graph (the CPDAG when there is one) in causal-learn's endpoint encoding
        (see :func:`dpbnsl.io.graph_export.to_causallearn`)."""
        from ..io.graph_export import to_causallearn

        return to_causallearn(self.cpdag if self.cpdag is not None else self.W, names=self.names)

    @property
    def names(self) -> list[str]:
        """The variable names: ``columns``, or ``X0`` … ``X{d-1}`` when the input had none."""
        return list(self.columns) if self.columns else [f"X{i}" for i in range(self.W.shape[0])]

    def __repr__(self) -> str:
        extra = ", oracle" if self.info.get("oracle") else ""
        rounds = f", {len(self.history)} rounds" if len(self.history) else ""
        return f"LearnResult({self.method!r}, d={self.W.shape[0]}, edges={self.n_edges}{rounds}{extra})"
