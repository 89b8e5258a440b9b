"""What the server (alone, with a coalition, or across two sums) reads from secure sums: the
pooled covariance exactly without noise (to the grid's resolution, with the bound derived below),
one participant's statistic exactly by subtraction, and with distributed noise the same
estimates at the public noise level."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.attacks.secagg import (
    isolate_by_coalition,
    isolate_by_difference,
    read_sum,
    replay_shares,
    with_sum,
)
from dpbnsl.mechanisms.releases import clip_rows
from dpbnsl.scores import centre
from dpbnsl.simulation import simulate


def _shares(name, data, settings, seed=None):
    """Each participant's share and the setup transcript, as the protocol makes them."""
    return replay_shares(name, data, settings, rng=seed)


def _summed(transcript, shares, who):
    return with_sum(transcript, shares, who)


def _gram(X, settings, scale):
    """A participant's quantised statistic Σ q qᵀ/γ² (centred, clipped, nearest grid point)."""
    Q = np.rint(clip_rows(centre(X), norm=settings["clip_norm"]) * scale)
    return Q.T @ Q / scale**2


PLAIN = dict(aggregation="secure", clip_norm=20.0)


def test_secure_aggregation_alone_reveals_the_pooled_covariance():
    data = simulate(8, 3 * 1000, participants=3, rng=0).participants
    settings = dict(PLAIN, participants=3, n_total=3000)
    shares, setup = _shares("fed-bnsl", data, settings)
    view = read_sum(_summed(setup, shares, (0, 1, 2)), settings)
    assert view.noise_sd == 0.0 and view.contributors == (0, 1, 2) and view.n == 3000
    quantised = sum(_gram(X, settings, view.scale) for X in data) / 3000
    np.testing.assert_allclose(view.S, quantised, rtol=0, atol=1e-12)  # the protocol's statistic
    # against the rows themselves: q = γx + r with |r_j| <= 1/2 gives, per row,
    # |q_i q_j/γ² − x_i x_j| <= (|x_i| + |x_j|)/(2γ) + 1/(4γ²); averaged over the rows
    rows = np.vstack([clip_rows(centre(X), norm=20.0) for X in data])
    exact = rows.T @ rows / 3000
    a = np.abs(rows).mean(axis=0)
    bound = (a[:, None] + a[None, :]) / (2 * view.scale) + 1 / (4 * view.scale**2)
    assert np.all(np.abs(view.S - exact) <= bound)
    assert np.abs(view.S - exact).max() < 1e-3  # the grid is fine: γ ≈ 15 per unit at N = 3000


def test_a_partner_or_a_coalition_reads_the_remaining_participant_exactly():
    data = simulate(6, 2 * 800, participants=2, rng=1).participants
    settings = dict(PLAIN, participants=2, n_total=1600)
    shares, setup = _shares("fed-bnsl", data, settings)
    view = read_sum(_summed(setup, shares, (0, 1)), settings)
    partner = isolate_by_coalition(view, {0: shares[0]})  # participant 0 colludes with the server
    assert partner.participant == 1 and partner.noise_sd == 0.0
    np.testing.assert_allclose(partner.covariance, _gram(data[1], settings, view.scale) / 800, atol=1e-12)
    with pytest.raises(ValueError, match="every contributor \\[0, 1\\] but one"):
        isolate_by_coalition(view, {})


def test_two_sums_that_differ_by_one_participant_isolate_it():
    data = simulate(6, 3 * 500, participants=3, rng=2).participants
    settings = dict(PLAIN, participants=3, n_total=1500, dropouts=1)
    shares, setup = _shares("fed-bnsl", data, settings)
    full = read_sum(_summed(setup, shares, (0, 1, 2)), settings)
    dropped = read_sum(_summed(setup, shares, (0, 1)), settings)  # a round after participant 2 left
    iso = isolate_by_difference(full, dropped)
    assert iso.participant == 2
    np.testing.assert_allclose(iso.covariance, _gram(data[2], settings, full.scale) / 500, atol=1e-12)
    with pytest.raises(ValueError, match="differ by exactly one"):
        isolate_by_difference(full, full)


def test_with_distributed_noise_the_coalition_reads_one_noise_share():
    """P = 4, t = 0: the coalition of 3 reads participant 3's statistic plus its own share only,
    at the public sd; over D = 210 entries the sample sd of the error is within 4·sd/√(2D) (the
    sampling sd of a sample standard deviation of D normal variables) of it."""
    data = simulate(20, 4 * 1000, participants=4, rng=3).participants
    settings = dict(
        aggregation="secure", epsilon=1.0, delta=1e-5, clip_norm=10.0, participants=4, n_total=4000
    )
    shares, setup = _shares("dp-fed-bnsl", data, settings, seed=9)
    view = read_sum(_summed(setup, shares, (0, 1, 2, 3)), settings)
    iso = isolate_by_coalition(view, {k: shares[k] for k in (0, 1, 2)})
    rows = clip_rows(data[3], norm=10.0)
    err = (iso.covariance - rows.T @ rows / 1000)[np.triu_indices(20)]
    D = err.size
    # (the randomised rounding adds, in quadrature, an error of order |x|/(γ√n_k) ≈ 3/(25·32) ≈ 0.004
    # per entry to the noise sd of 0.30: a change of 0.01% in the sd, negligible here)
    assert abs(err.std() - iso.noise_sd) <= 4 * iso.noise_sd / np.sqrt(2 * D)
    # the pooled view: every share's noise, over all N rows
    assert view.noise_sd == pytest.approx(iso.noise_sd * 2 * 1000 / 4000)
