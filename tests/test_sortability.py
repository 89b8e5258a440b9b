"""Varsortability and R²-sortability: hand-computed cases, the published definition re-derived
literally (ratios of scores, one count per path length), and the invariances that define them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl._sortability import r2_scores
from dpbnsl.metrics import r2_sortability, sortability, varsortability
from dpbnsl.simulation import simulate, simulate_dag

CHAIN = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([1.0, 2.0, 3.0], 1.0),  # pairs (0,1), (1,2) at length 1 and (0,2) at length 2, all right
        ([3.0, 2.0, 1.0], 0.0),
        ([1.0, 3.0, 2.0], 2 / 3),  # (1,2) wrong
        ([1.0, 1.0, 1.0], 0.5),  # ties count one half
        ([1.0, 1.0, 2.0], (0.5 + 1 + 1) / 3),
    ],
)
def test_hand_computed_chain(scores, expected):
    assert sortability(scores, CHAIN) == pytest.approx(expected)


def test_a_pair_counts_once_per_path_length():
    # 0->1->3, 0->2->3 and 0->3: length 1: five pairs; length 2: (0,3) once (two paths, one count)
    B = np.zeros((4, 4), int)
    for i, j in [(0, 1), (1, 3), (0, 2), (2, 3), (0, 3)]:
        B[i, j] = 1
    scores = [2.0, 1.0, 3.0, 4.0]  # only (0,1) is misordered, once at length 1
    assert sortability(scores, B) == pytest.approx(5 / 6)


def _literal(scores, B, tol=1e-9):
    """The published definition written out: ratios of scores, boolean path powers."""
    E = np.asarray(B) != 0
    Ek = E.copy()
    v = np.asarray(scores, float).reshape(1, -1)
    ratio = v / v.T
    paths = good = 0.0
    for _ in range(E.shape[0] - 1):
        paths += Ek.sum()
        good += (Ek * (ratio > 1 + tol)).sum() + 0.5 * (Ek * (ratio <= 1 + tol) * (ratio > 1 - tol)).sum()
        Ek = Ek.astype(int).dot(E.astype(int)) > 0
    return good / paths


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000))
def test_equals_the_literal_definition_on_random_dags(d, seed):
    rng = np.random.default_rng(seed)
    B = simulate_dag(d, s0=min(d, d * (d - 1) // 2), rng=rng)
    scores = rng.choice([0.5, 1.0, 2.0, 3.0], size=d)  # ties on purpose
    assert sortability(scores, B) == pytest.approx(_literal(scores, B))


def test_the_simulator_is_varsortable_and_standardising_removes_it():
    raw = simulate(20, 20_000, participants=1, rng=3)
    std = simulate(20, 20_000, participants=1, standardise=True, rng=3)
    assert varsortability(raw.X, raw.B_true) > 0.95
    # the population-standardised sample's variances are 1 ± about √(2/20000) = 0.01 noise, so
    # their order is a coin flip per pair: far from the raw data's near-perfect order
    assert abs(varsortability(std.X, std.B_true) - 0.5) < 0.2
    # R² does not see the scale
    assert r2_sortability(std.X, std.B_true) == pytest.approx(r2_sortability(raw.X, raw.B_true), abs=1e-9)


def test_r2_scores_are_the_regression_r2():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 4)) @ rng.standard_normal((4, 4))
    S = np.cov(X, rowvar=False)
    for j in range(4):
        others = np.delete(X, j, axis=1)
        design = np.column_stack([np.ones(500), others])
        resid = X[:, j] - design @ np.linalg.lstsq(design, X[:, j], rcond=None)[0]
        r2 = 1 - resid.var() / X[:, j].var()
        assert r2_scores(S)[j] == pytest.approx(r2, abs=1e-10)
    assert r2_scores(np.diag([1.0, 0.0]))[1] == 0.0  # a constant variable explains nothing


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sortability([1.0, 2.0], [[0, 0], [0, 0]]), "no edge"),
        (lambda: sortability([1.0, np.nan], [[0, 1], [0, 0]]), "finite"),
        (lambda: sortability([1.0, 2.0, 3.0], [[0, 1], [0, 0]]), "2 finite numbers"),
        (lambda: sortability([1.0, 2.0], [[0, 1], [0, 0]], tol=-1), "`tol`"),
        (lambda: sortability([1.0, 2.0], [[0, 1], [1, 0]]), "cycle"),
        (lambda: sortability([1.0], [[1]]), "cycle"),
        (lambda: varsortability(np.ones((1, 2)), [[0, 1], [0, 0]]), "at least 2 rows"),
        (lambda: varsortability([[1.0, np.inf], [0.0, 1.0]], [[0, 1], [0, 0]]), "finite"),
    ],
)
def test_bad_inputs_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
