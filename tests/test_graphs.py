"""Tests for dpbnsl.graphs: hand-worked cases, independent oracles, properties, validation.

The oracles written here (DFS cycle detection, v-structure enumeration, the one-edge-at-a-time
``threshold_to_dag`` reference, brute-force Markov equivalence classes) share no code with the package.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.graphs import (
    acyclicity,
    dag_to_cpdag,
    is_dag,
    threshold,
    threshold_to_dag,
    topological_order,
    v_structures,
)


def adj(d, *edges):
    """0/1 float matrix of shape (d, d) with the given (i, j) edges; (i, i) is a self-loop."""
    A = np.zeros((d, d))
    for i, j in edges:
        A[i, j] = 1.0
    return A


# ----------------------------------------------------------------------------- oracles


def has_cycle(W) -> bool:
    """Three-colour depth-first search on the support of W (a self-loop is a cycle)."""
    A = np.asarray(W) != 0
    d = A.shape[0]
    colour = [0] * d  # 0 unvisited, 1 on the stack, 2 finished

    def visit(i):
        colour[i] = 1
        for j in np.flatnonzero(A[i]):
            if colour[j] == 1 or (colour[j] == 0 and visit(j)):
                return True
        colour[i] = 2
        return False

    return any(colour[i] == 0 and visit(i) for i in range(d))


def vstructs(A) -> set[tuple[int, int, int]]:
    """Unshielded colliders a -> c <- b (a < b, a and b non-adjacent) by brute force over triples."""
    A = np.asarray(A) != 0
    d = A.shape[0]
    return {
        (a, c, b)
        for c in range(d)
        for a in range(d)
        for b in range(a + 1, d)
        if A[a, c] and A[b, c] and not (A[a, b] or A[b, a])
    }


def naive_threshold_to_dag(W) -> np.ndarray:
    """Delete the smallest-|w| edge (ties: first in row-major order) one at a time until acyclic."""
    W = np.array(W, dtype=float)
    while has_cycle(W):
        mag = np.where(W != 0, np.abs(W), np.inf)
        W.flat[np.argmin(mag)] = 0.0  # argmin returns the first minimum in row-major order
    return W


def markov_equivalent_dags(A) -> list[np.ndarray]:
    """All DAGs with the skeleton and the v-structures of the DAG A (Verma & Pearl 1990)."""
    A = np.asarray(A) != 0
    d = A.shape[0]
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d) if A[i, j] or A[j, i]]
    target = vstructs(A)
    out = []
    for flips in itertools.product((False, True), repeat=len(pairs)):
        B = np.zeros((d, d), dtype=bool)
        for (i, j), flip in zip(pairs, flips):
            B[(j, i) if flip else (i, j)] = True
        if not has_cycle(B) and vstructs(B) == target:
            out.append(B)
    return out


# ----------------------------------------------------------------------------- strategies


@st.composite
def dags(draw, min_d=1, max_d=6, weighted=False):
    """A random DAG: a random strictly upper-triangular mask, relabelled by a random permutation."""
    d = draw(st.integers(min_d, max_d))
    mask = np.array(draw(st.lists(st.booleans(), min_size=d * d, max_size=d * d))).reshape(d, d)
    U = np.triu(mask, k=1).astype(float)
    if weighted:
        w = draw(st.lists(st.floats(0.1, 2.0, allow_nan=False), min_size=d * d, max_size=d * d))
        signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=d * d, max_size=d * d))
        U = U * (np.array(w) * np.array(signs)).reshape(d, d)
    perm = np.array(draw(st.permutations(range(d))), dtype=int)
    return U[np.ix_(perm, perm)]  # node perm[i] of U becomes node i: edges keep, order scrambled


@st.composite
def weighted_graphs(draw, distinct=True):
    """A random weighted digraph (self-loops allowed, usually cyclic) with distinct |weights|.

    With ``distinct=False`` the magnitudes come from {1, 2, 3} so ties are frequent.
    """
    d = draw(st.integers(1, 6))
    mask = np.array(draw(st.lists(st.booleans(), min_size=d * d, max_size=d * d))).reshape(d, d)
    loops = draw(st.booleans())
    if not loops:
        np.fill_diagonal(mask, False)
    m = int(mask.sum())
    if distinct:
        mags = 0.1 + 0.1 * np.array(draw(st.permutations(range(m))), dtype=float)
    else:
        mags = np.array(draw(st.lists(st.integers(1, 3), min_size=m, max_size=m)), dtype=float)
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=m, max_size=m)))
    W = np.zeros((d, d))
    W[mask] = mags * signs if m else 0.0
    return W


# ----------------------------------------------------------------------------- is_dag


@pytest.mark.parametrize(
    ("W", "expected"),
    [
        (adj(3), True),  # empty graph on 3 nodes
        (np.zeros((0, 0)), True),  # graph with no nodes
        (adj(1, (0, 0)), False),  # a self-loop is a cycle
        (adj(3, (1, 1)), False),  # ... even next to isolated nodes
        (adj(2, (0, 1), (1, 0)), False),  # 2-cycle
        (adj(3, (0, 1), (1, 2), (2, 0)), False),  # 3-cycle
        (adj(4, (3, 0), (0, 1), (1, 2), (2, 1)), False),  # cycle downstream of a source
        (adj(3, (0, 1), (1, 2), (0, 2)), True),
        (adj(3, (2, 1), (1, 0)), True),  # order is not the label order
    ],
)
def test_is_dag_hand_cases(W, expected):
    assert is_dag(W) is expected
    if W.size:
        assert is_dag(W.tolist()) is expected


def test_is_dag_weights_and_signs_do_not_matter():
    assert is_dag([[0, -0.01], [0, 0]])
    assert not is_dag([[0, -0.01], [1e-300, 0]])


def test_is_dag_accepts_a_dataframe():
    cols = ["a", "b", "c"]
    assert is_dag(pd.DataFrame(adj(3, (0, 1), (1, 2)), index=cols, columns=cols))
    assert not is_dag(pd.DataFrame(adj(3, (0, 1), (1, 0)), index=cols, columns=cols))


@settings(max_examples=60, deadline=None)
@given(W=weighted_graphs())
def test_is_dag_agrees_with_dfs(W):
    assert is_dag(W) == (not has_cycle(W))


# ----------------------------------------------------------------------------- topological_order


@settings(max_examples=80, deadline=None)
@given(W=dags())
def test_topological_order_puts_parents_before_children(W):
    order = topological_order(W)
    d = W.shape[0]
    assert sorted(order) == list(range(d))
    assert all(isinstance(i, int) for i in order)
    pos = {node: k for k, node in enumerate(order)}
    for i, j in zip(*np.nonzero(W)):
        assert pos[i] < pos[j]


def test_topological_order_hand_case():
    # 2 -> 0 -> 1 is the only order of this chain
    assert topological_order(adj(3, (2, 0), (0, 1))) == [2, 0, 1]
    assert topological_order(np.zeros((0, 0))) == []


def test_topological_order_names_the_cycle_nodes():
    # 0 -> 1 -> 2 -> 0 is a cycle; 3 is a source upstream of it, 4 is downstream of it.
    W = adj(5, (3, 0), (0, 1), (1, 2), (2, 0), (2, 4))
    with pytest.raises(ValueError, match=r"`W` is not a DAG: nodes \[0, 1, 2, 4\]") as info:
        topological_order(W)
    assert "3" not in str(info.value).split("nodes")[1].split("lie")[0]


def test_topological_order_self_loop_raises():
    with pytest.raises(ValueError, match=r"not a DAG: nodes \[1\]"):
        topological_order(adj(2, (1, 1)))


# ----------------------------------------------------------------------------- acyclicity


@settings(max_examples=60, deadline=None)
@given(W=dags(weighted=True))
def test_acyclicity_is_zero_on_dags(W):
    # For a DAG, W∘W is nilpotent so tr(exp(W∘W)) = d exactly; expm of a (permuted) triangular matrix
    # reproduces the unit diagonal to a few ulps. With |w| <= 2 and d <= 6 the observed error is
    # ~1e-14, so 1e-12 is a safe bound rather than a tuned one.
    h, grad = acyclicity(W)
    assert abs(h) <= 1e-12
    assert grad.shape == W.shape


@pytest.mark.parametrize(("a", "b"), [(0.5, 0.5), (1.0, -2.0), (0.1, 3.0)])
def test_acyclicity_two_cycle_closed_form(a, b):
    # W∘W = [[0, a²], [b², 0]] has eigenvalues ±|ab|, so h = 2 cosh(ab) − 2 > 0.
    h, _ = acyclicity([[0.0, a], [b, 0.0]])
    assert h > 0
    assert h == pytest.approx(2 * math.cosh(a * b) - 2, rel=1e-12)


def test_acyclicity_self_loop_closed_form():
    h, grad = acyclicity([[0.7, 0.0], [0.0, 0.0]])
    assert h == pytest.approx(math.expm1(0.49), rel=1e-12)
    assert grad[0, 0] == pytest.approx(2 * 0.7 * math.exp(0.49), rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_acyclicity_value_and_gradient_against_oracles(seed):
    rng = np.random.default_rng(seed)
    W = rng.uniform(-1.0, 1.0, size=(5, 5))
    h, grad = acyclicity(W)

    # h against an independent formula: tr(exp(M)) = Σ exp(λ_i(M)).
    lam = np.linalg.eigvals(W * W)
    assert h == pytest.approx(float(np.sum(np.exp(lam)).real) - 5, abs=1e-10)
    assert h > 0  # a dense random matrix is cyclic

    # Gradient against central finite differences. Error budget per entry:
    #   truncation  eps²/6 · |∂³h/∂w³|: entries of W∘W are <= 1, so ρ(W∘W) <= 5 and the derivatives
    #               are at most a few hundred × e^5 in the very worst case, ~1e2 typically; with
    #               eps = 1e-6 this is <= ~1e-9;
    #   round-off   ~ c·u·|tr exp(W∘W)| / eps with u = 2.2e-16, tr exp <= 5e^5 ≈ 742 (worst case,
    #               ~10–30 typically) and c a small constant for expm's backward error: ~1e-8 typically.
    # Observed max error over 200 such matrices is ~7e-9, so abs=1e-6 has >100× headroom while still
    # catching any real formula error (which would be O(1)).
    eps = 1e-6
    fd = np.zeros_like(W)
    for i in range(5):
        for j in range(5):
            E = np.zeros_like(W)
            E[i, j] = eps
            fd[i, j] = (acyclicity(W + E)[0] - acyclicity(W - E)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-6)


def test_acyclicity_does_not_modify_input():
    W = np.array([[0.0, 0.5], [0.3, 0.1]])
    before = W.copy()
    acyclicity(W)
    np.testing.assert_array_equal(W, before)


# ----------------------------------------------------------------------------- threshold


def test_threshold_uses_less_or_equal():
    W = np.array([[0.0, 0.3, -0.3], [0.30000001, 0.0, -0.31], [0.29, 0.5, 0.0]])
    out = threshold(W, threshold=0.3)
    expected = np.array([[0.0, 0.0, 0.0], [0.30000001, 0.0, -0.31], [0.0, 0.5, 0.0]])
    np.testing.assert_array_equal(out, expected)


def test_threshold_default_is_0_3():
    np.testing.assert_array_equal(threshold([[0.3, 0.31], [-0.3, 0]]), [[0, 0.31], [0, 0]])


def test_threshold_zero_keeps_every_nonzero():
    W = np.array([[0.0, 1e-300], [-1e-300, 0.0]])
    np.testing.assert_array_equal(threshold(W, threshold=0), W)


def test_threshold_returns_a_copy_and_leaves_input_alone():
    W = np.array([[0.0, 0.1], [0.9, 0.0]])
    before = W.copy()
    out = threshold(W, threshold=0.5)
    np.testing.assert_array_equal(W, before)
    assert out is not W and not np.shares_memory(out, W)
    out[1, 0] = 42.0
    np.testing.assert_array_equal(W, before)


def test_threshold_accepts_dataframe_without_modifying_it():
    df = pd.DataFrame([[0.0, 0.1], [0.9, 0.0]], columns=["a", "b"])
    before = df.copy()
    out = threshold(df, threshold=0.5)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [[0, 0], [0.9, 0]])
    pd.testing.assert_frame_equal(df, before)


@settings(max_examples=50, deadline=None)
@given(W=weighted_graphs(distinct=False), t=st.sampled_from([0.0, 1.0, 1.5, 2.0, 3.0]))
def test_threshold_matches_elementwise_rule(W, t):
    np.testing.assert_array_equal(threshold(W, threshold=t), np.where(np.abs(W) > t, W, 0.0))


def test_threshold_validation():
    with pytest.raises(ValueError, match=r"`threshold` must be >= 0; got -0\.1"):
        threshold(np.eye(2), threshold=-0.1)
    with pytest.raises(ValueError, match=r"`threshold` must be finite"):
        threshold(np.eye(2), threshold=float("nan"))
    with pytest.raises(TypeError, match=r"`threshold` must be a real number"):
        threshold(np.eye(2), threshold=True)


# ----------------------------------------------------------------------------- threshold_to_dag


@settings(max_examples=100, deadline=None)
@given(W=weighted_graphs(distinct=True))
def test_threshold_to_dag_matches_naive_reference(W):
    before = W.copy()
    out = threshold_to_dag(W)
    np.testing.assert_array_equal(W, before)  # input untouched
    assert not has_cycle(out)
    np.testing.assert_array_equal(out, naive_threshold_to_dag(W))
    # only deletions: every kept entry is unchanged
    kept = out != 0
    np.testing.assert_array_equal(out[kept], W[kept])


@settings(max_examples=60, deadline=None)
@given(W=weighted_graphs(distinct=False))
def test_threshold_to_dag_ties_are_broken_in_row_major_order(W):
    np.testing.assert_array_equal(threshold_to_dag(W), naive_threshold_to_dag(W))


@settings(max_examples=50, deadline=None)
@given(W=dags(weighted=True))
def test_threshold_to_dag_keeps_a_dag_unchanged(W):
    out = threshold_to_dag(W)
    np.testing.assert_array_equal(out, W)
    assert out is not W and not np.shares_memory(out, W)


def test_threshold_to_dag_hand_case():
    # 0 -> 1 -> 2 -> 0 with weights 0.9, 0.2, -0.5 and an extra 0 -> 2 (0.1): the naive procedure
    # deletes 0 -> 2 (0.1, does not break the cycle), then 1 -> 2 (0.2, breaks it).
    W = np.zeros((3, 3))
    W[0, 1], W[1, 2], W[2, 0], W[0, 2] = 0.9, 0.2, -0.5, 0.1
    expected = W.copy()
    expected[0, 2] = expected[1, 2] = 0.0
    np.testing.assert_array_equal(threshold_to_dag(W), expected)


def test_threshold_to_dag_removes_self_loops():
    W = np.array([[0.5, 0.9], [0.0, 0.0]])
    np.testing.assert_array_equal(threshold_to_dag(W), [[0.0, 0.9], [0.0, 0.0]])


def test_threshold_to_dag_is_greedy_not_minimal():
    # The documented rule deletes in ascending |w| regardless of whether an edge lies on a cycle: the
    # weak 0 -> 1 goes before the strong self-loop 0 -> 0 that is the only cycle.
    W = np.array([[5.0, 0.1], [0.0, 0.0]])
    np.testing.assert_array_equal(threshold_to_dag(W), np.zeros((2, 2)))


# ----------------------------------------------------------------------------- v_structures


@pytest.mark.parametrize(
    ("W", "expected"),
    [
        (adj(3), set()),
        (adj(3, (0, 1), (1, 2)), set()),  # chain
        (adj(3, (1, 0), (1, 2)), set()),  # fork
        (adj(3, (0, 1), (2, 1)), {(0, 1, 2)}),  # collider
        (adj(3, (2, 1), (0, 1)), {(0, 1, 2)}),  # same, reported with a < b
        (adj(3, (0, 1), (2, 1), (0, 2)), set()),  # shielded collider
        (adj(3, (0, 1), (2, 1), (2, 0)), set()),  # shielded the other way
        (adj(4, (0, 3), (1, 3), (2, 3)), {(0, 3, 1), (0, 3, 2), (1, 3, 2)}),
        (adj(4, (0, 3), (1, 3), (2, 3), (0, 1)), {(0, 3, 2), (1, 3, 2)}),
        (adj(4, (0, 1), (2, 1), (1, 3)), {(0, 1, 2)}),
    ],
)
def test_v_structures_hand_cases(W, expected):
    assert v_structures(W) == expected


@settings(max_examples=60, deadline=None)
@given(W=dags(max_d=6))
def test_v_structures_agrees_with_brute_force(W):
    assert v_structures(W) == vstructs(W)


# ----------------------------------------------------------------------------- dag_to_cpdag


def test_cpdag_chain_is_fully_undirected():
    expected = adj(3, (0, 1), (1, 0), (1, 2), (2, 1))
    out = dag_to_cpdag(adj(3, (0, 1), (1, 2)))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype.kind == "i"


def test_cpdag_collider_stays_directed():
    np.testing.assert_array_equal(dag_to_cpdag(adj(3, (0, 1), (2, 1))), adj(3, (0, 1), (2, 1)))


def test_cpdag_meek_r1():
    # a -> b <- c, b -> d: b - d would create a new v-structure a -> b <- d otherwise, so b -> d.
    a, b, c, d = range(4)
    W = adj(4, (a, b), (c, b), (b, d))
    np.testing.assert_array_equal(dag_to_cpdag(W), W)


def test_cpdag_meek_r2():
    # a -> c <- b is a v-structure; R1 (via b) gives c -> d; then a -> c -> d with a - d gives a -> d
    # by R2 (R1 cannot orient a - d: the only parent of d, c, is adjacent to a).
    a, b, c, d = range(4)
    W = adj(4, (a, c), (b, c), (c, d), (a, d))
    np.testing.assert_array_equal(dag_to_cpdag(W), W)


def test_cpdag_meek_r3():
    # x -> z1, x -> z2, z1 -> y <- z2, x -> y. The pattern has z1 -> y <- z2 and x - z1, x - z2, x - y
    # undirected. R1 and R2 cannot fire; R3 (x - z1, x - z2, z1 -> y <- z2, z1 ≁ z2) gives x -> y.
    # x - z1 and x - z2 stay undirected (both orientations of each occur in the class).
    x, z1, z2, y = range(4)
    W = adj(4, (x, z1), (x, z2), (z1, y), (z2, y), (x, y))
    expected = adj(4, (z1, y), (z2, y), (x, y), (x, z1), (z1, x), (x, z2), (z2, x))
    np.testing.assert_array_equal(dag_to_cpdag(W), expected)
    # cross-check with the brute-force class
    np.testing.assert_array_equal(np.any(markov_equivalent_dags(W), axis=0).astype(int), expected)


def test_cpdag_of_empty_graph():
    np.testing.assert_array_equal(dag_to_cpdag(np.zeros((4, 4))), np.zeros((4, 4)))


@settings(max_examples=60, deadline=None)
@given(W=dags(max_d=5, weighted=True))
def test_cpdag_is_union_of_markov_equivalence_class(W):
    before = W.copy()
    cpdag = dag_to_cpdag(W)
    np.testing.assert_array_equal(W, before)
    cls = markov_equivalent_dags(W)
    assert any(np.array_equal(B, W != 0) for B in cls)  # the class contains W itself
    union = np.any(cls, axis=0)
    # edge i -> j directed in the CPDAG  <=>  every equivalent DAG has i -> j; undirected  <=>  both
    # orientations occur; so the CPDAG's 0/1 matrix is exactly the union of the class.
    np.testing.assert_array_equal(cpdag, union.astype(int))
    assert set(np.unique(cpdag)) <= {0, 1}


@pytest.mark.parametrize("W", [adj(2, (0, 1), (1, 0)), adj(2, (1, 1))])
def test_cpdag_rejects_cyclic_input(W):
    with pytest.raises(ValueError, match=r"`W` must be a DAG to have a CPDAG; it has a directed cycle"):
        dag_to_cpdag(W)


# ----------------------------------------------------------------------------- validation

VALIDATED = [is_dag, topological_order, threshold, threshold_to_dag, v_structures, dag_to_cpdag]


@pytest.mark.parametrize("fn", VALIDATED, ids=lambda f: f.__name__)
def test_non_square_input_is_rejected(fn):
    with pytest.raises(ValueError, match=r"`W` must be a square matrix; got shape \(2, 3\)"):
        fn(np.zeros((2, 3)))


@pytest.mark.parametrize("fn", VALIDATED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(fn, bad):
    W = np.zeros((3, 3))
    W[1, 2] = bad
    with pytest.raises(ValueError, match=r"`W` has a non-finite value .* at row 1, column 2"):
        fn(W)


@pytest.mark.parametrize("fn", VALIDATED, ids=lambda f: f.__name__)
def test_non_2d_and_non_numeric_input_is_rejected(fn):
    with pytest.raises(ValueError, match=r"`W` must be 2-dimensional; got shape \(3,\)"):
        fn(np.zeros(3))
    with pytest.raises(TypeError, match=r"`W` must hold real numbers"):
        fn(np.array([["a", "b"], ["c", "d"]]))


def test_acyclicity_where_exp_overflows_is_settled_exactly():
    """Huge weights: a DAG has h = 0 and a zero gradient (it did return NaN), a cycle h = +inf
    with ±inf on its edges only; a non-finite entry is an error naming it."""
    from dpbnsl import acyclicity

    dag = np.array([[0.0, 1e200, -3e300], [0.0, 0.0, 1e155], [0.0, 0.0, 0.0]])
    h, g = acyclicity(dag)
    assert h == 0.0 and not g.any()
    cyc = np.array(
        [[0.0, -1e200, 0.0, 0.0], [0.0, 0.0, 50.0, 0.0], [2.0, 0.0, 0.0, 7.0], [0.0, 0.0, 0.0, 0.0]]
    )
    h, g = acyclicity(cyc)
    assert h == np.inf
    expected = np.zeros((4, 4))
    expected[0, 1], expected[1, 2], expected[2, 0] = -np.inf, np.inf, np.inf  # the cycle 0 → 1 → 2 → 0
    np.testing.assert_array_equal(g, expected)  # the edge 2 → 3 is on no cycle: 0
    small = np.array([[0.0, 0.5], [0.4, 0.0]])  # ordinary values keep the closed form
    h, g = acyclicity(small)
    E = np.array([[np.cosh(0.2), 0.0], [0.0, np.cosh(0.2)]])  # exp of [[0, .25], [.16, 0]]
    assert h == pytest.approx(np.trace(E) - 2, rel=1e-12)
    for bad in (np.inf, -np.inf, np.nan):
        with pytest.raises(ValueError, match="`W` has a non-finite entry"):
            acyclicity(np.array([[0.0, bad], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="`W` must be a square matrix"):
        acyclicity(np.zeros((2, 3)))
