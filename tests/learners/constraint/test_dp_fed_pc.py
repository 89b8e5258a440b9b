"""DP-FedPC: private tests per participant, FedPC's vote, majority separating sets."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.io.networks import sample_network
from dpbnsl.learners.constraint.dp_fed_pc import dp_fed_pc, majority_sepsets
from dpbnsl.learners.constraint.priv_pc import default_rounds


@pytest.fixture(scope="module")
def child():
    return sample_network("child", 30_000, participants=3, rng=0)


def _skeleton_f1(A, B):
    a, b = (A + A.T) > 0, (B + B.T) > 0
    iu = np.triu_indices(len(a), 1)
    a, b = a[iu], b[iu]
    return 2 * (a & b).sum() / (a.sum() + b.sum())


def test_three_participants_each_with_its_own_budget(child):
    r = dp_fed_pc(child.participants, epsilon=10.0, delta=1e-3, rng=1)
    assert r.method == "dp-fed-pc" and r.is_dag and len(r.ledger) == 3
    K = default_rounds(20)
    for ledger in r.ledger:
        assert [e.count for e in ledger.entries] == [K, K]
        assert ledger.epsilon(1e-3) <= 10.0
    assert r.privacy.epsilon <= 10.0
    assert all(u <= K for u in r.info["examinations"])
    # better than the complete graph (F1 0.23) and the empty one; seeds 0–2 gave 0.41–0.50
    assert _skeleton_f1(r.info["skeleton"], child.B_true) >= 0.3
    assert r.info["min_votes"] == 1  # more than 30 % of 3


def test_the_server_sees_only_skeletons_and_separating_sets(child):
    r = dp_fed_pc(child.participants, epsilon=5.0, delta=1e-3, rng=2)
    kinds = {m.kind for m in r.transcript}
    assert kinds == {"local_skeleton", "global_skeleton", "separating_sets"}
    for m in r.transcript:
        values = np.unique(m.to_dense())
        if m.kind != "separating_sets":
            assert set(values) <= {0.0, 1.0}
        else:
            assert np.all(values == np.round(values)) and values.min() >= 0


def test_majority_sepsets():
    reports = [{(0, 1): (2,), (0, 3): ()}, {(0, 1): (2,)}, {(0, 1): (4,), (0, 3): (1,)}]
    assert majority_sepsets(reports) == {(0, 1): (2,), (0, 3): ()}  # tie: the smallest set first
    assert majority_sepsets([]) == {}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(epsilon=0.0), "`epsilon`"),
        (dict(ratio=1.0), "`ratio`"),
        (dict(vote_rule="all"), "`vote_rule`"),
        (dict(data="continuous"), "`bounds` is required"),
        (dict(max_examinations=0), "`max_examinations`"),
    ],
)
def test_bad_input(kwargs, match):
    parts = [np.random.default_rng(k).integers(0, 2, (40, 4)) for k in range(2)]
    with pytest.raises(ValueError, match=match):
        dp_fed_pc(parts, **(dict(epsilon=1.0, delta=1e-3, rng=0) | kwargs))
    with pytest.raises(ValueError, match="participant"):
        dp_fed_pc([parts[0], parts[1][:, :3]], epsilon=1.0, delta=1e-3)
