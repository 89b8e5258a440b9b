"""Reports of run bundles: one self-contained HTML page per run.

:func:`render_html` turns a :class:`~dpbnsl.io.bundle.Bundle` (from :func:`~dpbnsl.io.bundle.read_bundle`)
into a page that loads nothing from anywhere: the style is embedded and every figure is inline SVG
drawn by this package (no plotting library is needed). :func:`write_html` writes it atomically.

- A learning run (``kind == "learn"``): the learned graph on a circle, coloured against the true
  graph when the bundle has one (true positive, reversed, extra, and the missing true edges dashed),
  with SHD, TPR and FDR; the per-round history as small line charts; the privacy statement, the
  bound of every accountant, and each participant's ledger with its ε at the run's δ (or a plain
  "no differential-privacy guarantee" for a non-private run); the parameters and transcript size.
- An attack or an audit: its summary, every table, a horizontal bar chart of each table's numeric
  columns, and for an audit the lower bound on ε against the claimed ε.
"""

from .graph import EDGE_CLASSES, EDGE_COLOURS, Edge, classify_edges, graph_svg
from .html import render_html, write_html

__all__ = ["render_html", "write_html", "classify_edges", "graph_svg", "Edge", "EDGE_CLASSES", "EDGE_COLOURS"]
