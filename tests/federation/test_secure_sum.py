"""The secure-sum seam: the server reads only the sum of the shares, the transcript records what it
sees (masked shares, then the sum), and a private participant of the secure protocol defends its
budget and the study's declared number of participants."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.federation import SECURE_SUM, Masked
from dpbnsl.federation.guard import Refusal
from dpbnsl.federation.protocol import ProtocolError, run_protocol
from dpbnsl.federation.secure_sum import InProcessSum, SecureShare, is_secure_round
from dpbnsl.learners.covariance_release import (
    SecureCovarianceParticipant,
    SecureCovarianceServer,
    release_settings,
    secure_plan,
)
from dpbnsl.mechanisms.distributed import centred, integer_gram, integer_grid, noisy_share, quantise_rows
from dpbnsl.simulation import simulate

SETTINGS = dict(epsilon=1.0, delta=1e-5, clip_norm=10.0, participants=3, n_total=1500)


def _keep(release):
    """The server's fit: keep the release as it is (post-processing of any kind goes here)."""
    return release


def _parties(data, settings=SETTINGS, seed=7):
    gens = np.random.default_rng(seed).spawn(len(data))
    return [
        SecureCovarianceParticipant(X, settings=settings, participant=k, rng=g, budget=(1.0, 1e-5))
        for k, (X, g) in enumerate(zip(data, gens))
    ]


def test_the_server_reads_the_modular_sum_of_the_shares_and_nothing_else():
    data = simulate(4, 1500, participants=3, rng=0).participants
    server = SecureCovarianceServer(settings=SETTINGS, n_participants=3, fit=_keep)
    transcript = run_protocol(server, _parties(data))["rounds"]
    # the same shares, recomputed from the same streams: the sum the transcript holds is theirs
    plan = secure_plan(release_settings(**SETTINGS), d=4)
    grid = integer_grid(clip_norm=10.0, d=4, norm_bound=plan.norm_bound)
    shares = []
    for X, g in zip(data, np.random.default_rng(7).spawn(3)):
        stat = integer_gram(quantise_rows(X, grid, rng=g))
        shares.append(noisy_share(stat, noise="skellam", share=plan.share, bits=plan.modulus_bits, rng=g))
    expected = InProcessSum()({k: SecureShare(s, plan.modulus_bits) for k, s in enumerate(shares)})
    secure = transcript.filter(round=0)
    kinds = [(m.sender, m.kind, type(m.payload).__name__) for m in secure]
    assert kinds == [
        (0, "secure_share", "Masked"),
        (1, "secure_share", "Masked"),
        (2, "secure_share", "Masked"),
    ] + [(SECURE_SUM, "secure_sum", "Dense")]
    assert np.array_equal(secure[-1].to_dense(), expected.total.astype(float))
    # the shares are recorded by size only (4 bytes per residue at 32 bits)
    assert all(m.nbytes == 10 * 4 for m in secure[:3])
    with pytest.raises(ValueError, match="no value the server can read"):
        secure[0].to_dense()
    # the decoded release is the pooled integer statistic plus noise, scaled back
    S = server.release.S
    assert S.shape == (4, 4) and np.array_equal(S, S.T)
    U = centred(expected.total, bits=plan.modulus_bits)
    assert np.allclose(S[np.triu_indices(4)], U / (plan.scale**2 * 1500))
    assert transcript.n_participants == 3
    assert set(transcript.to_frame()["format"]) == {"dense", "masked"}


def test_a_round_mixing_shares_with_plain_uploads_is_refused():
    share = SecureShare(np.zeros(3, dtype=np.int64), 16)
    assert is_secure_round({0: [("s", share)], 1: [("s", share)]})
    assert not is_secure_round({0: [("x", None)]})
    with pytest.raises(ValueError, match="mixes secure shares"):
        is_secure_round({0: [("s", share)], 1: [("x", None)]})
    with pytest.raises(ValueError, match="outside"):
        SecureShare(np.array([1 << 16]), 16)


def test_a_server_without_secure_sums_refuses_one():
    from dpbnsl.federation.secure_sum import SecureSum
    from dpbnsl.learners.linear.hosted_fed_bnsl import FedBNSLServer

    server = FedBNSLServer(settings={}, n_participants=2)
    with pytest.raises(ProtocolError, match="takes no secure sums"):
        server.receive_sum("rounds", 0, SecureSum(np.zeros(3, dtype=np.int64), 16, (0, 1)))


def _after_setup():
    """Participant 0 of two (200 rows each, N = 400 declared) after the setup exchange."""
    data = simulate(3, 400, participants=2, rng=1).participants
    p = SecureCovarianceParticipant(
        data[0],
        settings={**SETTINGS, "participants": 2, "n_total": 400},
        participant=0,
        rng=np.random.default_rng(0),
        budget=(1.0, 1e-5),
    )
    p.respond("rounds", -1, None)
    return p


def test_a_participant_refuses_a_server_that_reports_more_participants():
    """Each share is sized for the study's declared P: a server claiming more participants would
    make every share too small, so the participant refuses before computing anything."""
    p = _after_setup()
    from dpbnsl.federation import Dense

    with pytest.raises(Refusal, match=r"\(P = 3, N = 600\); the study declared P = 2, N = 400"):
        p.respond("covariance", 0, Dense(np.array([200.0, 200.0, 200.0])))
    assert p.ledger.epsilon(1e-5) == 0.0


@pytest.mark.parametrize("counts", [[200.0, 20.0], [100.0, 300.0], [200.0, 2000.0]])
def test_a_participant_refuses_counts_other_than_the_study_declared(counts):
    """A server that sent another N to some participants would make their grids and shares differ
    from the others' (a share sized for a smaller noise); each participant checks the counts
    against the declared P and N and its own rows, and releases nothing otherwise."""
    p = _after_setup()
    from dpbnsl.federation import Dense

    with pytest.raises(Refusal, match="nothing released"):
        p.respond("covariance", 0, Dense(np.array(counts)))
    assert p.ledger.epsilon(1e-5) == 0.0


def test_a_participant_releases_once_and_refuses_beyond_its_budget():
    data = simulate(3, 400, participants=2, rng=1).participants
    settings = {**SETTINGS, "participants": 2, "n_total": 400}
    from dpbnsl.federation import Dense

    p = SecureCovarianceParticipant(
        data[0], settings=settings, participant=0, rng=np.random.default_rng(0), budget=(1.0, 1e-5)
    )
    p.respond("rounds", -1, None)
    kind, share = p.respond("covariance", 0, Dense(np.array([200.0, 200.0])))
    assert kind == "secure_share" and isinstance(share, SecureShare)
    assert 0.99 < p.ledger.epsilon(1e-5) <= 1.0
    with pytest.raises(Refusal, match="refuses covariance round 1"):
        p.respond("covariance", 1, None)
    with pytest.raises(Refusal, match="beyond this participant's budget"):
        SecureCovarianceParticipant(
            data[0], settings=settings, participant=0, rng=np.random.default_rng(0), budget=(0.5, 1e-5)
        )


def test_the_server_refuses_a_sum_with_fewer_shares_than_the_guarantee_needs():
    from dpbnsl.federation.secure_sum import SecureSum

    server = SecureCovarianceServer(
        settings={**SETTINGS, "dropouts": 1, "n_total": 300}, n_participants=3, fit=_keep
    )
    from dpbnsl.federation import Dense

    server.receive("rounds", -1, {k: Dense(np.array([100.0, 3.0])) for k in range(3)})
    with pytest.raises(ProtocolError, match="holds 1 shares; the guarantee needs 2"):
        server.receive_sum("covariance", 0, SecureSum(np.zeros(6, dtype=np.int64), 32, (0,)))
    # two of three shares: the release goes ahead, its noise sd that of the two shares
    server.receive_sum("covariance", 0, SecureSum(np.zeros(6, dtype=np.int64), 32, (0, 2)))
    assert server.release.contributors == (0, 2) and server.release.n == 200


def test_masked_payload_reports_its_size_only():
    m = Masked(10, 20)
    assert m.nbytes == 30 and m.shape == (10,)
