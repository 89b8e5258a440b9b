"""FedPC: voting, equivalence with PC, transcript contents, ID mapping, baselines, validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbnsl.federation import Dense
from dpbnsl.learners.constraint._fed_pc_orient import orientation_queries
from dpbnsl.learners.constraint._fed_pc_skeleton import SkeletonServer
from dpbnsl.learners.constraint.citests import FisherZ
from dpbnsl.learners.constraint.fed_pc import (
    LocalPC,
    alphabetical_ids,
    fed_pc,
    fed_pc_simple_i,
    fed_pc_simple_ii,
    min_votes,
    pc_all,
    pc_avg_scores,
    pc_best,
    pc_local,
)
from dpbnsl.learners.constraint.pc import pc
from dpbnsl.learners.result import LearnResult
from dpbnsl.metrics import count_accuracy, skeleton_scores
from dpbnsl.simulation import simulate
from dpbnsl.simulation.discrete import simulate_discrete
from dpbnsl.simulation.partition import split

FEDPC_DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "fedpc"


@pytest.fixture(scope="module")
def data():
    return simulate(8, 3000, participants=4, rng=3)


@pytest.fixture(scope="module")
def run(data):
    return fed_pc(data.participants)


# ----------------------------------------------------------------------------- voting


def test_min_votes_table_of_the_spec():
    assert [min_votes(n) for n in (3, 5, 10, 15)] == [1, 2, 4, 5]
    assert [min_votes(n, rule="code") for n in (3, 5, 10, 15)] == [1, 2, 3, 5]  # round(4.5) = 5
    assert min_votes(1) == min_votes(1, rule="code") == 1  # round(0.3) = 0 is floored at 1
    assert min_votes(10, 0.2) == 3 and min_votes(10, 0.2, rule="code") == 2  # 0.2·10 is exactly 2
    assert min_votes(100, 0.57) == 58  # 0.57·100 is 56.99999999999999 in floating point


def _uploads(d, P, edge_votes):
    """P participant skeletons in which edge (0, 1) appears in ``edge_votes`` of them and every
    other edge in all of them."""
    out = []
    for k in range(P):
        S = ~np.eye(d, dtype=bool)
        if k >= edge_votes:
            S[0, 1] = S[1, 0] = False
        out.append(Dense(S.astype(float)))
    return out


@pytest.mark.parametrize("votes, paper, code", [(2, False, False), (3, False, True), (4, True, True)])
def test_server_vote_edge_cases_at_ten_participants(votes, paper, code):
    for rule, kept in (("paper", paper), ("code", code)):
        server = SkeletonServer(
            4, need=min_votes(10, rule=rule), max_cond_size=None, termination="neighbours"
        )
        reply = server(0, _uploads(4, 10, votes))
        S = reply.payload.to_dense()
        assert bool(S[0, 1]) == kept == bool(S[1, 0])
        assert reply.kind == "global_skeleton" and not reply.stop


def test_server_never_readds_an_edge():
    server = SkeletonServer(3, need=1, max_cond_size=None, termination="neighbours")
    first = _uploads(3, 2, 0)  # edge (0, 1) dropped by everybody
    server(0, first)
    reply = server(1, _uploads(3, 2, 2))  # a (malformed) upload that has it again
    assert reply.payload.to_dense()[0, 1] == 0


def test_server_termination_rules():
    server = SkeletonServer(3, need=1, max_cond_size=None, termination="neighbours")
    assert not server(0, _uploads(3, 1, 1)).stop  # complete graph on 3 nodes: level 1 possible
    assert server(1, _uploads(3, 1, 1)).stop  # level 2 would need |adj(i) \ {j}| >= 2
    capped = SkeletonServer(5, need=1, max_cond_size=0, termination="neighbours")
    assert capped(0, _uploads(5, 1, 1)).stop
    degree = SkeletonServer(3, need=1, max_cond_size=None, termination="client-degree")
    assert not degree(1, _uploads(3, 1, 1)).stop and degree(2, _uploads(3, 1, 1)).stop


# ----------------------------------------------------------------------------- equivalences


@pytest.mark.parametrize("variant", ["stable", "original"])
@pytest.mark.parametrize("seed", range(3))
def test_one_participant_equals_pc(variant, seed):
    X = simulate(8, 600, participants=1, rng=seed).X
    f = fed_pc([X], variant=variant)
    p = pc(X, variant=variant, sepset="max-p")
    np.testing.assert_array_equal(f.info["skeleton"], p.info["skeleton"])
    np.testing.assert_array_equal(f.info["cpdag"], p.info["cpdag"])
    np.testing.assert_array_equal(f.W, p.W)
    assert len(f.history) == len(p.history) + 1  # + the orientation round


def test_one_participant_equals_pc_discrete():
    X = simulate_discrete(7, 2000, levels=3, concentration=0.5, rng=1).X
    f = fed_pc([X], test="g2")
    p = pc(X, test="g2", variant="original", sepset="max-p")
    np.testing.assert_array_equal(f.info["cpdag"], p.info["cpdag"])


def test_identical_participants_equal_pc(data):
    X = data.participants[0]
    f = fed_pc([X, X.copy(), X.copy()], variant="stable")
    p = pc(X, variant="stable", sepset="max-p")
    np.testing.assert_array_equal(f.info["cpdag"], p.info["cpdag"])
    assert all(k == 0 for k, _ in f.info["chosen"].values())  # ties go to the lowest index


# ----------------------------------------------------------------------------- transcript


def test_transcript_skeleton_rounds(data, run):
    t, P, d = run.transcript, 4, 8
    layers = run.info["layers"]
    assert t.n_participants == P and t.n_rounds == layers + 1
    assert {m.kind for m in t.learning()} == {"local_skeleton", "global_skeleton", "sepset_pvalues"}
    assert [m.kind for m in t.setup()] == ["data_shape"] * P + ["n_samples_levels"] * P
    need = run.info["min_votes"]
    previous = ~np.eye(d, dtype=bool)
    for r in range(layers):
        local = t.payloads(round=r, kind="local_skeleton") != 0
        glob = t.payloads(round=r, kind="global_skeleton") != 0
        assert local.shape == (P, d, d) and (local == local.transpose(0, 2, 1)).all()
        assert not (local & ~previous).any()  # participants only delete edges
        expected = (local.sum(axis=0) >= need) & previous
        assert (glob == expected).all()  # every participant receives the aggregate
        previous = expected
    np.testing.assert_array_equal(previous.astype(int), run.info["skeleton"])
    assert t.total_bytes == sum(8 * m.payload.values.size for m in t)


def test_transcript_orientation_messages(data, run):
    t, d, alpha = run.transcript, 8, 0.01
    last = t.n_rounds - 1
    S = run.info["skeleton"] != 0
    # the queries are derived from the last skeleton broadcast on both sides (not sent): every
    # non-adjacent pair with a common neighbour, candidates ne(i) ∪ ne(j) \ {i, j}
    assert not t.filter(round=last, direction="down")  # the server orients alone
    glob = t.filter(round=last - 1, participant=0, kind="global_skeleton")[0].to_dense() != 0
    np.testing.assert_array_equal(glob, S)
    queries = orientation_queries(S, candidates="union")
    pairs = [(i, j) for i, j, _ in queries]
    expected = [(i, j) for i in range(d) for j in range(i + 1, d) if not S[i, j] and (S[i] & S[j]).any()]
    assert pairs == expected
    for i, j, C in queries:
        np.testing.assert_array_equal(
            np.isin(np.arange(d), C), (S[i] | S[j]) & ~np.isin(np.arange(d), [i, j])
        )
    best = {}
    for k, X in enumerate(data.participants):
        ans = t.filter(round=last, participant=k, kind="sepset_pvalues")[0].to_dense()
        ci = FisherZ(X)
        for (i, j), row in zip(pairs, ans):
            if np.isnan(row[2]):
                continue
            Z = tuple(int(z) for z in np.flatnonzero(row[3:]))
            assert row[2] > alpha and len(Z) <= 3
            assert row[2] == pytest.approx(ci.test(i, j, Z), rel=1e-12)  # the p of that set
            if (i, j) not in best or row[2] > best[(i, j)][0]:
                best[(i, j)] = (row[2], Z)
    for pair, Z in run.info["sepsets"].items():
        assert Z == (best[pair][1] if pair in best else None)


def test_history(run):
    h = run.history
    assert list(h["phase"]) == ["skeleton"] * run.info["layers"] + ["orient"]
    assert list(h["round"]) == list(range(len(h)))
    assert h["ci_tests"].sum() == sum(run.info["ci_tests"])


# ----------------------------------------------------------------------------- IDs and contract


def test_alphabetical_ids_and_shuffled_columns(data):
    assert alphabetical_ids(["b", "a", "C"]) == {"C": 0, "a": 1, "b": 2}
    names = ["zeta", "alpha", "mu", "beta", "kappa", "eta", "nu", "chi"]
    frames = [pd.DataFrame(X, columns=names) for X in data.participants]
    shuffled = [
        f[list(np.random.default_rng(k).permutation(names))] if k % 2 else f for k, f in enumerate(frames)
    ]
    originals = [f.copy() for f in shuffled]
    a, b = fed_pc(frames), fed_pc(shuffled)
    np.testing.assert_array_equal(a.W, b.W)
    assert a.columns == b.columns == tuple(names)  # participant 0's order
    assert a.info["ids"]["alpha"] == 0 and a.info["ids"]["zeta"] == 7
    for f, g in zip(shuffled, originals):
        pd.testing.assert_frame_equal(f, g)
    # the transcript is in ID order: relabel the plain-array run by alphabetical order
    order = [names.index(n) for n in sorted(names)]
    plain = fed_pc([X[:, order] for X in data.participants])
    np.testing.assert_array_equal(plain.W, a.W[np.ix_(order, order)])
    assert plain.transcript.total_bytes == a.transcript.total_bytes


def test_id_mapping_errors(data):
    frame = pd.DataFrame(data.participants[0], columns=list("abcdefgh"))
    other = pd.DataFrame(data.participants[1], columns=list("abcdefgx"))
    with pytest.raises(
        ValueError,
        match=r"participant 1\) does not hold the same variables .* "
        r"\['h', 'x'\]",
    ):
        fed_pc([frame, other])
    with pytest.raises(TypeError, match=r"participant 1\) has no column names"):
        fed_pc([frame, data.participants[1]])
    dup = pd.DataFrame(data.participants[0], columns=list("abcdefga"))
    with pytest.raises(ValueError, match=r"\(participant 0\) has duplicate column names \['a'\]"):
        fed_pc([dup])


def test_deterministic_and_dag(data, run):
    again = fed_pc(data.participants)
    np.testing.assert_array_equal(run.W, again.W)
    assert run.is_dag and run.method == "fed-pc" and not run.W.flags.writeable


def test_code_profile_options(data):
    r = fed_pc(
        data.participants,
        vote_rule="code",
        max_cond_size=3,
        conflict="last",
        extension="max-parents",
        sepset_criterion="min-r",
        sepset_candidates="endpoints",
        no_sepset="skip",
        variant="stable",
        termination="client-degree",
    )
    assert r.is_dag and r.info["layers"] <= 4
    assert {m.kind for m in r.transcript.learning().uploads()} == {"local_skeleton", "sepset_abs_r"}


def test_discrete_levels_global_and_local():
    sim = simulate_discrete(6, 3000, levels=3, rng=0)
    parts = split(sim.X, 3)
    g = fed_pc(parts, test="g2")
    loc = fed_pc(parts, test="g2", levels="local")
    auto = fed_pc(parts, test="auto")
    assert g.params["test"] == auto.params["test"] == "g2"
    np.testing.assert_array_equal(g.W, auto.W)
    assert loc.is_dag and g.params["levels"] == "global"


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(alpha=0), ValueError, r"`alpha` must be > 0; got 0"),
        (dict(ratio=1.0), ValueError, r"`ratio` must be < 1; got 1.0"),
        (dict(ratio=0), ValueError, r"`ratio` must be > 0; got 0"),
        (dict(vote_rule="majority"), ValueError, r"`vote_rule` must be one of 'paper', 'code'"),
        (dict(termination="never"), ValueError, r"`termination` must be one of 'neighbours', "),
        (dict(sepset_candidates="all"), ValueError, r"`sepset_candidates` must be one of 'union', "),
        (dict(sepset_criterion="mean"), ValueError, r"`sepset_criterion` must be one of 'max-p', "),
        (dict(no_sepset="drop"), ValueError, r"`no_sepset` must be one of 'orient', 'skip'"),
        (dict(max_sepset_size=-1), ValueError, r"`max_sepset_size` must be >= 0; got -1"),
        (dict(test="g2"), ValueError, r"`participants` \(participant 0\) must hold integer category"),
        (dict(sepset_criterion="min-r", test="g2", levels=[2] * 8), ValueError, r"integer category"),
        (dict(id_mapping="yes"), TypeError, r"`id_mapping` must be a bool; got str"),
    ],
)
def test_validation(data, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fed_pc(data.participants, **kwargs)


def test_validation_discrete():
    parts = split(simulate_discrete(5, 400, levels=2, rng=0).X, 2)
    with pytest.raises(
        ValueError,
        match=r"`sepset_criterion` = 'min-r' needs test 'fisher-z'; "
        r"got 'g2'",
    ):
        fed_pc(parts, test="g2", sepset_criterion="min-r")
    with pytest.raises(ValueError, match=r"`levels` must be one of 'global', 'local'; got 'x'"):
        fed_pc(parts, test="g2", levels="x")
    const = [p.copy() for p in parts]
    for p in const:
        p[:, 2] = 1
    with pytest.raises(ValueError, match=r"column 2 has a single level in all the data"):
        fed_pc(const, test="g2")


# ----------------------------------------------------------------------------- baselines


def test_pc_all_is_pc_on_pooled_rows(data):
    a = pc_all(data.participants, variant="original")
    b = pc(np.vstack(data.participants), variant="original")
    np.testing.assert_array_equal(a.W, b.W)
    assert a.method == "pc-all"


def test_pc_best_and_avg(data):
    local = pc_local(data.participants)
    scores = pc_avg_scores(local=local, B_true=data.B_true)
    shd = [count_accuracy(data.B_true, r.W).shd for r in local.results]
    assert list(scores["shd"]) == shd and len(scores) == 4
    best = pc_best(local=local, B_true=data.B_true)
    assert best.info["oracle"] and best.info["chosen"] == int(np.argmin(shd))
    assert best.method == "pc-best"
    with pytest.raises(ValueError, match=r"`local` fits were given, so \['alpha'\] would be ignored"):
        pc_best(local=local, B_true=data.B_true, alpha=0.05)


def _fake_local(Ws, skeletons=None, sepsets=None):
    results = []
    for k, W in enumerate(Ws):
        info = {
            "skeleton": skeletons[k] if skeletons else (W | W.T),
            "sepsets": sepsets[k] if sepsets else {},
        }
        results.append(LearnResult("pc", W, W, pd.DataFrame(), info=info))
    return LocalPC(tuple(results), None, 0.0)


def test_simple_i_direction_votes_and_ties():
    W = np.zeros((3, 3), int)
    a, b, c = W.copy(), W.copy(), W.copy()
    a[0, 1] = b[1, 0] = 1  # 0 -> 1 and 1 -> 0 one vote each: tie keeps 0 -> 1
    a[1, 2] = b[1, 2] = c[2, 1] = 1  # 1 -> 2 two votes beats 2 -> 1 one vote
    r = fed_pc_simple_i(local=_fake_local([a, b, c]))
    expected = np.zeros((3, 3))
    expected[0, 1] = expected[1, 2] = 1
    np.testing.assert_array_equal(r.W, expected)
    assert r.info["min_votes"] == 1 and r.transcript.n_participants == 3


def test_simple_ii_intersects_sepsets():
    # skeleton 0 - 2 - 1 kept by both; pair (0, 1) separated by {2, 3} and by {3}: intersection {3}
    S = np.zeros((4, 4), int)
    S[0, 2] = S[2, 0] = S[1, 2] = S[2, 1] = 1
    local = _fake_local([S, S], skeletons=[S, S], sepsets=[{(0, 1): (2, 3)}, {(0, 1): (3,)}])
    r = fed_pc_simple_ii(local=local)
    assert r.info["sepsets"][(0, 1)] == (3,)
    assert r.info["v_structures"] == [(0, 2, 1)]
    assert r.W[0, 2] == r.W[1, 2] == 1
    assert {m.kind for m in r.transcript} == {"local_skeleton", "local_sepsets"}


def test_simple_baselines_on_data(data):
    local = pc_local(data.participants)
    for r in (fed_pc_simple_i(local=local), fed_pc_simple_ii(local=local)):
        assert r.is_dag and r.W.shape == (8, 8)


def test_fedpc_authors_10_node_benchmark():
    """On the authors' 10-node data with their 3-participant partition, FedPC's skeleton is at
    least as good as the participants' own PC skeletons on average (the benchmark target)."""
    if not FEDPC_DATA.is_dir():
        pytest.skip("the FedPC 10-node data are not in ../shared/data/fedpc")
    X = np.loadtxt(FEDPC_DATA / "10nodes_5000.txt")
    B = np.loadtxt(FEDPC_DATA / "10_DAG.txt").astype(int)
    sizes = np.loadtxt(FEDPC_DATA / "10nodes_3clients_partition.txt").astype(int)
    parts = split(X, sizes=list(sizes))
    r = fed_pc(parts)
    avg = pc_avg_scores(parts, B_true=B, variant="original")
    assert skeleton_scores(B, r.W).f1 >= avg["skeleton_f1"].mean()
