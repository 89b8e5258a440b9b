"""Invariants of NOTEARS-MLP, NOTEARS-MLP-ADMM and MLP-Voting that the recovery tests cannot see.

Each test pins one piece of bookkeeping against a value recomputed here: the duals β_k on both
sides of the ADMM, the server's θ-step against a brute-force minimisation, the ℓ1 term, the
augmented-Lagrangian schedule of NOTEARS-MLP, Voting's majority rule, and the participants'
uploads (normalisation, centring) against their local objective.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.linalg
import scipy.optimize

from dpbnsl.federation import Dense, run_rounds
from dpbnsl.learners import LearnResult
from dpbnsl.learners.admm import PenaltySchedule
from dpbnsl.learners.combiners import LocalFits, notears_voting
from dpbnsl.learners.nonlinear._fed_bnsl_mlp_server import MLPParticipant, MLPServer, server_objective
from dpbnsl.learners.nonlinear._mlp import MLPLayout, acyclicity, init_params, squared_loss
from dpbnsl.learners.nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
from dpbnsl.learners.nonlinear.notears_mlp import (
    al_objective,
    notears_mlp,
    notears_mlp_best,
    notears_mlp_voting,
)
from dpbnsl.simulation.nonlinear import simulate_nonlinear

LAYOUT = MLPLayout(3, 2)
FAST = {"ftol": 1e-6}  # looser L-BFGS-B tolerance than scipy's default 2.2e-9: ~5x faster fits
# Near machine precision, so that a solution can be compared with a stationarity condition or with
# another solver's answer (still well under a second at d = 3).
TIGHT = {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000}


def _free(layout):
    """True on every coordinate of θ except the self-loop weights (fixed at 0 by every solver)."""
    return np.r_[~layout.self_loops, np.ones(layout.n_params - layout.n_w1, bool)]


# --------------------------------------------------------------- ADMM: duals on both sides


def test_admm_duals_agree_on_both_sides_and_alpha_accumulates_rho1_h():
    """β never travels: after T rounds each participant's β_k and the server's copy both equal
    Σ_t ρ₂(t)(θ_k^t − θ^t) recomputed from the transcript, with the penalty of the round the
    difference belongs to (ρ₂(t) = 0.1·1.25^t); α after round t is Σ_{s≤t} ρ₁(s)·h(θ^s)."""
    sim = simulate_nonlinear(3, 60, participants=3, rng=1)
    theta0 = init_params(LAYOUT, np.random.default_rng(0))
    sched = PenaltySchedule(0.1, 0.1, 1.75, 1.25, 1e16)
    clients = [
        MLPParticipant(X, LAYOUT, sched, n_total=60, theta0=theta0, solver_options=FAST)
        for X in sim.participants
    ]
    srv = MLPServer(
        3,
        LAYOUT,
        sched,
        theta0=theta0,
        lambda1=0.01,
        lambda2=0.01,
        threshold=0.3,
        solver_options=FAST,
        stop=lambda *a: False,
    )
    T, tr = run_rounds(clients, srv, rounds=4)
    assert T == 4
    rho1 = 0.1 * 1.75 ** np.arange(T)
    rho2 = 0.1 * 1.25 ** np.arange(T)
    # Tolerances: the same sums as the code's, up to the last-bit rounding of ρ = 0.1·γ^t (the
    # schedule multiplies repeatedly); the β_k are O(0.1), so 1e-15 absolute is a few ulps.
    tight = dict(rtol=1e-12, atol=1e-15)
    for k, c in enumerate(clients):
        ups = tr.payloads(participant=k, direction="up")
        downs = tr.payloads(participant=k, direction="down")
        diffs = ups - downs  # θ_k^t − θ^t, round t in row t
        assert np.abs(diffs).max() > 1e-3  # the gaps are not zero, so a wrong ρ would show
        np.testing.assert_array_equal(ups[-1], c.theta)
        np.testing.assert_allclose(srv.betas[k], rho2 @ diffs, **tight)
        # the participant has applied the updates of rounds 0 … T−2 (the last one comes next round)
        np.testing.assert_allclose(c.beta, rho2[:-1] @ diffs[:-1], **tight)
        np.testing.assert_allclose(c.beta + rho2[-1] * (c.theta - srv.theta), srv.betas[k], **tight)
    rows = pd.DataFrame(srv.rows)
    h = np.array([acyclicity(theta, LAYOUT)[0] for theta in tr.payloads(participant=0, direction="down")])
    np.testing.assert_array_equal(rows["h"], h)
    assert np.all(h > 1e-3)  # α grows visibly every round
    np.testing.assert_allclose(rows["rho1"], rho1, rtol=1e-12)
    np.testing.assert_allclose(rows["rho2"], rho2, rtol=1e-12)
    np.testing.assert_allclose(rows["alpha"], np.cumsum(rho1 * h), rtol=1e-12)
    assert srv.alpha == rows["alpha"].iloc[-1]


# ------------------------------------------------------------------ ADMM: the server's θ-step


def _server_problem(seed=3, P=3):
    """A server state with non-zero duals and α, and P uploads scattered around θ⁰."""
    rng = np.random.default_rng(seed)
    free = _free(LAYOUT)
    theta0 = init_params(LAYOUT, rng)
    uploads = np.where(free, theta0 + 0.3 * rng.standard_normal((P, LAYOUT.n_params)), 0.0)
    betas = np.where(free, 0.3 * rng.standard_normal((P, LAYOUT.n_params)), 0.0)
    return theta0, uploads, betas


def test_server_step_minimises_the_full_server_objective():
    """One MLPServer call returns the minimiser of the complete server objective over all of θ,

        λ1‖W1‖₁ + λ2/2 ‖(W1, W2)‖² + αh + ρ₁/2 h² + Σ_k ⟨β_k, θ_k − θ⟩ + ρ₂/2 Σ_k ‖θ_k − θ‖²

    (ℓ2 on the weights W1, W2 only, not on the biases), written out here and minimised by plain
    L-BFGS-B on the split of W1 from the mean upload; then β_k += ρ₂(θ_k − θ) and α += ρ₁h(θ) with
    the penalties of the round."""
    d, m, a, n = LAYOUT.d, LAYOUT.hidden, LAYOUT.n_w1, LAYOUT.n_params
    theta0, Th, betas0 = _server_problem()
    P, t, lam1, lam2, alpha0 = len(Th), 2, 0.05, 0.2, 0.8
    rho1, rho2 = 0.7 * 1.75**t, 0.9 * 1.25**t
    srv = MLPServer(
        P,
        LAYOUT,
        PenaltySchedule(0.7, 0.9, 1.75, 1.25),
        theta0=theta0,
        lambda1=lam1,
        lambda2=lam2,
        threshold=0.3,
        solver_options=TIGHT,
        stop=lambda *a: False,
    )
    srv.alpha, srv.betas = alpha0, betas0.copy()
    srv(t, [Dense(x) for x in Th])
    got = srv.theta.copy()

    weights = np.zeros(n, bool)  # W1 and W2; not b1, b2
    weights[:a] = True
    weights[a + d * m : a + 2 * d * m] = True

    def smooth(theta):  # everything but the ℓ1 term, and its gradient
        W1 = theta[:a].reshape(d, m, d)
        E = scipy.linalg.expm(np.einsum("jmi,jmi->ij", W1, W1))
        h = np.trace(E) - d
        D = Th - theta
        f = (
            0.5 * lam2 * np.sum(theta[weights] ** 2)
            + alpha0 * h
            + 0.5 * rho1 * h * h
            + np.sum(betas0 * D)
            + 0.5 * rho2 * np.sum(D * D)
        )
        g = lam2 * np.where(weights, theta, 0.0) - betas0.sum(axis=0) - rho2 * D.sum(axis=0)
        g[:a] += (alpha0 + rho1 * h) * (2 * W1 * E[:, None, :]).ravel()  # ∂A[i,j]/∂W1[j,m,i]
        return f, g

    def split(x):  # x = [W1⁺, W1⁻, rest]
        f, g = smooth(np.r_[x[:a] - x[a : 2 * a], x[2 * a :]])
        return f + lam1 * x[: 2 * a].sum(), np.r_[g[:a] + lam1, -g[:a] + lam1, g[a:]]

    def full(theta):
        return smooth(theta)[0] + lam1 * np.abs(theta[:a]).sum()

    w1_upper = np.where(LAYOUT.self_loops, 0.0, np.inf)
    bounds = scipy.optimize.Bounds(
        np.r_[np.zeros(2 * a), np.full(n - a, -np.inf)], np.r_[w1_upper, w1_upper, np.full(n - a, np.inf)]
    )
    mean = Th.mean(axis=0)
    x0 = np.r_[np.maximum(mean[:a], 0), np.maximum(-mean[:a], 0), mean[a:]]
    sol = scipy.optimize.minimize(split, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=TIGHT)
    brute = np.r_[sol.x[:a] - sol.x[a : 2 * a], sol.x[2 * a :]]
    assert (got[:a] < -0.05).any()  # negative weights: a signed ℓ1 would pick another point
    # Both solvers stop at ftol = 1e-15 from different starts; measured max |Δθ| = 2.4e-9. Wrong
    # server steps (λ2 on the biases, a sign error in the closed form, a signed ℓ1) move θ > 1e-2.
    np.testing.assert_allclose(got, brute, rtol=0, atol=1e-6)
    assert full(got) <= full(brute) + 1e-10  # ditto, for the objective (≈ 3.9)
    np.testing.assert_allclose(srv.betas, betas0 + rho2 * (Th - got), rtol=1e-12, atol=1e-15)
    assert srv.alpha == pytest.approx(alpha0 + rho1 * acyclicity(got, LAYOUT)[0], rel=1e-12)


def test_l1_term_is_the_absolute_sum_of_W1():
    """At a θ with negative first-layer weights, switching λ1 on adds exactly λ1Σ|W1| to the
    server's W1 objective and to NOTEARS-MLP's subproblem, and λ1 to the gradient in both halves
    of the split (``∂/∂W1⁺ = ∂/∂W1⁻ = λ1``), nothing elsewhere."""
    rng = np.random.default_rng(4)
    theta = init_params(LAYOUT, rng)
    a, lam1 = LAYOUT.n_w1, 0.3
    W1 = theta[:a]
    assert (W1 < -0.1).any() and (W1 > 0.1).any()
    l1 = lam1 * np.abs(W1).sum()
    x = LAYOUT.to_split(theta)
    X = rng.standard_normal((20, LAYOUT.d))
    kw = dict(rho=3.0, alpha=0.7, lambda2=0.2)
    f1, g1 = al_objective(x, X, LAYOUT, lambda1=lam1, **kw)
    f0, g0 = al_objective(x, X, LAYOUT, lambda1=0.0, **kw)
    # rel 1e-12: the two values differ only by the ℓ1 term (floating-point rounding of the sum)
    assert f1 - f0 == pytest.approx(l1, rel=1e-12)
    np.testing.assert_allclose(
        g1 - g0, np.r_[np.full(2 * a, lam1), np.zeros(x.size - 2 * a)], rtol=0, atol=1e-12
    )
    skw = dict(
        w_mean=rng.standard_normal(a),
        beta_sum=rng.standard_normal(a),
        P=3,
        alpha=0.4,
        rho1=2.0,
        rho2=0.7,
        lambda2=0.2,
    )
    xs = x[: 2 * a]
    f1, g1 = server_objective(xs, LAYOUT, lambda1=lam1, **skw)
    f0, g0 = server_objective(xs, LAYOUT, lambda1=0.0, **skw)
    assert f1 - f0 == pytest.approx(l1, rel=1e-12)
    np.testing.assert_allclose(g1 - g0, np.full(2 * a, lam1), rtol=0, atol=1e-12)


# ------------------------------------------------------------- NOTEARS-MLP: the schedule


def test_notears_mlp_augmented_lagrangian_schedule():
    """The history follows the reference schedule: ρ starts at 1 and only ever grows ×10 (so every
    ρ is a power of ten and never decreases); each row's h is at most a quarter of the previous
    one; α is Σ ρ·h over the rows; the run stops at the first row with h ≤ h_tol."""
    sim = simulate_nonlinear(3, 100, rng=0)
    r = notears_mlp(sim.X, hidden=4, solver_options=FAST, rng=0)
    hist = r.history
    rho, h, alpha = (hist[c].to_numpy() for c in ("rho", "h", "alpha"))
    assert len(hist) >= 4 and list(hist["iteration"]) == list(range(len(hist)))
    assert rho[0] == 1.0 and rho[-1] < 1e16  # the first subproblem always shrinks h = ∞
    # 10^k for k ≤ 22 is exact in float64, as is 1·10·10·…: exact equality is safe
    np.testing.assert_array_equal(rho, 10.0 ** np.round(np.log10(rho)))
    assert np.all(np.diff(rho) >= 0) and rho[-1] > rho[0]
    assert np.all(h[1:] <= 0.25 * h[:-1])
    # rel 1e-12: the same running sum, floating-point rounding only
    np.testing.assert_allclose(alpha, np.cumsum(rho * h), rtol=1e-12)
    assert np.all(h[:-1] > 1e-8) and h[-1] <= 1e-8
    assert hist["loss"].iloc[-1] == squared_loss(r.info["theta"], sim.X, MLPLayout(3, 4))[0]


# ----------------------------------------------------------------- Voting and Best (fake fits)


def _fake_fits(Ws):
    fits = tuple(LearnResult("notears-mlp", W, W, pd.DataFrame(), params={"hidden": 10}) for W in Ws)
    return LocalFits(fits, None, 0.0)


def test_voting_needs_more_than_half_of_the_votes_at_even_P():
    """P = 4: an edge with 3 votes is kept, one with exactly 2 (half, not more) is dropped unless
    ``min_votes=2``; the kept weight is the mean over the voters (linear and MLP wrappers)."""
    Ws = np.zeros((4, 3, 3))
    Ws[[0, 1, 2], 0, 1] = [0.5, 0.7, 0.9]  # 3 votes
    Ws[[0, 3], 1, 2] = [-0.6, -1.0]  # exactly 2 votes
    Ws[:, 0, 2] = 0.4  # 4 votes
    Ws[1, 2, 0] = 2.0  # 1 vote
    fits = _fake_fits(Ws)
    for vote in (notears_mlp_voting(local=fits), notears_voting(local=fits)):
        np.testing.assert_array_equal(vote.info["votes"], (Ws != 0).sum(axis=0))
        assert vote.params["min_votes"] == 3
        expected = np.zeros((3, 3))
        expected[0, 1], expected[0, 2] = 0.7, 0.4
        np.testing.assert_allclose(vote.W, expected, rtol=1e-15)  # a mean of 3 floats
    two = notears_mlp_voting(local=fits, min_votes=2)
    assert two.W[1, 2] == pytest.approx(-0.8, rel=1e-15) and two.W[2, 0] == 0


def test_best_picks_the_lowest_shd_and_the_lowest_index_on_ties():
    """Best returns the local graph with the lowest SHD against the truth (ties: lowest index)."""
    truth = np.zeros((3, 3))
    truth[0, 1] = truth[1, 2] = 1
    Ws = np.zeros((4, 3, 3))
    Ws[0, 1, 0] = Ws[0, 2, 0] = 0.5  # SHD 3: a reversal, a missing, an extra edge
    Ws[1, 0, 1] = 0.5  # SHD 1 (missing 1 → 2)
    Ws[2, 1, 2] = 0.5  # SHD 1 (missing 0 → 1): tie, higher index
    Ws[3, 2, 1] = Ws[3, 2, 0] = Ws[3, 1, 0] = 0.5  # SHD 3
    best = notears_mlp_best(local=_fake_fits(Ws), B_true=truth)
    assert best.info["shd_per_participant"] == (3, 1, 1, 3)
    assert best.info["chosen"] == 1 and best.info["oracle"]
    np.testing.assert_array_equal(best.W, Ws[1])


# ----------------------------------------------- ADMM: the uploads solve the local problem


@pytest.fixture(scope="module")
def shifted():
    """Three nodes, uneven shards (30 and 60 rows), column means far from zero."""
    X = simulate_nonlinear(3, 90, rng=4).X + np.array([2.0, -1.0, 3.0])
    return [X[:30], X[30:]]


def _admm(parts, rounds, **kwargs):
    return fed_bnsl_mlp(parts, hidden=3, max_rounds=rounds, solver_options=TIGHT, rng=5, **kwargs)


def _local_data(parts, normalize, centre):
    n_total = sum(X.shape[0] for X in parts)
    return [
        (X - X.mean(axis=0) if centre else X, X.shape[0] if normalize == "local" else n_total) for X in parts
    ]


@pytest.mark.parametrize(("normalize", "centre"), [("global", False), ("local", True)])
def test_admm_uploads_are_stationary_points_of_the_local_objective(shifted, normalize, centre):
    """Every upload θ_k^t is a stationary point of participant k's objective

        1/(2n) ‖X_k − f_θ(X_k)‖² + ⟨β_k, θ − θ^{t−1}⟩ + ρ₂(t)/2 ‖θ − θ^{t−1}‖²

    (n = n_k under ``normalize="local"``, else the total; X_k centred on its own means under
    ``centre=True``), with β_k = Σ_{s<t} ρ₂(s)(θ_k^s − θ^s) rebuilt from the transcript and θ^{−1}
    = θ⁰; self-loop weights are exactly 0; history's local_loss is Σ_k of those losses."""
    T = 4
    r = _admm(shifted, T, normalize=normalize, centre=centre)
    assert len(r.history) == T
    layout, free = MLPLayout(3, 3), _free(MLPLayout(3, 3))
    theta0 = init_params(layout, np.random.default_rng(5))
    rho2 = 0.1 * 1.25 ** np.arange(T)
    losses = np.zeros(T)
    for k, (X, n) in enumerate(_local_data(shifted, normalize, centre)):
        ups = r.transcript.learning().payloads(participant=k, direction="up")
        downs = r.transcript.learning().payloads(participant=k, direction="down")
        beta = np.zeros(layout.n_params)
        for t in range(T):
            glob = theta0 if t == 0 else downs[t - 1]
            if t > 0:
                beta += rho2[t - 1] * (ups[t - 1] - downs[t - 1])
            loss, g = squared_loss(ups[t], X, layout, n=n)
            grad = g + beta + rho2[t] * (ups[t] - glob)
            # L-BFGS-B stops at gtol = 1e-10 / ftol = 1e-15: measured max |∇| ≤ 2.4e-7. A wrong β,
            # normaliser or centring, or uploading θ_k + β_k, leaves |∇| ≥ 1e-2 (measured).
            np.testing.assert_allclose(grad[free], 0.0, atol=1e-5)
            assert not ups[t][~free].any()
            losses[t] += loss
    # rel 1e-12: the same sum of the same losses, floating-point rounding only
    np.testing.assert_allclose(r.history["local_loss"], losses, rtol=1e-12)


def test_admm_normalize_and_center_change_the_local_problem(shifted):
    """``normalize="local"`` and ``centre=True`` each change what the participants solve: the
    round-0 uploads and the recorded local loss differ from the defaults' (uneven shards, means
    far from zero)."""
    base = _admm(shifted, 1)
    for kwargs in (dict(normalize="local"), dict(centre=True)):
        other = _admm(shifted, 1, **kwargs)
        up_base, up_other = (r.transcript.learning().payloads(direction="up") for r in (base, other))
        assert np.abs(up_base - up_other).max() > 1e-2
        assert abs(base.history["local_loss"][0] - other.history["local_loss"][0]) > 1e-2


@pytest.mark.parametrize(("normalize", "centre"), [("global", False), ("local", True)])
def test_admm_round0_uploads_equal_a_recomputed_local_step(shifted, normalize, centre):
    """Round 0 (β = 0, θ_k and θ both at θ⁰ = init_params(rng)): each upload is what L-BFGS-B
    finds for 1/(2n)‖X_k − f_θ(X_k)‖² + ρ₂/2 ‖θ − θ⁰‖² from θ⁰ over the free coordinates, with
    the objective written out here."""
    r = _admm(shifted, 1, normalize=normalize, centre=centre)
    layout = MLPLayout(3, 3)
    free = _free(layout)
    theta0 = init_params(layout, np.random.default_rng(5))
    for k, (X, n) in enumerate(_local_data(shifted, normalize, centre)):

        def fun(z):
            theta = np.zeros(layout.n_params)
            theta[free] = z
            W1, b1, W2, b2 = layout.unpack(theta)
            pred = np.column_stack(
                [(1 / (1 + np.exp(-(X @ W1[j].T + b1[j])))) @ W2[j] + b2[j] for j in range(layout.d)]
            )
            g = squared_loss(theta, X, layout, n=n)[1]  # its gradient is checked elsewhere
            D = theta - theta0
            return (0.5 / n * np.sum((X - pred) ** 2) + 0.05 * D @ D), (g + 0.1 * D)[free]

        sol = scipy.optimize.minimize(fun, theta0[free], jac=True, method="L-BFGS-B", options=TIGHT)
        up = r.transcript.filter(round=0, participant=k, direction="up")[0].to_dense()
        # Both runs stop at ftol = 1e-15 from the same start; measured max |Δθ| ≤ 4e-8.
        np.testing.assert_allclose(up[free], sol.x, rtol=0, atol=1e-6)
        assert not up[~free].any()
