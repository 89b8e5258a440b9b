"""FedPC's variable-ID mapping (FedPC §3.3): variables travel as IDs, never as names.

Each participant sorts its own column names alphabetically (Python string order, i.e. character
by character on Unicode code points; the sort is stable) and numbers them ``0, 1, ...`` in that
order. Because all participants hold the same variables, they obtain the same IDs without talking
to each other, even when their columns come in different orders, and the server only ever sees
IDs. The mapping back to names stays with the participants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["alphabetical_ids", "align_by_name"]


def alphabetical_ids(names: Sequence[str]) -> dict[str, int]:
    """``{name: ID}`` with IDs ``0 .. d−1`` in alphabetical order of the names.

    Examples
    --------
    >>> alphabetical_ids(["raf", "PKC", "mek", "Akt"])
    {'Akt': 0, 'PKC': 1, 'mek': 2, 'raf': 3}
    """
    names = [str(n) for n in names]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"variable names must be distinct for the ID mapping; repeated: {dup}")
    return {name: k for k, name in enumerate(sorted(names))}


def align_by_name(participants: Any, name: str = "participants") -> tuple[list[Any], list[int] | None]:
    """Reorder every participant's columns by ID (client side).

    Returns ``(aligned, order)``: ``aligned`` the participants with columns in ID order (arrays
    unchanged when no participant carries names), ``order[p]`` the position in participant 0's
    column order of the variable with ID ``p`` (None when there are no names).
    """
    frames = [isinstance(X, pd.DataFrame) for X in participants]
    if not any(frames):
        return list(participants), None
    if not all(frames):
        k = frames.index(False)
        raise TypeError(
            f"`{name}` (participant {k}) has no column names, but others are DataFrames: the ID "
            f"mapping needs names from every participant (or pass `id_mapping=False`)"
        )
    for k, X in enumerate(participants):
        dup = sorted({str(c) for c in X.columns[X.columns.duplicated()]})
        if dup:
            raise ValueError(f"`{name}` (participant {k}) has duplicate column names {dup}")
    first = [str(c) for c in participants[0].columns]
    ids = alphabetical_ids(first)
    aligned = []
    for k, X in enumerate(participants):
        cols = [str(c) for c in X.columns]
        own = alphabetical_ids(cols)  # each participant numbers its own columns
        if set(own) != set(ids):
            diff = sorted(set(own) ^ set(ids))
            raise ValueError(
                f"`{name}` (participant {k}) does not hold the same variables as "
                f"participant 0; they differ in {diff}"
            )
        by_id = sorted(range(len(cols)), key=lambda c: own[cols[c]])
        frame = X.iloc[:, by_id].copy()
        frame.columns = [cols[c] for c in by_id]
        aligned.append(frame)
    order = sorted(range(len(first)), key=lambda c: ids[first[c]])
    return aligned, order
