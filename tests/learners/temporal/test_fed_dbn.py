"""FedDBN (Chen, Ma & Yue), DYNOTEARS and the DYNOTEARS baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

from dpbnsl import count_accuracy, is_dag
from dpbnsl.federation import run_rounds
from dpbnsl.learners.admm import PenaltySchedule
from dpbnsl.learners.temporal._fed_dbn_server import FedDBNServer, soft_threshold, solve_lag_step
from dpbnsl.learners.temporal._temporal import design_gram, stacked_loss
from dpbnsl.learners.temporal.dynotears import _smooth, _split_objective, dynotears, lag_frame
from dpbnsl.learners.temporal.dynotears_baselines import (
    dynotears_all,
    dynotears_average,
    dynotears_best,
    dynotears_local,
)
from dpbnsl.learners.temporal.fed_dbn import fed_dbn, local_step
from dpbnsl.learners.temporal.hosted_fed_dbn import DBNParticipant
from dpbnsl.metrics import lag_accuracy
from dpbnsl.simulation.temporal import simulate_temporal
from dpbnsl.timeseries import lagged_design


def _central_diff(f, X, eps=1e-6):
    G = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        E = np.zeros_like(X)
        E[idx] = eps
        G[idx] = (f(X + E) - f(X - E)) / (2 * eps)
    return G


STRONG = ((-0.8, -0.5), (0.5, 0.8))  # intra-slice weights well above the 0.3 threshold


@pytest.fixture(scope="module")
def easy():
    """d = 5, 3 participants × 300 rows, lag 1, strong W: every method should recover it."""
    return simulate_temporal(5, 900, participants=3, w_ranges=STRONG, rng=2)


@pytest.fixture(scope="module")
def fed_easy(easy):
    return fed_dbn(easy.series, lambda_w=0.05, lambda_a=0.05)


# --------------------------------------------------------------------------------------------------
# the pieces: closed forms and gradients
# --------------------------------------------------------------------------------------------------


def _random_problem(rng, n=7, d=4, lag=2):
    X = rng.standard_normal((n + lag, d))
    G, _ = design_gram([X], lag, centre=False)
    q = (lag + 1) * d
    return G, d, q


@pytest.mark.parametrize("n", [7, 60])  # n_k < (p+1)d (rank-deficient G) and n_k > (p+1)d
def test_local_step_zeroes_the_local_gradient(n):
    rng = np.random.default_rng(0)
    G, d, q = _random_problem(rng, n=n)
    duals, Theta = rng.standard_normal((q, d)), rng.standard_normal((q, d))
    rho2 = 0.7
    evals, U = np.linalg.eigh(G)
    Tk = local_step(U, evals, G[:, :d], duals, Theta, rho2)
    # ∇[ℓ_k(Θ_k) + ⟨duals, Θ_k − Θ⟩ + ρ₂/2‖Θ_k − Θ‖²] = GΘ_k − G[:, :d] + duals + ρ₂(Θ_k − Θ)
    grad = G @ Tk - G[:, :d] + duals + rho2 * (Tk - Theta)
    np.testing.assert_allclose(grad, 0.0, atol=1e-10)


def test_local_step_matches_the_paper_schur_complements():
    rng = np.random.default_rng(1)
    G, d, q = _random_problem(rng, n=30)
    beta, gamma = rng.standard_normal((d, d)), rng.standard_normal((q - d, d))
    W, A = rng.standard_normal((d, d)), rng.standard_normal((q - d, d))
    rho2 = 1.3
    S, M, N = G[:d, :d], G[:d, d:], G[d:, d:]
    P, Q = S + rho2 * np.eye(d), N + rho2 * np.eye(q - d)
    b1, b2 = S - beta + rho2 * W, M.T - gamma + rho2 * A
    B = np.linalg.solve(P - M @ np.linalg.solve(Q, M.T), b1 - M @ np.linalg.solve(Q, b2))
    D = np.linalg.solve(Q - M.T @ np.linalg.solve(P, M), b2 - M.T @ np.linalg.solve(P, b1))
    evals, U = np.linalg.eigh(G)
    Tk = local_step(U, evals, G[:, :d], np.vstack([beta, gamma]), np.vstack([W, A]), rho2)
    np.testing.assert_allclose(Tk, np.vstack([B, D]), atol=1e-10)


def test_lag_soft_threshold_equals_the_numerical_optimum():
    rng = np.random.default_rng(2)
    K, q, d = 4, 6, 3
    D, gammas = rng.standard_normal((K, q, d)), 0.5 * rng.standard_normal((K, q, d))
    lam, rho2 = 0.9, 0.8

    def objective(A):
        return lam * np.abs(A).sum() + np.sum(gammas * (D - A)) + 0.5 * rho2 * np.sum((D - A) ** 2)

    def split(x):  # the same problem on A = A⁺ − A⁻, both >= 0, solved numerically
        A = (x[: q * d] - x[q * d :]).reshape(q, d)
        g = (-gammas.sum(0) - rho2 * (D - A).sum(0)).ravel()
        return (
            lam * x.sum() + np.sum(gammas * (D - A)) + 0.5 * rho2 * np.sum((D - A) ** 2),
            np.concatenate([g + lam, -g + lam]),
        )

    sol = scipy.optimize.minimize(
        split,
        np.zeros(2 * q * d),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * (2 * q * d),
        options={"ftol": 1e-15, "gtol": 1e-12},
    )
    A_num = (sol.x[: q * d] - sol.x[q * d :]).reshape(q, d)
    A = solve_lag_step(D, gammas, lambda_a=lam, rho2=rho2)
    np.testing.assert_allclose(A, A_num, atol=1e-6)
    assert objective(A) <= objective(A_num) + 1e-12
    assert np.count_nonzero(A) < A.size  # the ℓ1 term is active somewhere
    np.testing.assert_array_equal(soft_threshold(np.array([-2.0, 0.5, 3.0]), 1.0), [-1.0, 0.0, 2.0])


def test_stacked_loss_is_the_least_squares_loss():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 3))
    X_t, Z = lagged_design(X, 2)
    G, n = design_gram([X], 2, centre=False)
    W, A = rng.standard_normal((3, 3)), rng.standard_normal((6, 3))
    direct = 0.5 / n * np.sum((X_t - X_t @ W - Z @ A) ** 2)
    f, g = stacked_loss(np.vstack([W, A]), G)
    assert f == pytest.approx(direct, rel=1e-12)
    np.testing.assert_allclose(
        g, _central_diff(lambda T: stacked_loss(T, G)[0], np.vstack([W, A])), rtol=1e-6, atol=1e-7
    )


def test_dynotears_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    G, d, q = _random_problem(rng, n=20, d=4, lag=2)
    Theta = 0.4 * rng.standard_normal((q, d))
    rho, alpha = 3.0, 0.7
    f, g = _smooth(Theta, G, rho, alpha)
    np.testing.assert_allclose(
        g, _central_diff(lambda T: _smooth(T, G, rho, alpha)[0], Theta), rtol=1e-5, atol=1e-6
    )
    lam = np.concatenate([np.full(d * d, 0.2), np.full((q - d) * d, 0.1)])
    x = 0.2 * np.abs(rng.standard_normal(2 * q * d))
    fx, gx = _split_objective(x, G, d, rho, alpha, lam)
    num = _central_diff(lambda y: _split_objective(y, G, d, rho, alpha, lam)[0], x)
    np.testing.assert_allclose(gx, num, rtol=1e-5, atol=1e-6)


def test_server_mirrors_the_participants_duals():
    data = simulate_temporal(4, 60, participants=3, lag=2, rng=5)
    schedule = PenaltySchedule(1.0, 1.0, 1.6, 1.1, 1e16)
    for rule in ("paper", "code"):
        grams = [design_gram(list(s), 2, centre=True)[0] for s in data.series]
        clients = [DBNParticipant(G, 4, schedule, rule) for G in grams]
        server = FedDBNServer(
            3, 4, 2, schedule, lambda_w=0.1, lambda_a=0.1, h_tol=0.0, gap_tol=0.0, dual_update=rule
        )
        run_rounds(clients, server, rounds=6)
        # the participants apply round 5's dual update at the start of round 6: do it by hand
        glob = server.Theta
        for c in clients:
            c.duals += schedule.rho(5)[1] * (c.Theta - (glob if rule == "paper" else c.used))
        np.testing.assert_allclose(server.duals, np.stack([c.duals for c in clients]), atol=1e-10)


# --------------------------------------------------------------------------------------------------
# end-to-end behaviour
# --------------------------------------------------------------------------------------------------


def test_fed_dbn_recovers_an_easy_dbn(easy, fed_easy):
    r = fed_easy
    assert r.info["converged"] and is_dag(r.W)
    assert count_accuracy(easy.B_true, r.W).shd <= 1
    assert lag_accuracy(easy.A_true, r.info["A"]).shd <= 1
    hist = r.history
    assert hist["h"].iloc[-1] <= 1e-8 and hist["gap"].iloc[-1] <= 1e-4
    assert np.all(np.diff(hist["rho2"]) > 0)
    assert hist["rho2"].iloc[1] == pytest.approx(1.1) and hist["rho1"].iloc[1] == pytest.approx(1.6)


def test_fed_dbn_transcript_records_every_message(easy, fed_easy):
    tr, T, K = fed_easy.transcript.learning(), len(fed_easy.history), 3
    assert len(tr) == 2 * K * T and tr.n_rounds == T
    setup = fed_easy.transcript.setup()  # each participant's design rows and d, then all row counts
    assert [m.kind for m in setup] == ["data_shape"] * K + ["n_samples"] * K
    assert fed_easy.transcript.n_samples() == fed_easy.info["n_samples"]
    ups = tr.filter(direction="up")
    assert {m.kind for m in ups} == {"local_B_D"} and ups[0].payload.shape == (10, 5)
    assert {m.kind for m in tr.filter(direction="down")} == {"global_W_A"}
    assert tr.total_bytes == 2 * K * T * 2 * 5 * 5 * 8
    last = tr.payloads(round=T - 1, direction="down")[0]
    np.testing.assert_array_equal(last[:5], fed_easy.W_raw)
    np.testing.assert_array_equal(last[5:], fed_easy.info["A_raw"])


def test_fed_dbn_one_participant_is_close_to_dynotears():
    # Same problem, different penalty schedules: on a well-identified DBN both reach the same
    # solution (on harder draws the two nonconvex runs can settle on different orientations).
    data = simulate_temporal(5, 1000, w_ranges=STRONG, rng=4)
    fed = fed_dbn(data.series, lambda_w=0.05, lambda_a=0.05)
    ref = dynotears(data.series[0], lambda_w=0.05, lambda_a=0.05)
    np.testing.assert_array_equal(fed.W != 0, ref.W != 0)
    np.testing.assert_array_equal(fed.info["A"] != 0, ref.info["A"] != 0)
    assert np.abs(fed.W_raw - ref.W_raw).max() < 0.05
    assert np.abs(fed.info["A_raw"] - ref.info["A_raw"]).max() < 0.05


def test_fed_dbn_options_change_the_run(easy, fed_easy):
    code = fed_dbn(easy.series, lambda_w=0.05, lambda_a=0.05, dual_update="code", stop_rule="h")
    assert code.params["dual_update"] == "code" and len(code.history) <= len(fed_easy.history)
    assert not np.array_equal(code.W_raw, fed_easy.W_raw)
    glob = fed_dbn(easy.series, lambda_w=0.05, lambda_a=0.05, normalize="global", max_rounds=3)
    loc = fed_dbn(easy.series, lambda_w=0.05, lambda_a=0.05, max_rounds=3)
    assert not np.array_equal(glob.W_raw, loc.W_raw)
    one = simulate_temporal(4, 100, rng=0).series
    np.testing.assert_array_equal(
        fed_dbn(one, normalize="global", max_rounds=5).W_raw,
        fed_dbn(one, normalize="local", max_rounds=5).W_raw,
    )


def test_fed_dbn_is_deterministic_and_leaves_inputs_untouched(easy):
    parts = [np.array(s[0]) for s in easy.series]
    copies = [p.copy() for p in parts]
    a = fed_dbn(parts, max_rounds=20)
    b = fed_dbn(parts, max_rounds=20)
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    np.testing.assert_array_equal(a.info["A_raw"], b.info["A_raw"])
    for p, c in zip(parts, copies):
        np.testing.assert_array_equal(p, c)
    assert not a.W.flags.writeable and not a.info["A"].flags.writeable


def test_fed_dbn_accepts_dataframes_and_realisations():
    data = simulate_temporal(3, 120, participants=2, lag=2, split="realisation", realisations=2, rng=4)
    names = ["a", "b", "c"]
    frames = [[pd.DataFrame(s, columns=names) for s in part] for part in data.series]
    r = fed_dbn(frames, lag=2, max_rounds=5)
    assert r.columns == tuple(names) and r.info["A"].shape == (6, 3)
    assert r.info["A_index"] == ("a(t-1)", "b(t-1)", "c(t-1)", "a(t-2)", "b(t-2)", "c(t-2)")
    assert r.info["n_samples"] == (60, 60)  # the first 2 rows of each realisation are lags only
    frame = lag_frame(r)
    assert list(frame.columns) == names and frame.index[3] == "a(t-2)"
    np.testing.assert_array_equal(lag_frame(r, raw=True).to_numpy(), r.info["A_raw"])
    with pytest.raises(ValueError, match=r"method 'notears' has no lag weights"):
        from dpbnsl.learners import notears

        lag_frame(notears(np.random.default_rng(0).normal(size=(20, 3))))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(rho1=0.0), ValueError, r"`rho1` must be > 0; got 0.0"),
        (dict(rho2=-1.0), ValueError, r"`rho2` must be > 0; got -1.0"),
        (dict(phi1=0.5), ValueError, r"`phi1` must be >= 1; got 0.5"),
        (dict(rho_max=np.nan), ValueError, r"`rho_max` must be finite"),
        (dict(lambda_w=-0.1), ValueError, r"`lambda_w` must be >= 0"),
        (dict(lag=0), ValueError, r"`lag` must be >= 1; got 0"),
        (dict(lag=40), ValueError, r"participant 0\) has 34 rows, too short for lag = 40"),
        (dict(normalize="total"), ValueError, r"`normalize` must be one of 'local', 'global'"),
        (dict(dual_update="new"), ValueError, r"`dual_update` must be one of 'paper', 'code'"),
        (dict(stop_rule="gap"), ValueError, r"`stop_rule` must be one of 'h_and_gap', 'h'"),
        (dict(max_rounds=0), ValueError, r"`max_rounds` must be >= 1"),
    ],
)
def test_fed_dbn_validation(kwargs, exc, match):
    data = simulate_temporal(3, 99, participants=3, rng=0)
    with pytest.raises(exc, match=match):
        fed_dbn(data.series, **kwargs)


def test_fed_dbn_input_validation():
    X = np.zeros((10, 3))
    with pytest.raises(TypeError, match=r"`participants` must be a sequence"):
        fed_dbn(X)
    with pytest.raises(ValueError, match=r"participant 1\) has 2 columns but participant 0 has 3"):
        fed_dbn([X, np.zeros((10, 2))])
    with pytest.raises(ValueError, match=r"participant 1\) has a non-finite value nan"):
        fed_dbn([X, np.full((10, 3), np.nan)])
    with pytest.raises(ValueError, match=r"realisation 1\) has 1 rows, too short for lag = 1"):
        fed_dbn([X, [X, X[:1]]])


# --------------------------------------------------------------------------------------------------
# DYNOTEARS and the baselines
# --------------------------------------------------------------------------------------------------


def test_dynotears_recovers_an_easy_dbn(easy):
    r = dynotears(list(easy.pooled), lambda_w=0.05, lambda_a=0.05)
    assert count_accuracy(easy.B_true, r.W).shd <= 1
    assert lag_accuracy(easy.A_true, r.info["A"]).shd <= 1
    assert r.history["h"].iloc[-1] <= 1e-8 and np.all(np.diag(r.W_raw) == 0)


def test_dynotears_validation():
    X = np.zeros((5, 2))
    with pytest.raises(
        ValueError,
        match=r"`series` has 5 rows, too short for lag = 5: a series "
        r"needs at least lag \+ 1 = 6 rows",
    ):
        dynotears(X, lag=5)
    with pytest.raises(ValueError, match=r"`threshold_a` must be >= 0"):
        dynotears(X, threshold_a=-1)
    with pytest.raises(TypeError, match=r"`lag` must be an integer"):
        dynotears(X, lag=1.5)


def test_baselines_combine_the_local_fits(easy):
    fits = dynotears_local(easy.series, lambda_w=0.05, lambda_a=0.05)
    assert len(fits) == 3
    ave = dynotears_average(local=fits)
    np.testing.assert_allclose(ave.W_raw, np.mean([r.W_raw for r in fits.results], axis=0))
    assert ave.params["average"] == "raw"
    thr = dynotears_average(local=fits, average="thresholded")
    np.testing.assert_allclose(thr.W_raw, np.mean([r.W for r in fits.results], axis=0))
    best = dynotears_best(local=fits, B_true=easy.B_true)
    shds = [count_accuracy(easy.B_true, r.W).shd for r in fits.results]
    assert best.info["oracle"] and best.info["chosen"] == int(np.argmin(shds))
    np.testing.assert_array_equal(best.W, fits.results[best.info["chosen"]].W)
    both = dynotears_best(local=fits, B_true=easy.B_true, A_true=easy.A_true, select="W+A")
    assert len(both.info["score_per_participant"]) == 3
    pooled = dynotears_all(easy.series, lambda_w=0.05, lambda_a=0.05, centre=False)
    ref = dynotears(list(easy.pooled), lambda_w=0.05, lambda_a=0.05, centre=False)
    np.testing.assert_array_equal(pooled.W_raw, ref.W_raw)
    with pytest.raises(ValueError, match=r"`local` fits were given"):
        dynotears_average(easy.series, local=fits)
    with pytest.raises(ValueError, match=r"`select` = 'W\+A' needs `A_true`"):
        dynotears_best(local=fits, B_true=easy.B_true, select="W+A")
    with pytest.raises(ValueError, match=r"`average` must be one of 'raw', 'thresholded'"):
        dynotears_average(local=fits, average="median")


def test_lag_accuracy_counts_without_reversals():
    truth = np.array([[1, 0], [0, 1], [1, 0], [0, 0]])  # lag 2, d = 2
    est = np.array([[0.5, 0], [0, 0], [0.4, 0.4], [0, 0]])
    acc = lag_accuracy(truth, est)
    assert (acc.true_positive, acc.extra, acc.missing, acc.shd) == (2, 1, 1, 2)
    assert acc.tpr == pytest.approx(2 / 3) and acc.fdr == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match=r"same shape"):
        lag_accuracy(truth, est[:2])


# --------------------------------------------------------------------------------------------------
# the shared learner contract (the configuration proposed for tests/contract/test_learners.py)
# --------------------------------------------------------------------------------------------------

FAST = dict(lag=1, max_iter=5)  # few dual updates keep the DYNOTEARS entries cheap
CONTRACT = {
    "fed-dbn": (lambda parts, truth: fed_dbn(parts, lag=1, max_rounds=30), True),
    "dynotears": (lambda parts, truth: dynotears(list(parts), **FAST), True),
    "dynotears-average": (lambda parts, truth: dynotears_average(parts, **FAST), False),
    "dynotears-best": (lambda parts, truth: dynotears_best(parts, B_true=truth, **FAST), True),
    "dynotears-all": (lambda parts, truth: dynotears_all(parts, **FAST), True),
}


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_learner_contract(name):
    from dpbnsl.simulation import simulate

    data = simulate(6, 300, participants=3, rng=7)
    names = [f"v{i}" for i in range(6)]
    frames = [pd.DataFrame(X, columns=names) for X in data.participants]
    originals = [f.copy() for f in frames]
    fit, promises_dag = CONTRACT[name]
    first, second = fit(frames, data.B_true), fit(frames, data.B_true)
    assert first.W.shape == first.W_raw.shape == (6, 6) and np.all(np.diag(first.W) == 0)
    assert not first.W.flags.writeable and first.info["A"].shape == (6, 6)
    assert not promises_dag or is_dag(first.W)
    np.testing.assert_array_equal(first.W_raw, second.W_raw)
    np.testing.assert_array_equal(first.info["A_raw"], second.info["A_raw"])
    for f, g in zip(frames, originals):
        pd.testing.assert_frame_equal(f, g)
    assert first.columns == tuple(names) and list(first.to_frame().columns) == names
    assert np.all((first.W == 0) | (np.abs(first.W) > 0.3))
