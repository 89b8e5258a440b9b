"""CI tests (Fisher-z, G²) against statistics computed independently with scipy, and the discrete
Bayesian-network simulator / BIF reader that produces the discrete test data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats

from dpbnsl.learners.constraint.citests import CITest, FisherZ, GSquare, check_alpha, make_ci_test
from dpbnsl.simulation.discrete import DiscreteBN, random_discrete_bn, read_bif, simulate_discrete

# ----------------------------------------------------------------------------- Fisher-z


def _gaussian(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) * (rng.random((d, d)) < 0.6)
    return rng.normal(size=(n, d)) @ (np.eye(d) + A)


def _fisher_oracle(X, i, j, S):
    """Partial correlation from regression residuals, then the Fisher-z p-value (scipy.stats)."""
    n = X.shape[0]
    Z = np.column_stack([np.ones(n), X[:, list(S)]])
    res = [X[:, k] - Z @ np.linalg.lstsq(Z, X[:, k], rcond=None)[0] for k in (i, j)]
    r = scipy.stats.pearsonr(*res).statistic
    z = np.sqrt(n - len(S) - 3) * np.arctanh(r)
    return r, 2 * scipy.stats.norm.sf(abs(z))


def test_fisher_z_matches_regression_residual_oracle():
    X = _gaussian()
    ci = FisherZ(X)
    d = X.shape[1]
    for i, j in itertools.combinations(range(d), 2):
        rest = [k for k in range(d) if k not in (i, j)]
        for size in range(4):
            for S in itertools.combinations(rest, size):
                r, p = _fisher_oracle(X, i, j, S)
                res = ci.result(i, j, S)
                assert res.statistic == pytest.approx(r, rel=1e-9, abs=1e-12)
                assert res.p_value == pytest.approx(p, rel=1e-7, abs=1e-300)
                assert res.dof == X.shape[0] - size - 3


def test_fisher_z_from_covariance_equals_from_data():
    X = _gaussian(seed=1)
    a, b = FisherZ(X), FisherZ.from_correlation(np.cov(X, rowvar=False) * 7.0, X.shape[0])
    for S in [(), (2,), (2, 3)]:
        assert a.test(0, 1, S) == pytest.approx(b.test(0, 1, S), rel=1e-10)


def test_fisher_z_not_applicable_is_nan_and_dependent():
    X = _gaussian(n=6)
    ci = FisherZ(X)
    assert np.isnan(ci.test(0, 1, (2, 3, 4)))  # n - |S| - 3 = 0
    assert not ci.independent(0, 1, (2, 3, 4), alpha=0.01)
    dup = np.column_stack([_gaussian(n=100), _gaussian(n=100, seed=3)[:, 0]])
    dup[:, 5] = dup[:, 4]
    assert np.isnan(FisherZ(dup).test(0, 1, (4, 5)))  # singular correlation sub-matrix
    perfect = np.column_stack([dup[:, 0], 2 * dup[:, 0] + 1, dup[:, 1]])
    assert FisherZ(perfect).test(0, 1) == 0.0  # |r| = 1


def test_cache_is_symmetric_and_counts():
    ci = FisherZ(_gaussian())
    p = ci.test(3, 1, (4, 0))
    assert ci.test(1, 3, (0, 4)) == p
    assert ci.n_computed == 1 and ci.n_calls == 2
    assert isinstance(ci, CITest)


def test_pvalues_uniform_under_independence():
    """Share of p < 0.05 under H0 in 600 replications: binomial(600, 0.05) has mean 30 and sd 5.3,
    so 30 ± 22 (≈ 4 sd) bounds a correct test."""
    rng = np.random.default_rng(11)
    hits_z = hits_g = 0
    for _ in range(600):
        X = rng.normal(size=(100, 3))
        hits_z += FisherZ(X).test(0, 1, (2,)) < 0.05
        D = rng.integers(0, 3, size=(300, 3))
        hits_g += GSquare(D, min_samples_per_cell=0).test(0, 1, (2,)) < 0.05
    assert 8 <= hits_z <= 52
    assert 8 <= hits_g <= 52


# ----------------------------------------------------------------------------- G²


def _g2_oracle(D, i, j, S):
    """Sum over strata of scipy's log-likelihood statistic on the table without empty rows and
    columns; its dof then equals the adjusted df of the FedPC reference code."""
    keys = [tuple(row) for row in D[:, list(S)]] if S else [()] * D.shape[0]
    G, df = 0.0, 0
    _, stratum = np.unique(np.array(keys).reshape(len(keys), -1), axis=0, return_inverse=True)
    for z in np.unique(stratum):
        rows = D[stratum.ravel() == z]
        table = np.zeros((D[:, i].max() + 1, D[:, j].max() + 1))
        np.add.at(table, (rows[:, i], rows[:, j]), 1)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
        if min(table.shape) < 2:
            continue  # a single non-empty row or column adds nothing to G² or df
        stat, _, dof, _ = scipy.stats.chi2_contingency(table, correction=False, lambda_="log-likelihood")
        G += stat
        df += dof
    return G, df, (1.0 if df == 0 else scipy.stats.chi2.sf(G, df))


@pytest.mark.parametrize("seed", [0, 1])
def test_g2_matches_scipy_per_stratum(seed):
    sim = simulate_discrete(6, 600, s0=7, levels=[2, 3, 4, 2, 3, 2], rng=seed)
    ci = GSquare(sim.X, min_samples_per_cell=0)
    for i, j in [(0, 1), (1, 2), (2, 5), (3, 4)]:
        rest = [k for k in range(6) if k not in (i, j)]
        for size in range(3):
            for S in itertools.combinations(rest, size):
                G, df, p = _g2_oracle(sim.X, i, j, S)
                res = ci.result(i, j, S)
                assert res.statistic == pytest.approx(G, rel=1e-9, abs=1e-9)
                assert res.dof == df
                assert res.p_value == pytest.approx(p, rel=1e-7, abs=1e-300)


def test_g2_classic_dof_and_reliability_rule():
    D = np.random.default_rng(0).integers(0, 3, size=(200, 4))
    classic = GSquare(D, dof="classic", min_samples_per_cell=0)
    assert classic.result(0, 1, (2, 3)).dof == 2 * 2 * 9
    # 200 / (3*3*3) = 7.4 >= 5 runs; 200 / 81 = 2.5 < 5 is not applicable (nan -> dependent)
    reliable = GSquare(D)
    assert np.isfinite(reliable.test(0, 1, (2,)))
    assert np.isnan(reliable.test(0, 1, (2, 3)))
    assert not reliable.independent(0, 1, (2, 3), alpha=0.01)
    assert np.isfinite(GSquare(D, min_samples_per_cell=2).test(0, 1, (2, 3)))


def test_g2_zero_dof_gives_p_one():
    D = np.column_stack([np.random.default_rng(0).integers(0, 2, 50), np.zeros(50, int)])
    res = GSquare(D, levels=[2, 2]).result(0, 1)  # Y has one observed level: df = 1 * 0
    assert res.dof == 0 and res.p_value == 1.0


def test_g2_strata_codes_do_not_overflow():
    rng = np.random.default_rng(0)
    D = rng.integers(0, 2, size=(400, 8))
    ci = GSquare(D, levels=[2] * 2 + [10**4] * 6, min_samples_per_cell=0)  # Π levels = 1e24
    G, df, p = _g2_oracle(D, 0, 1, tuple(range(2, 8)))
    res = ci.result(0, 1, tuple(range(2, 8)))
    assert res.statistic == pytest.approx(G, rel=1e-9) and res.dof == df


def test_auto_detection():
    assert make_ci_test(np.random.default_rng(0).integers(0, 3, (50, 3)), test="auto").name == "g2"
    assert make_ci_test(_gaussian(), test="auto").name == "fisher-z"


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "alpha, exc, match",
    [
        (0, ValueError, r"`alpha` must be > 0; got 0"),
        (1.0, ValueError, r"`alpha` must be < 1; got 1.0"),
        (-0.5, ValueError, r"`alpha` must be > 0; got -0.5"),
        ("0.05", TypeError, r"`alpha` must be a real number; got str '0.05'"),
        (float("nan"), ValueError, r"`alpha` must be finite"),
    ],
)
def test_alpha_validation(alpha, exc, match):
    with pytest.raises(exc, match=match):
        check_alpha(alpha)
    with pytest.raises(exc, match=match):
        FisherZ(_gaussian()).independent(0, 1, alpha=alpha)


def test_discrete_data_validation():
    with pytest.raises(ValueError, match=r"integer category codes .* got 0.5 at row 1, column 0"):
        GSquare(np.array([[0, 1], [0.5, 0], [1, 1]]))
    with pytest.raises(ValueError, match=r"non-negative category codes; got -1.0 at row 2"):
        GSquare(np.array([[0, 1], [1, 0], [-1, 1]]))
    with pytest.raises(ValueError, match=r"`X` column 1 has a single level \(2\)"):
        GSquare(np.array([[0, 2], [1, 2], [1, 2]]))
    with pytest.raises(ValueError, match=r"column 0 has code 2 but `levels\[0\]` = 2"):
        GSquare(np.array([[0, 1], [2, 0]]), levels=[2, 2])
    with pytest.raises(ValueError, match=r"`levels\[1\]` must be >= 2; got 1"):
        GSquare(np.array([[0, 0], [1, 0]]), levels=[2, 1])
    with pytest.raises(ValueError, match=r"`levels` must hold d = 2 level counts; got 3"):
        GSquare(np.array([[0, 0], [1, 1]]), levels=[2, 2, 2])
    with pytest.raises(ValueError, match=r"`dof` must be one of 'adjusted', 'classic'; got 'x'"):
        GSquare(np.array([[0, 0], [1, 1]]), dof="x")


def test_index_and_test_name_validation():
    ci = FisherZ(_gaussian())
    with pytest.raises(ValueError, match=r"`i` and `j` must differ; got 2 twice"):
        ci.test(2, 2)
    with pytest.raises(ValueError, match=r"`j` must be <= 4; got 9"):
        ci.test(0, 9)
    with pytest.raises(ValueError, match=r"`S` = \[0, 3\] must hold distinct indices other than"):
        ci.test(0, 1, (0, 3))
    with pytest.raises(ValueError, match=r"`S` holds 7, not a column index in 0..4"):
        ci.test(0, 1, (7,))
    with pytest.raises(
        ValueError,
        match=r"`test` must be one of 'fisher-z', 'g2', 'auto'; "
        r"got 'chi2'",
    ):
        make_ci_test(_gaussian(), test="chi2")
    X = _gaussian()
    X[:, 2] = 1.0
    with pytest.raises(ValueError, match=r"`X` column 2 is constant; Fisher-z needs"):
        FisherZ(X)


def test_inputs_untouched():
    X = _gaussian()
    D = np.random.default_rng(0).integers(0, 3, size=(100, 3)).astype(float)
    X0, D0 = X.copy(), D.copy()
    FisherZ(X).test(0, 1, (2,))
    GSquare(D).test(0, 1, (2,))
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(D, D0)


# ----------------------------------------------------------------------------- discrete BNs

BIF = """// tiny network in the bnlearn style
network tiny {
}
variable rain {
  type discrete [ 2 ] { yes, no };
}
variable sprinkler {
  type discrete [ 2 ] = { on, off };
  property position = (10, 20);
}
variable wet {
  type discrete [ 3 ] { dry, damp, soaked };
}
probability ( rain ) {
  table 0.2, 0.8;
}
probability ( sprinkler | rain ) {
  (yes) 0.01, 0.99;
  (no) 0.4, 0.6;
}
probability ( wet | sprinkler, rain ) {
  (on, yes) 0.0, 0.1, 0.9;
  (off, no) 1.0, 0.0, 0.0;
  default 0.1, 0.6, 0.3;
}
"""


@pytest.fixture()
def tiny_bif(tmp_path):
    path = tmp_path / "tiny.bif"
    path.write_text(BIF)
    return path


def test_read_bif_structure_and_tables(tiny_bif):
    bn = read_bif(tiny_bif)
    assert bn.names == ("rain", "sprinkler", "wet")
    assert bn.states[2] == ("dry", "damp", "soaked") and bn.levels == (2, 2, 3)
    assert bn.parents == ((), (0,), (0, 1))  # ascending, whatever the file's order
    np.testing.assert_array_equal(bn.adjacency, [[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    wet = bn.cpts[2]  # axes (rain, sprinkler, wet)
    np.testing.assert_allclose(wet[0, 0], [0.0, 0.1, 0.9])  # rain=yes, sprinkler=on
    np.testing.assert_allclose(wet[1, 1], [1.0, 0.0, 0.0])  # rain=no, sprinkler=off
    np.testing.assert_allclose(wet[0, 1], [0.1, 0.6, 0.3])  # default
    np.testing.assert_allclose(bn.cpts[1], [[0.01, 0.99], [0.4, 0.6]])
    assert not bn.cpts[0].flags.writeable


def test_read_bif_table_with_parents_is_child_major(tmp_path):
    text = BIF.replace(
        """  (yes) 0.01, 0.99;
  (no) 0.4, 0.6;""",
        "  table 0.01, 0.4, 0.99, 0.6;",
    )
    (tmp_path / "t.bif").write_text(text)
    np.testing.assert_allclose(read_bif(tmp_path / "t.bif").cpts[1], [[0.01, 0.99], [0.4, 0.6]])


def test_bif_sample_frequencies(tiny_bif):
    """P(wet = soaked) = Σ P(rain) P(sprinkler | rain) P(soaked | ...) = 0.2·(0.01·0.9 + 0.99·0.3)
    + 0.8·(0.4·0.3 + 0.6·0) = 0.1572; with n = 40000 the sd is 0.0018, 4 sd = 0.0073."""
    bn = read_bif(tiny_bif)
    X = bn.sample(40000, rng=1)
    assert X.dtype.kind == "i" and X.shape == (40000, 3)
    assert abs(np.mean(X[:, 2] == 2) - 0.1572) < 0.0073
    assert abs(np.mean(X[:, 0] == 0) - 0.2) < 0.008
    frame = bn.sample(5, rng=1, as_frame=True)
    assert list(frame.columns) == ["rain", "sprinkler", "wet"]
    np.testing.assert_array_equal(frame.to_numpy(), bn.sample(5, rng=1))


@pytest.mark.parametrize(
    "edit, match",
    [
        (
            lambda t: t.replace("probability ( rain ) {\n  table 0.2, 0.8;\n}\n", ""),
            r"no probability block for \['rain'\]",
        ),
        (lambda t: t.replace("table 0.2, 0.8;", "table 0.2, 0.7, 0.1;"), r"table has 3 values"),
        (lambda t: t.replace("(no) 0.4, 0.6;", "(maybe) 0.4, 0.6;"), r"unknown parent state"),
        (lambda t: t.replace("(no) 0.4, 0.6;", ""), r"1 parent configuration\(s\) have no"),
        (lambda t: t.replace("table 0.2, 0.8;", "table 0.2, 0.7;"), r"rows sum to 1"),
        (
            lambda t: t.replace(
                "probability ( rain ) {\n  table 0.2, 0.8;",
                "probability ( rain | wet ) {\n  table 0.2, 0.2, 0.2, 0.8, 0.8, 0.8;",
            ),
            r"directed cycle",
        ),
        (lambda t: t.replace("sprinkler | rain", "sprinkler | snow"), r"unknown variable\(s\) \['snow'\]"),
        (lambda t: "nothing here", r"no 'variable' block"),
    ],
)
def test_read_bif_errors(tmp_path, edit, match):
    (tmp_path / "bad.bif").write_text(edit(BIF))
    with pytest.raises(ValueError, match=match):
        read_bif(tmp_path / "bad.bif")


def test_random_discrete_bn_cpts_and_empirical_conditionals():
    bn = random_discrete_bn(5, s0=5, levels=[2, 3, 2, 4, 3], concentration=0.5, rng=3)
    assert bn.levels == (2, 3, 2, 4, 3)
    for j, (pa, cpt) in enumerate(zip(bn.parents, bn.cpts)):
        assert cpt.shape == tuple(bn.levels[p] for p in pa) + (bn.levels[j],)
        np.testing.assert_allclose(cpt.sum(axis=-1), 1.0)
    X = bn.sample(60000, rng=0)
    j = max(range(5), key=lambda k: len(bn.parents[k]))
    pa = bn.parents[j]
    for cfg in itertools.product(*(range(bn.levels[p]) for p in pa)):
        rows = np.all(X[:, list(pa)] == cfg, axis=1) if pa else np.ones(len(X), bool)
        if rows.sum() < 2000:
            continue
        freq = np.bincount(X[rows, j], minlength=bn.levels[j]) / rows.sum()
        # sd of a frequency <= 0.5 / sqrt(2000) = 0.011; 4 sd = 0.045
        np.testing.assert_allclose(freq, bn.cpts[j][cfg], atol=0.045)


def test_simulate_discrete_determinism_and_validation():
    a, b = simulate_discrete(6, 100, levels=3, rng=5), simulate_discrete(6, 100, levels=3, rng=5)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.B_true, a.bn.adjacency)
    assert a.X.max() <= 2 and a.X.min() >= 0
    with pytest.raises(ValueError, match=r"`levels` must be >= 2; got 1"):
        simulate_discrete(4, 10, levels=1)
    with pytest.raises(ValueError, match=r"`levels` must be an int >= 2 or a sequence of d = 4"):
        simulate_discrete(4, 10, levels=[2, 2])
    with pytest.raises(ValueError, match=r"`concentration` must be > 0; got 0"):
        random_discrete_bn(3, s0=2, concentration=0)
    with pytest.raises(ValueError, match=r"CPT of 'a' has shape \(3,\); expected \(2,\)"):
        DiscreteBN(names=("a",), states=(("x", "y"),), parents=((),), cpts=(np.ones(3) / 3,))
