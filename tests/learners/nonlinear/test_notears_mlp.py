"""NOTEARS-MLP, NOTEARS-MLP-ADMM and their baselines: gradients, layout, recovery, protocol."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbnsl import count_accuracy, is_dag
from dpbnsl.federation import SERVER, Dense
from dpbnsl.learners.admm import PenaltySchedule
from dpbnsl.learners.combiners import notears_local
from dpbnsl.learners.nonlinear._fed_bnsl_mlp_server import MLPParticipant, server_objective
from dpbnsl.learners.nonlinear._mlp import (
    MLPLayout,
    acyclicity,
    adjacency,
    init_params,
    l2_penalty,
    squared_loss,
)
from dpbnsl.learners.nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
from dpbnsl.learners.nonlinear.notears_mlp import (
    al_objective,
    notears_mlp,
    notears_mlp_best,
    notears_mlp_local,
    notears_mlp_voting,
)
from dpbnsl.simulation.nonlinear import simulate_nonlinear

LAYOUT = MLPLayout(4, 3)
FAST = {"ftol": 1e-6}  # looser L-BFGS-B tolerance than scipy's default 2.2e-9: ~5x faster fits


def _point(seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    theta = init_params(LAYOUT, rng) * scale
    X = rng.standard_normal((25, LAYOUT.d))
    return theta, X, rng


def _check_gradient(f, x, *, free=None, eps=1e-6, rtol=1e-5, atol=1e-6):
    """Central finite differences of the scalar part of ``f`` against its returned gradient."""
    g = f(x)[1]
    num = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        num[i] = (f(x + e)[0] - f(x - e)[0]) / (2 * eps)
    idx = slice(None) if free is None else free
    np.testing.assert_allclose(g[idx], num[idx], rtol=rtol, atol=atol)


# ---------------------------------------------------------------- the model and its gradients


def test_layout_sizes_and_views():
    assert LAYOUT.n_w1 == 4 * 3 * 4 and LAYOUT.n_params == 48 + 12 + 12 + 4
    theta = np.arange(LAYOUT.n_params, dtype=float)
    W1, b1, W2, b2 = LAYOUT.unpack(theta)
    assert W1.shape == (4, 3, 4) and b1.shape == W2.shape == (4, 3) and b2.shape == (4,)
    assert W1[1, 2, 3] == 1 * 12 + 2 * 4 + 3 and b2[-1] == LAYOUT.n_params - 1
    assert LAYOUT.self_loops.sum() == 4 * 3 and LAYOUT.weights.sum() == 48 + 12
    x = LAYOUT.to_split(theta)
    np.testing.assert_array_equal(
        LAYOUT.from_split(x), np.where(np.r_[LAYOUT.self_loops, np.zeros(28, bool)], 0.0, theta)
    )


def test_forward_matches_a_per_node_loop():
    theta, X, _ = _point()
    W1, b1, W2, b2 = LAYOUT.unpack(theta)
    pred = np.column_stack(
        [(1 / (1 + np.exp(-(X @ W1[j].T + b1[j])))) @ W2[j] + b2[j] for j in range(LAYOUT.d)]
    )
    expected = 0.5 / 40 * np.sum((X - pred) ** 2)
    assert squared_loss(theta, X, LAYOUT, n=40)[0] == pytest.approx(expected, rel=1e-12)
    A = np.array([[np.sum(W1[j, :, i] ** 2) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(adjacency(theta, LAYOUT), A)


def test_squared_loss_gradient():
    theta, X, _ = _point()
    _check_gradient(lambda t: squared_loss(t, X, LAYOUT), theta)
    _check_gradient(lambda t: squared_loss(t, X, LAYOUT, n=100.0), theta)


def test_squared_loss_saturated_units_stay_finite():
    theta, X, _ = _point(scale=400.0)
    value, grad = squared_loss(theta, X, LAYOUT)
    assert np.isfinite(value) and np.isfinite(grad).all()


def test_acyclicity_and_l2_gradients():
    theta, _, _ = _point()
    _check_gradient(
        lambda t: (acyclicity(t, LAYOUT)[0], np.r_[acyclicity(t, LAYOUT)[1], np.zeros(28)]), theta
    )
    _check_gradient(lambda t: l2_penalty(t, LAYOUT), theta)


def test_acyclicity_is_zero_exactly_on_dags():
    theta, _, _ = _point()
    W1 = LAYOUT.unpack(theta)[0]
    dag = theta.copy()
    dag_W1 = LAYOUT.unpack(dag)[0]
    dag_W1[:] = W1 * np.tril(np.ones((4, 4)), -1)[:, None, :]  # inputs i < j only: a DAG
    assert acyclicity(dag, LAYOUT)[0] == pytest.approx(0.0, abs=1e-12)
    assert acyclicity(theta, LAYOUT)[0] > 1e-3


def test_augmented_lagrangian_gradient_in_split_form():
    theta, X, _ = _point()
    x = LAYOUT.to_split(theta) + 0.05  # interior point of the split (both parts positive)

    def f(z):
        return al_objective(z, X, LAYOUT, rho=3.0, alpha=0.7, lambda1=0.2, lambda2=0.3)

    _check_gradient(f, x, rtol=1e-4)


def test_participant_objective_gradient():
    theta, X, rng = _point()
    part = MLPParticipant(X, LAYOUT, PenaltySchedule(0.5, 0.5), n_total=60, theta0=theta)
    part.beta = rng.standard_normal(LAYOUT.n_params)
    glob = theta + 0.1 * rng.standard_normal(LAYOUT.n_params)
    _check_gradient(lambda t: part.objective(t, glob, 2.5), theta)


def test_server_objective_gradient():
    theta, _, rng = _point()
    w = theta[: LAYOUT.n_w1]
    x = np.r_[np.maximum(w, 0), np.maximum(-w, 0)] + 0.05
    kw = dict(
        w_mean=rng.standard_normal(LAYOUT.n_w1),
        beta_sum=rng.standard_normal(LAYOUT.n_w1),
        P=3,
        alpha=0.4,
        rho1=2.0,
        rho2=0.7,
        lambda1=0.1,
        lambda2=0.2,
    )
    _check_gradient(lambda z: server_objective(z, LAYOUT, **kw), x, rtol=1e-4)


def test_overflowing_trial_points_are_rejected():
    theta, X, _ = _point(scale=1e3)
    x = LAYOUT.to_split(theta)
    f, g = al_objective(x, X, LAYOUT, rho=1e16, alpha=0.0, lambda1=0.0, lambda2=0.0)
    assert f == np.inf and not g.any()


# ---------------------------------------------------------------------- centralised NOTEARS-MLP


@pytest.fixture(scope="module")
def small():
    return simulate_nonlinear(4, 300, participants=2, rng=3)


@pytest.fixture(scope="module")
def central(small):
    return notears_mlp(small.X, lambda1=0.01, lambda2=0.01, solver_options=FAST, rng=0)


def _penalised(theta, X, lam=0.01):
    layout = MLPLayout(X.shape[1], 10)
    return (
        squared_loss(theta, X, layout)[0]
        + lam * np.abs(theta[: layout.n_w1]).sum()
        + lam * l2_penalty(theta, layout)[0]
    )


def test_notears_mlp_recovers_a_small_graph(small, central):
    acc = count_accuracy(small.B_true, central.W)
    assert acc.shd <= 1 and acc.tpr >= 0.75 and central.is_dag
    assert central.history["h"].iloc[-1] <= 1e-8 or central.history["rho"].iloc[-1] >= 1e16
    np.testing.assert_allclose(central.W_raw, np.sqrt(adjacency(central.info["theta"], MLPLayout(4, 10))))
    assert np.all(np.diag(central.W_raw) == 0)


def test_notears_mlp_is_deterministic_and_keeps_inputs(small, central):
    frame = pd.DataFrame(small.X, columns=list("abcd"))
    before = frame.copy()
    again = notears_mlp(frame, lambda1=0.01, lambda2=0.01, solver_options=FAST, rng=0)
    pd.testing.assert_frame_equal(frame, before)
    np.testing.assert_array_equal(again.W_raw, central.W_raw)
    assert again.columns == ("a", "b", "c", "d")


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(hidden=0), ValueError, r"`hidden` must be >= 1; got 0"),
        (dict(lambda1=-1.0), ValueError, r"`lambda1` must be >= 0"),
        (dict(lambda2=float("nan")), ValueError, r"`lambda2` must be finite"),
        (dict(threshold=-0.1), ValueError, r"`threshold` must be >= 0"),
        (dict(centre="yes"), TypeError, r"`centre` must be a bool; got str 'yes'"),
        (dict(max_iter=0), ValueError, r"`max_iter` must be >= 1"),
        (dict(rng=-1), ValueError, r"`rng` seed must be non-negative"),
        (dict(solver_options=[1]), TypeError, r"`solver_options` must be a mapping or None"),
        (
            dict(solver_options={"tol": 1}),
            ValueError,
            r"`solver_options key` must be one of 'maxcor', 'ftol', 'gtol', 'maxiter', 'maxfun'",
        ),
        (dict(solver_options={"ftol": -1.0}), ValueError, r"`solver_options\['ftol'\]` must be >= 0"),
        (dict(solver_options={"maxiter": 0}), ValueError, r"`solver_options\['maxiter'\]` must be >= 1"),
    ],
)
def test_notears_mlp_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        notears_mlp(np.zeros((5, 3)), **kwargs)


def test_notears_mlp_needs_two_rows():
    with pytest.raises(ValueError, match=r"`X` has 1 rows; at least 2 are required"):
        notears_mlp(np.zeros((1, 3)))


# --------------------------------------------------------------------------- NOTEARS-MLP-ADMM


@pytest.fixture(scope="module")
def admm(small):
    return fed_bnsl_mlp(small.participants, lambda1=0.01, solver_options=FAST, rng=0)


def test_admm_with_one_participant_matches_the_centralised_problem(small, central):
    # With P = 1 (and the same λ1, λ2) ADMM solves NOTEARS-MLP's problem by another path: the
    # problem is non-convex, so we ask for the same graph, weights of the same size and a
    # penalised objective within 10% (ADMM's ρ₂ schedule freezes the last moves, so it ends a
    # little higher; measured 2-12% on 12 small instances).
    one = fed_bnsl_mlp([small.X], lambda1=0.01, lambda2=0.01, solver_options=FAST, rng=0)
    np.testing.assert_array_equal(one.adjacency, central.adjacency)
    np.testing.assert_allclose(one.W_raw, central.W_raw, atol=0.35)
    f_one, f_central = (_penalised(r.info["theta"], small.X) for r in (one, central))
    assert abs(f_one - f_central) <= 0.1 * f_central
    assert one.history["h"].iloc[-1] < 1e-8


def test_admm_recovers_the_small_graph(small, admm):
    acc = count_accuracy(small.B_true, admm.W)
    assert acc.shd <= 1 and acc.tpr >= 0.75
    assert admm.is_dag and admm.history["h"].iloc[-1] < 1e-6


def test_admm_transcript_holds_only_parameter_vectors(small, admm):
    T, P, p = len(admm.history), 2, admm.info["n_params"]
    t = admm.transcript.learning()
    assert len(t) == 2 * P * T and t.n_rounds == T
    setup = admm.transcript.setup().downloads()  # the row counts, then the initial θ⁰
    assert {m.kind for m in setup} == {"n_samples_theta0"} and setup[0].payload.shape == (P + p,)
    assert all(isinstance(m.payload, Dense) and m.payload.shape == (p,) for m in t)
    assert {m.kind for m in t.uploads()} == {"local_theta"}
    assert {m.kind for m in t.downloads()} == {"global_theta"}
    assert t.total_bytes == 2 * P * T * p * 8
    last = t.filter(round=T - 1, direction="down")
    assert all(m.sender == SERVER for m in last)
    np.testing.assert_array_equal(last[0].to_dense(), admm.info["theta"])
    np.testing.assert_allclose(np.sqrt(adjacency(admm.info["theta"], MLPLayout(4, 10))), admm.W_raw)


def test_admm_history_and_schedule(admm):
    h = admm.history
    assert list(h["round"]) == list(range(len(h)))
    np.testing.assert_allclose(h["rho1"], 0.1 * 1.75 ** np.arange(len(h)))
    np.testing.assert_allclose(h["rho2"], 0.1 * 1.25 ** np.arange(len(h)))
    assert {"gap", "alpha", "nnz", "local_loss", "local_seconds"} <= set(h.columns)
    last = h.iloc[-1]
    assert last["h"] <= 1e-8 and last["gap"] <= 1e-4 or len(h) == 176


def test_admm_max_rounds_deterministic_and_inputs_untouched(small):
    parts = [pd.DataFrame(X, columns=list("abcd")) for X in small.participants]
    before = [p.copy() for p in parts]
    a = fed_bnsl_mlp(parts, max_rounds=4, solver_options=FAST, rng=1)
    b = fed_bnsl_mlp(parts, max_rounds=4, solver_options=FAST, rng=1)
    for p, q in zip(parts, before):
        pd.testing.assert_frame_equal(p, q)
    assert len(a.history) == 4 and a.columns == ("a", "b", "c", "d")
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    c = fed_bnsl_mlp(parts, max_rounds=4, solver_options=FAST, rng=2)
    assert not np.array_equal(a.W_raw, c.W_raw)


def test_admm_uneven_sizes_and_local_normalisation(small):
    parts = [small.X[:50], small.X[50:]]
    r = fed_bnsl_mlp(parts, max_rounds=3, normalize="local", centre=True, solver_options=FAST, rng=0)
    assert r.info["n_samples"] == (50, 250) and r.params["normalize"] == "local"


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(rho1=0.0), ValueError, r"`rho1` must be > 0"),
        (dict(gamma2=0.5), ValueError, r"`gamma2` must be >= 1"),
        (dict(max_rounds=0), ValueError, r"`max_rounds` must be >= 1"),
        (dict(normalize="total"), ValueError, r"`normalize` must be one of 'global', 'local'"),
        (dict(hidden=1.5), TypeError, r"`hidden` must be an integer"),
        (dict(lambda2=-1.0), ValueError, r"`lambda2` must be >= 0"),
    ],
)
def test_admm_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fed_bnsl_mlp([np.zeros((5, 3)), np.zeros((5, 3))], **kwargs)


def test_admm_participant_validation():
    with pytest.raises(ValueError, match=r"participant 1\) has 4 columns but participant 0 has 3"):
        fed_bnsl_mlp([np.zeros((5, 3)), np.zeros((5, 4))])


# ------------------------------------------------------------------------------- baselines


@pytest.fixture(scope="module")
def fits(small):
    return notears_mlp_local(small.participants, solver_options=FAST, rng=0)


def test_voting_and_best_reuse_local_fits(small, fits):
    vote = notears_mlp_voting(local=fits)
    best = notears_mlp_best(local=fits, B_true=small.B_true)
    assert vote.method == "notears-mlp-voting" and vote.info["votes"].max() <= 2
    expected = np.all([r.W != 0 for r in fits.results], axis=0)  # 2 of 2 votes needed
    np.testing.assert_array_equal(vote.W != 0, expected)
    assert best.info["oracle"] and best.method == "notears-mlp-best (oracle)"
    shds = [count_accuracy(small.B_true, r.W).shd for r in fits.results]
    assert best.info["chosen"] == int(np.argmin(shds))
    np.testing.assert_array_equal(best.W, fits.results[best.info["chosen"]].W)
    assert vote.params["lambda1"] == 0.01 and vote.params["solver_options"] == FAST
    assert is_dag(best.W)


def test_baseline_argument_errors(small, fits):
    with pytest.raises(ValueError, match=r"pass `participants` \(data\) or `local`"):
        notears_mlp_voting()
    with pytest.raises(ValueError, match=r"`local` fits were given, so \['participants'\]"):
        notears_mlp_voting(small.participants, local=fits)
    with pytest.raises(ValueError, match=r"`B_true` must be a square matrix"):
        notears_mlp_best(local=fits, B_true=np.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"`local` must be a LocalFits from notears_mlp_local"):
        notears_mlp_voting(local=list(fits.results))
    linear = notears_local(small.participants, max_iter=2)
    with pytest.raises(ValueError, match=r"must hold NOTEARS-MLP fits .* got fits of \['notears'\]"):
        notears_mlp_voting(local=linear)
    with pytest.raises(ValueError, match=r"`min_votes` must be <= 2; got 3"):
        notears_mlp_voting(local=fits, min_votes=3)


def test_baseline_arguments_are_checked_before_any_fit(small, monkeypatch):
    from importlib import import_module

    module = import_module(
        "dpbnsl.learners.nonlinear.notears_mlp"
    )  # the package re-exports a same-named function

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before validating")

    monkeypatch.setattr(module, "notears_mlp_local", no_fit)
    d = small.B_true.shape[0]
    with pytest.raises(ValueError, match=r"`min_votes` must be <= 2; got 5"):
        module.notears_mlp_voting(small.participants, min_votes=5)
    with pytest.raises(ValueError, match=rf"`B_true` must be {d}×{d} like the data; got shape"):
        module.notears_mlp_best(small.participants, B_true=np.zeros((d - 1, d - 1)))
    with pytest.raises(AssertionError, match="fitted before validating"):  # valid: fits
        module.notears_mlp_voting(small.participants, min_votes=2)
