"""Privacy–utility figures from a sweep table (:func:`~dpbnsl.audits.tradeoff.sweep`).

Each point of a curve is the **median** over the seeds, and its band spans the seeds' **25th to
75th percentiles** (the interquartile range, :data:`BAND`): both are values the metric can take, so
a band never leaves the metric's range (no SHD below 0 or TPR above 1, as mean ± std gave) and one
unlucky seed does not widen it. :func:`band_limits` computes them.

matplotlib is an optional extra (``pip install "dpbnsl[plot]"``); it is imported only when a figure
is drawn, through its object-oriented API on an Agg canvas, so plotting never changes the caller's
pyplot backend or state and never opens a window.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import ArrayLike, check_choice
from .tradeoff import METRICS, SweepResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

__all__ = ["plot_tradeoff", "band_limits", "BAND"]

#: The quantiles of the seeds a band spans: the interquartile range (the line is the median).
BAND = (0.25, 0.75)
#: What the figure says the lines and bands are.
BAND_NOTE = "lines: median over seeds; bands: 25th–75th percentile of the seeds (interquartile range)"

_X = ("epsilon", "d", "P", "n_k")
_FORMATS = (".png", ".svg")
_LABELS = {
    "epsilon": "ε",
    "d": "nodes d",
    "P": "participants P",
    "n_k": "rows per participant",
    "shd": "SHD",
    "tpr": "TPR",
    "fdr": "FDR",
    "f1": "F1",
    "nnz": "predicted edges",
    "comm_mb": "communication (MB)",
    "seconds": "learner time (s)",
}


def _matplotlib() -> tuple[type[Figure], type[FigureCanvasAgg]]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            'plotting needs matplotlib, an optional extra of dpbnsl: pip install "dpbnsl[plot]"'
        ) from exc
    return Figure, FigureCanvasAgg


def _fixed(frame: pd.DataFrame, x: str) -> dict:
    """The settings the figure holds fixed; raise if the frame mixes several values of one.

    A method's ``options`` may differ between points of the curve (e.g. per-ε hyperparameters)
    but not within one point, where rows of different settings would be averaged together.
    """
    if "options" in frame.columns:
        point = ["method", "epsilon"] + ([x] if x != "epsilon" else [])
        for at, opts in frame.groupby(point, sort=False)["options"]:
            values = sorted(opts.unique().tolist())
            if len(values) > 1:
                where = ", ".join(
                    f"{'ε' if c == 'epsilon' else c} = {v:g}" for c, v in zip(point[1:], at[1:])
                )
                raise ValueError(
                    f"`frame` mixes options {values} for {at[0]} at {where}; filter "
                    f"it first (e.g. frame[frame['options'] == {values[0]!r}])"
                )
    fixed = {}
    private = frame[np.isfinite(frame["epsilon"])]
    setting = [c for c in ("graph", "edges_per_node") if c in frame.columns]
    for col, rows in [(c, frame) for c in (*_X[1:], *setting) if c != x] + [("delta", private)]:
        values = sorted(rows[col].unique().tolist())
        if len(values) > 1:
            raise ValueError(
                f"`frame` mixes {col} = {values}; filter it first (e.g. "
                f"frame[frame[{col!r}] == {values[0]!r}])" + (f" or plot with x={col!r}" if col in _X else "")
            )
        if values:
            fixed[col] = values[0]
    return fixed


def band_limits(values: ArrayLike, quantiles: tuple[float, float] = BAND) -> tuple[float, float, float]:
    """The median of ``values`` and the band drawn around it: their ``quantiles``.

    Quantiles interpolate linearly between the sorted values, so ``min ≤ low ≤ median ≤ high ≤ max``:
    the band stays inside the range of the data (and so of the metric). NaN values (a metric a run
    did not produce) are ignored; with none left, all three are NaN.

    Parameters
    ----------
    values : array-like of float
        One metric over the seeds of one point of a curve.
    quantiles : (float, float), default BAND = (0.25, 0.75)
        The lower and upper quantile, ``0 ≤ low ≤ 0.5 ≤ high ≤ 1``.

    Returns
    -------
    (median, low, high) : tuple of float

    Examples
    --------
    >>> band_limits([0, 0, 3])                 # SHD of three seeds: mean − std would be −0.73
    (0.0, 0.0, 1.5)
    >>> band_limits([1.0, 1.0, 0.0, float("nan")])  # TPR: mean + std would be 1.24
    (1.0, 0.5, 1.0)
    """
    if not (isinstance(quantiles, Sequence) and len(quantiles) == 2):
        raise TypeError(f"`quantiles` must be a pair (low, high); got {quantiles!r}")
    lo_q, hi_q = quantiles
    if not (0.0 <= lo_q <= 0.5 <= hi_q <= 1.0):
        raise ValueError(f"`quantiles` must satisfy 0 ≤ low ≤ 0.5 ≤ high ≤ 1; got {quantiles!r}")
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    median, low, high = np.quantile(v, [0.5, lo_q, hi_q])
    return float(median), float(low), float(high)


def _bands(rows: pd.DataFrame, by: list[str], metric: str) -> pd.DataFrame:
    """Per group of ``by`` (in order of appearance): the metric's ``median``, ``low`` and ``high``."""
    out = []
    for key, part in rows.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append((*key, *band_limits(part[metric].to_numpy(float))))
    return pd.DataFrame(out, columns=[*by, "median", "low", "high"])


def _band(
    ax: Axes, xs: np.ndarray, centre: np.ndarray, low: np.ndarray, high: np.ndarray, **style: Any
) -> None:
    ax.plot(xs, centre, **style)
    ax.fill_between(xs, low, high, color=style["color"], alpha=0.2, linewidth=0)


def plot_tradeoff(
    frame: pd.DataFrame | SweepResult,
    *,
    path: str | os.PathLike[str],
    x: str = "epsilon",
    y: str | Sequence[str] = ("shd", "tpr", "fdr"),
    methods: Sequence[str] | None = None,
    log_x: bool = True,
    title: str | None = None,
) -> Path:
    """Draw sweep metrics over seeds, one panel per metric, and save it: each point is the median
    over the seeds and its band their interquartile range (25th to 75th percentile; see
    :func:`band_limits`), which stays inside the metric's range.

    Parameters
    ----------
    frame : DataFrame or SweepResult
        Rows of :func:`~dpbnsl.audits.tradeoff.sweep`. Every grid column other than ``x`` (and δ of
        the private rows) must hold one value: filter the frame first.
    path : path ending in ".png" or ".svg"
        Where to save the figure (the folder is created if needed); the format follows the suffix.
    x : {"epsilon", "d", "P", "n_k"}, default "epsilon"
        Against ε, private methods are lines with bands and non-private ones (ε = ∞) dashed
        horizontal lines with bands. Against a grid column, each private method gets one line per
        ε, and non-private methods are dashed lines.
    y : str or sequence of str, default ("shd", "tpr", "fdr")
        Metrics among ``shd, tpr, fdr, f1, nnz, comm_mb, seconds``.
    methods : sequence of str, optional
        Methods to draw, in this order (default: all in the frame, in order of appearance).
    log_x : bool, default True
        Logarithmic x axis.
    title : str, optional
        Figure title (default: the fixed settings, e.g. "d = 20, P = 10, n_k = 200, graph = ER,
        edges/node = 1, δ = 1e-05").

    Returns
    -------
    Path
        ``path``.
    """
    frame = frame.frame if isinstance(frame, SweepResult) else frame
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"`frame` must be a DataFrame or a SweepResult; got {type(frame).__name__}")
    x = check_choice(x, "x", _X)
    ys = [y] if isinstance(y, str) else list(y)
    if not ys:
        raise ValueError("`y` must name at least one metric")
    ys = [check_choice(m, "y", METRICS) for m in ys]
    path = Path(path)
    if path.suffix.lower() not in _FORMATS:
        raise ValueError(f"`path` must end in {' or '.join(_FORMATS)}; got {str(path)!r}")
    missing = [c for c in ("method", "epsilon", "seed", x, *ys) if c not in frame.columns]
    if missing:
        raise ValueError(f"`frame` lacks the sweep columns {missing}")
    present = list(dict.fromkeys(frame["method"]))
    methods = (
        present
        if methods is None
        else [
            check_choice(m, "methods", present) for m in ([methods] if isinstance(methods, str) else methods)
        ]
    )
    frame = frame[frame["method"].isin(methods)]
    if frame.empty:
        raise ValueError("`frame` has no rows to plot")
    private = np.isfinite(frame["epsilon"].to_numpy(dtype=float))
    if x == "epsilon" and not private.any():
        raise ValueError("x='epsilon' needs rows of a private method (finite ε)")
    fixed = _fixed(frame, x)
    Figure, FigureCanvasAgg = _matplotlib()
    fig = Figure(figsize=(4.2 * len(ys), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(ys), squeeze=False)[0]
    for ax, metric in zip(axes, ys):
        colors = iter(f"C{i % 10}" for i in range(10**6))  # same colours in every panel
        for method in methods:
            rows = frame[frame["method"] == method]
            if x == "epsilon" and not np.isfinite(rows["epsilon"]).any():
                median, low, high = band_limits(rows[metric].to_numpy(float))
                color = next(colors)
                ax.axhline(median, linestyle="--", color=color, label=f"{method} (non-private)")
                ax.axhspan(low, high, color=color, alpha=0.1, linewidth=0)
                continue
            if x == "epsilon":
                series = [(method, "-", _bands(rows, ["epsilon"], metric))]
            else:  # one line per ε, the non-private one (ε = ∞) dashed
                s = _bands(rows, ["epsilon", x], metric)
                series = [
                    (
                        method if not math.isfinite(e) else f"{method}, ε = {e:g}",
                        "-" if math.isfinite(e) else "--",
                        part,
                    )
                    for e, part in s.groupby("epsilon", sort=True)
                ]
            for label, style, part in series:
                part = part.sort_values(x)
                _band(
                    ax,
                    part[x].to_numpy(float),
                    part["median"].to_numpy(float),
                    part["low"].to_numpy(float),
                    part["high"].to_numpy(float),
                    marker="o",
                    markersize=3,
                    label=label,
                    linestyle=style,
                    color=next(colors),
                )
        if log_x:
            ax.set_xscale("log")
            ticks = sorted(v for v in frame[x].unique() if np.isfinite(v) and v > 0)
            if 0 < len(ticks) <= 12:  # label every value of the grid (log axes label only decades)
                ax.set_xticks(ticks)
                ax.set_xticklabels([format(v, "g") for v in ticks])
                ax.minorticks_off()
        ax.set_xlabel(_LABELS[x])
        ax.set_ylabel(_LABELS[metric])
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    names = {"delta": "δ", "edges_per_node": "edges/node"}
    fig.suptitle(
        title
        if title is not None
        else ", ".join(
            f"{names.get(k, k)} = {v if isinstance(v, str) else format(v, 'g')}" for k, v in fixed.items()
        ),
        fontsize="medium",
    )
    fig.supxlabel(BAND_NOTE, fontsize="x-small", color="0.35")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower()[1:], dpi=150)
    return path
