"""The stratified Kendall test of Priv-PC: the statistic, and its sensitivity on neighbouring data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.learners.constraint.kendall import (
    StratifiedKendall,
    kendall_sensitivity,
    kendall_weight,
    p_value_sensitivity,
    public_bins,
)


def _literal_z(values: np.ndarray, codes: np.ndarray, i: int, j: int, S: tuple[int, ...]) -> float:
    """z from the definition: per stratum, Σ over pairs of sign·sign, weighted 9/(2m + 5)."""
    n = len(values)
    keys = [tuple(codes[r, list(S)]) for r in range(n)]
    total = 0.0
    for key in set(keys):
        rows = [r for r in range(n) if keys[r] == key]
        K = sum(
            np.sign(values[a, i] - values[b, i]) * np.sign(values[a, j] - values[b, j])
            for a, b in itertools.combinations(rows, 2)
        )
        total += 9.0 * K / (2 * len(rows) + 5)
    return total / math.sqrt(kendall_weight(n))


@pytest.mark.parametrize("S", [(), (2,), (2, 3)])
def test_statistic_matches_the_definition_discrete_and_continuous(S):
    g = np.random.default_rng(0)
    X = g.integers(0, 3, (70, 4)).astype(float)
    assert StratifiedKendall(X).z(0, 1, S) == pytest.approx(_literal_z(X, X.astype(int), 0, 1, S), abs=1e-12)
    Y = g.normal(size=(70, 4))
    codes = public_bins(Y, bounds=(-1.5, 1.5), bins=3)
    got = StratifiedKendall(Y, codes).z(0, 1, S)
    assert got == pytest.approx(_literal_z(Y, codes, 0, 1, S), abs=1e-12)


def test_unconditional_statistic_is_the_authors():
    """Without conditioning z = τ_a·√(9n(n − 1)/(4n + 10)) (Priv-PC's unconditional statistic)."""
    g = np.random.default_rng(1)
    x = g.integers(0, 4, 3000)
    y = (x + g.integers(0, 3, 3000)) % 4
    n = 3000
    # τ_a from scipy's τ_b and the tie counts: τ_a = τ_b √((P − T_x)(P − T_y)) / P
    tau_b = scipy.stats.kendalltau(x, y).statistic
    tx = np.unique(x, return_counts=True)[1]
    ty = np.unique(y, return_counts=True)[1]
    pairs = n * (n - 1) / 2
    tau_a = (
        tau_b * math.sqrt((pairs - (tx * (tx - 1) / 2).sum()) * (pairs - (ty * (ty - 1) / 2).sum())) / pairs
    )
    z = StratifiedKendall(np.column_stack([x, y]).astype(float)).z(0, 1)
    assert z == pytest.approx(tau_a * math.sqrt(9 * n * (n - 1) / (4 * n + 10)), rel=1e-9)


def test_contingency_and_sorting_paths_agree():
    """Few distinct values go through contingency tables, many through τ_b: the same K."""
    g = np.random.default_rng(2)
    X = np.column_stack([g.normal(size=400), g.normal(size=400), g.integers(0, 3, 400)])
    codes = np.column_stack([np.zeros((400, 2), int), X[:, 2].astype(int)])
    ci = StratifiedKendall(X, codes)  # continuous: 400 × 400 cells > the table limit
    ranks = np.column_stack([np.argsort(np.argsort(X[:, 0])), np.argsort(np.argsort(X[:, 1])), X[:, 2]])
    coarse = StratifiedKendall(np.column_stack([ranks[:, :2] // 10, ranks[:, 2]]).astype(float))
    assert ci.z(0, 1, (2,)) == pytest.approx(_literal_z(X, codes, 0, 1, (2,)), abs=1e-9)
    assert np.isfinite(coarse.z(0, 1, (2,)))


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 40),
    levels=st.integers(2, 4),
    conditional=st.integers(0, 2),
    discrete=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_sensitivity_on_random_neighbours(seed, n, levels, conditional, discrete):
    """Replace one row by an arbitrary one: |z(D) − z(D′)| < Δz, for every test on the columns."""
    g = np.random.default_rng(seed)
    d = 2 + conditional
    if discrete:
        X = g.integers(0, levels, (n, d)).astype(float)
        Y = X.copy()
        Y[g.integers(n)] = g.integers(0, levels, d)
        a, b = StratifiedKendall(X), StratifiedKendall(Y)
    else:
        X = g.normal(size=(n, d))
        Y = X.copy()
        Y[g.integers(n)] = 3 * g.normal(size=d)
        a = StratifiedKendall(X, public_bins(X, bounds=(-1, 1), bins=levels))
        b = StratifiedKendall(Y, public_bins(Y, bounds=(-1, 1), bins=levels))
    S = tuple(range(2, d))
    moved = abs(a.z(0, 1, S) - b.z(0, 1, S))
    assert moved < kendall_sensitivity(n, conditional=bool(S))
    # and the two-sided p-value, a function of |z| (Priv-PC's scale="p-value")
    assert abs(a.test(0, 1, S) - b.test(0, 1, S)) <= p_value_sensitivity(n, conditional=bool(S)) * (1 + 1e-12)


@pytest.mark.parametrize("n", [10, 100, 2000])
def test_sensitivity_is_nearly_attained(n):
    """Crafted neighbours reach the bounds up to their finite-n factor: without conditioning a row
    concordant with all others becomes discordant with all (K moves by 2(n − 1)); with it, a row
    leaves a stratum whose pairs are all concordant for one where they are all discordant."""
    ramp = np.arange(n - 1, dtype=float)
    X = np.column_stack([np.r_[ramp, n], np.r_[ramp, n]])
    Y = np.column_stack([np.r_[ramp, n], np.r_[ramp, -1.0]])
    flat = np.zeros((n, 2), int)  # continuous values, no strata
    moved = abs(StratifiedKendall(X, flat).z(0, 1) - StratifiedKendall(Y, flat).z(0, 1))
    bound = kendall_sensitivity(n, conditional=False)
    assert moved == pytest.approx(18 * (n - 1) / (2 * n + 5) / math.sqrt(kendall_weight(n)), rel=1e-9)
    assert 0.95 * bound * (n - 1) / (n + 2.5) < moved < bound
    # conditional: the row leaves a stratum whose other pairs are all discordant (it is concordant
    # with every one of them) for one whose pairs are all concordant (and it is discordant with
    # each): both strata move by the bound's 9(h − 1)(3h + 1)/((2h + 5)(2h + 3)), in one direction
    h = n // 2 + 1
    up = np.arange(h - 1, dtype=float)
    base = np.vstack([np.column_stack([up, -up, np.zeros(h - 1)]), np.column_stack([up, up, np.ones(h - 1)])])
    D = np.vstack([base, [h, h, 0]])
    E = np.vstack([base, [h, -h, 1]])
    moved = abs(
        StratifiedKendall(D, codes_of(D)).z(0, 1, (2,)) - StratifiedKendall(E, codes_of(E)).z(0, 1, (2,))
    )
    each = 9 * (h - 1) * (3 * h + 1) / ((2 * h + 5) * (2 * h + 3))
    assert moved == pytest.approx(2 * each / math.sqrt(kendall_weight(len(D))), rel=1e-9)
    assert moved < kendall_sensitivity(len(D), conditional=True)
    if n >= 2000:
        assert moved > 0.99 * kendall_sensitivity(len(D), conditional=True)


def codes_of(X: np.ndarray) -> np.ndarray:
    """No strata for the first two columns, the third column's codes as strata."""
    return np.column_stack([np.zeros((len(X), 2), int), X[:, 2].astype(int)])


def test_public_bins_and_bad_input():
    X = np.array([[-5.0, 0.0], [0.1, 0.5], [5.0, 1.0]])
    assert public_bins(X, bounds=(-1, 1), bins=4).tolist() == [[0, 2], [2, 3], [3, 3]]
    assert public_bins(X, bounds=[(-1, 1), (0, 2)], bins=2).tolist() == [[0, 0], [1, 0], [1, 1]]
    with pytest.raises(ValueError, match="`bounds` must be finite with low < high; column 0"):
        public_bins(X, bounds=(1, 1), bins=2)
    with pytest.raises(ValueError, match="`bounds` must be a pair"):
        public_bins(X, bounds=(0, 1, 2), bins=2)
    with pytest.raises(ValueError, match="`bins`"):
        public_bins(X, bounds=(0, 1), bins=1)
    with pytest.raises(ValueError, match="`X` must be a 2-d array"):
        public_bins(X[:, 0], bounds=(0, 1), bins=2)
    with pytest.raises(ValueError, match="`codes` must hold non-negative integer codes"):
        StratifiedKendall(np.array([[0.5, 1.0], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="at least 2 rows"):
        StratifiedKendall(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="`n`"):
        kendall_sensitivity(1, conditional=False)


def test_p_value_sensitivity_is_attained_at_zero():
    """erf(Δz/√2) is p(0) − p(Δz): a statistic moving from 0 to Δz moves p by exactly that."""
    import scipy.special

    for n in (10, 1000):
        dz = kendall_sensitivity(n, conditional=True)
        assert p_value_sensitivity(n, conditional=True) == pytest.approx(
            1 - scipy.special.erfc(dz / math.sqrt(2))
        )


def test_huge_codes_are_relabelled_without_changing_the_statistic():
    g = np.random.default_rng(3)
    X = g.integers(0, 3, (300, 4)).astype(float)
    Y = X.copy()
    Y[:, 2] = Y[:, 2] * 1e15 + 7  # same strata, same order, codes far beyond n
    assert StratifiedKendall(Y).z(0, 1, (2, 3)) == pytest.approx(
        StratifiedKendall(X).z(0, 1, (2, 3)), abs=1e-12
    )
