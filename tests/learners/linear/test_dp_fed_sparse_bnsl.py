"""DP-Fed-Sparse-BNSL: budget kept, smoothness never from raw data, refusal before any release,
sparse messages, determinism, validation; smoothness and centring releases."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl, plan
from dpbnsl.mechanisms.moments import private_mean, private_smoothness
from dpbnsl.simulation import simulate

# the modules (their names are shadowed by the functions that dpbnsl.learners re-exports)
fsb = importlib.import_module("dpbnsl.learners.linear.fed_sparse_bnsl")
# where the participant's local step and private pre-processing live (the spies patch them there)
admm = importlib.import_module("dpbnsl.learners.linear.sparse_admm")
dpm = importlib.import_module("dpbnsl.learners.linear.hosted_sparse")
sparse_plan = importlib.import_module("dpbnsl.learners.linear.sparse_plan")

D, P = 6, 3


@pytest.fixture(scope="module")
def data():
    return simulate(D, 600, participants=P, rng=11)


KW = dict(epsilon=2.0, delta=1e-5, rounds=4, local_iters=5, feature_bound=50.0)


@pytest.mark.parametrize("calibration, accountant", [("tight", "rdp"), ("paper", "zcdp")])
@pytest.mark.parametrize("centre", ["declared", "private"])
def test_budget_kept_under_the_claimed_accountant(data, calibration, accountant, centre):
    r = dp_fed_sparse_bnsl(data.participants, calibration=calibration, centre=centre, rng=0, **KW)
    assert len(r.ledger) == P
    for ledger in r.ledger:
        assert ledger.epsilon(1e-5, accountant=accountant) <= 2.0
        counts = {e.label: e.count for e in ledger.entries}
        assert counts["dp-pgcd/select"] == counts["dp-pgcd/gradient"] == 4 * 5
        assert counts["smoothness"] == D
        assert counts.get("centring", 0) == (1 if centre == "private" else 0)
    assert r.info["epsilon"][accountant] <= 2.0


def test_smoothness_constants_never_come_from_raw_data(data, monkeypatch):
    seen = []
    real = admm.new_state

    def spy(X, B, W, beta, **kw):  # the smoothness constants the solver is started with
        seen.append(np.array(kw["M"]) - kw["rho2"])
        return real(X, B, W, beta, **kw)

    monkeypatch.setattr(admm, "new_state", spy)
    raw = [(X**2).mean(axis=0) for X in data.participants]
    # declared public bounds: m_a is the bound itself
    dp_fed_sparse_bnsl(data.participants, smoothness="bounds", rng=0, **KW)
    assert seen and all(np.allclose(m, np.full(D, 50.0), rtol=1e-15, atol=0) for m in seen)
    # constants declared public: used as given
    seen.clear()
    const = np.linspace(1.0, 2.0, D)
    dp_fed_sparse_bnsl(data.participants, smoothness=const, rng=0, **KW)
    assert seen and all(np.allclose(m, const, rtol=1e-15, atol=0) for m in seen)
    # private estimation: the released values, not the raw ones
    seen.clear()
    released = []
    real_ps = dpm.private_smoothness

    def spy_ps(X, **kw):
        out = real_ps(X, **kw)
        released.append(out)
        return out

    monkeypatch.setattr(dpm, "private_smoothness", spy_ps)
    dp_fed_sparse_bnsl(data.participants, smoothness="private", rng=0, **KW)
    for k in range(P):
        assert np.allclose(seen[k], released[k], rtol=1e-15, atol=1e-15)
        assert not np.allclose(seen[k], raw[k], rtol=1e-6)


def test_refuses_before_touching_data_when_the_budget_cannot_cover(data, monkeypatch):
    touched = []
    monkeypatch.setattr(dpm, "private_mean", lambda *a, **k: touched.append(1))
    monkeypatch.setattr(dpm, "private_smoothness", lambda *a, **k: touched.append(1))
    with pytest.raises(ValueError, match=r"`shares` = \(0.6, 0.5\) leave nothing of the budget"):
        dp_fed_sparse_bnsl(data.participants, centre="private", shares=(0.6, 0.5), rng=0, **KW)
    assert touched == []


def test_messages_are_sparse_and_grow_by_at_most_k(data):
    r = dp_fed_sparse_bnsl(data.participants, rng=3, **KW)
    start = r.info["warm_start"]["edges"]  # d = 6: the default warm-starts every B_k at W₀
    for k in range(P):
        nnz = [m.payload.nnz for m in r.transcript.learning().filter(participant=k, direction="up")]
        assert nnz[0] <= start + 5 and all(b - a <= 5 for a, b in zip(nnz, nnz[1:]))


def test_same_seed_same_result_different_seed_differs(data):
    a = dp_fed_sparse_bnsl(data.participants, rng=5, **KW)
    b = dp_fed_sparse_bnsl(data.participants, rng=5, **KW)
    c = dp_fed_sparse_bnsl(data.participants, rng=6, **KW)
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    assert not np.array_equal(a.W_raw, c.W_raw)


def test_inputs_untouched(data):
    copies = [X.copy() for X in data.participants]
    dp_fed_sparse_bnsl(data.participants, centre="private", rng=0, **KW)
    for X, c in zip(data.participants, copies):
        np.testing.assert_array_equal(X, c)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(epsilon=0.0), ValueError, r"`epsilon` must be > 0; got 0.0"),
        (dict(epsilon=float("nan")), ValueError, r"`epsilon` must be finite; got nan"),
        (dict(delta=1.0), ValueError, r"`delta` must be < 1; got 1.0"),
        (dict(clip=0.0), ValueError, r"`clip` must be >= 1e-100; got 0.0"),
        (dict(rounds=0), ValueError, r"`rounds` must be >= 1; got 0"),
        (dict(local_iters=0), ValueError, r"`local_iters` must be >= 1; got 0"),
        (dict(feature_bound=-1.0), ValueError, r"`feature_bound` must lie in \[1e-100, 1e\+100\]"),
        (dict(feature_bound=None), ValueError, r"`feature_bound` \(a public bound on x_ia²\) is required"),
        (dict(smoothness="raw"), ValueError, r"`smoothness` must be one of 'private', 'bounds'; got 'raw'"),
        (dict(smoothness=np.zeros(D)), ValueError, r"`smoothness` must lie in \[1e-100, 1e\+100\]"),
        (dict(calibration="loose"), ValueError, r"`calibration` must be one of 'tight', 'paper'"),
        (dict(centre="raw"), ValueError, r"`centre` must be one of 'declared', 'private'; got 'raw'"),
        (
            dict(neighbouring="add-remove"),
            ValueError,
            r"`neighbouring` must be one of \['replace-one'\]; got 'add-remove'",
        ),
        (dict(shares=0.1), ValueError, r"`shares` must be a pair \(smoothness, centring\)"),
        (dict(shares=(0.1,)), ValueError, r"`shares` must be a pair"),
    ],
)
def test_bad_input(data, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        dp_fed_sparse_bnsl(data.participants, **{**KW, **kwargs})


def test_bad_participants():
    with pytest.raises(ValueError, match=r"participant 1\) has 3 columns but participant 0 has 4"):
        dp_fed_sparse_bnsl([np.ones((5, 4)), np.ones((5, 3))], **KW)
    X = np.ones((5, 4))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"participant 0\) has a non-finite value nan"):
        dp_fed_sparse_bnsl([X], **KW)


# ----------------------------------------------------------------------------- pre-processing


@pytest.mark.parametrize("seed", range(20))
def test_smoothness_and_mean_sensitivity_on_neighbouring_datasets(seed):
    """With the noise off (multiplier 0) the released statistics are the pre-noise values: replacing
    one row (random, or crafted far beyond the bounds) moves each m_a by ≤ X_a/n and the clipped
    mean vector by ≤ 2‖√X‖₂/n in ℓ2."""
    rng = np.random.default_rng(seed)
    n, d = 30, 4
    bound = rng.uniform(0.5, 4.0, d)
    X = rng.normal(size=(n, d))
    X2 = X.copy()
    X2[rng.integers(n)] = rng.normal(size=d) * (1.0 if seed % 2 else 1e3)
    g = np.random.default_rng(0)
    kw = dict(bound=bound, multiplier=0.0, rng=g, floor=1e-300, ledger=PrivacyLedger())
    m1, m2 = private_smoothness(X, **kw), private_smoothness(X2, **kw)
    assert np.all(np.abs(m1 - m2) <= bound / n * (1 + 1e-12))
    mu1 = private_mean(X, bound=bound, multiplier=0.0, rng=g, ledger=PrivacyLedger())
    mu2 = private_mean(X2, bound=bound, multiplier=0.0, rng=g, ledger=PrivacyLedger())
    assert np.linalg.norm(mu1 - mu2) <= 2 * np.linalg.norm(np.sqrt(bound)) / n * (1 + 1e-12)


def test_smoothness_release_is_recorded_and_floored():
    X = np.zeros((10, 3))
    ledger = PrivacyLedger()
    m = private_smoothness(
        X, bound=1.0, multiplier=2.0, rng=np.random.default_rng(0), ledger=ledger, floor=0.05
    )
    assert np.all(m >= 0.05)
    assert [(e.label, e.count, e.event.noise_multiplier) for e in ledger.entries] == [("smoothness", 3, 2.0)]


@pytest.mark.parametrize("private", [False, True])
def test_state_kept_across_rounds_equals_rebuilding_it(data, monkeypatch, private):
    """Participants keep the PGCD state (residual, clipped data gradient) between rounds and only
    refresh the β/W terms. Rebuilding it from scratch every round must give the same run (the
    rebuild draws no randomness, so the private run sees the same random stream)."""

    def run():
        if private:
            return dp_fed_sparse_bnsl(data.participants, rng=4, **KW)
        return fsb.fed_sparse_bnsl(data.participants, rounds=6, local_iters=5)

    kept = run()
    original = admm.SparseParticipant.__call__

    def rebuilding(self, t, inbox):
        self.state = None
        return original(self, t, inbox)

    monkeypatch.setattr(admm.SparseParticipant, "__call__", rebuilding)
    rebuilt = run()
    np.testing.assert_allclose(kept.W_raw, rebuilt.W_raw, rtol=0, atol=1e-9)
    for a, b in zip(kept.transcript.learning(), rebuilt.transcript.learning()):
        np.testing.assert_array_equal(a.payload.index, b.payload.index)


def test_default_schedule_reads_public_quantities_only():
    """T·K = ⌊m*²ρ⌋ with m* = 0.45·n_k/ln(d(d−1)), within [10, 5000], in up to 50 rounds; more
    budget or more rows give more steps, more coordinates fewer; too small a budget warns."""
    from dpbnsl.accounting import epsilon_to_rho
    from dpbnsl.learners.linear.dp_fed_sparse_bnsl import SNR_KAPPA, default_schedule

    rho = 0.9 * epsilon_to_rho(5.0, 1e-5, conversion="bun-steinke")
    T, K = default_schedule(d=20, n_k=1000, rho=rho)
    m = SNR_KAPPA * 1000 / math.log(20 * 19)
    assert T * K <= int(m * m * rho) < T * (K + 1) and 10 <= T <= 50
    steps = {d: math.prod(default_schedule(d=d, n_k=1000, rho=rho)) for d in (20, 50, 100, 200)}
    assert steps[20] >= steps[50] >= steps[100] >= steps[200] >= 10
    assert math.prod(default_schedule(d=20, n_k=2000, rho=rho)) > steps[20]
    assert math.prod(default_schedule(d=20, n_k=1000, rho=100.0)) <= 5000
    with pytest.warns(UserWarning, match=r"can afford only 0 step\(s\)"):
        assert default_schedule(d=15, n_k=30, rho=0.01) == (10, 1)
    # the learner uses it when rounds or local_iters are unset, and records the choice
    data = simulate(6, 600, participants=2, rng=0)
    r = dp_fed_sparse_bnsl(data.participants, epsilon=5.0, delta=1e-5, feature_bound=30.0)
    pl = plan(6, epsilon=5.0, delta=1e-5, n_k=(300, 300), feature_bound=30.0)
    assert (r.params["rounds"], r.params["local_iters"]) == (pl.hyper["rounds"], pl.hyper["local_iters"])


def test_infinite_epsilon_is_the_same_pipeline_without_noise(data):
    """ε = ∞ (as for DP-Fed-BNSL): every multiplier 0, the privacy stated as none, and the run is
    deterministic whatever the seed (no noise is drawn: the selections are exact argmaxes)."""
    kw = dict(epsilon=math.inf, delta=1e-5, feature_bound=50.0, rounds=3, local_iters=4)
    a = dp_fed_sparse_bnsl(data.participants, rng=1, **kw)
    b = dp_fed_sparse_bnsl(data.participants, rng=2, **kw)
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    assert math.isinf(a.privacy.epsilon) and "no privacy guarantee" in str(a.privacy)
    assert a.info["noise"].gumbel_multiplier == 0.0 and a.info["warm_start"]["multiplier"] == 0.0
    assert a.info["smoothness_multiplier"] == 0.0
    pl = plan(D, epsilon=math.inf, delta=1e-5, n_k=200, feature_bound=50.0)
    assert pl.hyper["rounds"] * pl.hyper["local_iters"] <= sparse_plan.MAX_STEPS  # the no-noise schedule
