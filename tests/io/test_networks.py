"""The packaged bnlearn networks: contents as published, digests checked, population moments
against samples, the public standardisation, and clean refusals."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.io import networks
from dpbnsl.io.networks import (
    DISCRETE_NETWORKS,
    GAUSSIAN_NETWORKS,
    NETWORK_SHA256,
    GaussianNetwork,
    NetworkChecksumError,
    load_network,
    sample_network,
)
from dpbnsl.simulation.discrete import DiscreteBN

SIZES = {
    "ecoli70": (46, 70),
    "magic-niab": (44, 66),
    "alarm": (37, 46),
    "child": (20, 25),
    "insurance": (27, 52),
}


@pytest.mark.parametrize("name", GAUSSIAN_NETWORKS + DISCRETE_NETWORKS)
def test_each_network_has_its_published_size(name):
    net = load_network(name)
    d, arcs = SIZES[name]
    B = net.B if isinstance(net, GaussianNetwork) else net.adjacency
    assert isinstance(net, GaussianNetwork if name in GAUSSIAN_NETWORKS else DiscreteBN)
    assert B.shape == (d, d) and int(B.sum()) == arcs


def test_ecoli70_parameters_read_as_published():
    net = load_network("ecoli70")
    k = net.names.index
    # aceB = 0.1324 + 1.0464·icdA + e, Var(e) = 0.0853 (the file's first entry)
    assert net.W[k("icdA"), k("aceB")] == 1.0464
    assert net.intercepts[k("aceB")] == 0.1324 and net.variances[k("aceB")] == 0.0853
    assert not net.W.flags.writeable


def test_sample_moments_match_the_population():
    """Entry (i, j) of a sample covariance of n Gaussian rows has sd √((Σ_ii Σ_jj + Σ_ij²)/n);
    at n = 50,000 every entry stays within 5 sd (46² entries, a 5-sd miss has probability ~1e-3)."""
    net = load_network("ecoli70")
    n = 50_000
    X = net.sample(n, centre=False, rng=0)
    S = net.covariance()
    sd = np.sqrt((np.outer(np.diag(S), np.diag(S)) + S**2) / n)
    assert np.all(np.abs(np.cov(X, rowvar=False) - S) < 5 * sd)
    assert np.all(np.abs(X.mean(axis=0) - net.mean()) < 5 * np.sqrt(np.diag(S) / n))
    assert np.abs(net.sample(n, rng=1).mean(axis=0)).max() < 5 * np.sqrt(np.diag(S).max() / n)


def test_the_standardised_network_is_the_same_model_rescaled():
    net = load_network("magic-niab")
    std = net.standardised()
    s = net.scale()
    np.testing.assert_allclose(np.diag(std.covariance()), 1.0, rtol=1e-10)
    np.testing.assert_allclose(std.covariance(), net.covariance() / np.outer(s, s), rtol=1e-9, atol=1e-12)
    assert np.array_equal(std.B, net.B) and np.all(std.intercepts == 0)


def test_sample_network_splits_and_standardises_with_public_scales():
    data = sample_network("ecoli70", 3000, participants=3, standardise=True, rng=4)
    assert data.X.shape == (3000, 46) and [p.shape[0] for p in data.participants] == [1000] * 3
    assert data.columns[0] == "aceB" and np.array_equal(data.B_true, load_network("ecoli70").B)
    np.testing.assert_array_equal(data.W_true, data.network.W)
    # sd of a sample sd of 3000 Gaussian rows: about 1/√6000 = 0.013; 6 sd over 46 columns
    assert np.abs(data.X.std(axis=0) - 1).max() < 0.08
    again = sample_network("ecoli70", 3000, participants=3, standardise=True, rng=4)
    assert np.array_equal(again.X, data.X)


def test_discrete_samples_are_state_codes():
    data = sample_network("child", 500, participants=5, rng=0)
    assert data.X.dtype.kind == "i" and data.X.min() >= 0
    assert data.X.max(axis=0).tolist() <= [len(s) - 1 for s in data.network.states]
    assert np.array_equal(data.W_true, data.B_true.astype(float))


def test_public_bounds_cover_the_samples():
    net = load_network("ecoli70")
    b = net.public_bounds()
    X = net.sample(20_000, rng=2)
    # a row norm above 2·√(tr Σ) needs ‖x‖² > 4·E‖x‖²: rare (well under 1 %); x² above 16·Σ_aa
    # is a 4-sd Gaussian tail event (6e-5 per entry)
    assert np.mean(np.linalg.norm(X, axis=1) > b["clip_norm"]) < 0.01
    assert np.mean(X**2 > b["feature_bound"]) < 1e-3


def test_a_damaged_file_is_refused(monkeypatch):
    bad = dict(NETWORK_SHA256, **{"child.bif.gz": "0" * 64})
    monkeypatch.setattr(networks, "NETWORK_SHA256", bad)
    with pytest.raises(NetworkChecksumError, match="does not match its recorded SHA-256"):
        load_network("child")


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: load_network("asia"), ValueError, "`name`"),
        (lambda: sample_network("child", 100, standardise=True), ValueError, "discrete"),
        (lambda: sample_network("ecoli70", 5, participants=10), ValueError, "`n`"),
        (lambda: sample_network("ecoli70", 100, standardise="yes"), TypeError, "`standardise`"),
        (lambda: load_network("ecoli70").sample(0), ValueError, "`n`"),
    ],
)
def test_bad_inputs_are_refused(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_discrete_samples_feed_the_constraint_based_learners():
    """child at 4 × 1000 rows: FedPC with the G² test runs on the state codes and finds a good
    part of the skeleton (measured F1 0.89 on seeds 0–2; 0.6 leaves room for other samples)."""
    from dpbnsl.learners import fed_pc
    from dpbnsl.metrics import skeleton_scores

    data = sample_network("child", 4000, participants=4, rng=1)
    r = fed_pc(data.participants, test="g2")
    assert skeleton_scores(data.B_true, r.W).f1 > 0.6
