"""The one-run canary audit of a whole DP-Fed-Sparse-BNSL run (dpbnsl.audits.one_run)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbnsl.audits import one_run as one_run_module
from dpbnsl.audits import one_run_audit


@pytest.mark.parametrize("seed", [0, 1])
def test_a_correct_run_is_not_flagged(seed):
    """ε = 1: the canaries' releases are drowned in the noise, and the bound is 0 (seeds 0 and 1)."""
    r = one_run_audit(epsilon=1.0, rng=seed)
    assert not r.flagged and r.bound.epsilon_lb <= r.claimed_epsilon <= 1.0
    assert r.bound.canaries == 20 and r.bound.guesses == 20


def test_a_run_without_noise_is_flagged():
    """The negative control: the noiseless run claiming ε = 0.5 guesses 18 of 20 coins right on
    seed 0, a bound of 0.93 > 0.5 (the design's ceiling with all 20 right is about 1.8)."""
    r = one_run_audit(epsilon=0.5, broken="no-noise", rng=0)
    assert r.flagged and r.claimed_epsilon == 0.5 and r.bound.correct >= 17
    assert 0.5 < r.bound.epsilon_lb < 1.9


def test_the_design(monkeypatch):
    """Each slot holds its canary exactly when its coin is +1, a row of zeros otherwise; the canary
    variables are zero in every ordinary row; the scores come from the canary's own participant."""
    seen = {}
    real = one_run_module.dp_fed_sparse_bnsl

    def spy(data, **kw):
        seen["data"], seen["kw"] = [np.array(X) for X in data], kw
        return real(data, **kw)

    monkeypatch.setattr(one_run_module, "dp_fed_sparse_bnsl", spy)
    r = one_run_audit(epsilon=2.0, canaries=6, d=5, n=20, participants=3, rng=4)
    data, kw = seen["data"], seen["kw"]
    assert r.variables == 5 + 12 and all(X.shape == (20, 17) for X in data)
    assert kw["centre"] == "declared" and kw["warm_start"] == "none" and kw["epsilon"] == 2.0
    for (k, row, a, b), s in zip(r.canaries, r.truths):
        X = data[k]
        others = np.delete(np.arange(17), [a, b])
        assert np.all(X[row, others] == 0)
        assert np.all(X[row, [a, b]] > 0) if s > 0 else np.all(X[row] == 0)
        ordinary = np.delete(np.arange(20), [c[1] for c in r.canaries if c[0] == k])
        assert np.all(X[ordinary][:, 5:] == 0)
    assert sorted({c[0] for c in r.canaries}) == [0, 1, 2]
    assert np.count_nonzero(r.guesses) == 6 and set(np.unique(r.truths)) <= {-1, 1}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": 1.0, "canaries": 0}, "canaries"),
        ({"epsilon": 1.0, "canaries": 80, "n": 40}, "rows per participant"),
        ({"epsilon": 1.0, "guess_fraction": 0.0}, "guess_fraction"),
        ({"epsilon": 1.0, "broken": "noise-halved"}, "broken"),
        ({"epsilon": 1.0, "alpha": 1.0}, "alpha"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        one_run_audit(**kwargs)


@pytest.mark.parametrize("bad", ["1", None, [1.0]])
def test_a_non_number_epsilon_is_a_type_error(bad):
    with pytest.raises(TypeError, match="`epsilon` must be a real number"):
        one_run_audit(epsilon=bad)
