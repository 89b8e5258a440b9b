"""A learned graph as inline SVG: nodes on a circle, edges coloured against the truth.

The edge classes are those of :func:`dpbnsl.metrics.count_accuracy` and
:func:`dpbnsl.io.graph_export.to_dot`: a drawn edge is a *true positive* (``"tp"``) when the truth has
it (an undirected CPDAG edge: either direction), *reversed* when the truth has only the opposite
edge and the drawing lacks the true one, and *extra* otherwise; a true edge whose pair is not
adjacent in the drawing is *missing* (dashed grey). Without a truth every edge is of class
``"edge"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from types import MappingProxyType

import numpy as np

from ..._validation import ArrayLike, as_square_matrix

__all__ = ["Edge", "EDGE_CLASSES", "EDGE_COLOURS", "classify_edges", "graph_svg"]

#: Every class of drawn edge, with what the legend calls it (read-only).
EDGE_CLASSES = MappingProxyType(
    {
        "tp": "true positive",
        "reversed": "reversed",
        "extra": "extra",
        "missing": "missing (true, not learned)",
        "edge": "learned edge",
    }
)
#: The stroke colour of each class (read-only).
EDGE_COLOURS = MappingProxyType(
    {"tp": "#1a7f37", "reversed": "#e08a00", "extra": "#d62728", "missing": "#9aa0a6", "edge": "#2563eb"}
)


@dataclass(frozen=True)
class Edge:
    """One drawn edge ``source -> target`` (or ``source - target`` when not ``directed``)."""

    source: int
    target: int
    kind: str
    directed: bool = True


def classify_edges(
    W: ArrayLike, *, truth: ArrayLike | None = None, cpdag: ArrayLike | None = None
) -> list[Edge]:
    """The edges to draw for the graph ``W`` (or the equivalence class ``cpdag``), by class.

    Parameters
    ----------
    W : array of shape (d, d)
        ``W[i, j] != 0`` is the edge ``i -> j``; a 2-cycle gives two directed edges.
    truth : array of shape (d, d), optional
        The true graph; without it every edge has the class ``"edge"``.
    cpdag : array of shape (d, d), optional
        Draw this equivalence class instead of ``W``: a pair set both ways is one undirected edge.

    Returns
    -------
    list of Edge
        The drawn edges, then the missing ones, each group by pair.

    Examples
    --------
    >>> truth = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]        # 0 -> 1 -> 2
    >>> [(e.source, e.target, e.kind) for e in classify_edges([[0, 0, 1], [1, 0, 0], [0, 0, 0]], truth=truth)]
    [(0, 2, 'extra'), (1, 0, 'reversed'), (1, 2, 'missing')]
    """
    A = as_square_matrix(W, "W") != 0
    d = A.shape[0]
    T = None if truth is None else _same(truth, "truth", d)
    C = A if cpdag is None else _same(cpdag, "cpdag", d)
    undirected_mode = cpdag is not None

    def kind(a: int, b: int, undirected: bool) -> str:
        if T is None:
            return "edge"
        if T[a, b] or (undirected and T[b, a]):
            return "tp"
        if T[b, a] and not C[b, a]:
            return "reversed"
        return "extra"

    edges = []
    for a in range(d):
        for b in range(d):
            if not C[a, b]:
                continue
            if undirected_mode and a != b and C[b, a]:
                if a < b:
                    edges.append(Edge(a, b, kind(a, b, True), directed=False))
            else:
                edges.append(Edge(a, b, kind(a, b, False)))
    if T is not None:
        for a in range(d):
            for b in range(a + 1, d):
                if (T[a, b] or T[b, a]) and not (C[a, b] or C[b, a]):
                    if T[a, b] and T[b, a]:
                        edges.append(Edge(a, b, "missing", directed=False))
                    else:
                        edges.append(Edge(a, b, "missing") if T[a, b] else Edge(b, a, "missing"))
    return edges


def _same(M: ArrayLike, name: str, d: int) -> np.ndarray:
    arr = as_square_matrix(M, name)
    if arr.shape != (d, d):
        raise ValueError(f"`{name}` must have the shape of `W`, {(d, d)}; got {arr.shape}")
    return arr != 0


def _short(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _f(x: float) -> str:
    return f"{x:.1f}"


def graph_svg(names: Sequence[str], edges: Sequence[Edge], *, label: str = "learned graph") -> str:
    """Inline SVG of a graph on ``len(names)`` nodes placed on a circle.

    Each edge is a ``<path class="edge KIND">`` (an arrow unless undirected) with a ``<title>``
    naming its end points; every node is a ``<g class="node">`` with its (escaped, possibly
    shortened) name as text and its full name as ``<title>``. Sizes shrink with the number of nodes,
    so a few hundred nodes still fit.

    Examples
    --------
    >>> svg = graph_svg(["a", "<b>"], [Edge(0, 1, "tp")])
    >>> svg.count('class="edge tp"'), "&lt;b&gt;" in svg, "<b>" in svg
    (1, True, False)
    """
    d = len(names)
    if d < 1:
        raise ValueError(f"`names` must name at least one node; got {d}")
    R = max(170.0, d * 14.0 / (2 * math.pi))
    spacing = 2 * math.pi * R / d
    r = min(16.0, max(3.0, spacing * 0.3)) if d > 1 else 16.0
    font = 13.0 if d <= 24 else min(12.0, max(6.0, spacing * 0.75))
    stroke = 1.8 if d <= 30 else (1.2 if d <= 100 else 0.8)
    limit = 18 if d <= 24 else 12
    shown = [_short(str(n), limit) for n in names]
    text_px = max(len(s) for s in shown) * font * 0.62
    pos = [
        (R * math.cos(-math.pi / 2 + 2 * math.pi * k / d), R * math.sin(-math.pi / 2 + 2 * math.pi * k / d))
        for k in range(d)
    ]
    # room for the labels: beside the circle when they are horizontal, all around when radial
    half_w = R + r + 10 + text_px
    half_h = R + r + 8 + (2 * font if d <= 24 else text_px)
    if d == 1:
        pos = [(0.0, 0.0)]
        half_w, half_h = max(r + 8, text_px / 2 + 4), r + 2 * font + 6
    out = [
        f'<svg class="graph" viewBox="{_f(-half_w)} {_f(-half_h)} {_f(2 * half_w)} {_f(2 * half_h)}" '
        f'width="{2 * half_w:.0f}" height="{2 * half_h:.0f}" role="img" '
        f'aria-label="{escape(label)}">',
        "<defs>",
    ]
    for kind, colour in EDGE_COLOURS.items():
        out.append(
            f'<marker id="dpbnsl-arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
            f'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/>'
            "</marker>"
        )
    out.append("</defs>")
    drawn = {(e.source, e.target) for e in edges if e.directed and e.kind != "missing"}
    order = {"missing": 0, "extra": 1, "reversed": 2, "edge": 3, "tp": 4}
    for e in sorted(edges, key=lambda e: order.get(e.kind, 5)):
        out.append(_edge(e, pos, names, r, stroke, bend=(e.target, e.source) in drawn))
    for k, (x, y) in enumerate(pos):
        out.append(_node(str(names[k]), shown[k], x, y, r, font, d))
    out.append("</svg>")
    return "\n".join(out)


def _edge(
    e: Edge, pos: Sequence[tuple[float, float]], names: Sequence[str], r: float, stroke: float, bend: bool
) -> str:
    colour = EDGE_COLOURS.get(e.kind, "#555555")
    (x1, y1), (x2, y2) = pos[e.source], pos[e.target]
    if e.source == e.target:  # a self-loop, outside the circle
        norm = math.hypot(x1, y1) or 1.0
        ox, oy = x1 / norm, y1 / norm
        ang = math.atan2(oy, ox)
        ax, ay = x1 + r * math.cos(ang - 0.6), y1 + r * math.sin(ang - 0.6)
        bx, by = x1 + r * math.cos(ang + 0.6), y1 + r * math.sin(ang + 0.6)
        loop = r * 0.9 + 4
        path = f"M{_f(ax)},{_f(ay)} A{_f(loop)},{_f(loop)} 0 1 1 {_f(bx)},{_f(by)}"
    else:
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        ux, uy = dx / length, dy / length
        sx, sy = x1 + ux * (r + 1), y1 + uy * (r + 1)
        tx, ty = x2 - ux * (r + 1.5), y2 - uy * (r + 1.5)
        if bend:  # one of a 2-cycle: the two arrows bow to opposite sides
            off = min(0.12 * length, 30.0)
            cx, cy = (sx + tx) / 2 - uy * off, (sy + ty) / 2 + ux * off
            path = f"M{_f(sx)},{_f(sy)} Q{_f(cx)},{_f(cy)} {_f(tx)},{_f(ty)}"
        else:
            path = f"M{_f(sx)},{_f(sy)} L{_f(tx)},{_f(ty)}"
    arrow = " —→ " if e.directed else " — "
    title = f"{names[e.source]}{arrow}{names[e.target]}: {EDGE_CLASSES.get(e.kind, e.kind)}"
    dash = f' stroke-dasharray="{_f(stroke * 3)},{_f(stroke * 2.5)}"' if e.kind == "missing" else ""
    classes = f"edge {e.kind}" + ("" if e.directed else " undirected")
    marker = f' marker-end="url(#dpbnsl-arrow-{e.kind})"' if e.directed else ""
    return (
        f'<path class="{classes}" d="{path}" fill="none" stroke="{colour}" stroke-width="{stroke}"'
        f"{dash}{marker}><title>{escape(title)}</title></path>"
    )


def _node(name: str, shown: str, x: float, y: float, r: float, font: float, d: int) -> str:
    parts = [
        f'<g class="node"><title>{escape(name)}</title>',
        f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="#ffffff" stroke="#374151" '
        f'stroke-width="{1.5 if d <= 50 else 0.8}"/>',
    ]
    norm = math.hypot(x, y)
    if norm == 0:  # d = 1: the label below the node
        parts.append(
            f'<text x="0" y="{_f(r + font + 2)}" text-anchor="middle" font-size="{font:g}">'
            f"{escape(shown)}</text>"
        )
    else:
        ux, uy = x / norm, y / norm
        lx, ly = x + ux * (r + 5), y + uy * (r + 5)
        if d <= 24:
            anchor = "start" if ux > 0.3 else ("end" if ux < -0.3 else "middle")
            dy = font * 0.35 + (font * 0.5 * uy if anchor == "middle" else 0)
            parts.append(
                f'<text x="{_f(lx)}" y="{_f(ly + dy)}" text-anchor="{anchor}" font-size="{font:g}">'
                f"{escape(shown)}</text>"
            )
        else:  # radial labels
            angle = math.degrees(math.atan2(uy, ux))
            anchor = "start"
            if ux < 0:
                angle, anchor = angle + 180, "end"
            parts.append(
                f'<text x="{_f(lx)}" y="{_f(ly)}" text-anchor="{anchor}" dominant-baseline="central" '
                f'font-size="{font:g}" transform="rotate({angle:.1f} {_f(lx)} {_f(ly)})">'
                f"{escape(shown)}</text>"
            )
    parts.append("</g>")
    return "".join(parts)
