"""Nonlinear SEM simulators: mechanisms, GP draws, non-IID participants, uneven sizes, checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbnsl.simulation import simulate_dag
from dpbnsl.simulation.nonlinear import (
    NONLINEAR_KINDS,
    NonIIDData,
    NonlinearData,
    _gp_exact,
    _gp_rff,
    _mechanism,
    _signed_uniform,
    simulate_noniid,
    simulate_nonlinear,
    simulate_nonlinear_sem,
    uneven_sizes,
)

CHAIN = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
FORK = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 0]])  # 0 -> 2 <- 1


@pytest.mark.parametrize("kind", NONLINEAR_KINDS)
def test_shapes_determinism_and_input_untouched(kind):
    B = simulate_dag(6, s0=6, rng=0)
    B0 = B.copy()
    X1 = simulate_nonlinear_sem(B, 80, kind=kind, rng=3)
    X2 = simulate_nonlinear_sem(B, 80, kind=kind, rng=3)
    assert X1.shape == (80, 6) and np.isfinite(X1).all()
    np.testing.assert_array_equal(X1, X2)
    assert not np.array_equal(X1, simulate_nonlinear_sem(B, 80, kind=kind, rng=4))
    np.testing.assert_array_equal(B, B0)


@pytest.mark.parametrize("kind", NONLINEAR_KINDS)
def test_roots_are_noise_and_children_are_functions_of_parents(kind):
    # node 1 has zero noise, so x_1 = f(x_0) exactly; node 0 (root) is N(0, 1) noise only
    X = simulate_nonlinear_sem(CHAIN, 400, kind=kind, noise_scale=[1.0, 0.0, 1.0], rng=1)
    Z = simulate_nonlinear_sem(np.zeros((3, 3)), 400, kind=kind, noise_scale=[1.0, 0.0, 1.0], rng=1)
    np.testing.assert_array_equal(X[:, 0], Z[:, 0])  # the root is the noise stream itself
    assert np.all(Z[:, 1] == 0.0)
    order = np.argsort(X[:, 0])
    assert np.std(X[:, 1]) > 0.05  # a non-constant function of its parent ...
    # ... and a continuous one: neighbouring parent values give close child values
    jumps = np.abs(np.diff(X[order, 1]))
    assert np.median(jumps) < 0.2 * np.std(X[:, 1])


def test_mim_is_bounded_by_three_and_mlp_by_its_output_weights():
    X = simulate_nonlinear_sem(FORK, 500, kind="mim", noise_scale=[1.0, 1.0, 0.0], rng=2)
    assert np.abs(X[:, 2]).max() <= 3.0
    # MLP: σ(·) ∈ (0, 1) and |W2| <= 2 over 100 units, so |f| < 200
    X = simulate_nonlinear_sem(FORK, 500, kind="mlp", noise_scale=[1.0, 1.0, 0.0], rng=2)
    assert np.abs(X[:, 2]).max() < 200.0


def test_mlp_and_mim_functions_do_not_depend_on_n():
    B = simulate_dag(5, s0=5, rng=0)
    for kind in ("mlp", "mim"):
        small = simulate_nonlinear_sem(B, 50, kind=kind, rng=9)
        large = simulate_nonlinear_sem(B, 120, kind=kind, rng=9)
        np.testing.assert_allclose(small, large[:50], rtol=1e-12, atol=1e-12)


def test_gp_add_is_additive():
    # the 2x2 grid (a1|b1) x (a2|b2): an additive f has zero mixed difference
    Z = np.array([[0.3, -1.0], [0.3, 0.8], [1.5, -1.0], [1.5, 0.8]])
    f = _mechanism("gp-add", Z, np.random.default_rng(0), "exact")
    # duplicated inputs: the jitter (<= 1e-2 variance, here 1e-6) is the only non-additive part
    assert abs(f[0] - f[1] - f[2] + f[3]) < 0.02
    g = _mechanism("gp", Z, np.random.default_rng(0), "exact")
    assert abs(g[0] - g[1] - g[2] + g[3]) > 1e-3  # a joint GP draw is not additive


@pytest.mark.parametrize("draw", [_gp_exact, _gp_rff])
def test_gp_draws_have_the_rbf_covariance(draw):
    Z = np.array([[0.0, 0.0], [0.5, 0.0], [1.0, 1.0], [3.0, 0.0]])
    sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.5 * sq)
    rng = np.random.default_rng(0)
    N = 2000
    F = np.stack([draw(Z, rng) for _ in range(N)])
    C = F.T @ F / N
    # sample covariance of N draws: s.e. of C_ab is sqrt((K_aa K_bb + K_ab²)/N) <= sqrt(2/N) =
    # 0.032; allow 5 s.e. plus the 1/sqrt(2048) = 0.022 Monte-Carlo error of the rff kernel
    np.testing.assert_allclose(C, K, atol=5 * np.sqrt(2 / N) + 0.03)


def test_gp_auto_uses_random_features_above_2000_rows_and_is_fast(monkeypatch):
    import dpbnsl.simulation.nonlinear as sn

    def no_exact(Z, rng):
        raise AssertionError("exact GP draw used")

    monkeypatch.setattr(sn, "_gp_exact", no_exact)
    B = np.array([[0, 1], [0, 0]])
    X = simulate_nonlinear_sem(B, 5000, kind="gp", rng=0)
    assert X.shape == (5000, 2) and np.isfinite(X).all()
    assert 0.3 < np.std(X[:, 1] - X[:, 1].mean()) < 3.0
    with pytest.raises(AssertionError, match="exact GP draw used"):  # 2000 rows: still exact
        simulate_nonlinear_sem(B, 2000, kind="gp", rng=0)


def test_signed_uniform_weights():
    """Magnitudes U(0.5, 2) with fair signs: KS test on the magnitudes (p > 1e-3 at a fixed seed)
    and the number of negatives within 4 s.d. of Binomial(20000, 1/2) (s.d. ≈ 71)."""
    w = _signed_uniform(np.random.default_rng(3), 20000)
    mag = np.abs(w)
    assert mag.min() >= 0.5 and mag.max() <= 2.0
    assert stats.kstest(mag, stats.uniform(0.5, 1.5).cdf).pvalue > 1e-3
    assert abs((w < 0).sum() - 10000) < 4 * 71


def test_per_node_noise_scale():
    X = simulate_nonlinear_sem(np.zeros((3, 3)), 20000, kind="mlp", noise_scale=[0.5, 1.0, 2.0], rng=0)
    # s.d. estimates of 20000 Gaussian draws have relative s.e. 1/sqrt(2·20000) = 0.005; 5 s.e.
    np.testing.assert_allclose(X.std(axis=0), [0.5, 1.0, 2.0], rtol=0.025)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(kind="rbf"), ValueError, r"`kind` must be one of 'mlp', 'gp', 'gp-add', 'mim'"),
        (dict(gp_method="svd"), ValueError, r"`gp_method` must be one of 'auto', 'exact', 'rff'"),
        (dict(noise_scale=[1.0, 1.0]), ValueError, r"`noise_scale` must be a scalar or of shape"),
        (dict(noise_scale=-1.0), ValueError, r"`noise_scale` must be >= 0"),
    ],
)
def test_sem_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        simulate_nonlinear_sem(CHAIN, 10, **kwargs)


def test_sem_rejects_cycles_and_bad_n():
    with pytest.raises(ValueError, match=r"`W` is not a DAG"):
        simulate_nonlinear_sem(np.array([[0, 1], [1, 0]]), 10)
    with pytest.raises(ValueError, match=r"`n` must be >= 1; got 0"):
        simulate_nonlinear_sem(CHAIN, 0)
    with pytest.raises(ValueError, match=r"`B` must be a square matrix"):
        simulate_nonlinear_sem(np.zeros((2, 3)), 10)


def test_simulate_nonlinear_mirrors_simulate():
    sim = simulate_nonlinear(8, 103, participants=4, rng=0)
    assert isinstance(sim, NonlinearData) and sim.kind == "mlp"
    assert sim.X.shape == (103, 8) and int(sim.B_true.sum()) == 8
    assert [p.shape[0] for p in sim.participants] == [26, 26, 26, 25]
    np.testing.assert_array_equal(np.vstack(sim.participants), sim.X)
    np.testing.assert_array_equal(sim.W_true, sim.B_true)
    # the graph does not depend on n
    np.testing.assert_array_equal(simulate_nonlinear(8, 50, rng=0).B_true, sim.B_true)
    sized = simulate_nonlinear(8, 100, sizes=[30, 70], kind="mim", rng=0)
    assert [p.shape[0] for p in sized.participants] == [30, 70]


def test_noniid_structure_and_streams():
    data = simulate_noniid(6, 40, participants=5, rng=0)
    assert isinstance(data, NonIIDData)
    assert int(data.B_true.sum()) == 12  # ER2 default: s0 = 2d
    assert [X.shape for X in data.participants] == [(40, 6)] * 5
    assert data.X.shape == (200, 6)
    for kind, lin, s, W in zip(data.kinds, data.linear, data.noise_scales, data.weights):
        assert lin == (kind == "linear") and s in (0.8, 1.0)
        if lin:
            np.testing.assert_array_equal(W != 0, data.B_true != 0)
        else:
            assert kind in NONLINEAR_KINDS and W is None
    # appending a participant leaves the others (and the graph) unchanged
    more = simulate_noniid(6, 40, participants=6, rng=0)
    np.testing.assert_array_equal(more.B_true, data.B_true)
    for a, b in zip(data.participants, more.participants):
        np.testing.assert_array_equal(a, b)
    # participants differ from each other even when they share a kind
    assert len({X.tobytes() for X in data.participants}) == 5


def test_noniid_data_carry_the_recorded_noise_and_weights():
    """Root columns are pure noise, so their sample s.d. estimates s_k: at n = 4000 its standard
    error is s/√(2n) <= 0.012; 5 s.e. (0.06) separates the two scales 0.8 and 1 (0.2 apart)."""
    data = simulate_noniid(5, 4000, participants=8, rng=5)
    roots = np.flatnonzero(data.B_true.sum(axis=0) == 0)
    assert roots.size and len(set(data.noise_scales)) == 2 and any(data.linear)
    for X, s in zip(data.participants, data.noise_scales):
        np.testing.assert_allclose(X[:, roots].std(axis=0, ddof=1), s, atol=0.06)
    for W in data.weights:
        if W is not None:
            mag = np.abs(W[data.B_true != 0])
            assert mag.min() >= 0.5 and mag.max() <= 2.0


def test_noniid_proportions():
    data = simulate_noniid(3, 2, participants=800, rng=1, gp_method="exact")
    # Binomial(800, 1/2) linear participants: s.d. sqrt(800)/2 ≈ 14; allow 4 s.d.
    assert abs(sum(data.linear) - 400) < 4 * 14.2
    kinds = [k for k in data.kinds if k != "linear"]
    counts = [kinds.count(k) for k in NONLINEAR_KINDS]
    assert stats.chisquare(counts).pvalue > 1e-3  # uniform over the four classes
    scales = np.array(data.noise_scales)
    assert abs((scales == 0.8).sum() - 400) < 4 * 14.2


def test_noniid_options():
    lin = simulate_noniid(4, 30, participants=6, p_linear=1.0, linear_noise_scale=1.0, rng=0)
    assert all(lin.linear) and set(lin.noise_scales) == {1.0}
    non = simulate_noniid(4, 30, participants=6, p_linear=0.0, rng=0, sizes=[10, 20, 30, 40, 50, 60])
    assert not any(non.linear)
    assert [X.shape[0] for X in non.participants] == [10, 20, 30, 40, 50, 60]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n=None), r"`n` \(rows per participant\) is required unless `sizes` is given"),
        (dict(sizes=[10, 10]), r"`participants` = 3 disagrees with len\(`sizes`\) = 2"),
        (dict(noise_scales=()), r"`noise_scales` must be a non-empty sequence of reals"),
        (dict(noise_scales=(1.0, -0.5)), r"`noise_scales\[1\]` must be >= 0"),
        (dict(p_linear=1.5), r"`p_linear` must be <= 1"),
        (dict(linear_noise_scale=-1.0), r"`linear_noise_scale` must be >= 0"),
        (dict(gp_method="x"), r"`gp_method` must be one of"),
    ],
)
def test_noniid_validation(kwargs, match):
    args = dict(n=20, participants=3) | kwargs
    with pytest.raises(ValueError, match=match):
        simulate_noniid(4, **args)


def test_uneven_sizes():
    sizes = uneven_sizes(600, 50, rng=0)
    assert len(sizes) == 50 and set(sizes) <= {120, 240, 360, 480}
    assert len(set(sizes)) == 4  # all four fractions occur among 50 draws (fails w.p. < 4·0.75⁵⁰)
    assert sizes == uneven_sizes(600, 50, rng=0)
    assert uneven_sizes(10, 3, fractions=(0.5,), rng=1) == [5, 5, 5]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((600, 0), {}, r"`participants` must be >= 1; got 0"),
        ((600, 3), dict(fractions=()), r"`fractions` must be a non-empty sequence"),
        ((600, 3), dict(fractions=(0.5, 1.5)), r"`fractions\[1\]` must be <= 1"),
        ((600, 3), dict(fractions=(0.0,)), r"`fractions\[0\]` must be > 0"),
        ((2, 3), dict(fractions=(0.2,)), r"gives an empty dataset"),
    ],
)
def test_uneven_sizes_validation(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        uneven_sizes(*args, **kwargs)
