"""The sections of a learning run's report: the graph against the truth, the per-round history,
the privacy statement with one ledger per participant, the parameters and the transcript."""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ...metrics import count_accuracy
from .charts import line_chart, number
from .graph import EDGE_CLASSES, EDGE_COLOURS, classify_edges, graph_svg
from .tables import definition_list, numeric_columns, plain, table_html

if TYPE_CHECKING:
    from ...accounting.compose import Accountant
    from ...learners.result import LearnResult

__all__ = ["graph_section", "history_section", "privacy_section", "run_section"]

#: history columns drawn first, in this order (any other numeric column follows)
PREFERRED = ("h", "gap", "loss", "objective", "nnz", "edges", "ci_tests", "rho1", "rho2", "rho", "alpha")
#: the columns that index the rounds (the x axis), by preference
X_COLUMNS = ("round", "iteration", "level", "iter", "t")
MAX_CHARTS = 16


def _truth_matrix(truth: pd.DataFrame | None, names: list[str]) -> tuple[np.ndarray | None, str]:
    """The truth as a 0/1 matrix in the order of ``names``, and a note when it could not be used."""
    if truth is None:
        return None, ""
    d = len(names)
    if truth.shape != (d, d):
        return None, f"The stored true graph has shape {truth.shape}, not ({d}, {d}); it is not drawn."
    cols = [str(c) for c in truth.columns]
    same_set = len(set(names)) == d and sorted(cols) == sorted(names)
    if cols != names and same_set and [str(i) for i in truth.index] == cols:
        truth = truth.set_axis(cols, axis=0).set_axis(cols, axis=1).loc[names, names]
    try:
        T = np.asarray(truth.to_numpy(dtype=float)) != 0
    except (TypeError, ValueError):
        return None, "The stored true graph is not numeric; it is not drawn."
    return T, ""


def _legend(counts: Counter[str], kinds: tuple[str, ...]) -> str:
    items = []
    for kind in kinds:
        dash = ' stroke-dasharray="5,4"' if kind == "missing" else ""
        items.append(
            f'<li><svg class="swatch" width="30" height="10" aria-hidden="true"><line x1="1" y1="5" x2="29" '
            f'y2="5" stroke="{EDGE_COLOURS[kind]}" stroke-width="2.5"{dash}/></svg>'
            f"{escape(EDGE_CLASSES[kind])}: <b>{counts.get(kind, 0)}</b></li>"
        )
    return f'<ul class="legend">{"".join(items)}</ul>'


def graph_section(result: LearnResult, truth: pd.DataFrame | None) -> str:
    """The learned graph (its CPDAG for constraint-based learners), coloured against ``truth``."""
    names = result.names
    T, note = _truth_matrix(truth, names)
    edges = classify_edges(result.W, truth=T, cpdag=result.cpdag)
    counts = Counter(e.kind for e in edges)
    what = "The learned CPDAG" if result.cpdag is not None else "The learned graph"
    side = []
    if T is None:
        side.append(f"<p>{what}: {len(edges)} edges{' (no true graph given)' if not note else ''}.</p>")
        if note:
            side.append(f'<p class="note">{escape(note)}</p>')
        side.append(_legend(counts, ("edge",)))
    else:
        side.append(f"<p>{what}, coloured against the true graph ({int(T.sum())} edges).</p>")
        side.append(_legend(counts, ("tp", "reversed", "extra", "missing")))
        side.append(_scores(T, result))
    if result.cpdag is not None:
        side.append(
            '<p class="note">Undirected edges (no arrowhead) are those the equivalence class leaves '
            "unoriented; the scores are those of the DAG <code>W</code> picked from it.</p>"
        )
    side.append('<p class="note">Hover over an edge or a node for its full name.</p>')
    parts = [
        '<section id="graph"><h2>Learned graph</h2><div class="graphrow">',
        f'<div class="graphwrap">{graph_svg(names, edges)}</div>',
        f'<div class="side">{"".join(side)}</div></div>',
    ]
    if result.lagged is not None:
        parts.append(_lagged(result, names))
    parts.append("</section>")
    return "".join(parts)


def _scores(T: np.ndarray, result: LearnResult) -> str:
    try:
        acc = count_accuracy(T.astype(int), result.W)
    except ValueError as exc:
        return f'<p class="note">No accuracy scores: {escape(str(exc))}</p>'
    rows = [
        ("SHD", acc.shd),
        ("TPR", acc.tpr),
        ("FDR", acc.fdr),
        ("F1", acc.f1),
        ("predicted edges", acc.nnz),
        ("true edges", acc.n_true_edges),
    ]
    body = "".join(f'<tr><th>{k}</th><td class="num">{number(v)}</td></tr>' for k, v in rows)
    return f'<table class="data scores"><tbody>{body}</tbody></table>'


def _lagged(result: LearnResult, names: list[str]) -> str:
    A = np.asarray(result.lagged)
    index = list(result.lagged_index or [f"row {i}" for i in range(A.shape[0])])
    rows = [(index[i], names[j], A[i, j]) for i, j in zip(*np.nonzero(A)) if j < len(names)]
    frame = pd.DataFrame(rows, columns=["from", "to", "weight"])
    return f"<h3>Lagged edges ({len(rows)})</h3>" + (table_html(frame, max_rows=100) if rows else "")


def history_section(history: pd.DataFrame) -> str:
    """Small multiples of the numeric history columns against the round."""
    head = '<section id="history"><h2>Convergence</h2>'
    if not isinstance(history, pd.DataFrame) or history.empty:
        return head + "<p>This learner has no per-round history (it records no rounds).</p></section>"
    numeric = numeric_columns(history)
    xcol = next((c for c in X_COLUMNS if c in numeric), None)
    x = history[xcol].to_numpy(dtype=float) if xcol is not None else np.arange(len(history), dtype=float)
    ys = [c for c in numeric if c != xcol]
    ordered = [c for c in PREFERRED if c in ys] + [c for c in ys if c not in PREFERRED]
    if not ordered:
        return head + "<p>The history has no numeric columns to draw.</p></section>"
    charts = [
        line_chart(
            x,
            pd.to_numeric(history[c], errors="coerce").to_numpy(dtype=float),
            title=str(c),
            xlabel=str(xcol) if xcol is not None else "row",
        )
        for c in ordered[:MAX_CHARTS]
    ]
    note = (
        f'<p class="note">The first {MAX_CHARTS} of {len(ordered)} numeric columns.</p>'
        if len(ordered) > MAX_CHARTS
        else ""
    )
    return (
        f"{head}<p>{len(history)} rows; non-finite values are left out, and a positive series spanning "
        f'more than two decades is drawn on a log scale.</p><div class="charts">{"".join(charts)}</div>'
        f"{note}</section>"
    )


def privacy_section(result: LearnResult) -> str:
    """The privacy statement, every accountant's bound, and each participant's ledger."""
    p, ledgers = result.privacy, result.ledger
    parts = ['<section id="privacy"><h2>Privacy</h2>']
    if p is None and not ledgers:
        parts.append(
            f'<p class="nodp">No differential-privacy guarantee: {escape(result.method)} adds no '
            "calibrated noise, so this run promises nothing about what its outputs and messages "
            "reveal about any participant's data.</p></section>"
        )
        return "".join(parts)
    delta: Any = None
    if p is not None:
        delta = p.delta
        parts.append(f'<p class="statement">{escape(str(p))}</p>')
        facts = {
            "ε": p.epsilon,
            "δ": p.delta,
            "target ε": p.target_epsilon,
            "neighbouring": p.neighbouring,
            "accountant": p.accountant,
            "calibration": p.calibration,
        }
        parts.append(definition_list(facts))
        rows = "".join(
            f'<tr><td>{escape(str(k))}</td><td class="num">{number(v)}</td>'
            f"<td>{'certifies the guarantee' if k == p.accountant else 'a looser upper bound'}</td></tr>"
            for k, v in p.bounds.items()
        )
        parts.append(
            f'<h3>Bounds per accountant</h3><table class="data"><thead><tr><th>accountant</th><th>ε</th>'
            f"<th></th></tr></thead><tbody>{rows}</tbody></table>"
        )
        if p.public:
            parts.append(f"<h3>Taken as public</h3>{definition_list(p.public)}")
    else:
        delta = result.params.get("delta")
        parts.append('<p class="note">The run carries ledgers but no privacy statement.</p>')
    for k, ledger in enumerate(ledgers or ()):
        try:
            acct = cast("Accountant", p.accountant) if p is not None else None
            eps = number(ledger.epsilon(float(delta), accountant=acct)) if delta is not None else "n/a (no δ)"
        except (ValueError, TypeError, ArithmeticError) as exc:
            eps = f"n/a ({exc})"
        at = f" at δ = {number(float(delta))}" if delta is not None else ""
        parts.append(
            f'<div class="ledger"><h3>Participant {k}: ε = {escape(eps)}{escape(at)}</h3>'
            f"{table_html(ledger.summary(), cls='data ledger-table')}</div>"
        )
    parts.append("</section>")
    return "".join(parts)


def run_section(result: LearnResult) -> str:
    """The parameters, the transcript's size and the other scalar information of the run."""
    parts = ['<section id="run"><h2>Run</h2>']
    names = {"warm": "warm start (one private covariance release each, then Fed-BNSL)", "rounds": "rounds"}
    phases = result.transcripts
    if phases:
        total = {"total MB (every phase)": result.communication_mb}
        parts.append(f"<h3>Communication</h3>{definition_list(total)}")
    for key, t in phases.items():
        facts = {
            "messages": len(t),
            "MB": t.total_mb,
            "rounds": t.n_rounds,
            "participants": t.n_participants,
        }
        parts.append(f"<h3>Transcript: {escape(names.get(key, key))}</h3>{definition_list(facts)}")
    if result.params:
        rows = "".join(
            f"<tr><th>{escape(str(k))}</th><td>{escape(plain(v))}</td></tr>" for k, v in result.params.items()
        )
        parts.append(f'<h3>Parameters</h3><table class="data params"><tbody>{rows}</tbody></table>')
    scalars = {k: v for k, v in result.info.items() if isinstance(v, (str, bool, int, float, np.generic))}
    if scalars:
        parts.append(f"<h3>Other information</h3>{definition_list(scalars)}")
    parts.append("</section>")
    return "".join(parts)
