"""The SVAR(p) simulator of the FedDBN setting (dpbnsl.simulation.temporal) and dpbnsl.timeseries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbnsl import is_dag
from dpbnsl.simulation.temporal import (
    TemporalData,
    companion_radius,
    simulate_svar,
    simulate_svar_weights,
    simulate_temporal,
)
from dpbnsl.timeseries import as_realisations, lagged_design, split_series


def test_shapes_and_sizes_segment_split():
    data = simulate_temporal(6, 100, participants=3, lag=2, rng=0)
    assert isinstance(data, TemporalData)
    assert data.W_true.shape == (6, 6) and data.A_true.shape == (12, 6)
    assert data.n_samples == (34, 33, 33) and sum(data.n_samples) == 100
    assert [len(p) for p in data.series] == [1, 1, 1]
    assert [p[0].shape for p in data.series] == [(36, 6), (35, 6), (35, 6)]
    assert len(data.pooled) == 3 and data.split == "segment" and data.lag == 2


def test_segments_are_contiguous_pieces_of_one_series():
    data = simulate_temporal(3, 30, participants=3, rng=1, burn_in=50)
    X = simulate_svar(data.W_true, data.A_true, 33, burn_in=50, rng=np.random.default_rng(1).spawn(2)[1])
    np.testing.assert_array_equal(np.vstack([p[0] for p in data.series]), X)


def test_realisation_split():
    data = simulate_temporal(4, 90, participants=2, lag=1, split="realisation", realisations=3, rng=2)
    assert [len(p) for p in data.series] == [3, 3]
    assert [s.shape[0] for s in data.series[0]] == [16, 16, 16]
    assert data.n_samples == (45, 45)
    # independent realisations: no two start alike
    firsts = np.stack([s[0] for p in data.series for s in p])
    assert len({tuple(r) for r in firsts}) == 6


def test_graphs_weights_and_stability():
    for seed in range(20):
        data = simulate_temporal(8, 50, lag=2, rng=seed)
        W, A = data.W_true, data.A_true
        assert is_dag(W) and np.all(np.diag(W) == 0)
        w = np.abs(W[W != 0])
        assert np.all((w >= 0.3) & (w <= 0.5))
        a1, a2 = np.abs(A[:8][A[:8] != 0]), np.abs(A[8:][A[8:] != 0])
        assert np.all((a1 >= 0.3) & (a1 <= 0.5))
        assert np.all((a2 >= 0.3 / 1.5) & (a2 <= 0.5 / 1.5))  # decay c_2 = 1/1.5
        assert data.radius == pytest.approx(companion_radius(W, A)) and data.radius < 1
        assert not data.W_true.flags.writeable and not data.series[0][0].flags.writeable


def test_edge_densities_match_the_paper():
    # d = 10: intra-slice pairs are edges w.p. 4/10 (45 pairs, mean 18, var 10.8), lag entries
    # w.p. 1/10 (100 entries, mean 10, var 9). Over 300 draws the means have standard errors
    # 0.19 and 0.17; we allow 5 standard errors.
    draws = [simulate_svar_weights(10, rng=s) for s in range(300)]
    n_w = np.mean([np.count_nonzero(W) for W, _ in draws])
    n_a = np.mean([np.count_nonzero(A) for _, A in draws])
    assert abs(n_w - 18) < 5 * 0.19 and abs(n_a - 10) < 5 * 0.17
    assert np.mean([np.count_nonzero(np.diag(A)) for _, A in draws]) > 0  # self-lags allowed


def test_simulated_series_follows_the_svar_exactly():
    W, A = simulate_svar_weights(5, lag=2, rng=3)
    X = simulate_svar(W, A, 40, burn_in=7, noise_scale=0.5, rng=9)
    U = np.random.default_rng(9).standard_normal((47, 5)) * 0.5
    X_t, Z = lagged_design(X, 2)
    # residual of eq. 1 on the design rows t = 2..39 is the noise drawn for those steps
    np.testing.assert_allclose(X_t - X_t @ W - Z @ A, U[7 + 2 :], atol=1e-10)


def test_companion_radius_of_known_processes():
    assert companion_radius(np.zeros((2, 2)), 0.5 * np.eye(2)) == pytest.approx(0.5)
    # AR(2) x_t = 0.5 x_{t-1} + 0.3 x_{t-2}: roots of z² − 0.5z − 0.3
    A = np.array([[0.5], [0.3]])
    assert companion_radius(np.zeros((1, 1)), A) == pytest.approx((0.5 + np.sqrt(1.45)) / 2)
    # contemporaneous effects are included: x0 -> x1 with weight 1 and lag 0.6 on x1 only
    W = np.array([[0.0, 1.0], [0.0, 0.0]])
    A = np.array([[0.0, 0.0], [0.0, 0.6]])
    assert companion_radius(W, A) == pytest.approx(0.6)


def test_lagged_design_drops_the_first_rows_of_each_realisation():
    r1 = np.arange(12.0).reshape(6, 2)
    r2 = 100 + np.arange(8.0).reshape(4, 2)
    X_t, Z = lagged_design([r1, r2], 2)
    assert X_t.shape == (4 + 2, 2) and Z.shape == (6, 4)
    np.testing.assert_array_equal(X_t[:4], r1[2:])
    np.testing.assert_array_equal(Z[:4, :2], r1[1:5])  # lag 1
    np.testing.assert_array_equal(Z[:4, 2:], r1[0:4])  # lag 2
    np.testing.assert_array_equal(X_t[4:], r2[2:])  # never joined across the boundary
    np.testing.assert_array_equal(Z[4:, :2], r2[1:3])
    X_t3, Z3 = lagged_design(np.stack([r2, r2]), 1)  # 3-D input = realisations
    assert X_t3.shape == (6, 2)


def test_lagged_design_accepts_dataframes_and_leaves_input_alone():
    df = pd.DataFrame(np.arange(10.0).reshape(5, 2), columns=["a", "b"])
    before = df.copy()
    X_t, Z = lagged_design(df, 1)
    assert X_t.shape == (4, 2)
    pd.testing.assert_frame_equal(df, before)
    arrays, cols = as_realisations([df, df])
    assert cols == ("a", "b") and len(arrays) == 2


def test_split_series():
    X = np.arange(22.0).reshape(11, 2)
    parts = split_series(X, 3, lag=1)
    assert [p.shape[0] for p in parts] == [4, 4, 3]
    np.testing.assert_array_equal(np.vstack(parts), X)
    with pytest.raises(ValueError, match=r"`X` has 11 rows; 6 segments with lag = 1 need at least 12"):
        split_series(X, 6, lag=1)


def test_determinism():
    a = simulate_temporal(5, 60, participants=2, rng=7)
    b = simulate_temporal(5, 60, participants=2, rng=7)
    np.testing.assert_array_equal(a.A_true, b.A_true)
    np.testing.assert_array_equal(a.series[1][0], b.series[1][0])
    c = simulate_temporal(5, 60, participants=2, rng=8)
    assert not np.array_equal(a.series[0][0], c.series[0][0])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: lagged_design(np.zeros((3, 2)), 3),
            ValueError,
            r"`series` has 3 rows, too short for lag = 3: a series needs at least lag \+ 1 = 4 rows",
        ),
        (
            lambda: lagged_design([np.zeros((5, 2)), np.zeros((2, 2))], 2),
            ValueError,
            r"`series` \(realisation 1\) has 2 rows, too short for lag = 2",
        ),
        (lambda: lagged_design(np.zeros((5, 2)), 0), ValueError, r"`lag` must be >= 1; got 0"),
        (
            lambda: lagged_design([np.zeros((5, 2)), np.zeros((5, 3))], 1),
            ValueError,
            r"realisation 1\) has 3 columns but realisation 0 has 2",
        ),
        (
            lambda: simulate_svar(np.zeros((2, 2)), 1.2 * np.eye(2), 10),
            ValueError,
            r"non-stationary SVAR: the companion matrix has spectral radius 1.2 >= 1",
        ),
        (
            lambda: simulate_svar([[0, 1], [1, 0]], np.zeros((2, 2)), 10),
            ValueError,
            r"`W` must be the weight matrix of a DAG",
        ),
        (
            lambda: simulate_svar(np.zeros((2, 2)), np.zeros((3, 2)), 10),
            ValueError,
            r"`A` must have shape \(p·d, d\) = \(p·2, 2\) for some lag p >= 1.*got shape \(3, 2\)",
        ),
        (
            lambda: simulate_temporal(
                5, 100, a_ranges=((-3, -2), (2, 3)), lag_degree=5, on_unstable="raise", rng=0
            ),
            ValueError,
            r"the drawn SVAR is not stationary \(companion spectral radius .* after 1 draw\)",
        ),
        (
            lambda: simulate_temporal(5, 100, a_ranges=((-3, -2), (2, 3)), lag_degree=5, max_tries=3, rng=0),
            ValueError,
            r"after 3 draws\); lower `degree`",
        ),
        (
            lambda: simulate_temporal(5, 100, split="block"),
            ValueError,
            r"`split` must be one of 'segment', 'realisation'; got 'block'",
        ),
        (
            lambda: simulate_temporal(5, 100, realisations=2),
            ValueError,
            r"`realisations` = 2 needs split='realisation'",
        ),
        (
            lambda: simulate_temporal(5, 3, participants=4),
            ValueError,
            r"`n` = 3 design rows cannot give 4 participants × 1 realisations",
        ),
        (
            lambda: simulate_temporal(5, 100, on_unstable="ignore"),
            ValueError,
            r"`on_unstable` must be one of 'resample', 'raise'",
        ),
        (lambda: simulate_svar_weights(5, decay=0.5), ValueError, r"`decay` must be >= 1"),
        (
            lambda: simulate_svar_weights(5, a_ranges=((0.5, 0.3),)),
            ValueError,
            r"`a_ranges` must be a non-empty sequence of finite \(low, high\) pairs",
        ),
    ],
)
def test_validation_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
