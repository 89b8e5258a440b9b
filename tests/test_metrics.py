"""Tests for dpbnsl.metrics: hand-worked cases, loop-based oracles, properties, validation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.graphs import dag_to_cpdag, v_structures
from dpbnsl.metrics import (
    Accuracy,
    RankingScores,
    SkeletonScores,
    VStructureCounts,
    auroc_aupr,
    count_accuracy,
    nmse,
    shd_cpdag,
    skeleton_scores,
    v_structure_counts,
    v_structure_recall,
)


def adj(d, *edges, loops=()):
    """0/1 matrix of shape (d, d) with the given (i, j) edges (and (i, i) self-loops)."""
    A = np.zeros((d, d))
    for i, j in list(edges) + [(k, k) for k in loops]:
        A[i, j] = 1.0
    return A


CHAIN = adj(3, (0, 1), (1, 2))  # 0 -> 1 -> 2
CHAIN_REV = adj(3, (1, 0), (2, 1))  # 0 <- 1 <- 2
FORK = adj(3, (1, 0), (1, 2))  # 0 <- 1 -> 2
COLLIDER = adj(3, (0, 1), (2, 1))  # 0 -> 1 <- 2


# ----------------------------------------------------------------------------- oracles


def edit_distance(T, E):
    """Least number of edge additions, deletions and reversals turning E into T, pair by pair."""
    T, E = np.asarray(T) != 0, np.asarray(E) != 0
    d, cost = T.shape[0], int(np.trace(E))  # every self-loop is deleted
    for i in range(d):
        for j in range(i + 1, d):
            t, e = (T[i, j], T[j, i]), (E[i, j], E[j, i])
            if t == e:
                continue
            if t == (False, False):
                cost += sum(e)  # delete each direction
            elif e == (False, False) or e == t[::-1]:
                cost += 1  # add the edge, or reverse it
            else:
                cost += 1  # e is a 2-cycle containing the true direction: delete the other
    return cost


def brute_auroc(y, s):
    """P(score of a random positive > score of a random negative), ties counting 1/2."""
    pos, neg = s[y], s[~y]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def brute_ap(y, s):
    """Average precision: walk the distinct thresholds downwards, add ΔR·P at each."""
    ap, prev_recall = 0.0, 0.0
    for t in sorted(set(s.tolist()), reverse=True):
        pred = s >= t
        precision, recall = (y & pred).sum() / pred.sum(), (y & pred).sum() / y.sum()
        ap += (recall - prev_recall) * precision
        prev_recall = recall
    return ap


@st.composite
def dags(draw, max_d=6):
    """A random DAG: a random strictly upper-triangular support, relabelled by a permutation."""
    d = draw(st.integers(1, max_d))
    bits = draw(st.lists(st.booleans(), min_size=d * d, max_size=d * d))
    A = np.triu(np.array(bits, dtype=float).reshape(d, d), 1)
    perm = np.array(draw(st.permutations(range(d))))
    return A[np.ix_(perm, perm)]


@st.composite
def dag_and_graph(draw, max_d=6):
    """A DAG and an arbitrary weighted graph (cycles, 2-cycles, self-loops) of the same size."""
    T = draw(dags(max_d))
    d = T.shape[0]
    entries = st.sampled_from([0.0, 0.0, 0.5, -1.0, 2.0])
    vals = draw(st.lists(entries, min_size=d * d, max_size=d * d))
    return T, np.array(vals).reshape(d, d)


@st.composite
def oriented_graphs(draw, max_d=6):
    """A graph with at most one direction per pair and no self-loop (cycles of length >= 3 allowed)."""
    d = draw(st.integers(1, max_d))
    A = np.zeros((d, d))
    for i in range(d):
        for j in range(i + 1, d):
            k = draw(st.integers(0, 2))  # none, i -> j, j -> i
            if k:
                A[(i, j) if k == 1 else (j, i)] = 1.0
    return A


# ----------------------------------------------------------------------------- count_accuracy


@pytest.mark.parametrize(
    "truth, est, expected",
    [
        pytest.param(  # perfect estimate
            CHAIN,
            2.5 * CHAIN,
            dict(
                shd=0,
                tpr=1,
                fdr=0,
                fpr=0,
                precision=1,
                recall=1,
                f1=1,
                nnz=2,
                reversed=0,
                extra=0,
                missing=0,
                true_positive=2,
                n_true_edges=2,
            ),
            id="perfect",
        ),
        pytest.param(  # empty estimate: both true edges missing; empty ratios are 0
            CHAIN,
            np.zeros((3, 3)),
            dict(
                shd=2,
                tpr=0,
                fdr=0,
                fpr=0,
                precision=0,
                recall=0,
                f1=0,
                nnz=0,
                reversed=0,
                extra=0,
                missing=2,
                true_positive=0,
                n_true_edges=2,
            ),
            id="empty",
        ),
        pytest.param(  # 2 -> 1 is the reverse of 1 -> 2; fpr = 1 / (3 - 2)
            CHAIN,
            adj(3, (0, 1), (2, 1)),
            dict(
                shd=1,
                tpr=0.5,
                fdr=0.5,
                fpr=1,
                precision=0.5,
                recall=0.5,
                f1=0.5,
                nnz=2,
                reversed=1,
                extra=0,
                missing=0,
                true_positive=1,
                n_true_edges=2,
            ),
            id="reversal",
        ),
        pytest.param(  # 3-cycle 0 -> 1 -> 2 -> 0: 2 -> 0 is extra; f1 = 2(2/3)(1)/(5/3) = 0.8
            CHAIN,
            adj(3, (0, 1), (1, 2), (2, 0)),
            dict(
                shd=1,
                tpr=1,
                fdr=1 / 3,
                fpr=1,
                precision=2 / 3,
                recall=1,
                f1=0.8,
                nnz=3,
                reversed=0,
                extra=1,
                missing=0,
                true_positive=2,
                n_true_edges=2,
            ),
            id="cyclic",
        ),
        pytest.param(  # 0 <-> 1 with 0 -> 1 true: one true positive, 1 -> 0 is extra
            CHAIN,
            adj(3, (0, 1), (1, 0), (1, 2)),
            dict(
                shd=1,
                tpr=1,
                fdr=1 / 3,
                fpr=1,
                precision=2 / 3,
                recall=1,
                f1=0.8,
                nnz=3,
                reversed=0,
                extra=1,
                missing=0,
                true_positive=2,
                n_true_edges=2,
            ),
            id="bidirected-one-true",
        ),
        pytest.param(  # 1 <-> 2 absent from the truth: two extra edges; fpr = 2 / (3 - 1)
            adj(3, (0, 1)),
            adj(3, (0, 1), (1, 2), (2, 1)),
            dict(
                shd=2,
                tpr=1,
                fdr=2 / 3,
                fpr=1,
                precision=1 / 3,
                recall=1,
                f1=0.5,
                nnz=3,
                reversed=0,
                extra=2,
                missing=0,
                true_positive=1,
                n_true_edges=1,
            ),
            id="bidirected-spurious",
        ),
        pytest.param(  # a self-loop is an extra edge; no true negative pair, so fpr = 1 / 1
            adj(2, (0, 1)),
            adj(2, (0, 1), loops=[1]),
            dict(
                shd=1,
                tpr=1,
                fdr=0.5,
                fpr=1,
                precision=0.5,
                recall=1,
                f1=2 / 3,
                nnz=2,
                reversed=0,
                extra=1,
                missing=0,
                true_positive=1,
                n_true_edges=1,
            ),
            id="self-loop",
        ),
        pytest.param(  # every kind at once. Truth 0->1, 1->2, 2->3, 0->3; estimate 1->0
            # (reversed), 1<->2 (tp + extra), 0->2 (extra), 3->3 (extra); 2->3, 0->3 missing.
            # fpr = 4 / (6 - 4) = 2 > 1, as NOTEARS allows; f1 = 2(.2)(.25)/.45 = 2/9.
            adj(4, (0, 1), (1, 2), (2, 3), (0, 3)),
            adj(4, (1, 0), (1, 2), (2, 1), (0, 2), loops=[3]),
            dict(
                shd=6,
                tpr=0.25,
                fdr=0.8,
                fpr=2,
                precision=0.2,
                recall=0.25,
                f1=2 / 9,
                nnz=5,
                reversed=1,
                extra=3,
                missing=2,
                true_positive=1,
                n_true_edges=4,
            ),
            id="mixed",
        ),
        pytest.param(  # complete truth, one reversal: no true negatives, fpr = 1 / max(0, 1)
            adj(3, (0, 1), (0, 2), (1, 2)),
            adj(3, (1, 0), (0, 2), (1, 2)),
            dict(
                shd=1,
                tpr=2 / 3,
                fdr=1 / 3,
                fpr=1,
                precision=2 / 3,
                recall=2 / 3,
                f1=2 / 3,
                nnz=3,
                reversed=1,
                extra=0,
                missing=0,
                true_positive=2,
                n_true_edges=3,
            ),
            id="complete-truth",
        ),
        pytest.param(  # empty truth and empty estimate: shd 0, all empty ratios 0
            np.zeros((3, 3)),
            np.zeros((3, 3)),
            dict(
                shd=0,
                tpr=0,
                fdr=0,
                fpr=0,
                precision=0,
                recall=0,
                f1=0,
                nnz=0,
                reversed=0,
                extra=0,
                missing=0,
                true_positive=0,
                n_true_edges=0,
            ),
            id="both-empty",
        ),
        pytest.param(  # d = 1 with a self-loop
            np.zeros((1, 1)),
            np.array([[0.3]]),
            dict(
                shd=1,
                tpr=0,
                fdr=1,
                fpr=1,
                precision=0,
                recall=0,
                f1=0,
                nnz=1,
                reversed=0,
                extra=1,
                missing=0,
                true_positive=0,
                n_true_edges=0,
            ),
            id="d1-self-loop",
        ),
        pytest.param(
            np.zeros((1, 1)),
            np.zeros((1, 1)),
            dict(
                shd=0,
                tpr=0,
                fdr=0,
                fpr=0,
                precision=0,
                recall=0,
                f1=0,
                nnz=0,
                reversed=0,
                extra=0,
                missing=0,
                true_positive=0,
                n_true_edges=0,
            ),
            id="d1-empty",
        ),
    ],
)
def test_count_accuracy_hand_worked(truth, est, expected):
    with np.errstate(all="raise"):  # no division warnings in degenerate cases
        result = count_accuracy(truth, est)
    assert result.as_dict() == pytest.approx(expected)
    for name in ("shd", "nnz", "reversed", "extra", "missing", "true_positive", "n_true_edges"):
        assert type(getattr(result, name)) is int
    for name in ("tpr", "fdr", "fpr", "precision", "recall", "f1"):
        assert type(getattr(result, name)) is float


def test_accuracy_is_frozen_and_as_dict_lists_every_field():
    result = count_accuracy(CHAIN, CHAIN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.shd = 3  # type: ignore[misc]
    assert list(result.as_dict()) == [f.name for f in dataclasses.fields(Accuracy)]


def test_count_accuracy_accepts_dataframes_and_boolean_masks():
    names = list("abc")
    W = np.array([[0, 0.7, 0], [0, 0, 0], [0, -1.2, 0]])
    expected = count_accuracy(CHAIN, W)
    assert count_accuracy(pd.DataFrame(CHAIN, index=names, columns=names), W != 0) == expected
    assert count_accuracy(CHAIN.astype(int), pd.DataFrame(W, columns=names)) == expected


@settings(max_examples=200, deadline=None)
@given(dag_and_graph())
def test_count_accuracy_properties(pair):
    T, E = pair
    T0, E0 = T.copy(), E.copy()
    with np.errstate(all="raise"):
        r = count_accuracy(T, E)
    np.testing.assert_array_equal(T, T0)  # inputs untouched
    np.testing.assert_array_equal(E, E0)
    assert r.shd == edit_distance(T, E)
    assert r.nnz == r.true_positive + r.reversed + r.extra == np.count_nonzero(E)
    for v in (r.tpr, r.fdr, r.precision, r.recall, r.f1):
        assert 0.0 <= v <= 1.0
    assert r.fpr >= 0.0
    assert r.tpr == r.recall
    # rescaling the weights entrywise by non-zero factors changes nothing
    factors = np.where(np.arange(E.size).reshape(E.shape) % 2 == 0, -3.0, 0.01)
    assert count_accuracy(T * 7.0, E * factors) == r


@settings(max_examples=200, deadline=None)
@given(oriented_graphs(), st.data())
def test_count_accuracy_on_cyclic_references(T, data):
    # a reference with cycles (no 2-cycle, no self-loop): the counts keep their meaning
    d = T.shape[0]
    entries = st.sampled_from([0.0, 0.0, 0.5, -1.0])
    E = np.array(data.draw(st.lists(entries, min_size=d * d, max_size=d * d))).reshape(d, d)
    r = count_accuracy(T, E)
    assert r.shd == edit_distance(T, E)
    assert r.nnz == r.true_positive + r.reversed + r.extra
    assert r.n_true_edges == np.count_nonzero(T)
    assert count_accuracy(T, T).shd == 0


def test_count_accuracy_hand_worked_cyclic_reference():
    # truth: the 3-cycle 0 -> 1 -> 2 -> 0 plus 3 -> 0; estimate: 0 -> 1, 0 -> 2 (reversed), 3 -> 1
    truth = adj(4, (0, 1), (1, 2), (2, 0), (3, 0))
    r = count_accuracy(truth, adj(4, (0, 1), (0, 2), (3, 1)))
    assert (r.true_positive, r.reversed, r.extra, r.missing, r.shd) == (1, 1, 1, 2, 4)
    assert (r.tpr, r.fdr, r.fpr) == (1 / 4, 2 / 3, 2 / (6 - 4))


@pytest.mark.parametrize(
    "truth, problem",
    [
        (adj(3, (0, 1), (1, 0)), r"has edges in both directions between nodes 0 and 1 \(a 2-cycle\)"),
        (adj(3, (0, 1), loops=[2]), r"has a self-loop at node 2"),
    ],
)
def test_count_accuracy_refuses_two_cycles_and_self_loops_in_the_reference(truth, problem):
    why = r"; count_accuracy needs a reference graph without self-loops or 2-cycles"
    hint = r"If `B_true` is in fact your estimate, swap the arguments: the order is \(truth, estimate\)"
    with pytest.raises(ValueError, match=rf"^`B_true` \(the reference graph\) {problem}{why}.*{hint}$"):
        count_accuracy(truth, CHAIN)
    with pytest.raises(ValueError, match=rf"{problem}{why}") as err:  # both fail: no hint
        count_accuracy(truth, truth)
    assert "swap" not in str(err.value)


@settings(max_examples=100, deadline=None)
@given(dags())
def test_count_accuracy_of_truth_against_itself(T):
    r = count_accuracy(T, T)
    assert (r.shd, r.fdr, r.fpr, r.reversed, r.extra, r.missing) == (0, 0.0, 0.0, 0, 0, 0)
    assert r.tpr == (1.0 if T.any() else 0.0)


# ----------------------------------------------------------------------------- skeleton


def test_skeleton_scores_hand_worked():
    # truth skeleton {01, 12}; estimate 1->0, 2->0, 0->2 (2-cycle), 1->1 (ignored): {01, 02}
    s = skeleton_scores(CHAIN, adj(3, (1, 0), (2, 0), (0, 2), loops=[1]))
    assert s == SkeletonScores(precision=0.5, recall=0.5, f1=0.5, true_positive=1, n_true=2, n_predicted=2)
    assert skeleton_scores(CHAIN, CHAIN_REV) == SkeletonScores(1.0, 1.0, 1.0, 2, 2, 2)
    assert skeleton_scores(CHAIN, np.zeros((3, 3))) == SkeletonScores(0.0, 0.0, 0.0, 0, 2, 0)
    empty_truth = skeleton_scores(np.zeros((2, 2)), adj(2, (0, 1)))
    assert empty_truth == SkeletonScores(0.0, 0.0, 0.0, 0, 0, 1)


# ----------------------------------------------------------------------------- v-structures


@pytest.mark.parametrize(
    "truth, est, counts",
    [
        (COLLIDER, COLLIDER, (1, 1, 1)),
        (COLLIDER, adj(3, (0, 1), (2, 1), (0, 2)), (0, 1, 0)),  # shielded in the estimate
        (COLLIDER, adj(3, (0, 1), (1, 0), (2, 1)), (0, 1, 0)),  # 0 - 1 undirected (CPDAG-style)
        (COLLIDER, adj(3, (0, 1), (1, 2)), (0, 1, 0)),  # one edge out of the collider
        (COLLIDER, np.zeros((3, 3)), (0, 1, 0)),
        (CHAIN, COLLIDER, (0, 0, 1)),  # no true v-structure
        # three true v-structures at node 2; the estimate shields (1, 2, 3) by 1 -> 3
        (adj(4, (0, 2), (1, 2), (3, 2)), adj(4, (0, 2), (1, 2), (3, 2), (1, 3)), (2, 3, 2)),
        # cyclic estimate 0 -> 1 -> 3 -> 0 still holds the collider 0 -> 1 <- 2
        (adj(4, (0, 1), (2, 1)), adj(4, (0, 1), (2, 1), (1, 3), (3, 0)), (1, 1, 1)),
    ],
)
def test_v_structures_hand_worked(truth, est, counts):
    assert v_structure_counts(truth, est) == VStructureCounts(*counts)
    found, n_true, _ = counts
    recall = v_structure_recall(truth, est)
    if n_true == 0:
        assert math.isnan(recall)
    else:
        assert recall == found / n_true


@settings(max_examples=100, deadline=None)
@given(dags(max_d=6))
def test_v_structures_kept_by_own_dag_and_cpdag(T):
    # A CPDAG keeps every v-structure directed, and each directed collider with non-adjacent
    # parents in it is a v-structure of T, so both counts match exactly.
    n = len(v_structures(T))
    for est in (T, dag_to_cpdag(T)):
        assert v_structure_counts(T, est) == VStructureCounts(found=n, n_true=n, n_est=n)
    recall = v_structure_recall(T, T)
    assert (recall == 1.0) if n else math.isnan(recall)


# ----------------------------------------------------------------------------- shd_cpdag


def test_shd_cpdag_hand_worked():
    # chain, reversed chain and fork are Markov equivalent: CPDAG 0 - 1 - 2
    assert shd_cpdag(CHAIN, CHAIN_REV) == 0
    assert shd_cpdag(CHAIN, FORK) == 0
    # collider CPDAG 0 -> 1 <- 2 vs 0 - 1 - 2: both pairs differ
    assert shd_cpdag(COLLIDER, CHAIN) == 2
    assert shd_cpdag(CHAIN, COLLIDER) == 2
    # 0 - 1 vs nothing
    assert shd_cpdag(adj(2, (0, 1)), np.zeros((2, 2))) == 1
    assert shd_cpdag(adj(2, (0, 1)), adj(2, (1, 0))) == 0


@settings(max_examples=200, deadline=None)
@given(dags(max_d=5), st.data())
def test_shd_cpdag_properties(T, data):
    # Re-orient T's skeleton along a random order: a DAG with the same skeleton, sometimes
    # Markov equivalent to T. Verma & Pearl (1990): equivalent iff same skeleton and same
    # v-structures, an oracle independent of the Meek-rule CPDAG construction.
    d = T.shape[0]
    T0 = T.copy()
    rank = np.array(data.draw(st.permutations(range(d))))
    skeleton = (T + T.T) != 0
    E = (skeleton & (rank[:, None] < rank[None, :])).astype(float)
    dist = shd_cpdag(T, E)
    assert shd_cpdag(T, T) == 0
    assert dist == shd_cpdag(E, T) <= d * (d - 1) // 2
    assert (dist == 0) == (v_structures(T) == v_structures(E))
    np.testing.assert_array_equal(T, T0)


# ----------------------------------------------------------------------------- auroc / aupr


def test_auroc_aupr_hand_worked():
    # Truth 0 -> 1 -> 2. Off-diagonal scores |W|: (0,1)=.9 P, (0,2)=.5 N, (1,0)=.4 N,
    # (1,2)=.4 P, (2,0)=0 N, (2,1)=.1 N; m = 2 positives, n = 4 negatives.
    # AUROC: .9 beats all 4 negatives (4); .4 beats .1 and 0, ties .4 and loses to .5 (2.5);
    #   6.5 / 8 = 0.8125.  (Ranks: .9 -> 6, the two .4s -> 3.5; (6 + 3.5 - 3) / 8.)
    # AP: threshold .9: P = 1, R = .5; .5: P = .5, R = .5; .4: P = 2/4, R = 1; lower: R stays 1.
    #   AP = .5 * 1 + .5 * .5 = 0.75.
    W = np.array([[7.0, 0.9, -0.5], [0.4, 0.0, -0.4], [0.0, 0.1, 3.0]])  # diagonal ignored
    assert auroc_aupr(CHAIN, W) == RankingScores(auroc=0.8125, aupr=0.75)


def test_auroc_aupr_degenerate():
    assert auroc_aupr(CHAIN, CHAIN) == RankingScores(1.0, 1.0)
    r = auroc_aupr(np.zeros((3, 3)), np.ones((3, 3)))
    assert math.isnan(r.auroc) and math.isnan(r.aupr)
    r = auroc_aupr(np.zeros((1, 1)), np.ones((1, 1)))
    assert math.isnan(r.auroc) and math.isnan(r.aupr)
    # all scores tied: AUROC 1/2, AP = prevalence = 2 / 6
    assert auroc_aupr(CHAIN, np.zeros((3, 3))) == pytest.approx(RankingScores(0.5, 1 / 3))


@st.composite
def dag_and_scores(draw):
    T = draw(dags(max_d=5).filter(lambda A: A.shape[0] >= 2 and A.any()))
    d = T.shape[0]
    vals = draw(st.lists(st.integers(-3, 3), min_size=d * d, max_size=d * d))  # many ties
    return T, np.array(vals, dtype=float).reshape(d, d)


@settings(max_examples=200, deadline=None)
@given(dag_and_scores())
def test_auroc_aupr_match_brute_force(pair):
    T, W = pair
    off = ~np.eye(T.shape[0], dtype=bool)
    y, s = T[off] != 0, np.abs(W[off])
    r = auroc_aupr(T, W)
    assert r.auroc == pytest.approx(brute_auroc(y, s), abs=1e-12)
    assert r.aupr == pytest.approx(brute_ap(y, s), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(dag_and_scores())
def test_auroc_aupr_match_sklearn(pair):
    metrics = pytest.importorskip("sklearn.metrics")
    T, W = pair
    off = ~np.eye(T.shape[0], dtype=bool)
    y, s = T[off] != 0, np.abs(W[off])
    r = auroc_aupr(T, W)
    assert r.auroc == pytest.approx(metrics.roc_auc_score(y, s), abs=1e-12)
    assert r.aupr == pytest.approx(metrics.average_precision_score(y, s), abs=1e-12)


# ----------------------------------------------------------------------------- nmse


def test_nmse_hand_worked():
    W_true = np.array([[0.0, 2.0], [0.0, 0.0]])
    assert nmse(W_true, W_true) == 0.0
    assert nmse(W_true, np.zeros((2, 2))) == 1.0
    # (1.5 - 2)^2 + 1^2 (diagonal counts) = 1.25 over 4
    assert nmse(W_true, np.array([[1.0, 1.5], [0.0, 0.0]])) == 1.25 / 4


# ----------------------------------------------------------------------------- validation

CYCLE = adj(3, (0, 1), (1, 2), (2, 0))
GRAPH_FUNCS = [count_accuracy, skeleton_scores, v_structure_counts, v_structure_recall, shd_cpdag, auroc_aupr]
DAG_TRUTH_FUNCS = [v_structure_counts, v_structure_recall, shd_cpdag]
SECOND = {auroc_aupr: "W_est"}


@pytest.mark.parametrize("func", GRAPH_FUNCS)
def test_shape_mismatch_names_both(func):
    second = SECOND.get(func, "B_est")
    with pytest.raises(
        ValueError,
        match=rf"`B_true` and `{second}` must have the same shape; "
        r"got \(3, 3\) and \(2, 2\)",
    ):
        func(CHAIN, np.zeros((2, 2)))


@pytest.mark.parametrize("func", DAG_TRUTH_FUNCS)
def test_cyclic_reference_names_the_cycle_and_hints_at_order_only_if_the_estimate_is_a_dag(func):
    needs = r"shd_cpdag needs two DAGs" if func is shd_cpdag else r"the v-structure metrics need a DAG"
    cyc = r"`B_true` \(the reference graph\) has a directed cycle 0 -> 1 -> 2 -> 0; "
    hint = r"\. If `B_true` is in fact your estimate, swap the arguments: the order is \(truth, estimate\)$"
    with pytest.raises(ValueError, match=rf"^{cyc}{needs}.*{hint}"):
        func(CYCLE, CHAIN)
    with pytest.raises(ValueError, match=rf"^{cyc}{needs}") as err:  # both cyclic: swapping won't help
        func(CYCLE, CYCLE)
    assert "swap" not in str(err.value)
    with pytest.raises(ValueError, match=r"`B_true` \(the reference graph\) has a self-loop at node 0"):
        func(adj(2, loops=[0]), np.zeros((2, 2)))
    names = ["x", "y", "z"]  # a DataFrame's labels name the cycle
    with pytest.raises(ValueError, match=r"has a directed cycle x -> y -> z -> x"):
        func(pd.DataFrame(CYCLE, index=names, columns=names), CHAIN)


def test_shd_cpdag_requires_dag_estimate():
    with pytest.raises(
        ValueError,
        match=r"^`B_est` \(the estimate\) has a directed cycle 0 -> 1 -> 2 -> 0; shd_cpdag needs two DAGs "
        r"\(only a DAG has a CPDAG\); compare a cyclic estimate with count_accuracy or skeleton_scores$",
    ):
        shd_cpdag(CHAIN, CYCLE)


@pytest.mark.parametrize("func", [count_accuracy, skeleton_scores, auroc_aupr])
def test_metrics_defined_for_cyclic_references_accept_them(func):
    func(CYCLE, CHAIN)  # no error
    func(CYCLE, CYCLE)


def test_auroc_aupr_with_cyclic_truth():
    # positives 0->1, 1->2, 2->0 (all ranked first): perfect ranking
    W = 0.1 * np.ones((3, 3)) + 0.9 * CYCLE
    assert auroc_aupr(CYCLE, W) == RankingScores(1.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(dag_and_graph())
def test_cycle_finder_agrees_with_is_dag(pair):
    from dpbnsl.graphs import is_dag
    from dpbnsl.metrics import _a_cycle

    for A in pair:
        cycle = _a_cycle(A)
        assert (cycle == []) == is_dag(A)
        assert len(set(cycle)) == len(cycle)
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            assert A[a, b] != 0


@pytest.mark.parametrize("func", GRAPH_FUNCS)
def test_bad_arrays(func):
    second = SECOND.get(func, "B_est")
    with pytest.raises(ValueError, match=rf"`{second}` must be a square matrix; got shape \(3, "):
        func(CHAIN, np.zeros((3, 2)))
    nan_msg = r"`B_true` has a non-finite value nan at row 0, column 1"
    with pytest.raises(ValueError, match=nan_msg):
        func(np.array([[0.0, np.nan], [0.0, 0.0]]), np.zeros((2, 2)))
    with pytest.raises(TypeError, match=rf"`{second}` must hold real numbers; got dtype <U1"):
        func(CHAIN, np.full((3, 3), "a"))
    with pytest.raises(
        ValueError,
        match=r"`B_true` must have at least one node; got shape "
        r"\(0, 0\)",
    ):
        func(np.zeros((0, 0)), np.zeros((0, 0)))


def test_nmse_validation():
    with pytest.raises(ValueError, match=r"`W_true` is all zero, so the NMSE is undefined"):
        nmse(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(
        ValueError,
        match=r"`W_true` and `W_est` must have the same shape; "
        r"got \(2, 2\) and \(3, 3\)",
    ):
        nmse(np.ones((2, 2)), np.ones((3, 3)))
    inf_msg = r"`W_true` has a non-finite value inf at row 0, column 1"
    with pytest.raises(ValueError, match=inf_msg):
        nmse(np.array([[1.0, np.inf], [0.0, 0.0]]), np.ones((2, 2)))


@pytest.mark.parametrize("func", GRAPH_FUNCS + [nmse])
def test_inputs_never_modified(func):
    a = pd.DataFrame(CHAIN.copy(), columns=list("xyz"))
    b = np.array([[0.0, -0.9, 0.0], [0.0, 0.0, 0.0], [0.0, 0.4, 0.0]])
    a0, b0 = a.copy(), b.copy()
    func(a, b)
    pd.testing.assert_frame_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
