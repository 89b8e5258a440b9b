"""Every registered linear learner on both packaged Gaussian networks, raw and standardised, on a
small sample (short schedules: the point is that each runs end to end on real structures and
names, not its accuracy, which docs/results/real_networks.md measures)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpbnsl import is_dag
from dpbnsl.io.networks import GAUSSIAN_NETWORKS, sample_network
from dpbnsl.learners.registry import LEARNERS

LINEAR = sorted(name for name, entry in LEARNERS.items() if entry.family == "linear")
#: a short schedule per learner family (the full one costs tens of CPU seconds at d = 46)
SHORT = {"notears": {"max_iter": 1}, "fed-bnsl": {"max_rounds": 5}, "dp-fed-bnsl": {"max_rounds": 5}}
SHORT.update({m: {"max_iter": 1} for m in ("notears-voting", "notears-average", "notears-best")})


def test_every_linear_learner_is_covered():
    assert {"sortnregress", "r2-sortnregress", "dp-sortnregress", "dp-r2-sortnregress", "fed-bnsl"} <= set(
        LINEAR
    )


@pytest.mark.parametrize("standardise", [False, True], ids=["raw", "standardised"])
# ecoli70 in the default suite, magic-niab in the slow one (the same code path, twice the time)
@pytest.mark.parametrize(
    "network", [pytest.param(n, marks=pytest.mark.slow) if n != "ecoli70" else n for n in GAUSSIAN_NETWORKS]
)
@pytest.mark.parametrize("method", LINEAR)
def test_each_linear_learner_runs_on_each_network(method, network, standardise):
    data = sample_network(network, 600, participants=3, standardise=standardise, rng=0)
    frames = [pd.DataFrame(X, columns=list(data.columns)) for X in data.participants]
    entry = LEARNERS[method]
    kw = dict(SHORT.get(method, {}), **entry.quick)
    if entry.private:  # public bounds from the published parameters, never from the sample
        bounds = data.network.public_bounds()
        kw.update({k: bounds[k] for k in ("clip_norm", "feature_bound") if k in entry.simulation}, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short schedules warn that they did not converge
        r = entry.run(frames, B_true=data.B_true if entry.oracle else None, **kw)
    d = len(data.columns)
    assert r.W.shape == (d, d) and np.isfinite(r.W).all()
    assert r.columns == data.columns
    if entry.dag:
        assert is_dag(r.W)
    if entry.private:
        assert r.privacy.epsilon <= kw["epsilon"]
