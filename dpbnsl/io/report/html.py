"""One self-contained HTML page per run bundle (:mod:`dpbnsl.io.bundle`).

The page loads nothing: its style is embedded, its figures are inline SVG drawn here, and every
piece of text from the bundle (variable names, parameters, table cells, the command line) is
escaped.
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Mapping
from html import escape, unescape
from pathlib import Path
from typing import Any

import pandas as pd

from ..bundle import Bundle, read_bundle
from .charts import bar_chart, claim_chart, number
from .learn import graph_section, history_section, privacy_section, run_section
from .style import CSS
from .tables import as_float, definition_list, numeric_columns, plain, table_html

__all__ = ["render_html", "write_html"]

#: rows above which a table gets no bar chart
MAX_BARS = 40


def _kpi(label: str, value: str) -> str:
    return f'<div class="kpi"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def _header(bundle: Bundle, title: str, kpis: list[tuple[str, str]], sections: list[tuple[str, str]]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in bundle.versions.items())
    command = (
        f'<p class="meta">command: <code>{escape(shlex.join(bundle.command))}</code></p>'
        if bundle.command
        else ""
    )
    links = "".join(f'<a href="#{escape(anchor)}">{escape(name)}</a>' for anchor, name in sections)
    return (
        f'<header><h1>{escape(title)}<span class="badge">{escape(bundle.kind)}</span></h1>'
        f'<p class="meta">created {escape(bundle.created)} · {escape(versions)}</p>{command}'
        f'<div class="kpis">{"".join(_kpi(k, v) for k, v in kpis)}</div><nav>{links}</nav></header>'
    )


def _learn(bundle: Bundle) -> tuple[str, list[tuple[str, str]], list[str]]:
    result = bundle.result
    if result is None:  # read_bundle guarantees a result for a learning bundle
        raise ValueError(f"the {bundle.kind!r} bundle has no learning result to show")
    kpis = [("nodes", str(result.W.shape[0])), ("edges", str(result.n_edges))]
    if len(result.history):
        kpis.append(("history rows", str(len(result.history))))
    if result.privacy is not None:
        kpis.append(("ε per participant", number(result.privacy.epsilon)))
    else:
        kpis.append(("privacy", "none"))
    if result.communication_mb is not None:  # every phase; the Run section splits them
        kpis.append(("MB sent", f"{result.communication_mb:.3g}"))
    body = [
        graph_section(result, bundle.truth),
        history_section(result.history),
        privacy_section(result),
        run_section(result),
    ]
    if bundle.summary:
        body.append(
            '<section id="summary"><h2>Summary</h2><details><summary>The run\'s JSON summary</summary>'
            f"{definition_list(bundle.summary)}</details></section>"
        )
    return result.method, kpis, body


def _audit_chart(summary: Mapping[str, Any]) -> str:
    """Claimed ε against the lower bound, when the summary has both."""
    flat = dict(summary)
    for key in ("bound", "audit"):
        if isinstance(summary.get(key), Mapping):
            flat = {**summary[key], **flat}
    claimed, lower = as_float(flat.get("claimed_epsilon")), as_float(flat.get("epsilon_lb"))
    if claimed is None or lower is None:
        return ""
    est = flat.get("estimate")
    estimate = as_float(est.get("epsilon") if isinstance(est, Mapping) else est)
    verdict = (
        "The lower bound exceeds the claimed ε: the claim is refuted"
        if lower > claimed
        else "The lower bound stays below the claimed ε: no violation found"
    )
    return (
        f'<section id="bound"><h2>Lower bound against the claim</h2><p>{escape(verdict)}.</p>'
        f'<div class="charts">{claim_chart(claimed, lower, estimate)}</div><p class="note">Band: ε ≥ ε_lb '
        "(the bound holds with the audit's confidence); dashed line: the claimed ε; diamond: the point "
        "estimate, when there is one (not a bound).</p></section>"
    )


def _label_column(frame: pd.DataFrame, numeric: list[Any]) -> Any:
    others = [c for c in frame.columns if c not in numeric and isinstance(frame[c], pd.Series)]
    unique = [c for c in others if frame[c].astype(str).is_unique]
    return (unique or others or [None])[0]


def _table_section(name: str, frame: pd.DataFrame, k: int) -> str:
    numeric = numeric_columns(frame)
    label_col = _label_column(frame, numeric)
    labels = (
        [plain(v) for v in frame[label_col]] if label_col is not None else [str(i) for i in range(len(frame))]
    )
    parts = [f'<section id="table-{k}"><h2>{escape(str(name))}</h2>']
    parts.append(f'<div class="tablewrap">{table_html(frame)}</div>')
    drawn = [c for c in numeric if pd.to_numeric(frame[c], errors="coerce").notna().any()]
    if drawn and len(frame) <= MAX_BARS:
        charts = [
            bar_chart(labels, pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float), title=str(c))
            for c in drawn
        ]
        by = f"by {label_col}" if label_col is not None else "by row"
        parts.append(f'<h3>Numeric columns, {escape(by)}</h3><div class="charts">{"".join(charts)}</div>')
    elif drawn:
        parts.append(f'<p class="note">{len(frame)} rows: too many to chart (at most {MAX_BARS}).</p>')
    parts.append("</section>")
    return "".join(parts)


def _tables(bundle: Bundle) -> tuple[str, list[tuple[str, str]], list[str]]:
    summary = bundle.summary
    title = str(summary.get("method") or summary.get("mechanism") or f"{bundle.kind} run")
    names = {"verdict": "verdict", "claimed_epsilon": "claimed ε", "epsilon_lb": "ε lower bound"}
    kpis = [(label, plain(summary[k], 28)) for k, label in names.items() if k in summary]
    if not kpis:  # the first few numbers of the summary
        numbers = [
            (str(k), v) for k, v in summary.items() if as_float(v) is not None and not isinstance(v, str)
        ]
        kpis = [(k, plain(v, 28)) for k, v in numbers[:5]]
    body = []
    if summary:
        body.append(f'<section id="summary"><h2>Summary</h2>{definition_list(summary)}</section>')
    body.append(_audit_chart(summary))
    body += [_table_section(name, frame, k) for k, (name, frame) in enumerate(bundle.tables.items())]
    if not bundle.tables:
        body.append('<section id="table-0"><h2>Tables</h2><p>This bundle has no tables.</p></section>')
    return title, kpis, [b for b in body if b]


def render_html(bundle: Bundle) -> str:
    """The report of a run bundle as one self-contained HTML page.

    A learning run shows its graph (against the truth when the bundle has it, with SHD, TPR and
    FDR), its per-round history, its privacy statement with one ledger per participant, its
    parameters and transcript size; an attack or audit shows its summary, every table and a bar
    chart of each table's numeric columns (and an audit its lower bound against the claimed ε).

    Examples
    --------
    >>> import tempfile
    >>> from dpbnsl import fed_bnsl, simulate
    >>> from dpbnsl.io.bundle import read_bundle
    >>> data = simulate(4, 100, participants=2, rng=0)
    >>> result = fed_bnsl(data.participants, max_rounds=3)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     page = render_html(read_bundle(result.save(f"{tmp}/run", truth=data.B_true)))
    >>> page.startswith("<!DOCTYPE html>"), "fed-bnsl" in page, "No differential-privacy guarantee" in page
    (True, True, True)
    """
    if not isinstance(bundle, Bundle):
        raise TypeError(
            f"`bundle` must be a Bundle (see dpbnsl.io.bundle.read_bundle); got {type(bundle).__name__}"
        )
    if bundle.kind == "learn" and bundle.result is not None:
        title, kpis, body = _learn(bundle)
    else:
        title, kpis, body = _tables(bundle)
    sections = []
    for block in body:
        anchor = block.split('id="', 1)[1].split('"', 1)[0]
        heading = block.split("<h2>", 1)[1].split("</h2>", 1)[0]
        sections.append((anchor, heading))
    nav = [(a, unescape(h)) for a, h in sections]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · dpbnsl report</title><style>{CSS}</style></head><body>"
        f"{_header(bundle, title, kpis, nav)}<main>{''.join(body)}</main>"
        f"<footer>dpbnsl report · {escape(bundle.kind)} bundle written {escape(bundle.created)}</footer>"
        "</body></html>\n"
    )


def _check_out(out_path: Any, overwrite: bool) -> Path:
    if not isinstance(out_path, (str, os.PathLike)):
        raise TypeError(f"`out_path` must be a str or path-like; got {type(out_path).__name__}")
    out = Path(out_path)
    if str(out_path) in ("", "-"):
        raise ValueError(f"`out_path` must name a file; got {str(out_path)!r}")
    if not isinstance(overwrite, bool):
        raise TypeError(f"`overwrite` must be a bool; got {type(overwrite).__name__} {overwrite!r}")
    parent = out.absolute().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"`out_path` = {str(out_path)!r}: its parent directory does not exist")
    if out.is_dir():
        raise IsADirectoryError(f"`out_path` = {str(out_path)!r} is a directory; give a file name")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise FileExistsError(f"`out_path` = {str(out_path)!r} exists (overwrite=True to replace it)")
        if not out.is_file():
            raise FileExistsError(f"`out_path` = {str(out_path)!r} exists and is not a regular file")
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"`out_path` = {str(out_path)!r}: its parent directory is not writable")
    return out


def write_html(
    bundle_or_path: Bundle | str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> Path:
    """Write the report of a bundle (or of the bundle directory at a path) to ``out_path``.

    The output is checked before any work (before the bundle is even read): its parent directory
    must exist, it must not be a directory, and an existing file is replaced only with
    ``overwrite=True``. The page is written to a temporary file beside it and renamed into place,
    so a failure leaves nothing behind and a reader never sees half a page.

    Parameters
    ----------
    bundle_or_path : Bundle, or path of a bundle directory
        What :func:`~dpbnsl.io.bundle.read_bundle` returns, or the directory to read it from.
    out_path : path
        The HTML file to write (writing to standard output is the command line's business:
        ``"-"`` is refused here).
    overwrite : bool, default False
        Replace an existing file.

    Returns
    -------
    Path
        ``out_path``.

    Raises
    ------
    FileNotFoundError
        The parent directory of ``out_path`` does not exist.
    IsADirectoryError
        ``out_path`` is a directory.
    FileExistsError
        ``out_path`` exists (and ``overwrite`` is False, or it is not a regular file).
    dpbnsl.io.bundle.BundleError
        ``bundle_or_path`` is not a readable bundle.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from dpbnsl import fed_bnsl, simulate
    >>> data = simulate(4, 100, participants=2, rng=0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     run = fed_bnsl(data.participants, max_rounds=3).save(Path(tmp) / "run")
    ...     page = write_html(run, Path(tmp) / "report.html")
    ...     page.name, page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    ('report.html', True)
    """
    out = _check_out(out_path, overwrite)
    bundle = bundle_or_path if isinstance(bundle_or_path, Bundle) else read_bundle(bundle_or_path)
    data = render_html(bundle).encode("utf-8", errors="replace")
    tmp = out.absolute().parent / f".{out.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
