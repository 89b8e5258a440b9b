"""PC: skeleton, v-structures, Meek's rules on textbook graphs, the Dor–Tarsi extension, recovery."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbnsl.graphs import apply_meek, dag_to_cpdag, is_dag
from dpbnsl.learners.constraint.citests import FisherZ
from dpbnsl.learners.constraint.pc import orient_pdag, pc, pc_skeleton, pdag_to_dag
from dpbnsl.simulation import simulate, simulate_dag, simulate_linear_sem
from dpbnsl.simulation.discrete import random_discrete_bn


def _adj(d, edges):
    A = np.zeros((d, d), dtype=bool)
    for a, b in edges:
        A[a, b] = A[b, a] = True
    return A


def _cpdag(directed, undirected):
    return (directed | undirected).astype(int)


# ----------------------------------------------------------------------------- orientation


def test_collider_then_meek_r1():
    # 0 - 2 - 1 with 0 ⊥ 1 (collider at 2), and 2 - 3 with 0 ⊥ 3 | 2, 1 ⊥ 3 | 2  ->  2 -> 3 (R1)
    adj = _adj(4, [(0, 2), (1, 2), (2, 3)])
    directed, undirected, vs, conflicts = orient_pdag(adj, {(0, 1): (), (0, 3): (2,), (1, 3): (2,)})
    assert vs == [(0, 2, 1)] and conflicts == 0
    expected = np.zeros((4, 4), int)
    expected[0, 2] = expected[1, 2] = expected[2, 3] = 1
    np.testing.assert_array_equal(_cpdag(directed, undirected), expected)


def test_chain_stays_undirected():
    adj = _adj(3, [(0, 1), (1, 2)])
    directed, undirected, vs, _ = orient_pdag(adj, {(0, 2): (1,)})
    assert vs == [] and not directed.any()
    np.testing.assert_array_equal(undirected, adj)


def test_meek_r2():
    directed = np.zeros((3, 3), bool)
    directed[0, 1] = directed[1, 2] = True  # 0 -> 1 -> 2 and 0 - 2  =>  0 -> 2
    undirected = _adj(3, [(0, 2)])
    apply_meek(directed, undirected)
    assert directed[0, 2] and not directed[2, 0] and not undirected.any()


def test_meek_r3_textbook():
    # a=0 adjacent to all; c=2 -> b=1 <- d=3 (c, d non-adjacent, separated by a)  =>  a -> b (R3)
    adj = _adj(4, [(0, 1), (0, 2), (0, 3), (2, 1), (3, 1)])
    directed, undirected, vs, _ = orient_pdag(adj, {(2, 3): (0,)})
    assert vs == [(2, 1, 3)]
    assert directed[2, 1] and directed[3, 1] and directed[0, 1]
    np.testing.assert_array_equal(undirected, _adj(4, [(0, 2), (0, 3)]))


@pytest.mark.parametrize("seed", range(6))
def test_orientation_of_true_sepsets_gives_the_cpdag(seed):
    """With the true skeleton and oracle separating sets (the parents of one endpoint), v-structures
    plus Meek R1-R3 must give exactly the CPDAG (Meek 1995: the rules are complete here)."""
    B = simulate_dag(8, s0=10, rng=seed)
    adj = (B | B.T) != 0
    sepsets = {}
    for i in range(8):
        for j in range(i + 1, 8):
            if not adj[i, j]:  # in a DAG, pa(j) separates i and j when i is not a descendant of j
                a, b = (i, j) if _is_ancestor_free(B, j, i) else (j, i)
                sepsets[(i, j)] = tuple(int(p) for p in np.flatnonzero(B[:, b]))
    directed, undirected, _, conflicts = orient_pdag(adj, sepsets)
    assert conflicts == 0
    np.testing.assert_array_equal(_cpdag(directed, undirected), dag_to_cpdag(B))


def _is_ancestor_free(B, j, i):
    """True when ``j`` is not an ancestor of ``i``; then ``i`` is a non-descendant of ``j`` and
    pa(j) separates them (local Markov property)."""
    seen, stack = set(), [j]
    while stack:
        v = stack.pop()
        for c in np.flatnonzero(B[v]):
            if c == i:
                return False
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return True


def test_conflict_policies():
    # 0 -> 1 <- 2 from (0, 2) and 1 -> 2 <- 3 from (1, 3): the edge 1 - 2 is claimed both ways
    adj = _adj(4, [(0, 1), (1, 2), (2, 3)])
    sepsets = {(0, 2): (), (1, 3): (), (0, 3): (1, 2)}
    first, _, _, n1 = orient_pdag(adj, sepsets, conflict="first")
    last, _, _, n2 = orient_pdag(adj, sepsets, conflict="last")
    assert n1 == n2 == 1
    assert first[2, 1] and not first[1, 2]
    assert last[1, 2] and not last[2, 1]


def test_missing_sepset_policy():
    adj = _adj(3, [(0, 2), (1, 2)])
    oriented, _, vs, _ = orient_pdag(adj, {(0, 1): None}, no_sepset="orient")
    skipped, und, vs2, _ = orient_pdag(adj, {}, no_sepset="skip")
    assert vs == [(0, 2, 1)] and oriented[0, 2] and oriented[1, 2]
    assert vs2 == [] and not skipped.any() and und.sum() == 4


# ----------------------------------------------------------------------------- DAG extension


@pytest.mark.parametrize("seed", range(8))
def test_dor_tarsi_extends_a_cpdag_within_its_class(seed):
    B = simulate_dag(9, s0=14, rng=seed)
    C = dag_to_cpdag(B).astype(bool)
    dag, forced = pdag_to_dag(C & ~C.T, C & C.T)
    assert forced == 0 and is_dag(dag)
    np.testing.assert_array_equal(dag_to_cpdag(dag), dag_to_cpdag(B))
    mp, _ = pdag_to_dag(C & ~C.T, C & C.T, method="max-parents")
    assert is_dag(mp)


def test_extension_without_a_consistent_choice_is_still_a_dag():
    cycle = np.zeros((3, 3), bool)
    cycle[0, 1] = cycle[1, 2] = cycle[2, 0] = True
    dag, forced = pdag_to_dag(cycle, np.zeros((3, 3), bool))
    assert is_dag(dag) and forced >= 1 and dag.sum() == 3
    square = _adj(4, [(0, 1), (1, 2), (2, 3), (3, 0)])  # chordless 4-cycle: no extension exists
    dag, forced = pdag_to_dag(np.zeros((4, 4), bool), square)
    assert is_dag(dag) and forced >= 1 and ((dag + dag.T) == square).all()


# ----------------------------------------------------------------------------- PC end to end

B6 = np.zeros((6, 6), int)
for a, b in [(0, 2), (1, 2), (2, 3), (3, 4), (5, 4), (1, 5)]:
    B6[a, b] = 1


def test_pc_recovers_the_cpdag_of_a_known_dag():
    X = simulate_linear_sem(B6 * 1.0, 20000, rng=0)
    for variant in ("stable", "original"):
        r = pc(X, variant=variant)
        np.testing.assert_array_equal(r.info["cpdag"], dag_to_cpdag(B6))
        np.testing.assert_array_equal(r.W_raw, dag_to_cpdag(B6))
        np.testing.assert_array_equal(dag_to_cpdag(r.W), dag_to_cpdag(B6))
        assert r.is_dag and r.info["forced"] == 0
        assert sorted(r.info["v_structures"]) == [(0, 2, 1), (3, 4, 5)]


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_pc_g2_recovers_a_discrete_skeleton(seed):
    # Random CPTs can be (near-)unfaithful: with rng=2 node 2's CPT on three parents is XOR-like
    # and its marginal dependence on parent 0 vanishes, so PC (correctly) misses that edge.
    bn = random_discrete_bn(5, s0=5, levels=[2, 3, 2, 3, 2], concentration=0.3, rng=seed)
    X = bn.sample(20000, rng=0)
    r = pc(X, test="g2")
    B = bn.adjacency
    np.testing.assert_array_equal(r.info["skeleton"], B | B.T)
    assert r.params["test"] == "g2"


def test_pc_stable_skeleton_is_order_independent():
    data = simulate(9, 300, participants=1, rng=4)
    perm = np.random.default_rng(0).permutation(9)
    a = pc(data.X, variant="stable").info["skeleton"]
    b = pc(data.X[:, perm], variant="stable").info["skeleton"]
    np.testing.assert_array_equal(a[np.ix_(perm, perm)], b)


def test_pc_history_tests_and_cap():
    data = simulate(8, 1000, participants=1, rng=1)
    r = pc(data.X)
    h = r.history
    assert list(h.columns) == ["level", "edges", "ci_tests", "seconds"]
    assert list(h["level"]) == list(range(len(h)))
    assert h["edges"].is_monotonic_decreasing
    assert h["ci_tests"].sum() == r.info["ci_tests"]
    capped = pc(data.X, max_cond_size=0)
    assert list(capped.history["level"]) == [0]
    # skeleton of the cap equals the first level's
    adj, _, _ = pc_skeleton(FisherZ(data.X), alpha=0.01, max_cond_size=0)
    np.testing.assert_array_equal(capped.info["skeleton"], adj.astype(int))


def test_pc_sepsets_separate():
    data = simulate(8, 1000, participants=1, rng=1)
    r = pc(data.X)
    ci = FisherZ(data.X)
    for (i, j), Z in r.info["sepsets"].items():
        assert not r.info["skeleton"][i, j] and ci.test(i, j, Z) > 0.01
    m = pc(data.X, sepset="max-p")
    for (i, j), Z in m.info["sepsets"].items():
        assert Z is None or (len(Z) <= 3 and ci.test(i, j, Z) > 0.01)
    assert m.is_dag


def test_pc_deterministic_columns_and_inputs_untouched():
    data = simulate(6, 500, participants=1, rng=2)
    frame = pd.DataFrame(data.X, columns=list("abcdef"))
    copy = frame.copy()
    a, b = pc(frame), pc(frame)
    np.testing.assert_array_equal(a.W, b.W)
    pd.testing.assert_frame_equal(frame, copy)
    assert a.columns == tuple("abcdef") and a.method == "pc"
    assert not a.W.flags.writeable and set(np.unique(a.W)) <= {0.0, 1.0}


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(alpha=1), ValueError, r"`alpha` must be < 1; got 1"),
        (dict(alpha=0.0), ValueError, r"`alpha` must be > 0; got 0.0"),
        (dict(variant="fast"), ValueError, r"`variant` must be one of 'stable', 'original'; got 'fast'"),
        (dict(sepset="min"), ValueError, r"`sepset` must be one of 'skeleton', 'max-p'; got 'min'"),
        (dict(conflict="none"), ValueError, r"`conflict` must be one of 'first', 'last'"),
        (dict(extension="meek"), ValueError, r"`extension` must be one of 'dor-tarsi', 'max-parents'"),
        (dict(max_cond_size=-1), ValueError, r"`max_cond_size` must be >= 0; got -1"),
        (dict(max_cond_size=1.5), TypeError, r"`max_cond_size` must be an integer; got float 1.5"),
        (dict(test="kci"), ValueError, r"`test` must be one of 'fisher-z', 'g2', 'auto'; got 'kci'"),
        (dict(test="g2"), ValueError, r"integer category codes"),
    ],
)
def test_pc_validation(kwargs, exc, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(exc, match=match):
        pc(X, **kwargs)


def test_pc_too_few_rows():
    with pytest.raises(ValueError, match=r"`X` has 1 rows; at least 2 are required"):
        pc(np.ones((1, 3)))
