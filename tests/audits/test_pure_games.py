"""Audits of Priv-PC's pure-DP releases: tight on the correct mechanism, a 20 % noise deficit flagged,
and the games' samplers equal to the package's own mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from dpbnsl.audits import audit, run_game
from dpbnsl.audits._pure_games import _crafted_neighbours, sparse_vector_design
from dpbnsl.learners.constraint.kendall import kendall_sensitivity
from dpbnsl.mechanisms.sparse_vector import AboveThreshold


@pytest.mark.parametrize("game", ["sparse-vector", "priv-pc-examine"])
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_correct_release_passes_near_the_claim_and_a_20_percent_deficit_is_flagged(game, epsilon):
    """10⁶ trials per world (about a second): the correct release bounds 0.89–0.99 ε and is never
    flagged; with 80 % of its noise (true ε = 1.25 ε) the bound passes the claim."""
    ok = audit(game, epsilon=epsilon, delta=1e-5, trials=1_000_000, rng=1)
    assert not ok.flagged
    assert 0.85 * epsilon <= ok.bound.epsilon_lb <= epsilon
    short = audit(game, epsilon=epsilon, delta=1e-5, trials=1_000_000, rng=1, noise_deficit=0.2)
    assert short.flagged


def test_examine_neighbours_move_by_nearly_the_sensitivity():
    g = run_game("priv-pc-examine", epsilon=1.0, delta=1e-5, trials=100, rng=0)
    assert 0.99 * g.details["sensitivity"] < g.details["moved"] < g.details["sensitivity"]
    assert g.details["sensitivity"] == kendall_sensitivity(g.details["n"], conditional=True)
    D, E = _crafted_neighbours(30)
    assert D.shape == E.shape and (D != E).any(axis=1).sum() == 1  # replace-one neighbours


def test_sparse_vector_game_samples_the_class_law():
    """The stopping index of the game's vectorised rounds and of AboveThreshold itself, 20,000
    rounds each on the game's world-1 queries: a χ² test of homogeneity does not reject (p > 0.001)."""
    eps, s, k = 1.0, 0.05, 10
    c, _, _ = sparse_vector_design(eps, k)
    queries = np.r_[np.zeros(k - 1), c * s]
    ours = []
    for t in range(20_000):
        svt = AboveThreshold(0.0, sensitivity=s, epsilon=eps, rng=np.random.default_rng([9, t]))
        stop = next((i for i, q in enumerate(queries) if svt(q)), k)
        ours.append(stop)
    g = np.random.default_rng(4)
    threshold = g.laplace(0.0, 2 * s / eps, 20_000)
    above = queries[None, :] + g.laplace(0.0, 4 * s / eps, (20_000, k)) >= threshold[:, None]
    theirs = np.where(above.any(axis=1), above.argmax(axis=1), k)
    table = np.array([np.bincount(ours, minlength=k + 1), np.bincount(theirs, minlength=k + 1)])
    table = table[:, table.sum(axis=0) > 0]
    assert scipy.stats.chi2_contingency(table).pvalue > 1e-3


def test_design_reaches_near_the_claim():
    for eps in (0.5, 1.0, 4.0):
        c, log_ratio, p1 = sparse_vector_design(eps, 10)
        assert 0.95 * eps <= log_ratio <= eps and p1 >= 0.01
        assert math.isfinite(c)
