"""Learned graphs in other formats: networkx, Graphviz DOT and causal-learn's endpoint matrices.

Conventions of this package (:mod:`dpbnsl.graphs`): ``W[i, j] != 0`` means the edge ``i -> j``; a
CPDAG is a 0/1 matrix in which an undirected edge ``i - j`` has both ``[i, j]`` and ``[j, i]`` set.
Nodes are named ``"X0"``, ``"X1"``, ... unless ``names`` are given (or ``W`` is a DataFrame, whose
column names are used).

- :func:`to_networkx` / :func:`from_networkx`: a ``networkx.DiGraph`` with one edge per non-zero
  entry (attribute ``weight``); needs the optional package networkx.
- :func:`to_dot`: a Graphviz DOT string (no Graphviz needed), optionally coloured against a true
  graph and drawing a CPDAG's undirected edges without arrowheads.
- :func:`to_causallearn` / :func:`from_causallearn`: causal-learn's endpoint encoding, in which
  ``G[i, j]`` is the mark at ``i`` of the edge between ``i`` and ``j`` (``-1`` tail, ``1``
  arrowhead): ``i -> j`` is ``G[i, j] = -1, G[j, i] = 1`` and ``i - j`` is ``G[i, j] = G[j, i] = -1``
  (``causallearn/graph/GeneralGraph.py``, ``add_directed_edge``; the same layout as
  ``cg.G.graph`` from causal-learn's ``pc``).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._validation import ArrayLike, as_square_matrix, check_bool

__all__ = [
    "to_networkx",
    "from_networkx",
    "to_dot",
    "to_causallearn",
    "from_causallearn",
    "DOT_COLOURS",
    "CAUSALLEARN_ENDPOINTS",
]

#: Edge colours of :func:`to_dot` when a true graph is given, by class of edge (read-only).
DOT_COLOURS = MappingProxyType({"true": "black", "extra": "red", "reversed": "orange", "missing": "grey"})

#: causal-learn's endpoint codes (``causallearn.graph.Endpoint``; read-only); only tails and
#: arrowheads occur in a CPDAG.
CAUSALLEARN_ENDPOINTS = MappingProxyType(
    {-1: "tail", 0: "null", 1: "arrow", 2: "circle", 3: "star", 4: "tail-and-arrow", 5: "arrow-and-arrow"}
)


def _require(module: str, package: str, what: str) -> Any:
    """Import the optional ``module`` or raise an ImportError saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what} needs the optional package {package!r}, which is not installed: pip install {package}"
        ) from exc


def _names(names: Any, d: int, W: Any = None, name: str = "names") -> list[str]:
    """``d`` unique string node names: ``names``, else a DataFrame's columns, else X0, X1, ..."""
    if names is None:
        if isinstance(W, pd.DataFrame):
            names = [str(c) for c in W.columns]
        else:
            return [f"X{i}" for i in range(d)]
    if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray, pd.Index)):
        raise TypeError(
            f"`{name}` must be a sequence of str, one per node; got {type(names).__name__} {names!r}"
        )
    out = list(names)
    if len(out) != d:
        raise ValueError(f"`{name}` must hold {d} names (one per node); got {len(out)}: {out!r}")
    for k, v in enumerate(out):
        if not isinstance(v, str):
            raise TypeError(f"`{name}` must hold str; got {type(v).__name__} {v!r} at position {k}")
    seen: dict[str, int] = {}
    for k, v in enumerate(out):
        if v in seen:
            raise ValueError(f"`{name}` must be unique; {v!r} is at positions {seen[v]} and {k}")
        seen[v] = k
    return [str(v) for v in out]


def _same_shape(M: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = as_square_matrix(M, name)
    if arr.shape != shape:
        raise ValueError(f"`{name}` must have the shape of `W`, {shape}; got {arr.shape}")
    return arr


def to_networkx(W: ArrayLike, *, names: Sequence[str] | None = None, weights: bool = True) -> Any:
    """The graph ``W`` as a ``networkx.DiGraph``.

    Parameters
    ----------
    W : array or DataFrame of shape (d, d)
        ``W[i, j] != 0`` is the edge ``i -> j``. A CPDAG gives both ``i -> j`` and ``j -> i`` for
        each undirected edge ``i - j`` (a ``DiGraph`` has no undirected edges); recover the
        undirected pairs as those whose reverse is also an edge, or take
        ``G.to_undirected(reciprocal=True)``.
    names : sequence of d unique str, optional
        Node names (default: a DataFrame's columns, else ``"X0"``, ..., ``"X{d-1}"``), in the order
        of the rows of ``W``; the nodes are added in that order.
    weights : bool, default True
        Store ``W[i, j]`` as the edge attribute ``weight`` (False: edges without attributes).

    Returns
    -------
    networkx.DiGraph

    Raises
    ------
    ImportError
        When networkx is not installed (``pip install networkx``).

    Examples
    --------
    >>> G = to_networkx([[0, 1.5], [0, 0]], names=["a", "b"])
    >>> list(G.nodes), list(G.edges(data="weight"))
    (['a', 'b'], [('a', 'b', 1.5)])
    """
    A = as_square_matrix(W, "W")
    labels = _names(names, A.shape[0], W)
    keep = check_bool(weights, "weights")
    nx = _require("networkx", "networkx", "to_networkx")
    G = nx.DiGraph()
    G.add_nodes_from(labels)
    for i, j in zip(*np.nonzero(A)):
        if keep:
            G.add_edge(labels[i], labels[j], weight=float(A[i, j]))
        else:
            G.add_edge(labels[i], labels[j])
    return G


def from_networkx(G: Any, *, nodes: Sequence[Any] | None = None) -> tuple[np.ndarray, list[str]]:
    """A networkx graph as ``(W, names)``: the inverse of :func:`to_networkx`.

    Parameters
    ----------
    G : networkx.DiGraph or networkx.Graph
        Edge ``u -> v`` gives ``W[u, v] = weight`` (the edge attribute ``weight``, default 1). An
        undirected ``Graph`` sets both directions, as a CPDAG's undirected edges. Multigraphs are
        refused.
    nodes : sequence of the nodes of G, optional
        Their order (the rows of ``W``); default ``list(G.nodes)``, the insertion order.

    Returns
    -------
    W : float array of shape (d, d)
    names : list of str
        ``str(node)`` for each node, in the order of the rows of ``W``.

    Examples
    --------
    >>> W, names = from_networkx(to_networkx([[0, 1.5], [0, 0]], names=["a", "b"]))
    >>> W.tolist(), names
    ([[0.0, 1.5], [0.0, 0.0]], ['a', 'b'])
    """
    nx = _require("networkx", "networkx", "from_networkx")
    if not isinstance(G, nx.Graph):
        raise TypeError(f"`G` must be a networkx Graph or DiGraph; got {type(G).__name__}")
    if G.is_multigraph():
        raise TypeError(
            f"`G` must not be a multigraph; got {type(G).__name__} (convert it with networkx.DiGraph(G) "
            "after merging the parallel edges)"
        )
    if nodes is None:
        order = list(G.nodes)
    else:
        if isinstance(nodes, (str, bytes)) or not isinstance(nodes, (Sequence, np.ndarray, pd.Index)):
            raise TypeError(f"`nodes` must be a sequence of the nodes of `G`; got {type(nodes).__name__}")
        order = list(nodes)
        missing = [v for v in order if v not in G]
        if missing:
            raise ValueError(f"`nodes` has {missing[:5]!r} which are not nodes of `G`")
        if len(set(order)) != len(order):
            dup = sorted({repr(v) for v in order if order.count(v) > 1})
            raise ValueError(f"`nodes` must not repeat a node; {', '.join(dup)} repeated")
        listed = set(order)
        left = [v for v in G.nodes if v not in listed]
        if left:
            raise ValueError(f"`nodes` must list every node of `G`; {left[:5]!r} missing")
    names = [str(v) for v in order]
    if len(set(names)) != len(names):
        clash = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"`G` has distinct nodes with the same str name {clash!r}; names must be unique")
    index = {v: k for k, v in enumerate(order)}
    W = np.zeros((len(order), len(order)))
    for u, v, w in G.edges(data="weight", default=1.0):
        where = f"weight of edge ({u!r}, {v!r})"
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(f"the {where} must be a real number; got {type(w).__name__} {w!r}")
        if not math.isfinite(w) or w == 0:
            raise ValueError(f"the {where} must be finite and non-zero (0 means no edge); got {w!r}")
        W[index[u], index[v]] = float(w)
        if not G.is_directed():
            W[index[v], index[u]] = float(w)
    return W, names


def _dot_string(s: str) -> str:
    """``s`` as a quoted DOT string: backslashes, quotes and line breaks escaped."""
    s = s.replace("\\", "\\\\").replace('"', '\\"')
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{s}"'


def _attrs(**kw: str | None) -> str:
    items = [f"{k}={_dot_string(v)}" for k, v in kw.items() if v is not None]
    return f" [{', '.join(items)}]" if items else ""


def to_dot(
    W: ArrayLike,
    *,
    names: Sequence[str] | None = None,
    truth: ArrayLike | None = None,
    cpdag: ArrayLike | bool | None = None,
    title: str | None = None,
    weights: bool = False,
) -> str:
    """The graph ``W`` as a Graphviz DOT string (render it with ``dot -Tsvg``; no Graphviz needed here).

    Parameters
    ----------
    W : array or DataFrame of shape (d, d)
        ``W[i, j] != 0`` is the edge ``i -> j``; a 2-cycle is drawn as two arrows.
    names : sequence of d unique str, optional
        Node labels (default: a DataFrame's columns, else ``"X0"``, ...). Any string is safe: the
        nodes are identified as ``n0``, ``n1``, ... and the names are escaped into their labels.
    truth : array of shape (d, d), optional
        A true graph (0/1 or weighted; a pair set both ways is an undirected true edge). Each drawn
        edge is coloured as in :data:`DOT_COLOURS`: ``true`` (black) when the truth has it (for an
        undirected drawn edge: when the truth has either direction), ``reversed`` (orange) when
        the truth has only the opposite edge and the drawing lacks the true one, ``extra`` (red)
        otherwise; true edges whose pair is not adjacent in the drawing are added ``missing``
        (grey, dashed). The classes are those of :func:`dpbnsl.metrics.count_accuracy`.
    cpdag : array of shape (d, d) or True, optional
        Draw an equivalence class: a pair set both ways is one undirected edge (``dir=none``), a
        pair set one way an arrow. An array (e.g. ``LearnResult.cpdag``) is the CPDAG drawn and
        ``W`` then only supplies the weight labels; ``True`` reads ``W`` itself as the CPDAG.
    title : str, optional
        A label on top of the drawing.
    weights : bool, default False
        Label each drawn edge with its weight from ``W``, to 3 significant digits.

    Returns
    -------
    str
        The DOT source, the same for the same input: nodes by index, edges sorted by their pair.

    Examples
    --------
    >>> print(to_dot([[0, 1], [0, 0]], names=['say "hi"', "p44/42"], truth=[[0, 0], [1, 0]]))
    digraph {
      n0 [label="say \\"hi\\""];
      n1 [label="p44/42"];
      n0 -> n1 [color="orange"];
    }
    >>> print(to_dot([[0, 1, 0], [1, 0, 1], [0, 0, 0]], cpdag=True, title="PC"))
    digraph {
      graph [label="PC", labelloc="t"];
      n0 [label="X0"];
      n1 [label="X1"];
      n2 [label="X2"];
      n0 -> n1 [dir="none"];
      n1 -> n2;
    }
    """
    A = as_square_matrix(W, "W")
    d = A.shape[0]
    labels = _names(names, d, W)
    show_weights = check_bool(weights, "weights")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"`title` must be a str or None; got {type(title).__name__} {title!r}")
    if cpdag is None or cpdag is False:
        C, undirected_mode = A != 0, False
    elif cpdag is True:
        C, undirected_mode = A != 0, True
    else:
        C, undirected_mode = _same_shape(cpdag, "cpdag", A.shape) != 0, True
    T = None if truth is None else _same_shape(truth, "truth", A.shape) != 0

    # (a, b, kind, attributes): kind 0 = drawn edge, 1 = missing true edge
    edges: list[tuple[int, int, int, dict[str, str | None]]] = []

    def weight_label(a: int, b: int, both: bool) -> str | None:
        if not show_weights:
            return None
        w = A[a, b] if A[a, b] != 0 or not both else A[b, a]
        return None if w == 0 else f"{w:.3g}"

    def colour(a: int, b: int, undirected: bool) -> dict[str, str | None]:
        if T is None:
            return {}
        if T[a, b] or (undirected and T[b, a]):
            return {"color": DOT_COLOURS["true"]}
        if T[b, a] and not C[b, a]:
            return {"color": DOT_COLOURS["reversed"]}
        return {"color": DOT_COLOURS["extra"]}

    for a in range(d):
        for b in range(a, d) if undirected_mode else range(d):
            if not C[a, b] and not (undirected_mode and C[b, a]):
                continue
            if undirected_mode and a != b and C[a, b] and C[b, a]:
                attrs = {"dir": "none", **colour(a, b, True), "label": weight_label(a, b, True)}
                edges.append((a, b, 0, attrs))
            elif C[a, b]:
                edges.append((a, b, 0, {**colour(a, b, False), "label": weight_label(a, b, False)}))
            else:  # undirected_mode, only b -> a
                edges.append((b, a, 0, {**colour(b, a, False), "label": weight_label(b, a, False)}))
    if T is not None:
        for a in range(d):
            for b in range(a, d):
                if not (T[a, b] or T[b, a]) or C[a, b] or C[b, a]:
                    continue
                style: dict[str, str | None] = {"color": DOT_COLOURS["missing"], "style": "dashed"}
                if a != b and T[a, b] and T[b, a]:
                    edges.append((a, b, 1, {"dir": "none", **style}))
                else:
                    src, dst = (a, b) if T[a, b] else (b, a)
                    edges.append((src, dst, 1, style))

    lines = ["digraph {"]
    if title is not None:
        lines.append(f"  graph{_attrs(label=title, labelloc='t')};")
    lines += [f"  n{i}{_attrs(label=label)};" for i, label in enumerate(labels)]
    for a, b, _, attrs in sorted(edges, key=lambda e: (min(e[0], e[1]), max(e[0], e[1]), e[2], e[0])):
        lines.append(f"  n{a} -> n{b}{_attrs(**attrs)};")
    lines.append("}")
    return "\n".join(lines)


def to_causallearn(
    W: ArrayLike, *, names: Sequence[str] | None = None, as_graph: bool = False
) -> np.ndarray | Any:
    """The graph or CPDAG ``W`` in causal-learn's endpoint encoding.

    ``i -> j`` (``W[i, j] != 0``, ``W[j, i] == 0``) becomes ``G[i, j] = -1`` (tail at i),
    ``G[j, i] = 1`` (arrowhead at j); a pair set both ways, a CPDAG's undirected ``i - j``, becomes
    ``G[i, j] = G[j, i] = -1``. Hence a weighted matrix with a 2-cycle ``i <-> j`` reads as the
    undirected edge. Self-loops have no encoding and are refused.

    Parameters
    ----------
    W : array or DataFrame of shape (d, d)
    names : sequence of d unique str, optional
        Node names of the graph object (default: a DataFrame's columns, else ``"X0"``, ...; note
        that causal-learn itself names its nodes ``"X1"``, ..., ``"X{d}"``). Only with ``as_graph``.
    as_graph : bool, default False
        Return a ``causallearn.graph.GeneralGraph.GeneralGraph`` (needs causal-learn) instead of the
        matrix; its ``.graph`` is the matrix.

    Returns
    -------
    int array of shape (d, d), or GeneralGraph

    Examples
    --------
    >>> to_causallearn([[0, 1, 0], [0, 0, 1], [0, 1, 0]])  # 0 -> 1, 1 - 2
    array([[ 0, -1,  0],
           [ 1,  0, -1],
           [ 0, -1,  0]])
    """
    A = as_square_matrix(W, "W")
    d = A.shape[0]
    graph = check_bool(as_graph, "as_graph")
    labels = _names(names, d, W)
    loops = np.flatnonzero(np.diag(A))
    if loops.size:
        k = int(loops[0])
        raise ValueError(
            f"`W` has a self-loop at node {k} (W[{k}, {k}] = {float(A[k, k])!r}); "
            "causal-learn graphs have none"
        )
    S = A != 0
    G = np.zeros((d, d), dtype=int)
    G[S] = -1  # a tail at i for every edge out of i ...
    G[S.T & ~S] = 1  # ... and an arrowhead at j where j -> i is not set as well
    if not graph:
        return G
    gg = _require("causallearn.graph.GeneralGraph", "causal-learn", "to_causallearn(..., as_graph=True)")
    from causallearn.graph.Edge import Edge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GraphNode import GraphNode

    nodes = [GraphNode(label) for label in labels]
    out = gg.GeneralGraph(nodes)
    for i, j in zip(*np.nonzero(np.triu(S | S.T))):
        if S[i, j] and S[j, i]:
            out.add_edge(Edge(nodes[i], nodes[j], Endpoint.TAIL, Endpoint.TAIL))
        elif S[i, j]:
            out.add_directed_edge(nodes[i], nodes[j])
        else:
            out.add_directed_edge(nodes[j], nodes[i])
    return out


def from_causallearn(G: Any, *, split: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """A causal-learn graph as a CPDAG in this package's convention: the inverse of
    :func:`to_causallearn`.

    Parameters
    ----------
    G : int array of shape (d, d), GeneralGraph or CausalGraph
        causal-learn's endpoint matrix (``G[i, j]`` is the mark at ``i``: ``-1`` tail, ``1``
        arrowhead), or an object holding it: a ``GeneralGraph`` (``G.graph``) or the
        ``CausalGraph`` returned by causal-learn's ``pc`` (``G.G.graph``). Only directed
        (``-1``/``1``) and undirected (``-1``/``-1``) edges are accepted: bidirected edges,
        circles (PAGs) and multiple edges have no CPDAG encoding and raise ``ValueError``.
    split : bool, default False
        Return the directed and undirected parts separately.

    Returns
    -------
    cpdag : int 0/1 array of shape (d, d)
        ``[i, j] = 1`` for ``i -> j``, both entries for ``i - j``. Or, with ``split``:
    directed, undirected : boolean arrays of shape (d, d)
        ``directed[i, j]`` for ``i -> j``; ``undirected`` is symmetric (the layout of
        :func:`dpbnsl.learners.constraint.pc.orient_pdag`).

    Examples
    --------
    >>> from_causallearn([[0, -1, 0], [1, 0, -1], [0, -1, 0]])  # 0 -> 1, 1 - 2
    array([[0, 1, 0],
           [0, 0, 1],
           [0, 1, 0]])
    """
    parts = check_bool(split, "split")
    if hasattr(G, "G") and hasattr(G.G, "graph"):  # a CausalGraph
        G = G.G.graph
    elif hasattr(G, "graph") and hasattr(G, "node_map"):  # a GeneralGraph
        G = G.graph
    M = as_square_matrix(G, "G")
    bad = ~np.isin(M, list(CAUSALLEARN_ENDPOINTS))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"`G` must hold causal-learn endpoint codes {sorted(CAUSALLEARN_ENDPOINTS)}; "
            f"got G[{i}, {j}] = {float(M[i, j])!r}"
        )
    E = M.astype(int)
    loops = np.flatnonzero(np.diag(E))
    if loops.size:
        k = int(loops[0])
        raise ValueError(
            f"`G` has a self-loop mark at node {k} (G[{k}, {k}] = {E[k, k]}); causal-learn graphs have none"
        )
    directed = (E == -1) & (E.T == 1)
    undirected = (E == -1) & (E.T == -1)
    other = (E != 0) & ~(directed | directed.T | undirected)
    if other.any():
        i, j = (int(v) for v in np.argwhere(other)[0])
        ei, ej = int(E[i, j]), int(E[j, i])
        raise ValueError(
            f"`G` has an edge that is neither directed (-1/1) nor undirected (-1/-1) between nodes {i} and "
            f"{j}: G[{i}, {j}] = {ei} ({CAUSALLEARN_ENDPOINTS[ei]}), G[{j}, {i}] = {ej} "
            f"({CAUSALLEARN_ENDPOINTS[ej]}); a CPDAG cannot hold it"
        )
    if parts:
        return directed, undirected
    return (directed | undirected).astype(int)
