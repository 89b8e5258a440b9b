"""Tests for dpbnsl.attacks.inference: hand-computed AUC/TPR cases and brute-force oracles, exact
record reconstruction, membership power and its null, attribute inference vs OLS, validation.

Population: linear-Gaussian SEM ``X = X W + N``, N ~ N(0, I), so Σ_pop = (I − W)⁻ᵀ(I − W)⁻¹.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from dpbnsl.attacks.inference import (
    attribute_inference,
    membership_inference,
    reconstruct_record,
    roc_auc,
    tpr_at_fpr,
)
from dpbnsl.simulation import simulate_dag, simulate_linear_sem, simulate_weights

SCORES = ("lr", "quadratic", "residual")


def population(seed, d=20):
    """(W, Σ_pop) of a random ER SEM with d edges."""
    rng = np.random.default_rng(seed)
    W = simulate_weights(simulate_dag(d, s0=d, rng=rng), rng=rng)
    A = np.linalg.inv(np.eye(d) - W)
    return W, A.T @ A


def second_moment(X, n=None):
    return X.T @ X / (X.shape[0] if n is None else n)


# ---------------------------------------------------------------- roc_auc / tpr_at_fpr


def brute_auc(s, y):
    s, y = np.asarray(s, float), np.asarray(y, bool)
    pairs = [(a > b) + 0.5 * (a == b) for a in s[y] for b in s[~y]]
    return sum(pairs) / len(pairs)


def brute_tpr(s, y, fpr):
    """Largest TPR over all strict thresholds ``score > τ`` with empirical FPR ≤ fpr."""
    s, y = np.asarray(s, float), np.asarray(y, bool)
    best = 0.0
    for tau in np.r_[-np.inf, s]:
        if np.mean(s[~y] > tau) <= fpr:
            best = max(best, float(np.mean(s[y] > tau)))
    return best


def test_roc_auc_hand_computed():
    assert roc_auc([1, 2, 3, 4], [0, 0, 1, 1]) == 1.0
    assert roc_auc([4, 3, 2, 1], [False, False, True, True]) == 0.0
    # pairs (member, non-member): (0.4, 0.1)=1, (0.4, 0.4)=½, (0.9, 0.1)=1, (0.9, 0.4)=1 → 3.5/4
    assert roc_auc([0.1, 0.4, 0.4, 0.9], [False, False, True, True]) == 0.875
    assert roc_auc([5, 5, 5], [True, False, False]) == 0.5
    # 1 member at 2 vs non-members 1, 2, 3: (1 + ½ + 0) / 3
    assert roc_auc([2, 1, 2, 3], [1, 0, 0, 0]) == pytest.approx(0.5)


def test_roc_auc_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.integers(0, 5, size=30)  # many ties
        y = rng.random(30) < 0.4
        y[:2] = [True, False]
        assert roc_auc(s, y) == pytest.approx(brute_auc(s, y), abs=1e-12)


def test_tpr_at_fpr_constructed():
    neg = np.arange(1.0, 101.0)  # non-members 1, ..., 100
    pos = np.array([95.5, 98.5, 99.5, 100.5])
    s, y = np.r_[neg, pos], np.r_[np.zeros(100, bool), np.ones(4, bool)]
    # ⌊fpr·100⌋ non-members may exceed τ: τ = 100 − that count
    assert tpr_at_fpr(s, y, 0.005) == 0.25  # τ = 100 (FPR 0)
    assert tpr_at_fpr(s, y, 0.01) == 0.5  # τ = 99
    assert tpr_at_fpr(s, y, 0.02) == 0.75  # τ = 98
    assert tpr_at_fpr(s, y, 0.05) == 1.0  # τ = 95
    # 0.29 * 100 = 28.999… in floating point: still 29 allowed, τ = 71; a tie at τ is not flagged
    assert tpr_at_fpr(np.r_[neg, 71.0, 71.5], np.r_[np.zeros(100, bool), True, True], 0.29) == 0.5
    assert tpr_at_fpr([0, 0, 0, 0, 1], [0, 0, 0, 1, 1], 0.5) == 0.5  # ties at τ = 0


def test_tpr_at_fpr_is_best_threshold():
    rng = np.random.default_rng(1)
    for trial in range(30):
        s = rng.integers(0, 8, size=40) if trial % 2 else rng.normal(size=40)
        y = rng.random(40) < 0.5
        y[:2] = [True, False]
        for fpr in (0.01, 0.1, 0.25, 0.5, 0.9):
            assert tpr_at_fpr(s, y, fpr) == brute_tpr(s, y, fpr)


# ---------------------------------------------------------------- record reconstruction


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_k", [5, 30])
def test_reconstruct_record_exact(seed, n_k):
    W, _ = population(seed, d=10)
    X = simulate_linear_sem(W, n_k, rng=seed)
    i = seed % n_k
    known, x = np.delete(X, i, axis=0), X[i]
    res = reconstruct_record(second_moment(X), known, n_samples=n_k, true_record=x)
    assert res.error < 1e-8
    assert res.rank_one and res.rank_one_error < 1e-8
    assert res.eigenvalue == pytest.approx(x @ x, rel=1e-8)
    assert res.record[np.argmax(np.abs(res.record))] > 0  # canonical sign
    assert np.allclose(res.record, x, atol=1e-8 * np.linalg.norm(x)) or np.allclose(
        res.record, -x, atol=1e-8 * np.linalg.norm(x)
    )


def test_reconstruct_record_global_normalisation_and_centred_rows():
    W, _ = population(7, d=8)
    X = simulate_linear_sem(W, 12, rng=7)
    res = reconstruct_record(second_moment(X, 100), X[1:], n_samples=100, true_record=X[0])
    assert res.error < 1e-8
    Xc = X - X.mean(axis=0)  # the participant centred with its own mean; K centred the same way
    res = reconstruct_record(second_moment(Xc), Xc[:-1], n_samples=12, true_record=Xc[-1])
    assert res.error < 1e-8


def test_reconstruct_record_flags_noisy_covariance():
    W, _ = population(3, d=10)
    X = simulate_linear_sem(W, 30, rng=3)
    E = np.random.default_rng(3).normal(scale=0.05, size=(10, 10))
    noisy = second_moment(X) + (E + E.T) / 2
    res = reconstruct_record(noisy, X[1:], n_samples=30, true_record=X[0])
    assert not res.rank_one and res.rank_one_error > 0.1


def test_reconstruct_record_zero_record():
    K = np.array([[1.0, 2.0], [3.0, -1.0]])
    res = reconstruct_record(second_moment(K, 3), K, n_samples=3, true_record=[0.0, 0.0])
    assert np.array_equal(res.record, [0.0, 0.0])
    assert res.rank_one_error == 0.0 and res.rank_one and res.error == 0.0


# ---------------------------------------------------------------- membership inference


def membership_setting(seed, n_k=20, n_out=100, d=20, centre=True):
    """Exact Σ̂ of a participant's n_k rows (own-mean centred) and raw candidates."""
    W, P = population(seed, d)
    rng = np.random.default_rng(seed + 1000)
    X_in = simulate_linear_sem(W, n_k, rng=rng)
    X_out = simulate_linear_sem(W, n_out, rng=rng)
    Xc = X_in - X_in.mean(axis=0) if centre else X_in
    members = np.r_[np.ones(n_k, bool), np.zeros(n_out, bool)]
    return second_moment(Xc), np.vstack([X_in, X_out]), members, P, W


@pytest.mark.parametrize("seed", range(3))
def test_membership_exact_covariance_n_equals_d(seed):
    cov, cand, members, P, _ = membership_setting(seed)
    res = membership_inference(cov, cand, n_samples=20, population_cov=P, members=members)
    assert res.score == "lr" and res.fpr == 0.01
    assert res.auc >= 0.97  # observed 0.99-1.00 (20 seeds average 0.997)
    assert res.tpr >= 0.5
    quad = membership_inference(cov, cand, n_samples=20, population_cov=P, members=members, score="quadratic")
    assert quad.auc >= 0.9


def test_membership_residual_is_perfect_when_rank_deficient():
    cov, cand, members, P, _ = membership_setting(4, n_k=15, centre=False)  # rank 15 < d = 20
    for score in ("residual", "lr"):
        res = membership_inference(cov, cand, n_samples=15, population_cov=P, members=members, score=score)
        assert res.auc == 1.0 and res.tpr == 1.0
    res = membership_inference(cov, cand, n_samples=15, population_cov=P, score="residual")
    assert np.all(np.abs(res.scores[members]) < 1e-20) and np.all(res.scores[~members] < -1e-6)


def test_membership_null_independent_covariance():
    # Σ̂ from an independent draw: given Σ̂, member and non-member scores are i.i.d. continuous, so
    # AUC has mean ½ and variance (m₁ + m₀ + 1) / (12 m₁ m₀) (Mann–Whitney). With m₁ = 20,
    # m₀ = 100 and R = 30 replicates the mean AUC has SE √(121 / 24000 / 30) = 0.0130; we allow
    # 4 SE = 0.052 (two-sided false-alarm probability 6e-5 for a fresh seed).
    tol = 4 * math.sqrt(121 / (12 * 20 * 100) / 30)
    aucs = {s: [] for s in SCORES}
    for r in range(30):
        _, cand, members, P, W = membership_setting(r)
        X_other = simulate_linear_sem(W, 20, rng=5000 + r)
        cov = second_moment(X_other - X_other.mean(axis=0))
        for s in SCORES:
            aucs[s].append(
                membership_inference(cov, cand, n_samples=20, population_cov=P, members=members, score=s).auc
            )
    for s in SCORES:
        assert abs(np.mean(aucs[s]) - 0.5) < tol, (s, np.mean(aucs[s]))


def test_membership_scores_match_direct_formulas():
    cov, cand, members, P, _ = membership_setting(5, n_k=20, n_out=10)
    n, nu = 20, 2.5
    w, V = np.linalg.eigh(cov)
    St = (n * (V * np.clip(w, 0, None)) @ V.T + nu * P) / (n + nu)
    expected = scipy.stats.multivariate_normal(cov=St).logpdf(cand) - scipy.stats.multivariate_normal(
        cov=P
    ).logpdf(cand)
    res = membership_inference(cov, cand, n_samples=n, population_cov=P, prior_records=nu)
    assert np.allclose(res.scores, expected, rtol=1e-8, atol=1e-8)
    assert res.auc is None and res.tpr is None
    U = np.linalg.solve(P, cand.T).T  # u = Σ_pop⁻¹ x
    quad = np.einsum("mi,ij,mj->m", U, cov, U) / np.einsum("mi,ij,mj->m", U, P, U) - 1
    res = membership_inference(cov, cand, n_samples=n, population_cov=P, score="quadratic")
    assert np.allclose(res.scores, quad, rtol=1e-8, atol=1e-12)
    proj = cov @ np.linalg.pinv(cov, hermitian=True)  # projector on the column space (rank 19)
    resid = -np.sum((cand - cand @ proj) ** 2, axis=1) / np.sum(cand**2, axis=1)
    res = membership_inference(cov, cand, n_samples=n, population_cov=P, score="residual")
    assert np.allclose(res.scores, resid, atol=1e-10)


# ---------------------------------------------------------------- attribute inference


def attribute_setting(seed=0, n_k=50, d=10):
    W, P = population(seed, d)
    X = simulate_linear_sem(W, n_k, rng=seed)
    t = int(np.argmax(np.abs(W).sum(axis=0) + np.abs(W).sum(axis=1)))  # a well-connected node
    return second_moment(X), X, t, P


@pytest.mark.parametrize("seed", range(3))
def test_attribute_inference_beats_baselines(seed):
    cov, X, t, P = attribute_setting(seed)
    res = attribute_inference(cov, X, target=t)
    assert res.mse < res.baseline_mse and res.gain > 1
    assert np.all(res.baseline_predictions == 0.0)
    # Σ̂ of exactly these rows: β is their OLS fit, so no other linear predictor has lower MSE
    rest = np.arange(X.shape[1]) != t
    ols = np.linalg.lstsq(X[:, rest], X[:, t], rcond=None)[0]
    assert np.allclose(res.coef, ols, atol=1e-10)
    pop = attribute_inference(cov, X, target=t, population_cov=P)
    assert pop.mse == res.mse and pop.baseline_mse >= pop.mse and pop.gain >= 1


def test_attribute_predictions_ignore_hidden_column_and_use_mean():
    cov, X, t, P = attribute_setting(1)
    res = attribute_inference(cov, X, target=t, population_cov=P)
    Y = X.copy()
    Y[:, t] = np.random.default_rng(1).normal(size=X.shape[0]) * 100
    other = attribute_inference(cov, Y, target=t, population_cov=P)
    assert np.array_equal(res.predictions, other.predictions)
    assert np.array_equal(res.baseline_predictions, other.baseline_predictions)
    c = np.linspace(-3, 3, X.shape[1])  # rows stored with an offset c, cov of the centred rows
    shifted = attribute_inference(cov, X + c, target=t, mean=c)
    assert np.allclose(shifted.predictions, res.predictions + c[t])
    named = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    assert np.array_equal(
        attribute_inference(cov, named, target=f"x{t}").predictions,
        attribute_inference(cov, X, target=t).predictions,
    )


def test_attribute_inference_gain_conventions_and_singular_cov():
    cov = np.array([[1.0, 2.0], [2.0, 4.0]])  # x1 = 2 x0, singular
    exact = attribute_inference(cov, [[1.0, 2.0], [2.0, 4.0]], target=1)
    assert exact.mse == 0.0 and exact.gain == math.inf
    zero = attribute_inference(cov, np.zeros((2, 2)), target=1)
    assert zero.mse == 0.0 and zero.baseline_mse == 0.0 and zero.gain == 1.0
    _, X, t, _ = attribute_setting(2, n_k=6, d=10)  # rank 6 < d − 1: min-norm interpolation
    res = attribute_inference(second_moment(X), X, target=t)
    assert np.all(np.isfinite(res.predictions)) and res.mse < 1e-20 * res.baseline_mse


# ---------------------------------------------------------------- purity, results, doctests


def test_inputs_not_mutated_and_results_frozen():
    cov, cand, members, P, _ = membership_setting(0, n_out=10)
    arrays = [cov, cand, members, P]
    copies = [a.copy() for a in arrays]
    res = membership_inference(cov, cand, n_samples=20, population_cov=P, members=members)
    attribute_inference(cov, cand, target=0, population_cov=P, mean=P[0])
    rec = reconstruct_record(cov, cand[1:20], n_samples=20, true_record=cand[0])
    roc_auc(cand[:, 0], members), tpr_at_fpr(cand[:, 0], members, 0.1)
    for a, b in zip(arrays, copies):
        assert np.array_equal(a, b)
    for r in (res, rec):
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.score = 0


# ---------------------------------------------------------------- validation

C4 = np.eye(4)
R4 = np.zeros((3, 4))
LAB = np.array([True, False, False])


def nan_at(A, idx):
    B = np.array(A, dtype=float)
    B[idx] = np.nan
    return B


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: attribute_inference(np.ones((3, 4)), R4, target=0), "`cov` must be a square matrix"),
        (lambda: attribute_inference(np.triu(np.ones((4, 4))), R4, target=0), "`cov` must be symmetric"),
        (lambda: attribute_inference(nan_at(C4, (1, 1)), R4, target=0), "`cov` has a non-finite value"),
        (
            lambda: attribute_inference(C4, np.zeros((3, 5)), target=0),
            "`records` has 5 columns but `cov` is 4 x 4",
        ),
        (lambda: attribute_inference(C4, nan_at(R4, (0, 2)), target=0), "`records` has a non-finite"),
        (lambda: attribute_inference(C4, R4, target=4), "`target` must be <= 3; got 4"),
        (lambda: attribute_inference(C4, R4, target=-1), "`target` must be >= 0; got -1"),
        (
            lambda: attribute_inference(C4, pd.DataFrame(R4, columns=list("abcd")), target="z"),
            "`target` 'z' must name exactly one column of `records`; it names 0",
        ),
        (
            lambda: attribute_inference(C4, pd.DataFrame(R4, columns=list("abba")), target="b"),
            "`target` 'b' must name exactly one column of `records`; it names 2",
        ),
        (
            lambda: attribute_inference(C4, R4, target=0, population_cov=np.eye(3)),
            re.escape("`population_cov` must have shape (4, 4); got (3, 3)"),
        ),
        (
            lambda: attribute_inference(C4, R4, target=0, population_mean=np.zeros(3)),
            re.escape("`population_mean` must have shape (4,); got shape (3,)"),
        ),
        (
            lambda: attribute_inference(C4, R4, target=0, mean=nan_at(np.zeros(4), 2)),
            "`mean` has a non-finite value",
        ),
        (
            lambda: membership_inference(C4, np.zeros((3, 2)), n_samples=5, population_cov=C4),
            "`candidates` has 2 columns but `cov` is 4 x 4",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=0, population_cov=C4),
            "`n_samples` must be >= 1; got 0",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=np.diag([1, 1, 1, -1.0])),
            "`population_cov` must be positive definite",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=nan_at(C4, (0, 1))),
            "`population_cov` has a non-finite value",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, score="lrt"),
            "`score` must be one of 'lr', 'quadratic', 'residual'; got 'lrt'",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, prior_records=0),
            "`prior_records` must be > 0",
        ),
        (lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, fpr=1.0), "`fpr` must be < 1"),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, members=LAB[:2]),
            re.escape("`members` must have shape (3,)"),
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, members=[0, 2, 1]),
            "`members` must hold booleans",
        ),
        (
            lambda: membership_inference(C4, R4, n_samples=5, population_cov=C4, members=[1, 1, 1]),
            "`members` must contain both members",
        ),
        (lambda: roc_auc([0.1, np.nan, 0.3], LAB), "`scores` must be a 1-D array of finite numbers"),
        (lambda: roc_auc(np.zeros((3, 1)), LAB), "`scores` must be a 1-D array"),
        (lambda: roc_auc([1, 2, 3], [False] * 3), "`labels` must contain both members"),
        (lambda: tpr_at_fpr([1, 2, 3], LAB, 0), "`fpr` must be > 0; got 0"),
        (
            lambda: reconstruct_record(C4, R4, n_samples=3),
            re.escape("`n_samples` must be >= 1 + the number of known records (3); got 3"),
        ),
        (
            lambda: reconstruct_record(C4, R4, n_samples=4, true_record=np.zeros(5)),
            re.escape("`true_record` must have shape (4,); got shape (5,)"),
        ),
        (lambda: reconstruct_record(C4, R4, n_samples=4, tol=-1), "`tol` must be >= 0"),
        (
            lambda: reconstruct_record(C4, np.zeros((3, 3)), n_samples=4),
            "`known_records` has 3 columns but `cov` is 4 x 4",
        ),
    ],
)
def test_validation_messages(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_validation_type_errors():
    with pytest.raises(TypeError, match="`n_samples` must be an integer"):
        reconstruct_record(C4, R4, n_samples=4.0)
    with pytest.raises(TypeError, match="`target` must be an integer"):
        attribute_inference(C4, R4, target="a")
