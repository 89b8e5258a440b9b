"""Personalisation: per-participant OLS refits on a shared support, and the per-participant NMSE."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dpbnsl.learners import fed_bnsl
from dpbnsl.learners.linear.personalize import Personalized, personalize, personalized_nmse
from dpbnsl.metrics import nmse
from dpbnsl.simulation import simulate_dag, simulate_heterogeneous, simulate_weights

D, P, N = 8, 6, 1500


@pytest.fixture(scope="module")
def het():
    W = simulate_weights(simulate_dag(D, s0=D, rng=11), rng=11)
    return simulate_heterogeneous(W, [N] * P, tau=0.3, rng=11)


def test_personalised_beats_consensus_on_the_true_support(het):
    """With supp(W*) known, OLS of each node on its true parents is unbiased for participant k's own
    weights B*_k, with error O(1/n_k) per coefficient (here ~1e-3 per edge); the consensus W* is off
    by B*_k − W* ~ N(0, τ²) per edge, so E[NMSE_k] = s·τ²/‖B*_k‖² (~0.05 here) whatever n_k. With
    n_k = 1500 the gap is two orders of magnitude, so every participant wins at this fixed seed."""
    fit = personalize(het.participants, het.W)
    own = personalized_nmse(het.weights, fit.B)
    consensus = personalized_nmse(het.weights, [het.W] * P)
    assert own.shape == consensus.shape == (P,)
    assert np.all(own < consensus)
    assert np.median(own) < 0.1 * np.median(consensus)


def test_personalisation_after_learning(het):
    """The workflow: learn W with Fed-BNSL, then refit; accepts the LearnResult itself."""
    result = fed_bnsl(het.participants, max_rounds=60)
    fit = personalize(het.participants, result)
    np.testing.assert_array_equal(fit.support, result.W != 0)
    same = personalize(het.participants, result.W)
    for a, b in zip(fit.B, same.B):
        np.testing.assert_array_equal(a, b)
    own = personalized_nmse(het.weights, fit)
    consensus = personalized_nmse(het.weights, [result.W] * P)
    assert np.sum(own < consensus) > P / 2


def test_support_kept_and_normal_equations(het):
    W = np.array(het.W)
    fit = personalize(het.participants, W)
    parentless = np.flatnonzero(~(W != 0).any(axis=0))
    assert parentless.size > 0
    for X, B in zip(het.participants, fit.B):
        assert np.all(B[W == 0] == 0) and np.all(B[:, parentless] == 0)
        Xc = X - X.mean(axis=0)
        for j in range(D):
            pa = np.flatnonzero(W[:, j])
            if pa.size:  # OLS optimality: residual orthogonal to the parents' columns
                r = Xc[:, j] - Xc[:, pa] @ B[pa, j]
                assert np.abs(Xc[:, pa].T @ r).max() <= 1e-9 * np.abs(Xc).max() ** 2 * len(X)


def test_centering(het):
    X = het.participants[0]
    shifted = personalize([X + 100.0], het.W)
    base = personalize([X], het.W)
    np.testing.assert_allclose(shifted.B[0], base.B[0], atol=1e-9)
    raw = personalize([X - X.mean(axis=0)], het.W, centre=False)
    np.testing.assert_allclose(raw.B[0], base.B[0], atol=1e-12)
    assert not np.allclose(personalize([X + 100.0], het.W, centre=False).B[0], base.B[0])


def test_rank_deficient_participant_is_finite():
    """n_k < |pa(j)|: lstsq returns the minimum-norm solution instead of failing."""
    W = np.zeros((4, 4))
    W[:3, 3] = 1.0
    X = np.random.default_rng(0).normal(size=(2, 4))
    fit = personalize([X, np.random.default_rng(1).normal(size=(50, 4))], W)
    assert np.all(np.isfinite(fit.B[0]))
    np.testing.assert_allclose(
        fit.B[0][:3, 3], np.linalg.pinv((X - X.mean(0))[:, :3]) @ (X - X.mean(0))[:, 3], atol=1e-10
    )


def test_frames_and_immutability(het):
    names = [f"v{i}" for i in range(D)]
    frames = [pd.DataFrame(X, columns=names) for X in het.participants]
    before = [f.copy() for f in frames]
    Wf = pd.DataFrame(het.W, index=names, columns=names)
    W_before = Wf.copy()
    fit = personalize(frames, Wf)
    assert isinstance(fit, Personalized) and fit.columns == tuple(names)
    for f, g in zip(frames, before):
        pd.testing.assert_frame_equal(f, g)
    pd.testing.assert_frame_equal(Wf, W_before)
    assert not fit.B[0].flags.writeable and not fit.support.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.B = ()


def test_personalized_nmse_formula_and_order():
    truth = [np.array([[0, 2.0], [0, 0]]), np.array([[0, 1.0], [0, 0]])]
    est = [np.array([[0, 1.5], [0, 0]]), np.array([[0, 0.0], [0, 0]])]
    np.testing.assert_allclose(personalized_nmse(truth, est), [0.0625, 1.0])
    assert personalized_nmse(truth, est)[0] == nmse(truth[0], est[0])
    # (truth, estimate): the normaliser is the truth's norm
    assert personalized_nmse(est[:1], truth[:1])[0] == pytest.approx(0.25 / 2.25)
    np.testing.assert_allclose(personalized_nmse(np.stack(truth), np.stack(est)), [0.0625, 1.0])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda X: personalize([X], np.zeros((3, 3))),
            ValueError,
            r"`W` has shape \(3, 3\) but the participants have 4 columns",
        ),
        (
            lambda X: personalize([X], np.eye(4)),
            ValueError,
            r"`W` must have a zero diagonal \(no self-loops\); W\[0, 0\] != 0",
        ),
        (lambda X: personalize([X], np.full((4, 4), np.nan)), ValueError, r"`W` has a non-finite value nan"),
        (lambda X: personalize(X, np.zeros((4, 4))), TypeError, r"`participants` must be a sequence"),
        (
            lambda X: personalized_nmse([np.eye(2)], [np.eye(2)] * 2),
            ValueError,
            r"`B_true` has 1 participants but `B_est` has 2",
        ),
        (
            lambda X: personalized_nmse([np.zeros((2, 2))], [np.eye(2)]),
            ValueError,
            r"participant 0: `B_true` is all zero",
        ),
        (
            lambda X: personalized_nmse([np.eye(2)], [np.eye(3)]),
            ValueError,
            r"participant 0: `B_true` and `B_est` must have the same shape",
        ),
        (
            lambda X: personalized_nmse(np.eye(2), [np.eye(2)]),
            TypeError,
            r"`B_true` must be a sequence of \(d, d\) arrays, one per participant; got ndarray of "
            r"shape \(2, 2\)",
        ),
    ],
)
def test_bad_input(call, exc, match):
    X = np.random.default_rng(0).normal(size=(10, 4))
    with pytest.raises(exc, match=match):
        call(X)
