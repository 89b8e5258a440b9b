"""DP-Fed-BNSL: sensitivity of the released statistic, noise scale against theory, accounting, PSD
projection, validation, determinism and the no-noise limit (docs/decisions.md, 'DP-Fed-BNSL: the
private covariance baseline')."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from dp_accounting import GaussianDpEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbnsl.accounting import calibrate_gaussian
from dpbnsl.learners import fed_bnsl
from dpbnsl.learners.linear.dp_fed_bnsl import covariance_sensitivity, dp_fed_bnsl, release_covariance
from dpbnsl.mechanisms import clip_rows
from dpbnsl.simulation import simulate

DELTA = 1e-5


@pytest.fixture(scope="module")
def data():
    return simulate(5, 900, participants=3, rng=3)


def _pre_noise(X, R):
    """The released upper-triangle vector before noise (multiplier 0: no noise is drawn)."""
    S, release = release_covariance(
        X, clip_norm=R, multiplier=0.0, psd_floor=None, rng=np.random.default_rng(0)
    )
    return release.value, S


def _clipped_gram(X, R):
    Xc = clip_rows(X, norm=R)
    return Xc.T @ Xc / X.shape[0]


# ----------------------------------------------------------------------------- sensitivity


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 30),
    d=st.integers(1, 6),
    R=st.floats(0.1, 10.0),
    scale=st.floats(0.01, 100.0),
)
def test_sensitivity_replace_one_random_pairs(seed, n, d, R, scale):
    """Replace one row (neighbours may lie far beyond the clip norm): the pre-noise released vector
    moves by at most √2 R²/n in ℓ2, hence also by at most the cruder Frobenius bound
    2R²/n."""
    g = np.random.default_rng(seed)
    X = scale * g.standard_normal((n, d))
    Y = X.copy()
    i = int(g.integers(n))
    Y[i] = scale * 10.0 ** g.uniform(-2, 2) * g.standard_normal(d)
    delta_u = np.linalg.norm(_pre_noise(X, R)[0] - _pre_noise(Y, R)[0])
    bound = covariance_sensitivity(n, clip_norm=R)
    assert bound == pytest.approx(math.sqrt(2) * R**2 / n, rel=1e-15)
    assert delta_u <= bound * (1 + 1e-12) <= 2 * R**2 / n


@pytest.mark.parametrize("d", [2, 5])
def test_sensitivity_bound_is_attained_by_crafted_rows(d):
    """x = 50·e_0 vs x' = 50·e_1, both far outside R: clipped to R e_0, R e_1, the vector moves by
    exactly √2 R²/n (the bound is tight); the triangle-inequality bound 2R²/n is not attained."""
    n, R = 7, 1.5
    X = np.random.default_rng(1).normal(size=(n, d))
    Y = X.copy()
    X[3], Y[3] = 50.0 * np.eye(d)[0], 50.0 * np.eye(d)[1]
    delta_u = np.linalg.norm(_pre_noise(X, R)[0] - _pre_noise(Y, R)[0])
    assert delta_u == pytest.approx(math.sqrt(2) * R**2 / n, rel=1e-12)
    # opposite rows ±x: xxᵀ is unchanged, the release does not move at all
    Y[3] = -X[3]
    assert np.linalg.norm(_pre_noise(X, R)[0] - _pre_noise(Y, R)[0]) <= 1e-12


def test_pre_noise_release_is_the_clipped_covariance():
    X = np.random.default_rng(2).normal(scale=3.0, size=(40, 4))
    u, S = _pre_noise(X, 2.0)
    np.testing.assert_allclose(S, _clipped_gram(X, 2.0), rtol=1e-14, atol=1e-15)
    assert u.shape == (4 * 5 // 2,)


# ----------------------------------------------------------------------------- noise


def test_noise_scale_matches_sigma_and_is_symmetric():
    """E = S̃_k − S_k from the learner (psd=False). Upper-triangle entries of E/σ_k are i.i.d.
    N(0, 1), m of them: Σ(E/σ)² ~ χ²_m and mean·√m ~ N(0, 1). Bounds at two-sided α = 1e-6 (the
    seed is fixed, so this is a check of σ against theory, not a flaky test)."""
    d, sizes, R = 30, [400, 700, 1000], 4.0
    g = np.random.default_rng(5)
    parts = [g.normal(size=(n, d)) for n in sizes]
    r = dp_fed_bnsl(parts, epsilon=0.5, delta=DELTA, clip_norm=R, psd=False, rho2=1e3, max_rounds=1, rng=11)
    z = calibrate_gaussian(0.5, DELTA, 1.0)
    iu = np.triu_indices(d)
    standardised = []
    for X, S_tilde, sigma in zip(parts, r.info["covariances"], r.info["sigma"]):
        assert sigma == pytest.approx(z * math.sqrt(2) * R**2 / X.shape[0], rel=1e-9)
        np.testing.assert_array_equal(S_tilde, S_tilde.T)  # mirrored exactly
        standardised.append((S_tilde - _clipped_gram(X, R))[iu] / sigma)
    e = np.concatenate(standardised)
    m = e.size
    alpha = 1e-6
    assert scipy.stats.chi2.ppf(alpha / 2, m) <= np.sum(e**2) <= scipy.stats.chi2.isf(alpha / 2, m)
    assert abs(e.mean()) * math.sqrt(m) <= scipy.stats.norm.isf(alpha / 2)
    assert r.info["noise_multiplier"] == pytest.approx(z, rel=1e-9)


def test_release_noise_std_many_entries():
    """Four releases with d = 150: m = 4·150·151/2 = 45 300 upper entries of E/σ, i.i.d. N(0, 1)
    in theory. Σ(E/σ)² ~ χ²_m, whose two-sided α = 1e-6 interval puts the empirical std within
    about ±1.7 % of σ; the strictly lower triangle must copy the upper one exactly."""
    d, n, R, z = 150, 50, 2.0, 0.8
    g = np.random.default_rng(9)
    X = g.normal(size=(n, d))
    S = _clipped_gram(X, R)
    sigma = z * covariance_sensitivity(n, clip_norm=R)
    iu, il = np.triu_indices(d), np.tril_indices(d, -1)
    e = []
    for stream in g.spawn(4):
        S_tilde, release = release_covariance(X, clip_norm=R, multiplier=z, psd_floor=None, rng=stream)
        assert release.event == GaussianDpEvent(z)
        np.testing.assert_array_equal(S_tilde[il], S_tilde.T[il])
        e.append((S_tilde - S)[iu] / sigma)
    e = np.concatenate(e)
    m, alpha = e.size, 1e-6
    lo, hi = scipy.stats.chi2.ppf(alpha / 2, m) / m, scipy.stats.chi2.isf(alpha / 2, m) / m
    assert hi < 1.036  # the interval is tight enough to see a few-percent error in σ
    # the mean is known (0), so the std estimate is the root mean square
    assert math.sqrt(lo) <= math.sqrt(np.mean(e**2)) <= math.sqrt(hi)


@pytest.mark.parametrize("floor", [True, 0.05])
def test_psd_projection_floors_the_eigenvalues(floor):
    d = 12
    parts = [np.random.default_rng(k).normal(size=(200, d)) for k in range(2)]
    raw = dp_fed_bnsl(
        parts, epsilon=0.3, delta=DELTA, clip_norm=3.0, psd=False, rho2=1e3, max_rounds=1, rng=4
    )
    proj = dp_fed_bnsl(parts, epsilon=0.3, delta=DELTA, clip_norm=3.0, psd=floor, max_rounds=1, rng=4)
    lo = 0.0 if floor is True else floor
    for S_raw, S in zip(raw.info["covariances"], proj.info["covariances"]):
        assert np.linalg.eigvalsh(S_raw)[0] < lo  # the noise made it indefinite: projection acts
        evals_raw, evals = np.linalg.eigvalsh(S_raw), np.linalg.eigvalsh(S)
        # rounding of Q·diag·Qᵀ: a few ulps of the largest eigenvalue
        tol = 1e-12 * np.abs(evals_raw).max()
        assert evals[0] >= lo - tol
        # eigenvalues above the floor are kept (Frobenius projection onto {S ⪰ floor·I})
        np.testing.assert_allclose(evals, np.maximum(evals_raw, lo), atol=tol)
        np.testing.assert_array_equal(S, S.T)


# ----------------------------------------------------------------------------- accounting


@pytest.mark.parametrize(
    "calibration, epsilon, accountant",
    [("tight", 1.0, "pld"), ("classic", 0.5, "pld"), ("zcdp", 2.0, "zcdp")],
)
def test_ledger_within_target(data, calibration, epsilon, accountant):
    r = dp_fed_bnsl(
        data.participants,
        epsilon=epsilon,
        delta=DELTA,
        calibration=calibration,
        clip_norm=5.0,
        max_rounds=3,
        rng=0,
    )
    assert r.info["accountant"] == accountant
    assert len(r.ledger) == 3
    for ledger in r.ledger:
        assert ledger.accountant == accountant
        assert [(e.label, e.count) for e in ledger.entries] == [("covariance", 1)]
        assert ledger.entries[0].event == GaussianDpEvent(r.info["noise_multiplier"])
    eps = r.ledger[0].epsilon(DELTA)
    assert eps <= epsilon and eps == r.info["epsilon"][accountant]
    # σ is the calibration's, never less
    z = calibrate_gaussian(epsilon, DELTA, 1.0, method={"tight": "analytic"}.get(calibration, calibration))
    assert z <= r.info["noise_multiplier"] <= z * (1 + 1e-6)


def test_cost_independent_of_rounds(data):
    short = dp_fed_bnsl(data.participants, epsilon=1.0, delta=DELTA, calibration="zcdp", max_rounds=5, rng=0)
    long = dp_fed_bnsl(data.participants, epsilon=1.0, delta=DELTA, calibration="zcdp", max_rounds=50, rng=0)
    assert len(short.history) == 5 and len(long.history) == 50
    assert short.ledger[0].epsilon(DELTA) == long.ledger[0].epsilon(DELTA)
    assert [a.entries for a in short.ledger] == [b.entries for b in long.ledger]
    for a, b in zip(short.info["covariances"], long.info["covariances"]):
        np.testing.assert_array_equal(a, b)  # the same release, then more post-processing


def test_private_centring_shares_the_budget():
    parts = [np.random.default_rng(k).normal(loc=5.0, size=(300, 4)) for k in range(2)]
    r = dp_fed_bnsl(
        parts,
        epsilon=1.0,
        delta=DELTA,
        calibration="zcdp",
        centre="private",
        centre_share=0.2,
        clip_norm=10.0,
        max_rounds=2,
        rng=0,
    )
    z = calibrate_gaussian(1.0, DELTA, 1.0, method="zcdp")
    for ledger in r.ledger:
        assert [e.label for e in ledger.entries] == ["mean", "covariance"]
        assert ledger.rho() == pytest.approx(0.5 / z**2, rel=1e-12)  # the two compose to z
    assert r.info["epsilon"]["zcdp"] <= 1.0
    # with ε = ∞ the mean is released exactly: S̃ is the covariance of the centred, clipped rows
    exact = dp_fed_bnsl(
        parts, epsilon=math.inf, delta=DELTA, centre="private", clip_norm=10.0, psd=False, max_rounds=1, rng=0
    )
    for X, S in zip(parts, exact.info["covariances"]):
        Xc = X - clip_rows(X, norm=10.0).mean(axis=0)
        np.testing.assert_allclose(S, _clipped_gram(Xc, 10.0), rtol=1e-12, atol=1e-12)


def test_no_noise_limit_is_fed_bnsl_on_clipped_data(data):
    R = 3.0
    r = dp_fed_bnsl(
        data.participants, epsilon=math.inf, delta=DELTA, clip_norm=R, psd=False, max_rounds=30, rng=0
    )
    ref = fed_bnsl(
        [clip_rows(X, norm=R) for X in data.participants], normalize="local", centre=False, max_rounds=30
    )
    assert r.info["epsilon"]["pld"] == math.inf and r.info["sigma"] == (0.0, 0.0, 0.0)
    np.testing.assert_allclose(r.W_raw, ref.W_raw, atol=1e-8)
    assert r.transcript.total_bytes == ref.transcript.total_bytes
    assert r.method == "dp-fed-bnsl"


# ----------------------------------------------------------------------------- contract bits


def test_deterministic_per_seed_and_inputs_untouched(data):
    names = [f"v{i}" for i in range(5)]
    frames = [pd.DataFrame(X, columns=names) for X in data.participants]
    arrays = [X.copy() for X in data.participants]
    before = [f.copy() for f in frames]
    kw = dict(epsilon=1.0, delta=DELTA, calibration="zcdp", clip_norm=5.0, max_rounds=10)
    a, b = dp_fed_bnsl(frames, rng=7, **kw), dp_fed_bnsl(frames, rng=7, **kw)
    c = dp_fed_bnsl(arrays, rng=8, **kw)
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    np.testing.assert_array_equal(a.info["covariances"][2], b.info["covariances"][2])
    assert not np.array_equal(a.info["covariances"][0], c.info["covariances"][0])
    for f, g in zip(frames, before):
        pd.testing.assert_frame_equal(f, g)
    for X, Y in zip(arrays, data.participants):
        np.testing.assert_array_equal(X, Y)
    assert a.columns == tuple(names) and a.W.shape == (5, 5) and a.is_dag
    assert not a.info["covariances"][0].flags.writeable


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epsilon=0.0), r"`epsilon` must be > 0; got 0.0"),
        (dict(epsilon=-1.0), r"`epsilon` must be > 0; got -1.0"),
        (dict(delta=0.0), r"`delta` must be > 0; got 0.0"),
        (dict(delta=1.0), r"`delta` must be < 1; got 1.0"),
        (dict(delta=1.5), r"`delta` must be < 1; got 1.5"),
        (dict(clip_norm=0.0), r"`clip_norm` must be >= 1e-100; got 0.0"),
        (dict(clip_norm=-2.0), r"`clip_norm` must be >= 1e-100; got -2.0"),
        (
            dict(calibration="laplace"),
            r"`calibration` must be one of 'tight', 'classic', 'zcdp'; got 'laplace'",
        ),
        (dict(calibration="classic", epsilon=1.0), r"`epsilon` = 1.0 \(use method='analytic'\)"),
        (dict(centre="mean"), r"`centre` must be one of 'declared', 'private'; got 'mean'"),
        (dict(centre=True), r"`centre` must be one of 'declared', 'private'; got True"),
        (dict(centre="private", centre_share=1.0), r"`centre_share` must be <= 0.999999; got 1.0"),
        (dict(psd=-0.1), r"`psd` must be >= 0; got -0.1"),
        (dict(max_rounds=0), r"`max_rounds` must be >= 1; got 0"),
        (dict(neighbouring="add-remove"), r"`neighbouring` must be one of \['replace-one'\]"),
    ],
)
def test_bad_input(data, kwargs, match):
    kw = dict(epsilon=1.0, delta=DELTA, max_rounds=1, rng=0) | kwargs
    with pytest.raises(ValueError, match=match):
        dp_fed_bnsl(data.participants, **kw)


def test_indefinite_release_is_repaired_not_refused(data):
    """With psd=False a noisy covariance can have an eigenvalue ≤ −ρ₂. The budget is spent by then,
    so the learner must not raise (a re-run would spend it twice): it raises the eigenvalues to
    −ρ₂/2 by post-processing, warns, and reports which participants were repaired."""
    with pytest.warns(RuntimeWarning, match=r"participant \d has eigenvalue .* <= -rho2 = -0.001"):
        r = dp_fed_bnsl(data.participants, epsilon=0.1, delta=DELTA, psd=False, max_rounds=1, rng=0)
    assert 0 in r.info["repaired"]
    for k in r.info["repaired"]:
        assert np.linalg.eigvalsh(r.info["covariances"][k])[0] >= -0.5e-3 * (1 + 1e-9)
    assert r.info["epsilon"]["pld"] <= 0.1
