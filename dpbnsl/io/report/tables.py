"""Values, mappings and DataFrames as escaped HTML (tables, definition lists)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from typing import Any

import numpy as np
import pandas as pd

from .charts import number

__all__ = ["as_float", "plain", "value_html", "definition_list", "table_html", "numeric_columns"]


def as_float(value: Any) -> float | None:
    """``value`` as a float when it is a number or a JSON spelling of one (``"inf"``, ``"nan"``,
    ``"1.5"``); None otherwise (booleans included).

    Examples
    --------
    >>> as_float(2), as_float("inf"), as_float("ε"), as_float(True)
    (2.0, inf, None, None)
    """
    if isinstance(value, (bool, np.bool_)) or value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def plain(value: Any, limit: int = 240) -> str:
    """A short plain-text rendering of a scalar, array or small container (not escaped).

    Examples
    --------
    >>> plain(0.123456), plain(None), plain((1, 2.5)), plain(np.zeros((30, 30)))
    ('0.1235', '—', '(1, 2.5)', 'array of shape (30, 30)')
    """
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_, int, float, np.integer, np.floating)):
        return number(value)
    if isinstance(value, str):
        text = value
    elif isinstance(value, np.ndarray):
        if value.size > 12:
            return f"array of shape {value.shape}"
        text = plain(value.tolist(), limit)
    elif isinstance(value, (list, tuple)):
        inner = ", ".join(plain(v, limit) for v in value[:20]) + (", …" if len(value) > 20 else "")
        text = f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) else f"[{inner}]"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{plain(k, limit)}: {plain(v, limit)}" for k, v in value.items()) + "}"
    elif isinstance(value, pd.DataFrame):
        return f"table of {len(value)} rows × {value.shape[1]} columns"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_html(value: Any, depth: int = 0) -> str:
    """Escaped HTML for a value: a mapping becomes a nested definition list (two levels), a
    DataFrame a table, anything else its :func:`plain` text."""
    if isinstance(value, Mapping) and value and depth < 2:
        return definition_list(value, depth + 1)
    if isinstance(value, pd.DataFrame) and depth < 2:
        return table_html(value, max_rows=50)
    return escape(plain(value))


def definition_list(mapping: Mapping[Any, Any], depth: int = 0) -> str:
    """A ``<dl>`` of the items of ``mapping`` (keys and values escaped).

    Examples
    --------
    >>> print(definition_list({"a<b": 1.5, "nested": {"x": [1, 2]}}).replace("<dt>", "\\n<dt>"))
    <dl class="kv">
    <dt>a&lt;b</dt><dd>1.5</dd>
    <dt>nested</dt><dd><dl class="kv">
    <dt>x</dt><dd>[1, 2]</dd></dl></dd></dl>
    """
    items = "".join(f"<dt>{escape(str(k))}</dt><dd>{value_html(v, depth)}</dd>" for k, v in mapping.items())
    return f'<dl class="kv">{items}</dl>'


def numeric_columns(frame: pd.DataFrame) -> list[Any]:
    """The columns of ``frame`` holding numbers (not booleans): numeric dtypes, and object columns
    whose every non-missing entry is a number."""
    out = []
    for c in frame.columns:
        col = frame[c]
        if isinstance(col, pd.DataFrame):  # duplicated column names
            continue
        if pd.api.types.is_bool_dtype(col):
            continue
        if pd.api.types.is_numeric_dtype(col):
            out.append(c)
        elif col.dtype == object:
            present = col.dropna()
            if len(present) and all(as_float(v) is not None and not isinstance(v, str) for v in present):
                out.append(c)
    return out


def table_html(frame: pd.DataFrame, *, max_rows: int = 200, cls: str = "data") -> str:
    """An HTML table of ``frame`` (at most ``max_rows`` rows, with a note when cut): floats to 4
    significant digits, integers in full, numbers right-aligned; a non-default index is the first
    column.

    Examples
    --------
    >>> table_html(pd.DataFrame({"x": [1, 2], "y": [0.333333, float("nan")]}))  # doctest: +ELLIPSIS
    '<table class="data"><thead><tr><th>x</th><th>y</th></tr></thead><tbody><tr><td class="num">1</td>...'
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"`frame` must be a DataFrame; got {type(frame).__name__}")
    shown = frame
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0 or frame.index.step != 1:
        shown = frame.reset_index()
    numeric = set(numeric_columns(shown))
    head = "".join(f"<th>{escape(str(c))}</th>" for c in shown.columns)
    rows = []
    for values in shown.head(max_rows).itertuples(index=False, name=None):
        cells = []
        for c, v in zip(shown.columns, values):
            num = c in numeric or (isinstance(v, (float, np.floating)) and not isinstance(v, bool))
            text = escape(plain(v)) if not (isinstance(v, float) and math.isnan(v)) else "nan"
            cells.append(f'<td class="num">{text}</td>' if num else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if len(shown) > max_rows:
        note = f'<p class="note">The first {max_rows} of {len(shown)} rows.</p>'
    body = "".join(rows)
    return f'<table class="{escape(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}'
