"""The one-run test of a claimed Gaussian curve (dpbnsl.audits.gdp_one_run)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from dpbnsl.accounting.gaussian import gaussian_epsilon
from dpbnsl.audits import one_run_bound, one_run_gdp_bound
from dpbnsl.audits.gdp_one_run import gdp_one_run_rejects


def top_guesses(scores: np.ndarray, k: int) -> np.ndarray:
    g = np.zeros(scores.size, dtype=int)
    g[np.argsort(scores, kind="stable")[scores.size - k :]] = 1
    return g


def gdp_canaries(mu: float, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """m canaries of an exactly μ-GDP mechanism: the score is μ·1{in} + N(0, 1)."""
    truths = np.where(rng.random(m) < 0.5, 1, -1)
    return truths, mu * (truths > 0) + rng.standard_normal(m)


def least_mass(mu: float, m: int, r: int, v: int, alpha: float, one_sided: bool) -> float | None:
    """An independent oracle: the least total probability Σ q_w of a distribution of the number W
    of right guesses with P[W ≥ v] ≥ α that meets every constraint g(R_j) ≤ H_{j−1}, j = 1..r, of
    the module docstring, solved as a convex program (g convex and increasing, R and H linear in
    q) by SLSQP over q_0..q_r ≥ 0. The recursion rejects μ exactly when this exceeds 1."""
    w = np.arange(r + 1)

    def g(x):
        y = 2 * x if one_sided else x
        y = min(max(y, 1e-300), 1 - 1e-15)
        inv = special.ndtr(special.ndtri(y) - mu)
        return 0.5 * inv if one_sided else inv

    cons = [{"type": "ineq", "fun": lambda q: q[w >= v].sum() - alpha}]
    for j in range(1, r + 1):
        cons.append(
            {
                "type": "ineq",
                "fun": lambda q, j=j: ((r - w) * q)[w >= j - 1].sum() / m - g((w * q)[w >= j].sum() / m),
            }
        )
    q0 = np.full(r + 1, 1.0 / (r + 1))
    res = optimize.minimize(
        lambda q: q.sum(),
        q0,
        constraints=cons,
        bounds=[(0, 1)] * (r + 1),
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    worst = min(c["fun"](res.x) for c in cons)
    if not res.success and worst < -1e-9:  # no certified optimum: the caller skips this μ
        return None
    return float(res.x.sum())


@pytest.mark.parametrize("one_sided", [True, False])
@pytest.mark.parametrize("m, r, v", [(20, 6, 6), (50, 8, 7), (30, 5, 4)])
def test_the_recursion_matches_a_convex_program(one_sided, m, r, v):
    """The recursion's verdict agrees with the least feasible mass of the oracle, away from the
    boundary (where the optimiser's 1e-6 tolerance could flip it)."""
    checked = 0
    for mu in np.linspace(0.05, 4.0, 25):
        mass = least_mass(mu, m, r, v, 0.05, one_sided)
        if mass is None or abs(mass - 1.0) < 1e-3:
            continue
        assert gdp_one_run_rejects(mu, m, r, v, 0.05, one_sided=one_sided) == (mass > 1.0), (mu, mass)
        checked += 1
    assert checked >= 15


def test_a_true_gaussian_claim_is_rarely_rejected():
    """Soundness: 400 one-run audits of an exactly μ-GDP mechanism (μ = 1, m = 1,000 canaries, the
    top 20 guessed). Each rejects the true μ with probability ≤ α = 0.05, so the count of bounds
    above μ is at most Binomial(400, 0.05), whose 1 − 10⁻⁶ quantile is 42. Measured: 0."""
    rng = np.random.default_rng(11)
    above = 0
    for _ in range(400):
        truths, scores = gdp_canaries(1.0, 1000, rng)
        above += one_run_gdp_bound(top_guesses(scores, 20), truths, one_sided=True).mu_lb > 1.0
    assert above <= 42


def test_a_violation_is_caught_and_the_bound_beats_the_eps_delta_test():
    """Canaries of 2-GDP against the claim of 1-GDP: 10,000 canaries, the top 2 % guessed. The
    Gaussian-curve bound passes μ = 1 (measured 1.6 on this seed), and is higher than the (ε, δ)
    test's ε on the same guesses (δ = 10⁻⁵, whose 2mδ term is 0.2 here)."""
    truths, scores = gdp_canaries(2.0, 10_000, np.random.default_rng(3))
    g = top_guesses(scores, 200)
    b = one_run_gdp_bound(g, truths, delta=1e-5, one_sided=True)
    assert 1.0 < b.mu_lb < 2.0 and b.one_sided and b.violates(gaussian_epsilon(1.0, 1e-5))
    assert b.epsilon_lb == pytest.approx(gaussian_epsilon(b.mu_lb, 1e-5))
    assert b.epsilon_lb > one_run_bound(g, truths, delta=1e-5).epsilon_lb


def test_the_one_sided_constraint_is_never_weaker_and_out_guesses_are_symmetric():
    truths, scores = gdp_canaries(1.0, 5000, np.random.default_rng(5))
    g = top_guesses(scores, 100)
    sharp = one_run_gdp_bound(g, truths, one_sided=True)
    general = one_run_gdp_bound(g, truths)  # the default: the paper's constraint
    assert sharp.mu_lb >= general.mu_lb > 0
    mirrored = one_run_gdp_bound(-g, -truths, one_sided=True)  # "out" guesses on the complementary coins
    assert mirrored.mu_lb == sharp.mu_lb and mirrored.one_sided


def test_uninformative_guesses_give_zero():
    rng = np.random.default_rng(2)
    for _ in range(5):
        truths = rng.choice([-1, 1], 5000)
        b = one_run_gdp_bound(top_guesses(rng.standard_normal(5000), 100), truths)
        assert b.mu_lb == 0.0 and b.epsilon_lb == 0.0
    assert one_run_gdp_bound(np.zeros(10, dtype=int), np.ones(10, dtype=int)).mu_lb == 0.0


def test_every_guess_right_is_bounded_by_the_guess_count():
    """All r guesses right: μ_lb grows with r but stays finite (the search caps at 40)."""
    bounds = [
        one_run_gdp_bound(np.r_[np.ones(r, int), np.zeros(1000 - r, int)], np.ones(1000, int)).mu_lb
        for r in (5, 20, 80)
    ]
    assert 0 < bounds[0] < bounds[1] < bounds[2] < 40


@pytest.mark.parametrize(
    "kwargs, err",
    [
        (dict(guesses=[], truths=[]), "non-empty"),
        (dict(guesses=[1, 0], truths=[1]), "shape"),
        (dict(guesses=[2, 0], truths=[1, 1]), "guesses"),
        (dict(guesses=[1, 0], truths=[0, 1]), "truths"),
        (dict(guesses=[1, -1], truths=[1, 1], one_sided=True), "same sign"),
        (dict(guesses=[1, 0], truths=[1, 1], alpha=1.0), "alpha"),
        (dict(guesses=[1, 0], truths=[1, 1], delta=0.0), "delta"),
    ],
)
def test_bad_input_is_refused(kwargs, err):
    with pytest.raises(ValueError, match=err):
        one_run_gdp_bound(**kwargs)
    with pytest.raises(TypeError, match="one_sided"):
        one_run_gdp_bound([1], [1], one_sided=None)
    assert math.isfinite(one_run_gdp_bound([1, -1], [1, -1]).mu_lb)
