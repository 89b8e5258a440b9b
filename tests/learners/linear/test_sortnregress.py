"""SortnRegress and R²-SortnRegress: the LARS path (KKT conditions at every knot, OLS at its end),
the BIC selection, recovery where the data are sortable, and the private learner on one release
(the release's budget, nothing more; the same release and ledger as PC on a private covariance)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbnsl.learners.constraint.dp_cov_pc import dp_cov_pc
from dpbnsl.learners.linear.dp_sortnregress import dp_sortnregress
from dpbnsl.learners.linear.sortnregress import _lasso_path, sortnregress, sortnregress_from_covariance
from dpbnsl.metrics import count_accuracy
from dpbnsl.simulation import simulate


@pytest.mark.parametrize("seed", range(8))
def test_every_knot_of_the_lasso_path_satisfies_the_kkt_conditions(seed):
    """At the knot with penalty λ: |c − Gβ| ≤ λ everywhere, = λ with the sign of β on the support."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 9))
    A = rng.standard_normal((40, k)) @ np.diag(rng.uniform(0.3, 3, k))
    G = A.T @ A / 40
    y = A @ (rng.standard_normal(k) * (rng.random(k) < 0.5)) + rng.standard_normal(40)
    c = A.T @ y / 40
    path = _lasso_path(G, c)
    for beta in path[1:]:
        grad = c - G @ beta
        lam = np.max(np.abs(grad))
        on = beta != 0
        assert np.allclose(grad[on], lam * np.sign(beta[on]), atol=1e-8 * max(1, lam))
    np.testing.assert_allclose(path[-1], np.linalg.solve(G, c), rtol=1e-7, atol=1e-9)


def _kkt_holds(G, c, path):
    for beta in path:
        grad = c - G @ beta
        lam = np.max(np.abs(grad))
        on = beta != 0
        if not np.allclose(grad[on], lam * np.sign(beta[on]), atol=1e-8 * max(1, lam)):
            return False
    return True


def test_the_first_coefficient_to_cross_zero_leaves_the_path():
    """A problem where two active coefficients would cross zero before the next variable enters:
    only the first crossing is a knot; taking the later one flips the other's sign (KKT broken)."""
    G = np.array(
        [
            [20, -10, -9, 13, 8],
            [-10, 20, 5, -8, -3],
            [-9, 5, 22, -16, -1],
            [13, -8, -16, 19, -3],
            [8, -3, -1, -3, 24],
        ],
        dtype=float,
    )
    c = np.array([-5.0, -2.0, -2.0, 1.0, -4.0])
    path = _lasso_path(G, c)
    drops = sum(np.any((a != 0) & (b == 0)) for a, b in zip(path, path[1:]))
    assert drops >= 1 and _kkt_holds(G, c, path)
    np.testing.assert_allclose(path[-1], np.linalg.solve(G, c), rtol=1e-9)


def test_variables_tied_at_the_boundary_enter_together():
    np.testing.assert_allclose(_lasso_path(np.eye(2), np.array([1.0, 1.0]))[-1], [1.0, 1.0])
    # x2 = x0 + x1 + e with x0, x1 independent of equal variance: both parents, not one
    W, _, _ = sortnregress_from_covariance(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 2.5]]), 1000)
    np.testing.assert_allclose(W[:, 2], [1.0, 1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("scale", [1e-8, 1e-3, 1e4])
def test_rescaling_the_data_rescales_nothing_but_the_units(scale):
    """SortnRegress's graph and weights are scale-free: every tolerance is relative."""
    X = simulate(15, 400, participants=1, rng=4).X
    a, b = sortnregress(X), sortnregress(X * scale)
    assert np.array_equal(a.W_raw != 0, b.W_raw != 0)
    np.testing.assert_allclose(a.W_raw, b.W_raw, atol=1e-9)


def test_no_residual_degrees_of_freedom_no_selection():
    """n = 5 rows of 20 independent columns: a regression on ≥ 4 covariates fits exactly, and BIC
    must not choose those fits (it would, with log RSS → −∞)."""
    X = np.random.default_rng(0).standard_normal((5, 20))
    assert np.count_nonzero(sortnregress(X).W) <= 20 * 3


@pytest.mark.parametrize(
    ("S", "n", "match"),
    [
        (np.full((2, 2), np.nan), 10, "finite"),
        (np.ones((3, 2)), 10, "square"),
        (np.eye(2), 1, "`n`"),
    ],
)
def test_from_covariance_refuses_bad_inputs(S, n, match):
    with pytest.raises(ValueError, match=match):
        sortnregress_from_covariance(S, n)


def test_a_sortable_chain_is_recovered():
    rng = np.random.default_rng(0)
    n = 5000
    x0 = rng.standard_normal(n)
    x1 = 1.5 * x0 + rng.standard_normal(n)
    x2 = 1.2 * x1 + rng.standard_normal(n)
    x3 = rng.standard_normal(n) * 0.5  # an isolated node with a small variance
    r = sortnregress(np.column_stack([x0, x1, x2, x3]))
    expected = np.zeros((4, 4), int)
    expected[0, 1] = expected[1, 2] = 1
    assert np.array_equal(r.W != 0, expected.astype(bool)), r.W
    assert r.W[0, 1] == pytest.approx(1.5, abs=0.05) and r.W[1, 2] == pytest.approx(1.2, abs=0.05)
    assert r.method == "sortnregress" and list(r.info["order"][:1]) == [3]


def test_on_the_simulator_sorting_by_variance_finds_the_graph_and_standardising_breaks_it():
    raw = simulate(20, 5000, participants=1, rng=1)
    std = simulate(20, 5000, participants=1, standardise=True, rng=1)
    a = count_accuracy(raw.B_true, sortnregress(raw.X).W != 0)
    b = count_accuracy(std.B_true, sortnregress(std.X).W != 0)
    assert a.shd <= 2 and b.shd >= a.shd + 5, (a.shd, b.shd)
    # R² is scale-free: the same order, the same graph on both
    ra, rb = sortnregress(raw.X, criterion="r2"), sortnregress(std.X, criterion="r2")
    assert np.array_equal(ra.info["order"], rb.info["order"])
    assert np.array_equal(ra.W != 0, rb.W != 0)


def test_threshold_and_dataframe_columns():
    import pandas as pd

    data = simulate(6, 2000, participants=1, rng=2)
    r = sortnregress(pd.DataFrame(data.X, columns=list("abcdef")), threshold=0.3)
    assert r.columns == tuple("abcdef")
    assert np.all((r.W == 0) | (np.abs(r.W) > 0.3)) and r.history.empty
    assert len(r.info["regressions"]) == 5


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(criterion="mean"), ValueError, "`criterion`"),
        (dict(threshold=-1.0), ValueError, "`threshold`"),
        (dict(centre="yes"), TypeError, "`centre`"),
    ],
)
def test_bad_options_are_refused(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sortnregress(np.random.default_rng(0).standard_normal((50, 3)), **kwargs)


def test_from_a_noiseless_covariance_it_is_the_pooled_learner():
    data = simulate(8, 3000, participants=1, rng=3)
    X = data.X - data.X.mean(axis=0)
    W, order, _ = sortnregress_from_covariance(X.T @ X / 3000, 3000)
    np.testing.assert_allclose(W, sortnregress(data.X).W_raw, atol=1e-10)


@pytest.fixture(scope="module")
def data():
    return simulate(6, 8000, participants=4, rng=5)


def _private(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp_sortnregress(data.participants, epsilon=2.0, delta=1e-5, clip_norm=10.0, **kw)


@pytest.mark.parametrize("aggregation", ["local", "secure"])
@pytest.mark.parametrize("criterion", ["var", "r2"])
def test_the_private_learner_spends_one_release(data, aggregation, criterion):
    r = _private(data, aggregation=aggregation, criterion=criterion, rng=0)
    assert r.method == ("dp-sortnregress" if criterion == "var" else "dp-r2-sortnregress")
    assert r.is_dag and r.privacy.epsilon <= 2.0 and len(r.ledger) == 4
    assert all(len(led.entries) == 1 for led in r.ledger)
    # the very release of PC on a private covariance: same events, same noise for the same seed
    pc = dp_cov_pc(data.participants, epsilon=2.0, delta=1e-5, clip_norm=10.0, aggregation=aggregation, rng=0)
    assert [e.event for led in r.ledger for e in led.entries] == [
        e.event for led in pc.ledger for e in led.entries
    ]
    assert r.info["noise_sd"] == pc.info["noise_sd"]


def test_standardising_the_release_is_post_processing(data):
    a, b = _private(data, rng=3), _private(data, rng=3, standardise=True)
    assert a.info["noise_sd"] == b.info["noise_sd"] and b.params["standardise"] is True
    assert [led.entries for led in a.ledger] == [led.entries for led in b.ledger]
    # every variance is 1 after it: the variance sort is the index order, whatever the data
    assert b.info["order"].tolist() == list(range(6)) and a.info["order"].tolist() != list(range(6))
    # and the fit is SortnRegress on the correlation of the repaired release
    r2a, r2b = _private(data, rng=3, criterion="r2"), _private(data, rng=3, criterion="r2", standardise=True)
    assert np.array_equal(r2a.info["order"], r2b.info["order"])
    assert not np.allclose(r2a.W_raw, r2b.W_raw)


def test_at_a_large_budget_it_finds_what_the_pooled_learner_finds(data):
    X = np.vstack(data.participants)
    pooled = count_accuracy(data.B_true, sortnregress(X, threshold=0.3).W != 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = dp_sortnregress(
            data.participants, epsilon=100.0, delta=1e-5, clip_norm=30.0, threshold=0.3, rng=1
        )
    assert count_accuracy(data.B_true, private.W != 0).shd <= pooled.shd + 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(criterion="mean"), "`criterion`"),
        (dict(dropouts=1), '`dropouts` applies to aggregation="secure" only'),
        (dict(aggregation="secure", calibration="classic"), "`calibration` applies"),
        (dict(epsilon=0.0), "`epsilon`"),
        (dict(threshold=-0.1), "`threshold`"),
    ],
)
def test_bad_private_settings_are_refused_before_any_release(data, kwargs, match):
    kw = dict(epsilon=2.0, delta=1e-5, clip_norm=8.0) | kwargs
    with pytest.raises(ValueError, match=match):
        dp_sortnregress(data.participants, **kw)
