"""PC on a private covariance: the noise-aware Fisher-z test (exact without noise, its noise
variance checked by simulation, its level held under the null where the plain test's is not, any
release tested without a crash) and the learner under both trust models."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbnsl.federation import Dense, Masked
from dpbnsl.learners.constraint.citests import FisherZ
from dpbnsl.learners.constraint.dp_cov_pc import dp_cov_pc, pc_from_covariance
from dpbnsl.learners.constraint.noisy_fisher_z import NoisyFisherZ
from dpbnsl.learners.constraint.pc import pc
from dpbnsl.simulation import simulate


def _chain(n: int, rng: np.random.Generator) -> np.ndarray:
    X = rng.normal(size=(n, 6))
    X[:, 1] += X[:, 0]
    X[:, 2] += 0.8 * X[:, 1]
    X[:, 4] += 0.5 * X[:, 3]
    return X


def test_without_noise_it_is_fisher_z():
    X = _chain(500, np.random.default_rng(0))
    C = np.cov(X, rowvar=False)
    noisy, plain = NoisyFisherZ(C, 500, noise_sd=0.0), FisherZ.from_correlation(C, 500)
    for i, j, S in [(0, 1, ()), (0, 2, (1,)), (0, 2, (1, 3)), (3, 5, (0, 1, 2)), (2, 4, (0, 1, 3, 5))]:
        a, b = noisy.result(i, j, S), plain.result(i, j, S)
        assert a.statistic == pytest.approx(b.statistic, abs=1e-12)
        assert a.p_value == pytest.approx(b.p_value, rel=1e-9, abs=1e-300)
        assert a.dof == pytest.approx(b.dof)
    assert not noisy.repaired


def test_pc_from_a_noiseless_covariance_is_pc_on_the_data():
    data = simulate(8, 3000, participants=1, rng=2)
    X = data.X - data.X.mean(axis=0)
    a = pc_from_covariance(np.cov(X, rowvar=False), 3000)
    b = pc(X)
    assert np.array_equal(a.info["cpdag"], b.info["cpdag"])


def test_the_noise_variance_of_the_partial_correlation_matches_simulation():
    """The delta method's Var(atanh r) from the release noise against 4,000 simulated releases.
    The sample variance of 4,000 draws has a relative sd of √(2/4000) ≈ 2.2 %; the linearisation
    error at s = 0.02 on a well-conditioned 4 × 4 block is a few percent (measured 4 % at 20,000
    draws), so 12 % is beyond 4 sd of the sampling plus the bias."""
    rng = np.random.default_rng(1)
    C = np.cov(_chain(500, rng), rowvar=False)
    s, idx = 0.02, [0, 2, 1, 3]
    test = NoisyFisherZ(C, 500, noise_sd=s, floor=1e-9)
    res = test.result(0, 2, (1, 3))
    predicted = 1.0 / res.dof - 1.0 / (500 - 2 - 3)
    iu = np.triu_indices(6)
    draws = []
    for _ in range(4000):
        E = np.zeros((6, 6))
        E[iu] = rng.normal(scale=s, size=iu[0].size)
        E = E + np.triu(E, 1).T
        P = np.linalg.inv((C + E)[np.ix_(idx, idx)])
        draws.append(np.arctanh(-P[0, 1] / math.sqrt(P[0, 0] * P[1, 1])))
    assert predicted == pytest.approx(np.var(draws), rel=0.12)


def test_the_noise_aware_test_holds_its_level_where_the_plain_test_does_not():
    """X0 ⊥ X1 | X2 holds; 300 noisy releases of one covariance. With the noise in its variance
    the test rejects at most α = 0.05 plus 3 sd of a binomial(300, 0.05) rate (0.038), so ≤ 0.09;
    the plain Fisher-z test on the same releases, with 10⁴ rows' precision, rejects far more."""
    rng = np.random.default_rng(3)
    n = 10_000
    Z = rng.normal(size=n)
    X = np.column_stack([Z + rng.normal(size=n), Z + rng.normal(size=n), Z])
    C = np.cov(X, rowvar=False)
    s, iu = 0.05, np.triu_indices(3)
    aware = plain = 0
    for _ in range(300):
        E = np.zeros((3, 3))
        E[iu] = rng.normal(scale=s, size=iu[0].size)
        S = C + E + np.triu(E, 1).T
        aware += NoisyFisherZ(S, n, noise_sd=s).test(0, 1, (2,)) <= 0.05
        plain += NoisyFisherZ(S, n, noise_sd=0.0).test(0, 1, (2,)) <= 0.05
    assert aware / 300 <= 0.09
    assert plain / 300 >= 0.3


@pytest.mark.parametrize(
    "S",
    [
        np.array([[1e-300, 1.0], [1.0, 1e-300]]),
        np.diag([1e307, 1e307, 1.0]),
        np.array([[0.0, 0.0], [0.0, 1.0]]),
    ],
)
def test_degenerate_releases_answer_without_noise(S):
    """Without noise the floor is relative to the largest entry: a release with a tiny diagonal,
    one near the float limit and one with a zero variance are tested without a crash."""
    test = NoisyFisherZ(S, 100, noise_sd=0.0)
    assert 0.0 <= test.test(0, 1) <= 1.0


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e150])
def test_an_indefinite_release_is_repaired_and_every_test_answers(scale):
    rng = np.random.default_rng(4)
    S = rng.normal(size=(7, 7))
    S = (S + S.T) * scale  # indefinite: half its eigenvalues are negative
    test = NoisyFisherZ(S, 100, noise_sd=0.5 * scale)
    assert test.repaired
    for S_ in [(), (2,), (2, 3, 4), (2, 3, 4, 5, 6)]:
        p = test.test(0, 1, S_)
        assert 0.0 <= p <= 1.0
    r = pc_from_covariance(S, 100, noise_sd=0.5 * scale)
    assert r.is_dag and r.info["repaired"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(S=np.ones((2, 3)), n=10, noise_sd=0.1), "square"),
        (dict(S=np.array([[1.0, 0.5], [0.0, 1.0]]), n=10, noise_sd=0.1), "symmetric"),
        (dict(S=np.eye(2), n=1, noise_sd=0.1), "`n`"),
        (dict(S=np.eye(2), n=10, noise_sd=-1.0), "`noise_sd`"),
        (dict(S=np.eye(2), n=10, noise_sd=float("nan")), "`noise_sd`"),
        (dict(S=np.zeros((2, 2)), n=10, noise_sd=0.1), "all zeros"),
        (dict(S=np.eye(2), n=10, noise_sd=0.1, floor=0.0), "`floor`"),
    ],
)
def test_bad_inputs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoisyFisherZ(**kwargs)


@pytest.fixture(scope="module")
def data():
    return simulate(6, 6000, participants=4, rng=5)


def _run(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp_cov_pc(data.participants, epsilon=2.0, delta=1e-5, clip_norm=8.0, **kw)


@pytest.mark.parametrize("aggregation", ["local", "secure"])
def test_the_learner_spends_its_budget_once_under_either_trust_model(data, aggregation):
    r = _run(data, aggregation=aggregation, rng=0)
    assert r.method == "dp-cov-pc" and r.is_dag and r.params["aggregation"] == aggregation
    assert r.privacy.epsilon <= 2.0 and len(r.ledger) == 4
    assert all(len(led.entries) == 1 for led in r.ledger)  # one release, whatever PC tests
    assert r.info["ci_tests"] > 0
    # what each participant sent with its data in it: masked shares, or its own noisy covariance
    ups = [m for m in r.transcript if m.round >= 0 and isinstance(m.sender, int)]
    kind = Masked if aggregation == "secure" else Dense
    assert len(ups) == 4 and all(isinstance(m.payload, kind) for m in ups)


def test_the_joint_release_carries_less_noise(data):
    """Local: z·√2·R²·√P/N per entry; secure: about √P = 2 times less (the RDP accounting and the
    grid's room take some of it back)."""
    local, secure = _run(data, rng=1), _run(data, aggregation="secure", rng=1)
    z = local.info["noise_multiplier"]
    assert local.info["noise_sd"] == pytest.approx(z * math.sqrt(2) * 64 * 2 / 6000)
    assert secure.info["noise_sd"] < 0.75 * local.info["noise_sd"]


def test_same_seed_same_graph(data):
    a, b = _run(data, aggregation="secure", rng=7), _run(data, aggregation="secure", rng=7)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.info["release"].S, b.info["release"].S)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(dropouts=1), '`dropouts` applies to aggregation="secure" only'),
        (dict(noise="ddg", modulus_bits=40), '`noise`, `modulus_bits` apply to aggregation="secure"'),
        (dict(aggregation="secure", calibration="classic"), "`calibration` applies"),
        (dict(aggregation="shared"), "`aggregation`"),
        (dict(aggregation="secure", dropouts=4), "`dropouts`"),
        (dict(alpha=1.5), "`alpha`"),
        (dict(epsilon=0.0), "`epsilon`"),
    ],
)
def test_bad_settings_are_refused_before_any_release(data, kwargs, match):
    kw = dict(epsilon=2.0, delta=1e-5, clip_norm=8.0) | kwargs
    with pytest.raises(ValueError, match=match):
        dp_cov_pc(data.participants, **kw)
