"""Priv-PC: the run, its ledger and guarantee, the cap on rounds, continuous data and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.io.networks import sample_network
from dpbnsl.learners.constraint.priv_pc import default_rounds, plan_priv_pc, priv_pc
from dpbnsl.mechanisms.sparse_vector import pure_dp_event
from dpbnsl.simulation import simulate


def _skeleton_f1(A, B):
    a, b = (A + A.T) > 0, (B + B.T) > 0
    iu = np.triu_indices(len(a), 1)
    a, b = a[iu], b[iu]
    return 2 * (a & b).sum() / (a.sum() + b.sum())


@pytest.fixture(scope="module")
def child():
    return sample_network("child", 20_000, rng=0)


def test_learns_child_and_states_its_guarantee(child):
    """ε = 50 on 20,000 rows of child: skeleton F1 0.75–0.92 over noise seeds 0–3 (the complete
    graph has 0.23); the ledger holds exactly the reserved rounds and certifies ≤ ε."""
    r = priv_pc(child.X, epsilon=50.0, delta=1e-3, rng=3)
    assert r.method == "priv-pc" and r.is_dag
    assert _skeleton_f1(r.info["skeleton"], child.B_true) >= 0.6
    (ledger,) = r.ledger
    K = default_rounds(20)
    assert [e.count for e in ledger.entries] == [K, K]
    assert ledger.entries[0].event == pure_dp_event(r.info["plan"].sieve_epsilon)
    assert r.privacy.epsilon <= 50.0 and ledger.epsilon(1e-3) <= 50.0
    assert r.info["examinations"] <= K
    assert np.array_equal(r.cpdag, r.info["cpdag"])
    assert set(r.history.columns) == {"level", "edges", "removed", "examinations", "seconds"}


def test_the_cap_stops_the_search_and_keeps_the_edges(child):
    """One reserved round: at most one edge can go, the search stops there, and the whole budget
    was spent on that one round."""
    r = priv_pc(child.X, epsilon=1.0, delta=1e-3, max_examinations=1, rng=0)
    assert r.info["examinations"] <= 1
    assert r.info["skeleton"].sum() // 2 >= 190 - 1
    assert r.info["plan"].rounds == 1
    if r.info["examinations"] == 1:
        assert r.info["exhausted"]


def test_a_seed_reproduces_and_fresh_entropy_differs(child):
    X = child.X[:3000]
    a = priv_pc(X, epsilon=2.0, delta=1e-3, rng=5)
    b = priv_pc(X, epsilon=2.0, delta=1e-3, rng=5)
    assert np.array_equal(a.W, b.W)
    runs = {priv_pc(X, epsilon=2.0, delta=1e-3).info["sieve_queries"] for _ in range(4)}
    assert len(runs) > 1


def test_continuous_data_with_public_bins():
    """A linear SEM with d = 6: binned conditioning, Kendall's τ on the raw values; a DataFrame's
    names are kept."""
    sim = simulate(6, 5000, participants=1, rng=0)
    frame = pd.DataFrame(sim.X, columns=list("abcdef"))
    r = priv_pc(frame, epsilon=20.0, delta=1e-3, data="continuous", bounds=(-10, 10), rng=0)
    assert r.columns == tuple("abcdef")
    assert _skeleton_f1(r.info["skeleton"], sim.B_true) >= 0.5  # seeds 0–3: 0.59–0.67; empty: 0
    assert r.params["bins"] == 4 and r.params["data"] == "continuous"


def test_the_plan_is_public_and_tight():
    p = plan_priv_pc(epsilon=1.0, delta=1e-3, n=100_000, rounds=1998)
    ledger = PrivacyLedger(neighbouring="replace-one")
    ledger.record("s", pure_dp_event(p.sieve_epsilon), 1998)
    ledger.record("e", pure_dp_event(p.examine_epsilon), 1998)
    assert 0.99 <= ledger.epsilon(1e-3) <= 1.0
    assert p.subsample_rows == 5000  # the authors' rule at small per-round ε: the 1/20 floor
    assert math.isclose(p.sieve_epsilon, p.examine_epsilon)
    assert (
        plan_priv_pc(epsilon=1.0, delta=1e-3, n=100_000, rounds=10, subsample=1.0).subsample_rows == 100_000
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(epsilon=0.0), "`epsilon`"),
        (dict(epsilon=math.inf), "`epsilon`"),
        (dict(delta=1.0), "`delta`"),
        (dict(alpha=1.5), "`alpha`"),
        (dict(data="mixed"), "`data` must be one of"),
        (dict(data="continuous"), "`bounds` is required for continuous data"),
        (dict(data="continuous", bounds=(1, 0)), "`bounds` must be finite with low < high"),
        (dict(bins=1), "`bins`"),
        (dict(max_examinations=0), "`max_examinations`"),
        (dict(subsample=0.0), "`subsample`"),
        (dict(subsample="half"), "`subsample` must be one of"),
        (dict(sieve_share=1.0), "`sieve_share`"),
        (dict(margin=math.nan), "`margin`"),
        (dict(accountant="exact"), "`accountant`"),
        (dict(levels=[2] * 5), "`levels` must hold one positive category count per column"),
        (dict(levels=[1] * 6), r"`X` column 0 holds code 1, beyond `levels`\[0\] = 1"),
        (dict(variant="fast"), "`variant`"),
        (dict(scale="log"), "`scale` must be one of"),
        (dict(levels=["a", "b", "c", "d", "e", "f"]), "`levels` must hold one positive category count"),
        (dict(data="continuous", bounds="wide"), "`bounds` must be a pair"),
    ],
)
def test_bad_input(kwargs, match):
    X = np.random.default_rng(0).integers(0, 2, (50, 6))
    with pytest.raises(ValueError, match=match):
        priv_pc(X, **(dict(epsilon=1.0, delta=1e-3, rng=0) | kwargs))


def test_bad_data():
    with pytest.raises(ValueError, match="category codes"):
        priv_pc(np.full((20, 3), 0.5), epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="at least 4"):
        priv_pc(np.zeros((3, 3)), epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="finite"):
        priv_pc(np.array([[0, 1], [1, np.nan], [0, 0], [1, 1]]), epsilon=1.0, delta=1e-3)


def test_the_p_value_scale_of_the_authors(child):
    """scale="p-value" compares p with α as the authors' code does; at ε = 10 on 20,000 rows it
    keeps far fewer true edges than the z scale (the reason the package compares |z|)."""
    z = priv_pc(child.X, epsilon=10.0, delta=1e-3, rng=0)
    p = priv_pc(child.X, epsilon=10.0, delta=1e-3, scale="p-value", rng=0)
    assert p.params["scale"] == "p-value" and p.privacy.epsilon <= 10.0
    assert _skeleton_f1(p.info["skeleton"], child.B_true) < _skeleton_f1(z.info["skeleton"], child.B_true)


def test_the_releases_use_the_planned_scales_and_never_more_rounds(child, monkeypatch):
    """Every sieve round is AboveThreshold at ε′ (the subsample's) with Δ on m rows; every
    examination is Laplace at ε_e with Δ on n rows; at most K of each, for K = 40 (the cap binds)."""
    import dpbnsl.learners.constraint.priv_pc as module
    from dpbnsl.learners.constraint.kendall import kendall_sensitivity

    rounds, exams = [], []
    real_svt, real_laplace = module.AboveThreshold, module.laplace_mechanism

    def svt(threshold, *, sensitivity, epsilon, rng):
        rounds.append((sensitivity, epsilon))
        return real_svt(threshold, sensitivity=sensitivity, epsilon=epsilon, rng=rng)

    def laplace(value, *, sensitivity, epsilon, rng):
        exams.append((sensitivity, epsilon))
        return real_laplace(value, sensitivity=sensitivity, epsilon=epsilon, rng=rng)

    monkeypatch.setattr(module, "AboveThreshold", svt)
    monkeypatch.setattr(module, "laplace_mechanism", laplace)
    r = priv_pc(child.X, epsilon=2.0, delta=1e-3, max_examinations=40, rng=0)
    plan, n = r.info["plan"], child.X.shape[0]
    assert r.info["exhausted"] and len(exams) == 40 and 1 <= len(rounds) <= 40
    assert plan.subsample_rows < n
    assert all(s == kendall_sensitivity(plan.subsample_rows, conditional=True) for s, _ in rounds)
    assert all(e == plan.sieve_epsilon_subsample for _, e in rounds)
    allowed = {kendall_sensitivity(n, conditional=c) for c in (False, True)}
    assert all(s in allowed and e == plan.examine_epsilon for s, e in exams)
