"""Tests for dpbnsl.simulation: graphs, weights, SEM sampling, heterogeneity, splitting."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.graphs import is_dag
from dpbnsl.simulation import (
    HeterogeneousData,
    SimulatedData,
    simulate,
    simulate_dag,
    simulate_heterogeneous,
    simulate_linear_sem,
    simulate_weights,
    split,
)


def _chain_weights(d=4, w=1.5):
    W = np.zeros((d, d))
    W[np.arange(d - 1), np.arange(1, d)] = w
    return W


# ---------------------------------------------------------------- simulate_dag


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 25), frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_er_has_exactly_s0_edges_and_is_a_dag(d, frac, seed):
    s0 = int(frac * d * (d - 1) // 2)
    B = simulate_dag(d, s0=s0, rng=seed)
    assert B.shape == (d, d) and B.dtype.kind == "i"
    assert set(np.unique(B)) <= {0, 1}
    assert int(B.sum()) == s0
    assert not np.any(B & B.T)  # at most one direction per pair, no self-loop
    assert is_dag(B)


@settings(max_examples=40, deadline=None)
@given(d=st.integers(2, 30), s0_per_node=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_sf_edge_count_and_acyclicity(d, s0_per_node, seed):
    s0 = min(s0_per_node * d, d * (d - 1) // 2)
    m = max(1, round(s0 / d))
    B = simulate_dag(d, s0=s0, graph_type="SF", rng=seed)
    assert int(B.sum()) == m * (d - 1) - m * (m - 1) // 2  # documented count
    assert not np.any(B & B.T) and is_dag(B)


def test_er_graph_is_not_in_a_fixed_order():
    # With labels in a random order, some edges point from a higher to a lower index.
    B = simulate_dag(20, s0=40, rng=3)
    assert np.triu(B).sum() > 0 and np.tril(B).sum() > 0


def test_sf_hub_is_not_always_node_zero():
    hubs = set()
    for seed in range(8):
        B = simulate_dag(30, s0=60, graph_type="SF", rng=seed)
        hubs.add(int(np.argmax(B.sum(0) + B.sum(1))))
    assert len(hubs) > 1


def test_dag_determinism():
    assert np.array_equal(simulate_dag(15, s0=20, rng=7), simulate_dag(15, s0=20, rng=7))
    assert not np.array_equal(simulate_dag(15, s0=20, rng=7), simulate_dag(15, s0=20, rng=8))
    g = np.random.default_rng(0)
    assert not np.array_equal(simulate_dag(15, s0=20, rng=g), simulate_dag(15, s0=20, rng=g))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(d=0, s0=0), ValueError, r"`d` must be >= 1; got 0"),
        (dict(d=2.5, s0=0), TypeError, r"`d` must be an integer; got float 2.5"),
        (dict(d=4, s0=7), ValueError, r"`s0` must be <= d\(d-1\)/2 = 6 for d = 4; got 7"),
        (dict(d=4, s0=-1), ValueError, r"`s0` must be >= 0; got -1"),
        (dict(d=4, s0=2, graph_type="BP"), ValueError, r"`graph_type` must be one of 'ER', 'SF'; got 'BP'"),
        (dict(d=4, s0=2, rng="x"), TypeError, r"`rng` must be None, an int seed"),
    ],
)
def test_dag_validation(kwargs, exc, match):
    d = kwargs.pop("d")
    with pytest.raises(exc, match=match):
        simulate_dag(d, **kwargs)


# ------------------------------------------------------------ simulate_weights


def test_weights_in_ranges_on_support_only():
    B = simulate_dag(30, s0=200, rng=0)
    B_before = B.copy()
    W = simulate_weights(B, rng=1)
    assert np.array_equal(B, B_before)
    assert np.array_equal(W != 0, B != 0)
    w = np.abs(W[B != 0])
    assert np.all((w >= 0.5) & (w <= 2.0))


def test_weight_range_probabilities_follow_lengths():
    # Ranges of lengths 1 and 3: P(negative) = 1/4. With m edges the count of negatives is
    # Binomial(m, 1/4); accept within 5 standard deviations sqrt(m p (1 - p)).
    B = np.ones((60, 60)) - np.eye(60)
    W = simulate_weights(B, w_ranges=((-1.0, 0.0), (1.0, 4.0)), rng=2)
    vals = W[B != 0]
    m, p = vals.size, 0.25
    assert abs((vals < 0).sum() - m * p) < 5 * np.sqrt(m * p * (1 - p))
    assert np.all(((vals >= -1) & (vals < 0)) | ((vals >= 1) & (vals <= 4)))


def test_weights_determinism():
    B = simulate_dag(10, s0=10, rng=0)
    assert np.array_equal(simulate_weights(B, rng=5), simulate_weights(B, rng=5))
    assert not np.array_equal(simulate_weights(B, rng=5), simulate_weights(B, rng=6))


@pytest.mark.parametrize(
    ("w_ranges", "exc", "match"),
    [
        ((), ValueError, r"`w_ranges` must be a non-empty sequence of \(low, high\) pairs"),
        (((0.0, 1.0, 2.0),), ValueError, r"`w_ranges` must be a non-empty sequence"),
        (((1.0, 0.5),), ValueError, r"`w_ranges` needs finite pairs with low < high"),
        (((0.0, np.inf),), ValueError, r"`w_ranges` needs finite pairs"),
        (((0.0, 1.0), (0.5, 2.0)), ValueError, r"`w_ranges` must be disjoint intervals"),
        ((("a", "b"),), TypeError, r"`w_ranges` must be a sequence of \(low, high\) pairs of real"),
    ],
)
def test_weights_validation(w_ranges, exc, match):
    with pytest.raises(exc, match=match):
        simulate_weights(np.array([[0, 1], [0, 0]]), w_ranges=w_ranges)


def test_weights_reject_non_square():
    with pytest.raises(ValueError, match=r"`B` must be a square matrix; got shape \(2, 3\)"):
        simulate_weights(np.zeros((2, 3)))


# --------------------------------------------------------- simulate_linear_sem


def test_sem_covariance_matches_theory():
    # Cov(X) = (I - W)^{-T} diag(s^2) (I - W)^{-1}. For Gaussian rows the sample covariance entry
    # S_ij has variance (Σ_ii Σ_jj + Σ_ij^2) / n (Wishart, to O(1/n^2)); accept within 5 s.e.
    W = simulate_weights(simulate_dag(6, s0=8, rng=0), rng=0)
    s = np.array([0.5, 1.0, 1.5, 1.0, 2.0, 0.7])
    W_before, s_before = W.copy(), s.copy()
    n = 20_000
    X = simulate_linear_sem(W, n, noise_scale=s, rng=1)
    assert X.shape == (n, 6)
    assert np.array_equal(W, W_before) and np.array_equal(s, s_before)
    A = np.linalg.inv(np.eye(6) - W)
    sigma = A.T @ np.diag(s**2) @ A
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    S = np.cov(X, rowvar=False)
    assert np.all(np.abs(S - sigma) < 5 * se)


# Each family with scale s: mean, variance / s^2 and kurtosis E[(x-μ)^4] / Var^2.
_FAMILIES = {
    "gaussian": (lambda s: 0.0, 1.0, 3.0),
    "exponential": (lambda s: s, 1.0, 9.0),
    "gumbel": (lambda s: np.euler_gamma * s, np.pi**2 / 6, 5.4),
    "uniform": (lambda s: 0.0, 1.0 / 3.0, 1.8),
}


@pytest.mark.parametrize("noise", sorted(_FAMILIES))
def test_noise_family_mean_and_variance(noise):
    # With W = 0, X = N. The sample mean has s.e. σ/√n; the sample variance has s.e.
    # σ² √((κ − 1)/n) with κ the kurtosis. Accept within 5 s.e.
    mean_of, var_factor, kurt = _FAMILIES[noise]
    s = np.array([0.5, 1.0, 2.0])
    n = 40_000
    X = simulate_linear_sem(np.zeros((3, 3)), n, noise=noise, noise_scale=s, rng=11)
    var = var_factor * s**2
    assert np.all(np.abs(X.mean(0) - mean_of(s)) < 5 * np.sqrt(var / n))
    assert np.all(np.abs(X.var(0, ddof=1) - var) < 5 * var * np.sqrt((kurt - 1) / n))


def test_sem_zero_noise_scale_gives_zeros():
    X = simulate_linear_sem(_chain_weights(), 5, noise_scale=0.0, rng=0)
    assert np.array_equal(X, np.zeros((5, 4)))


def test_sem_follows_structural_equations():
    # X solves X = X W + N exactly: X - X W recovers the (n, d) standard normal block drawn first
    # from the same stream.
    W = simulate_weights(simulate_dag(7, s0=10, rng=4), rng=4)
    X = simulate_linear_sem(W, 50, rng=9)
    N = np.random.default_rng(9).standard_normal((50, 7))
    assert np.allclose(X - X @ W, N)


def test_sem_determinism():
    W = _chain_weights()
    assert np.array_equal(simulate_linear_sem(W, 10, rng=1), simulate_linear_sem(W, 10, rng=1))
    assert not np.array_equal(simulate_linear_sem(W, 10, rng=1), simulate_linear_sem(W, 10, rng=2))


@pytest.mark.parametrize(
    ("W", "n", "kwargs", "exc", "match"),
    [
        (_chain_weights() + _chain_weights().T, 5, {}, ValueError, r"`W` is not a DAG"),
        (_chain_weights(), 0, {}, ValueError, r"`n` must be >= 1; got 0"),
        (
            _chain_weights(),
            5,
            dict(noise="laplace"),
            ValueError,
            r"`noise` must be one of 'gaussian', 'exponential', 'gumbel', 'uniform'; got 'laplace'",
        ),
        (_chain_weights(), 5, dict(noise_scale=-1.0), ValueError, r"`noise_scale` must be >= 0; got -1.0"),
        (
            _chain_weights(),
            5,
            dict(noise_scale=[1.0, 2.0]),
            ValueError,
            r"`noise_scale` must be a scalar or of shape \(4,\); got shape \(2,\)",
        ),
        (
            _chain_weights(),
            5,
            dict(noise_scale=[1.0, -2.0, 1.0, 1.0]),
            ValueError,
            r"`noise_scale` entries must be finite and >= 0",
        ),
        (_chain_weights(), 5, dict(noise_scale="big"), TypeError, r"`noise_scale` must be a real number"),
        (np.full((2, 2), np.nan), 5, {}, ValueError, r"`W` has a non-finite value"),
    ],
)
def test_sem_validation(W, n, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        simulate_linear_sem(W, n, **kwargs)


# ------------------------------------------------------ simulate_heterogeneous


def test_heterogeneous_shapes_support_and_spread():
    W = simulate_weights(simulate_dag(10, s0=15, rng=0), rng=0)
    W_before = W.copy()
    data = simulate_heterogeneous(W, [30, 40, 50], tau=0.3, rng=3)
    assert isinstance(data, HeterogeneousData)
    assert np.array_equal(W, W_before) and np.array_equal(data.W, W)
    assert [X.shape for X in data.participants] == [(30, 10), (40, 10), (50, 10)]
    assert len(data.weights) == 3
    for B_k in data.weights:
        assert np.array_equal(B_k != 0, W != 0)
    # Deviations B*_k - W on the 45 edge slots are N(0, τ²): Σ dev²/τ² ~ χ²(45),
    # mean 45 and s.d. √90; accept within 5 s.d.
    dev = np.concatenate([(B_k - W)[W != 0] for B_k in data.weights])
    stat = np.sum(dev**2) / 0.3**2
    assert abs(stat - dev.size) < 5 * np.sqrt(2 * dev.size)


def test_heterogeneous_tau_zero_and_streams():
    W = _chain_weights()
    data = simulate_heterogeneous(W, [5, 6], tau=0.0, rng=1)
    assert all(np.array_equal(B_k, W) for B_k in data.weights)
    more = simulate_heterogeneous(W, [5, 6, 7], tau=0.0, rng=1)
    for a, b in zip(data.participants, more.participants):  # appending keeps earlier participants
        assert np.array_equal(a, b)
    assert not np.array_equal(data.participants[0], data.participants[1][:5])
    other = simulate_heterogeneous(W, [5, 6], tau=0.0, rng=2)
    assert not np.array_equal(data.participants[0], other.participants[0])


@pytest.mark.parametrize(
    ("sizes", "kwargs", "exc", "match"),
    [
        ([], {}, ValueError, r"`sizes` must hold at least one size"),
        (5, {}, TypeError, r"`sizes` must be a sequence of ints; got int"),
        ([5, 0], {}, ValueError, r"`sizes\[1\]` must be >= 1; got 0"),
        ([5, 2.0], {}, TypeError, r"`sizes\[1\]` must be an integer"),
        ([5], dict(tau=-0.1), ValueError, r"`tau` must be >= 0; got -0.1"),
        ([5], dict(noise="cauchy"), ValueError, r"`noise` must be one of"),
    ],
)
def test_heterogeneous_validation(sizes, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        simulate_heterogeneous(_chain_weights(), sizes, **kwargs)


def test_heterogeneous_rejects_cycles():
    with pytest.raises(ValueError, match=r"`W` is not a DAG"):
        simulate_heterogeneous(np.ones((3, 3)), [5])


# ------------------------------------------------------------------------ split


def test_split_equal_contiguous_with_remainder_first():
    X = np.arange(23 * 2).reshape(23, 2)
    X_before = X.copy()
    parts = split(X, 5)
    assert [p.shape[0] for p in parts] == [5, 5, 5, 4, 4]
    assert np.array_equal(np.vstack(parts), X)
    parts[0][0, 0] = -1  # parts are copies
    assert np.array_equal(X, X_before)


def test_split_given_sizes():
    X = np.arange(10)[:, None]
    parts = split(X, sizes=[2, 5, 3])
    assert [p.ravel().tolist() for p in parts] == [[0, 1], [2, 3, 4, 5, 6], [7, 8, 9]]
    assert len(split(X, 3, sizes=[2, 5, 3])) == 3


@settings(max_examples=50, deadline=None)
@given(
    P=st.integers(1, 8),
    min_size=st.integers(1, 5),
    extra=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_uneven_respects_min_size(P, min_size, extra, seed):
    n = P * min_size + extra
    X = np.arange(n)[:, None]
    parts = split(X, P, uneven=True, min_size=min_size, rng=seed)
    assert len(parts) == P
    assert all(p.shape[0] >= min_size for p in parts)
    assert np.array_equal(np.vstack(parts), X)


def test_split_uneven_is_random_and_reproducible():
    X = np.zeros((200, 1))
    sizes = lambda seed: [p.shape[0] for p in split(X, 4, uneven=True, rng=seed)]
    assert sizes(0) == sizes(0) and sizes(0) != sizes(1)


def test_split_shuffle_permutes_rows():
    X = np.arange(30)[:, None]
    parts = split(X, 3, shuffle=True, rng=0)
    rows = np.concatenate(parts).ravel()
    assert sorted(rows.tolist()) == list(range(30)) and rows.tolist() != list(range(30))
    again = np.concatenate(split(X, 3, shuffle=True, rng=0)).ravel()
    assert np.array_equal(rows, again)


def test_split_dataframe_keeps_columns_and_index():
    df = pd.DataFrame({"a": range(9), "b": np.arange(9) * 0.5}, index=[f"r{i}" for i in range(9)])
    df_before = df.copy()
    parts = split(df, 2, shuffle=True, rng=1)
    assert all(isinstance(p, pd.DataFrame) and list(p.columns) == ["a", "b"] for p in parts)
    assert sorted(pd.concat(parts).index) == sorted(df.index)
    assert pd.concat(parts).sort_values("a").equals(df)
    parts[0].iloc[0, 0] = -1
    pd.testing.assert_frame_equal(df, df_before)


@pytest.mark.parametrize(
    ("X", "P", "kwargs", "exc", "match"),
    [
        (
            np.zeros((5, 2)),
            3,
            {},
            ValueError,
            r"cannot split n = 5 rows into `participants` = 3 parts of at least `min_size` = 2 "
            r"rows \(6 rows needed\)",
        ),
        (
            np.zeros((5, 2)),
            None,
            dict(sizes=[2, 2]),
            ValueError,
            r"`sizes` must sum to the number of rows n = 5; they sum to 4",
        ),
        (np.zeros((5, 2)), None, dict(sizes=[4, 1]), ValueError, r"`sizes\[1\]` = 1 is below `min_size` = 2"),
        (
            np.zeros((5, 2)),
            3,
            dict(sizes=[2, 3]),
            ValueError,
            r"`participants` = 3 disagrees with len\(`sizes`\) = 2",
        ),
        (
            np.zeros((5, 2)),
            None,
            dict(sizes=[2, 3], uneven=True),
            ValueError,
            r"`sizes` and `uneven=True` are mutually exclusive",
        ),
        (np.zeros((5, 2)), None, {}, ValueError, r"`participants` \(number of parts\) is required"),
        (np.zeros((5, 2)), 0, {}, ValueError, r"`participants` must be >= 1; got 0"),
        (np.zeros((5, 2)), 2, dict(min_size=0), ValueError, r"`min_size` must be >= 1; got 0"),
        (np.zeros((5, 2)), 2, dict(shuffle="yes"), TypeError, r"`shuffle` must be a bool; got str"),
        (np.zeros((5, 2)), 2, dict(uneven=1), TypeError, r"`uneven` must be a bool; got int 1"),
        (np.zeros(5), 2, {}, ValueError, r"`X` must be 2-dimensional with shape \(n, d\); got shape \(5,\)"),
    ],
)
def test_split_validation(X, P, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        split(X, P, **kwargs)


# --------------------------------------------------------------------- simulate


def test_simulate_end_to_end():
    sim = simulate(12, 600, participants=4, rng=0)
    assert isinstance(sim, SimulatedData)
    assert sim.X.shape == (600, 12) and int(sim.B_true.sum()) == 12
    assert np.array_equal(sim.B_true, (sim.W_true != 0).astype(int))
    assert [p.shape for p in sim.participants] == [(150, 12)] * 4
    assert np.array_equal(np.vstack(sim.participants), sim.X)
    assert is_dag(sim.B_true)


def test_simulate_determinism_and_stream_separation():
    a, b = simulate(8, 100, rng=3), simulate(8, 100, rng=3)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.W_true, b.W_true)
    assert not np.array_equal(a.X, simulate(8, 100, rng=4).X)
    assert np.array_equal(simulate(8, 300, rng=3).W_true, a.W_true)  # graph does not depend on n


def test_simulate_small_d_default_s0_and_sf():
    assert int(simulate(2, 20, rng=0).B_true.sum()) == 1  # s0 = d capped at d(d-1)/2
    assert is_dag(simulate(20, 40, participants=2, graph_type="SF", noise="gumbel", rng=0).B_true)


def test_simulate_validation():
    with pytest.raises(ValueError, match=r"cannot split n = 10 rows into `participants` = 10"):
        simulate(3, 10, rng=0)
    with pytest.raises(ValueError, match=r"`n` must be >= 1; got 0"):
        simulate(3, 0, rng=0)


def test_every_simulator_family_is_importable_from_simulate():
    import importlib

    sim = importlib.import_module("dpbnsl.simulation")
    for module, names in {
        "dpbnsl.simulation.nonlinear": (
            "simulate_nonlinear",
            "simulate_nonlinear_sem",
            "simulate_noniid",
            "uneven_sizes",
        ),
        "dpbnsl.simulation.discrete": ("simulate_discrete", "random_discrete_bn"),
        "dpbnsl.simulation.temporal": ("simulate_temporal",),
    }.items():
        family = importlib.import_module(module)
        for name in names:
            assert getattr(sim, name) is getattr(family, name) and name in sim.__all__
