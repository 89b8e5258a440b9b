"""Small charts as inline SVG, drawn by hand (no plotting library): line charts of a learner's
per-round history, horizontal bar charts of a table's numeric columns, and an audit's lower bound
against its claimed ε.

Non-finite values are skipped (a line breaks where they are), a constant series still draws, and
a positive series spanning more than two decades is drawn on a logarithmic y axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

import numpy as np

from ..._validation import ArrayLike

__all__ = ["line_chart", "bar_chart", "claim_chart", "nice_ticks", "number"]


def number(x: Any) -> str:
    """``x`` to 4 significant digits (integers in full, non-finite values by name).

    Examples
    --------
    >>> number(3.14159265), number(12.0), number(123456789.0), number(float("inf")), number(-0.0)
    ('3.142', '12', '1.235e+08', 'inf', '0')
    """
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x)).lower()
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "−inf"
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e7:
        return str(int(x))
    return f"{x:.4g}"


def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About ``n`` round tick values (1, 2 or 5 times a power of ten apart) covering ``[lo, hi]``.

    Examples
    --------
    >>> nice_ticks(0, 1), nice_ticks(-3, 17)
    ([0.0, 0.5, 1.0], [0.0, 5.0, 10.0, 15.0])
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(n, 1)
    step = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * step:
            step *= m
            break
    start = math.ceil(lo / step - 1e-9)
    ticks = [round(k * step, 12) for k in range(start, int(math.floor(hi / step + 1e-9)) + 1)]
    return [t + 0.0 for t in ticks]


def _f(x: float) -> str:
    return f"{x:.1f}"


def _unit(values: np.ndarray) -> float:
    """1, or the largest magnitude of ``values`` when it is so large that differences overflow."""
    top = float(np.abs(values).max()) if values.size else 0.0
    return top if top > 1e100 else 1.0


def _range(values: np.ndarray) -> tuple[float, float]:
    lo, hi = float(values.min()), float(values.max())
    if hi == lo:  # a constant series: a band around it
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def line_chart(
    x: ArrayLike, y: ArrayLike, *, title: str, xlabel: str = "round", width: int = 320, height: int = 190
) -> str:
    """An SVG line chart of ``y`` against ``x`` (``<polyline class="series">``, one per run of
    finite points; isolated points are dots).

    Examples
    --------
    >>> svg = line_chart([0, 1, 2, 3], [1.0, 1e-2, float("nan"), 1e-5], title="h")
    >>> svg.count('class="series"'), "log scale" in svg
    (1, True)
    """
    xs, ys = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if xs.shape != ys.shape:
        raise ValueError(f"`x` and `y` must have the same length; got {xs.size} and {ys.size}")
    ok = np.isfinite(xs) & np.isfinite(ys)
    log = bool(ok.any() and (ys[ok] > 0).all() and np.log10(ys[ok].max()) - np.log10(ys[ok].min()) > 2)
    left, right, top, bottom = 54, 12, 24, 32
    pw, ph = width - left - right, height - top - bottom
    head = f"{title} (log scale)" if log else title
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(head)}">',
        f'<text class="chart-title" x="{left}" y="15" font-size="12" font-weight="600">{escape(head)}</text>',
    ]
    if not ok.any():
        out.append(
            f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" font-size="11" '
            'fill="#6b7280">no finite values</text></svg>'
        )
        return "".join(out)
    # huge values are drawn in units of their largest magnitude, so no difference overflows
    sx = _unit(xs[ok])
    sy = 1.0 if log else _unit(ys[ok])
    xs = xs / sx
    ty = np.log10(ys[ok]) if log else ys[ok] / sy
    x0, x1 = float(xs[ok].min()), float(xs[ok].max())
    y0, y1 = _range(ty)

    def px(v: float) -> float:
        return left + (pw / 2 if x1 == x0 else (v - x0) / (x1 - x0) * pw)

    def py(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    yticks = [float(k) for k in range(math.ceil(y0), math.floor(y1) + 1)] if log else nice_ticks(y0, y1, 4)
    if log and len(yticks) > 6:
        yticks = yticks[:: math.ceil(len(yticks) / 5)]
    if log and not yticks:
        yticks = [round((y0 + y1) / 2, 1)]
    for t in yticks:
        label = (
            f"1e{int(t)}" if log and float(t).is_integer() else (f"{10**t:.3g}" if log else number(t * sy))
        )
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{_f(py(t))}" y2="{_f(py(t))}" stroke="#e5e7eb"/>'
            f'<text x="{left - 5}" y="{_f(py(t) + 3.5)}" text-anchor="end" font-size="10" fill="#4b5563">'
            f"{escape(label)}</text>"
        )
    xticks = nice_ticks(x0, x1, 4) if x1 > x0 else [x0]
    if np.all(xs[ok] == np.round(xs[ok])):  # rounds: whole-number ticks only
        xticks = [t for t in xticks if float(t).is_integer()] or [x0, x1]
    for t in xticks:
        out.append(
            f'<line x1="{_f(px(t))}" x2="{_f(px(t))}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#6b7280"/>'
            f'<text x="{_f(px(t))}" y="{top + ph + 15}" text-anchor="middle" font-size="10" fill="#4b5563">'
            f"{escape(number(t * sx))}</text>"
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#9ca3af"/>'
        f'<text x="{left + pw / 2:.0f}" y="{height - 3}" text-anchor="middle" font-size="10" '
        f'fill="#4b5563">{escape(xlabel)}</text>'
    )
    vals = np.where(ok, np.log10(np.where(ok & (ys > 0), ys, 1.0)) if log else ys / sy, np.nan)
    runs: list[list[tuple[float, float]]] = [[]]
    for xv, yv, good in zip(xs, vals, ok):
        if good:
            runs[-1].append((px(float(xv)), py(float(yv))))
        elif runs[-1]:
            runs.append([])
    dots = int(ok.sum()) <= 40
    for run in runs:
        if len(run) > 1:
            pts = " ".join(f"{_f(a)},{_f(b)}" for a, b in run)
            out.append(
                f'<polyline class="series" points="{pts}" fill="none" stroke="#2563eb" stroke-width="1.6"/>'
            )
        if len(run) == 1 or (dots and run):
            out += [f'<circle cx="{_f(a)}" cy="{_f(b)}" r="2.2" fill="#2563eb"/>' for a, b in run]
    out.append("</svg>")
    return "".join(out)


def bar_chart(labels: Sequence[str], values: ArrayLike, *, title: str, width: int = 300) -> str:
    """An SVG horizontal bar chart, one ``<rect class="bar">`` per finite value (non-finite values
    are written out instead), bars starting at zero.

    Examples
    --------
    >>> svg = bar_chart(["a", "b", "c"], [0.5, -1.0, float("nan")], title="x")
    >>> svg.count('class="bar"'), ">nan<" in svg
    (2, True)
    """
    vals = np.asarray(values, dtype=float).ravel()
    if len(labels) != vals.size:
        raise ValueError(f"`labels` must hold one label per value ({vals.size}); got {len(labels)}")
    shown = [lab if len(lab) <= 16 else lab[:15] + "…" for lab in map(str, labels)]
    bar_h, top, bottom = 18, 24, 22
    left = 12 + 6.3 * max((len(s) for s in shown), default=1)
    right = 58
    pw = width - left - right
    height = top + bar_h * max(vals.size, 1) + bottom
    ok = np.isfinite(vals)
    unit = _unit(vals[ok])  # geometry in units of a huge largest magnitude, so nothing overflows
    lo = min(0.0, float(vals[ok].min()) / unit) if ok.any() else 0.0
    hi = max(0.0, float(vals[ok].max()) / unit) if ok.any() else 1.0
    if hi == lo:
        hi = lo + 1.0

    def px(v: float) -> float:
        return left + (v / unit - lo) / (hi - lo) * pw

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text class="chart-title" x="4" y="15" font-size="12" font-weight="600">{escape(title)}</text>',
    ]
    for t in nice_ticks(lo, hi, 3):
        tx = _f(px(t * unit))
        out.append(
            f'<line x1="{tx}" x2="{tx}" y1="{top}" y2="{height - bottom}" stroke="#e5e7eb"/>'
            f'<text x="{tx}" y="{height - bottom + 13}" text-anchor="middle" font-size="9" '
            f'fill="#4b5563">{escape(number(t * unit))}</text>'
        )
    for k, (label, v) in enumerate(zip(shown, vals)):
        y = top + k * bar_h
        out.append(
            f'<text x="{_f(left - 4)}" y="{y + bar_h / 2 + 3.5:.1f}" text-anchor="end" font-size="10">'
            f"<title>{escape(str(labels[k]))}</title>{escape(label)}</text>"
        )
        if not np.isfinite(v):
            out.append(
                f'<text x="{_f(px(0) + 3)}" y="{y + bar_h / 2 + 3.5:.1f}" font-size="10" fill="#6b7280">'
                f"{escape(number(v))}</text>"
            )
            continue
        a, b = sorted((px(0), px(float(v))))
        out.append(
            f'<rect class="bar" x="{_f(a)}" y="{y + 3}" width="{_f(max(b - a, 0.8))}" height="{bar_h - 6}" '
            f'fill="#60a5fa"><title>{escape(str(labels[k]))}: {escape(number(v))}</title></rect>'
            f'<text x="{_f(max(b, px(0)) + 3)}" y="{y + bar_h / 2 + 3.5:.1f}" font-size="9" fill="#374151">'
            f"{escape(number(v))}</text>"
        )
    out.append(
        f'<line x1="{_f(px(0))}" x2="{_f(px(0))}" y1="{top}" y2="{height - bottom}" stroke="#6b7280"/></svg>'
    )
    return "".join(out)


def claim_chart(claimed: float, lower: float, estimate: float | None = None, *, width: int = 560) -> str:
    """An audit on one ε axis: the lower bound as a band ``[ε_lb, →)`` (class ``"bound"``), the
    claimed ε as a vertical line (class ``"claim"``) and the point estimate, when finite, as a
    diamond (class ``"estimate"``). A bound starting right of the line refutes the claim.

    Examples
    --------
    >>> svg = claim_chart(1.0, 0.4, 0.9)
    >>> all(f'class="{c}"' in svg for c in ("bound", "claim", "estimate"))
    True
    """
    finite = [v for v in (claimed, lower, estimate) if v is not None and math.isfinite(v)]
    unit = _unit(np.array(finite))  # geometry in units of a huge largest value: nothing overflows
    hi = max([v / unit for v in finite] + [1e-9]) * 1.2
    lo = min([v / unit for v in finite] + [0.0])
    left, right, top, height = 20, 20, 30, 108
    pw = width - left - right

    def px(v: float) -> float:
        return left + (min(max(v / unit, lo), hi) - lo) / (hi - lo) * pw

    axis_y = top + 46
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        'aria-label="lower bound on ε against the claimed ε">'
    ]
    for t in nice_ticks(lo, hi, 6):
        tx = _f(px(t * unit))
        out.append(
            f'<line x1="{tx}" x2="{tx}" y1="{top}" y2="{axis_y}" stroke="#eef0f3"/>'
            f'<text x="{tx}" y="{axis_y + 14}" text-anchor="middle" font-size="10" fill="#4b5563">'
            f"{escape(number(t * unit))}</text>"
        )
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{axis_y}" y2="{axis_y}" stroke="#6b7280"/>')
    if math.isfinite(lower):
        out.append(
            f'<rect class="bound" x="{_f(px(lower))}" y="{top + 8}" width="{_f(left + pw - px(lower))}" '
            f'height="18" fill="#93c5fd" opacity="0.8"><title>ε ≥ {escape(number(lower))}</title></rect>'
            f'<text x="{_f(px(lower) + 4)}" y="{top + 21}" font-size="11">'
            f"ε_lb = {escape(number(lower))} →</text>"
        )
    if estimate is not None and math.isfinite(estimate):
        x, y = px(estimate), top + 36
        out.append(
            f'<path class="estimate" d="M{_f(x)},{y - 6} L{_f(x + 6)},{y} L{_f(x)},{y + 6} '
            f'L{_f(x - 6)},{y} z" '
            f'fill="#111827"><title>estimate {escape(number(estimate))}</title></path>'
        )
    if math.isfinite(claimed):
        x = px(claimed)
        out.append(
            f'<line class="claim" x1="{_f(x)}" x2="{_f(x)}" y1="{top - 6}" y2="{axis_y + 2}" '
            f'stroke="#d62728" stroke-width="2.2" stroke-dasharray="5,3"/>'
            f'<text x="{_f(x)}" y="{top - 10}" text-anchor="middle" font-size="11" fill="#d62728">'
            "claimed ε = "
            f"{escape(number(claimed))}</text>"
        )
    out.append(
        f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" font-size="10" '
        'fill="#4b5563">ε</text>'
        "</svg>"
    )
    return "".join(out)
