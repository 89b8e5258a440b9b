"""Tests for dpbnsl.io.graph_export: networkx, DOT and causal-learn formats.

The DOT output is checked as text (escaping, colour classes, determinism), parsed with pydot and
rendered with Graphviz's ``dot`` when those are installed. The causal-learn encoding is checked
against hand-written matrices here and against causal-learn's own ``GeneralGraph`` when it is
installed (tests/test_crosschecks.py compares whole PC runs).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpbnsl.graphs import dag_to_cpdag
from dpbnsl.io.graph_export import (
    CAUSALLEARN_ENDPOINTS,
    DOT_COLOURS,
    from_causallearn,
    from_networkx,
    to_causallearn,
    to_dot,
    to_networkx,
)
from dpbnsl.simulation import simulate_dag, simulate_weights

NASTY = ['say "hi"', "p44/42", "ünï cødé ✓", "back\\slash", "two\nlines", "a b", "{x}; y -> z", "\\N"]


def adj(d, *edges):
    A = np.zeros((d, d))
    for i, j in edges:
        A[i, j] = 1.0
    return A


def random_weighted(d, seed):
    return simulate_weights(simulate_dag(d, s0=d, graph_type="ER", rng=seed), rng=seed + 1)


def dot_edges(dot):
    """{(src, dst): {attr: value}} of the edge lines of ``to_dot`` output (no commas in values)."""
    out = {}
    for a, b, attrs in re.findall(r"^  n(\d+) -> n(\d+)(?: \[(.*)\])?;$", dot, flags=re.M):
        out[(int(a), int(b))] = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
    return out


# ----------------------------------------------------------------------------- networkx


def test_networkx_nodes_edges_weights_and_round_trip():
    nx = pytest.importorskip("networkx")
    W = random_weighted(8, seed=3)
    names = [f"gene {k}" for k in range(8)]
    G = to_networkx(W, names=names)
    assert isinstance(G, nx.DiGraph)
    assert list(G.nodes) == names
    assert G.number_of_edges() == np.count_nonzero(W)
    for i, j in zip(*np.nonzero(W)):
        assert G.edges[names[i], names[j]]["weight"] == W[i, j]
    W2, names2 = from_networkx(G)
    np.testing.assert_array_equal(W2, W)
    assert names2 == names


def test_networkx_defaults_unweighted_dataframe_and_cpdag():
    pytest.importorskip("networkx")
    G = to_networkx(adj(3, (0, 1)), weights=False)
    assert list(G.nodes) == ["X0", "X1", "X2"] and G.edges["X0", "X1"] == {}
    W, names = from_networkx(G)  # no weight attribute reads as 1
    np.testing.assert_array_equal(W, adj(3, (0, 1)))
    frame = pd.DataFrame(adj(2, (1, 0)), index=["a", "b"], columns=["a", "b"])
    assert list(to_networkx(frame).edges) == [("b", "a")]
    cpdag = dag_to_cpdag(adj(3, (0, 1), (1, 2)))  # a chain: all undirected
    G = to_networkx(cpdag)
    assert set(G.edges) == {("X0", "X1"), ("X1", "X0"), ("X1", "X2"), ("X2", "X1")}
    assert set(map(frozenset, G.to_undirected(reciprocal=True).edges)) == {
        frozenset({"X0", "X1"}),
        frozenset({"X1", "X2"}),
    }
    np.testing.assert_array_equal(from_networkx(G)[0], cpdag)


def test_from_networkx_node_order_undirected_and_errors():
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    G.add_edge("b", "a", weight=2.0)
    G.add_node("c")
    W, names = from_networkx(G, nodes=["a", "b", "c"])
    assert names == ["a", "b", "c"] and W[1, 0] == 2.0 and np.count_nonzero(W) == 1
    U = nx.Graph([(0, 1)])
    W, names = from_networkx(U)
    assert names == ["0", "1"]
    np.testing.assert_array_equal(W, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"`nodes` has \['z'\]"):
        from_networkx(G, nodes=["a", "b", "z"])
    with pytest.raises(ValueError, match=r"`nodes` must list every node of `G`; \['c'\] missing"):
        from_networkx(G, nodes=["a", "b"])
    with pytest.raises(ValueError, match="must not repeat"):
        from_networkx(G, nodes=["a", "a", "b", "c"])
    with pytest.raises(TypeError, match="multigraph"):
        from_networkx(nx.MultiDiGraph([(0, 1)]))
    with pytest.raises(TypeError, match="networkx Graph or DiGraph; got ndarray"):
        from_networkx(np.eye(2))
    bad = nx.DiGraph()
    bad.add_edge("a", "b", weight=0.0)
    with pytest.raises(ValueError, match=r"weight of edge \('a', 'b'\) must be finite and non-zero"):
        from_networkx(bad)
    bad.edges["a", "b"]["weight"] = "heavy"
    with pytest.raises(TypeError, match=r"weight of edge \('a', 'b'\) must be a real number; got str"):
        from_networkx(bad)
    clash = nx.DiGraph([(1, "1")])
    with pytest.raises(ValueError, match="same str name"):
        from_networkx(clash)


def test_networkx_missing_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)  # import networkx now raises ImportError
    with pytest.raises(ImportError, match="pip install networkx"):
        to_networkx(np.eye(2) * 0)
    with pytest.raises(ImportError, match="pip install networkx"):
        from_networkx(object())


# ----------------------------------------------------------------------------- DOT


def test_dot_escapes_any_name():
    d = len(NASTY)
    dot = to_dot(np.zeros((d, d)), names=NASTY, title='"quoted" title\\')
    lines = dot.splitlines()
    assert lines[0] == "digraph {" and lines[-1] == "}"
    assert lines[1] == '  graph [label="\\"quoted\\" title\\\\", labelloc="t"];'
    assert lines[2] == '  n0 [label="say \\"hi\\""];'
    assert lines[3] == '  n1 [label="p44/42"];'
    assert lines[4] == '  n2 [label="ünï cødé ✓"];'
    assert lines[5] == '  n3 [label="back\\\\slash"];'
    assert lines[6] == '  n4 [label="two\\nlines"];'
    assert lines[8] == '  n6 [label="{x}; y -> z"];'
    assert lines[9] == '  n7 [label="\\\\N"];'  # not Graphviz's node-name escape
    for line in lines[1:-1]:  # every quoted string closes on its line: no stray quote
        assert re.fullmatch(r'  [^"]*(?:"(?:[^"\\]|\\.)*"[^"]*)*', line), line


def test_dot_colour_classes_match_count_accuracy():
    from dpbnsl.metrics import count_accuracy

    truth = adj(5, (0, 1), (1, 2), (2, 3), (3, 4))
    est = adj(5, (0, 1), (2, 1), (2, 3), (3, 2), (0, 4))  # true, reversed, 2-cycle, extra; 3->4 missing
    dot = to_dot(est, truth=truth)
    edges = dot_edges(dot)
    assert edges == {
        (0, 1): {"color": DOT_COLOURS["true"]},
        (2, 1): {"color": DOT_COLOURS["reversed"]},
        (2, 3): {"color": DOT_COLOURS["true"]},
        (3, 2): {"color": DOT_COLOURS["extra"]},  # the wrong half of a 2-cycle is extra
        (0, 4): {"color": DOT_COLOURS["extra"]},
        (3, 4): {"color": DOT_COLOURS["missing"], "style": "dashed"},
    }
    acc = count_accuracy(truth, est)
    colours = [e["color"] for e in edges.values()]
    assert colours.count("black") == acc.true_positive
    assert colours.count("orange") == acc.reversed
    assert colours.count("red") == acc.extra
    assert colours.count("grey") == acc.missing


def test_dot_colours_on_random_graphs_count_like_count_accuracy():
    from dpbnsl.metrics import count_accuracy

    for seed in range(10):
        truth = simulate_dag(10, s0=12, rng=seed)
        est = simulate_dag(10, s0=12, rng=100 + seed)
        colours = [e["color"] for e in dot_edges(to_dot(est, truth=truth)).values()]
        acc = count_accuracy(truth, est)
        assert (colours.count("black"), colours.count("orange"), colours.count("red")) == (
            acc.true_positive,
            acc.reversed,
            acc.extra,
        )
        assert colours.count("grey") == acc.missing


def test_dot_cpdag_undirected_edges_weights_and_truth():
    W = np.array([[0, 0.123456, 0], [0, 0, 0], [0, -2.5, 0]])  # a DAG: 0 -> 1 <- 2
    cpdag = adj(3, (0, 1), (1, 0), (2, 1))  # as if the class had 0 - 1 undirected
    dot = to_dot(W, cpdag=cpdag, weights=True, truth=adj(3, (1, 0), (1, 2)))
    assert dot_edges(dot) == {
        (0, 1): {"dir": "none", "color": "black", "label": "0.123"},
        (2, 1): {"color": "orange", "label": "-2.5"},
    }
    # cpdag=True reads W itself as the CPDAG; without it a symmetric pair is two arrows
    both = adj(2, (0, 1), (1, 0))
    assert dot_edges(to_dot(both, cpdag=True)) == {(0, 1): {"dir": "none"}}
    assert dot_edges(to_dot(both)) == {(0, 1): {}, (1, 0): {}}
    # an undirected true edge is missing undirected, and either orientation of it is right
    truth = adj(3, (0, 1), (1, 0))
    assert dot_edges(to_dot(np.zeros((3, 3)), truth=truth))[(0, 1)]["dir"] == "none"
    assert dot_edges(to_dot(adj(3, (1, 0)), truth=truth)) == {(1, 0): {"color": "black"}}


def test_dot_is_deterministic_and_sorted():
    W = random_weighted(12, seed=5)
    truth = simulate_dag(12, s0=12, rng=9)
    a = to_dot(W, truth=truth, weights=True)
    assert a == to_dot(W.copy(), truth=truth.copy(), weights=True)
    pairs = [tuple(sorted(k)) for k in dot_edges(a)]
    assert pairs == sorted(pairs)
    assert all("label" not in attrs for attrs in dot_edges(to_dot(W)).values())  # weights=False


def test_dot_weights_three_significant_digits_and_dataframe_names():
    frame = pd.DataFrame(adj(2, (0, 1)) * 12345.678, columns=["raf", "mek"], index=["raf", "mek"])
    dot = to_dot(frame, weights=True)
    assert '  n0 [label="raf"];' in dot
    assert dot_edges(dot) == {(0, 1): {"label": "1.23e+04"}}


PYDOT_WARNINGS = "ignore::DeprecationWarning"  # pydot 4 calls pyparsing 3.3's deprecated names


@pytest.mark.filterwarnings(PYDOT_WARNINGS)
def test_dot_parses_with_pydot():
    pydot = pytest.importorskip("pydot")
    d = len(NASTY)
    W = random_weighted(d, seed=1)
    truth = simulate_dag(d, s0=d, rng=2)
    dot = to_dot(W, names=NASTY, truth=truth, weights=True, title="t")
    (graph,) = pydot.graph_from_dot_data(dot)
    nodes = {n.get_name(): n.get("label") for n in graph.get_nodes() if n.get_name().startswith("n")}
    assert list(nodes) == [f"n{k}" for k in range(d)]
    assert nodes["n0"] == '"say \\"hi\\""'
    parsed = [(int(e.get_source()[1:]), int(e.get_destination()[1:])) for e in graph.get_edges()]
    assert parsed == list(dot_edges(dot))


@pytest.mark.filterwarnings(PYDOT_WARNINGS)
def test_dot_parses_with_networkx_pydot():
    nx = pytest.importorskip("networkx")
    pydot = pytest.importorskip("pydot")
    d = 6
    dot = to_dot(random_weighted(d, seed=4), cpdag=True)
    G = nx.nx_pydot.from_pydot(pydot.graph_from_dot_data(dot)[0])
    assert {v for v in G.nodes if v.startswith("n")} == {f"n{k}" for k in range(d)}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_dot_renders_with_graphviz():
    d = len(NASTY)
    dot = to_dot(random_weighted(d, seed=1), names=NASTY, truth=simulate_dag(d, s0=d, rng=2), weights=True)
    done = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr  # (stderr may hold font warnings on bare machines)
    svg = done.stdout.decode()
    assert "p44/42" in svg and "ünï cødé ✓" in svg and "back\\slash" in svg and "&quot;hi&quot;" in svg


def test_dot_validation():
    with pytest.raises(ValueError, match=r"`W` must be a square matrix; got shape \(2, 3\)"):
        to_dot(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"`truth` must have the shape of `W`, \(2, 2\); got \(3, 3\)"):
        to_dot(np.zeros((2, 2)), truth=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"`cpdag` must have the shape of `W`"):
        to_dot(np.zeros((2, 2)), cpdag=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"`names` must hold 2 names \(one per node\); got 1: \['a'\]"):
        to_dot(np.zeros((2, 2)), names=["a"])
    with pytest.raises(ValueError, match=r"`names` must be unique; 'a' is at positions 0 and 1"):
        to_dot(np.zeros((2, 2)), names=["a", "a"])
    with pytest.raises(TypeError, match=r"`names` must hold str; got int 1 at position 1"):
        to_dot(np.zeros((2, 2)), names=["a", 1])
    with pytest.raises(TypeError, match=r"`names` must be a sequence of str, one per node; got str 'ab'"):
        to_dot(np.zeros((2, 2)), names="ab")
    with pytest.raises(TypeError, match=r"`title` must be a str or None; got int 3"):
        to_dot(np.zeros((2, 2)), title=3)
    with pytest.raises(TypeError, match=r"`weights` must be a bool; got str 'yes'"):
        to_dot(np.zeros((2, 2)), weights="yes")
    with pytest.raises(ValueError, match=r"`truth` has a non-finite value nan"):
        to_dot(np.zeros((2, 2)), truth=[[0, np.nan], [0, 0]])


# ----------------------------------------------------------------------------- causal-learn


def test_causallearn_encoding_by_hand():
    # 0 -> 1, 1 - 2, 3 -> 2, 3 isolated from 0
    cpdag = adj(4, (0, 1), (1, 2), (2, 1), (3, 2))
    G = to_causallearn(cpdag)
    expected = np.array(
        [
            [0, -1, 0, 0],  # tail at 0 on 0 -> 1
            [1, 0, -1, 0],  # arrowhead at 1; tail at 1 on 1 - 2
            [0, -1, 0, 1],  # tail at 2 on 1 - 2; arrowhead at 2 on 3 -> 2
            [0, 0, -1, 0],  # tail at 3
        ]
    )
    np.testing.assert_array_equal(G, expected)
    assert G.dtype.kind == "i"
    np.testing.assert_array_equal(from_causallearn(G), cpdag)
    directed, undirected = from_causallearn(G, split=True)
    assert directed.dtype == bool and undirected.dtype == bool
    np.testing.assert_array_equal(directed, adj(4, (0, 1), (3, 2)) != 0)
    np.testing.assert_array_equal(undirected, adj(4, (1, 2), (2, 1)) != 0)


def test_causallearn_round_trip_on_cpdags_and_weighted_dags():
    for seed in range(20):
        W = random_weighted(9, seed)
        cpdag = dag_to_cpdag(W)
        np.testing.assert_array_equal(from_causallearn(to_causallearn(cpdag)), cpdag)
        np.testing.assert_array_equal(from_causallearn(to_causallearn(W)), W != 0)  # weights are lost
        G = to_causallearn(W)
        assert set(np.unique(G)) <= {-1, 0, 1}
        assert np.array_equal(G != 0, (G != 0).T)  # both marks of every edge are set


def test_from_causallearn_refuses_what_a_cpdag_cannot_hold():
    with pytest.raises(
        ValueError, match=r"between nodes 0 and 1: G\[0, 1\] = 1 \(arrow\), G\[1, 0\] = 1 \(arrow\)"
    ):
        from_causallearn([[0, 1], [1, 0]])  # bidirected
    with pytest.raises(ValueError, match=r"G\[0, 1\] = 2 \(circle\), G\[1, 0\] = 1 \(arrow\)"):
        from_causallearn([[0, 2], [1, 0]])  # o->
    with pytest.raises(ValueError, match=r"G\[0, 1\] = -1 \(tail\), G\[1, 0\] = 0 \(null\)"):
        from_causallearn([[0, -1], [0, 0]])  # half an edge
    with pytest.raises(ValueError, match=r"endpoint codes \[-1, 0, 1, 2, 3, 4, 5\]; got G\[0, 1\] = 7.0"):
        from_causallearn([[0, 7], [1, 0]])
    with pytest.raises(ValueError, match=r"self-loop mark at node 1"):
        from_causallearn([[0, 0], [0, -1]])
    with pytest.raises(ValueError, match=r"`G` must be a square matrix"):
        from_causallearn(np.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"`split` must be a bool"):
        from_causallearn(np.zeros((2, 2)), split=1)
    with pytest.raises(ValueError, match=r"`W` has a self-loop at node 0 \(W\[0, 0\] = 0.5\)"):
        to_causallearn([[0.5, 0], [0, 0]])
    assert set(CAUSALLEARN_ENDPOINTS) == {-1, 0, 1, 2, 3, 4, 5}


def test_causallearn_graph_objects():
    pytest.importorskip("causallearn")
    from causallearn.graph.Edge import Edge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GeneralGraph import GeneralGraph
    from causallearn.graph.GraphNode import GraphNode

    cpdag = adj(4, (0, 1), (1, 2), (2, 1), (3, 2))
    G = to_causallearn(cpdag, names=["a", "b", "c", "d"], as_graph=True)
    assert isinstance(G, GeneralGraph)
    assert G.get_node_names() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(G.graph, to_causallearn(cpdag))
    # the same graph built with causal-learn's own calls
    nodes = [GraphNode(n) for n in "abcd"]
    H = GeneralGraph(nodes)
    H.add_directed_edge(nodes[0], nodes[1])
    H.add_edge(Edge(nodes[1], nodes[2], Endpoint.TAIL, Endpoint.TAIL))
    H.add_edge(Edge(nodes[3], nodes[2], Endpoint.TAIL, Endpoint.ARROW))
    assert G == H
    assert H.is_directed_from_to(nodes[0], nodes[1]) and H.is_undirected_from_to(nodes[1], nodes[2])
    np.testing.assert_array_equal(from_causallearn(H), cpdag)
    assert to_causallearn(np.zeros((2, 2)), as_graph=True).get_node_names() == ["X0", "X1"]


def test_to_causallearn_as_graph_without_causallearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "causallearn.graph.GeneralGraph", None)
    with pytest.raises(ImportError, match="pip install causal-learn"):
        to_causallearn(np.zeros((2, 2)), as_graph=True)
    np.testing.assert_array_equal(to_causallearn(np.zeros((2, 2))), np.zeros((2, 2)))  # no import needed


def test_no_optional_package_is_imported_at_module_import():
    code = (
        "import sys, dpbnsl.io.graph_export\n"
        "bad = [m for m in ('networkx', 'causallearn', 'pydot') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
