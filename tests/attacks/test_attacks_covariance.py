"""Covariance reconstruction from Fed-BNSL / DP-Fed-BNSL transcripts, the per-participant report
and the `dpbnsl attack` command."""

from __future__ import annotations

import numpy as np
import pytest

from dpbnsl.attacks.covariance import covariance_error, reconstruct_covariance, reconstruct_covariances
from dpbnsl.attacks.inference import reconstruct_record, roc_auc
from dpbnsl.attacks.report import attack_report, population_covariance, protocol_statistic, server_covariances
from dpbnsl.cli import main
from dpbnsl.federation import Message, Transcript
from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.learners.linear.fed_sparse_bnsl import fed_sparse_bnsl
from dpbnsl.scores import centre
from dpbnsl.simulation import simulate


def _schedule(result):
    p = result.params
    return dict(rho2=p["rho2"], gamma2=p["gamma2"], rho_max=p["rho_max"])


def _gram(X, n):
    Xc = centre(X)
    return Xc.T @ Xc / n


def _relerr(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("seed,P,sizes", [(0, 3, None), (1, 5, None), (2, 4, (40, 90, 150, 60))])
def test_round_trip_every_participant_every_round_kind(seed, P, sizes):
    d = 8
    if sizes is None:
        data = simulate(d, 100 * P, participants=P, rng=seed)
        parts = list(data.participants)
    else:  # unequal n_k
        data = simulate(d, sum(sizes), participants=1, rng=seed)
        parts = np.split(data.participants[0], np.cumsum(sizes)[:-1])
    r = fed_bnsl(parts, max_rounds=40)
    n = sum(len(X) for X in parts)
    T = len(r.history)
    for k, X in enumerate(parts):
        S = _gram(X, n)
        for rnd in (0, 1, T // 2, "best"):
            rec = reconstruct_covariance(
                r.transcript, participant=k, round=rnd, **_schedule(r), n_samples=[len(Y) for Y in parts]
            )
            assert _relerr(rec.statistic, S) <= 1e-8, (k, rnd)
            assert _relerr(rec.covariance, _gram(X, len(X))) <= 1e-8
            assert rec.normalization == "global" and rec.rounds_available == T
        assert rec.round == int(rec.round)


def test_d100_first_and_later_round():
    data = simulate(100, 3 * 150, participants=3, rng=3)
    r = fed_bnsl(data.participants, max_rounds=6)
    for rec in reconstruct_covariances(r.transcript, round=5, **_schedule(r)):
        assert _relerr(rec.statistic, _gram(data.participants[rec.participant], 450)) <= 1e-8
    rec0 = reconstruct_covariance(r.transcript, participant=2, round=0, **_schedule(r))
    assert _relerr(rec0.statistic, _gram(data.participants[2], 450)) <= 1e-8


def test_local_normalisation_and_uncentred():
    data = simulate(6, 300, participants=3, rng=4)
    r = fed_bnsl(data.participants, max_rounds=10, normalize="local", centre=False)
    for rec in reconstruct_covariances(r.transcript, normalization="local", **_schedule(r)):
        X = data.participants[rec.participant]
        assert _relerr(rec.covariance, X.T @ X / len(X)) <= 1e-8


def test_best_round_avoids_rounds_where_rho_has_grown():
    # once ρ₂ is huge the participant's own rounding in ρ₂W − β + S swamps S; "best" must not
    # pick such a round (the amplification accounts for ρ₂‖W‖)
    data = simulate(10, 200, participants=5, rng=0)
    r = fed_bnsl(data.participants)
    last = reconstruct_covariance(r.transcript, participant=0, round=len(r.history) - 1, **_schedule(r))
    best = reconstruct_covariance(r.transcript, participant=0, **_schedule(r))
    S = _gram(data.participants[0], 200)
    assert _relerr(best.statistic, S) <= 1e-10
    assert best.amplification < last.amplification


def test_dp_fed_bnsl_reconstructs_only_the_noisy_release():
    data = simulate(10, 5 * 200, participants=5, rng=5)
    r = dp_fed_bnsl(data.participants, epsilon=1.0, delta=1e-5, clip_norm=5.0, max_rounds=20, rng=0)
    for rec in reconstruct_covariances(r.transcript, normalization="local", **_schedule(r)):
        k = rec.participant
        # the server gets exactly what was released ...
        assert _relerr(rec.statistic, r.info["covariances"][k]) <= 1e-8
        # ... whose distance to the truth is at least what the noise predicts: the error is
        # ‖E + bias‖ with E the symmetric noise, E‖E‖² = σ²d² and ‖E‖ concentrating (d² / 2
        # independent entries: relative sd ≈ 1/d); 0.8 leaves 2 sd at d = 10
        X = data.participants[k]
        err = covariance_error(rec.statistic, X.T @ X / len(X), sigma=r.info["sigma"][k])
        assert err.relative_error >= 0.8 * err.predicted_relative_error


def test_covariance_error_prediction():
    rng = np.random.default_rng(0)
    d, sigma = 30, 0.1
    truth = np.eye(d)
    E = rng.normal(scale=sigma, size=(d, d))
    E = np.triu(E) + np.triu(E, 1).T
    err = covariance_error(truth + E, truth, sigma=sigma)
    assert err.predicted_relative_error == pytest.approx(sigma * d / np.sqrt(d))
    # ‖E‖² is a sum of d² terms of variance ~2σ⁴: relative sd of ‖E‖ ≈ 1/(d√2) ≈ 0.024 → 0.1 is 4 sd
    assert err.relative_error == pytest.approx(err.predicted_relative_error, rel=0.1)


def test_refuses_sparse_transcripts_and_bad_input():
    data = simulate(5, 200, participants=2, rng=0)
    sparse = fed_sparse_bnsl(data.participants, rounds=3)
    with pytest.raises(ValueError, match="sparse messages.*reconstruct_gram_sparse"):
        reconstruct_covariance(sparse.transcript, participant=0, rho2=1.0)
    r = fed_bnsl(data.participants, max_rounds=3)
    with pytest.raises(ValueError, match=r"`participant` must be in \[0, 1\].*got 2"):
        reconstruct_covariance(r.transcript, participant=2, rho2=1e-3)
    with pytest.raises(ValueError, match="`round` must be < 3"):
        reconstruct_covariance(r.transcript, participant=0, rho2=1e-3, round=3)
    with pytest.raises(ValueError, match="`rho2`"):
        reconstruct_covariance(r.transcript, participant=0, rho2=0.0)
    with pytest.raises(ValueError, match="`normalization`"):
        reconstruct_covariance(r.transcript, participant=0, rho2=1e-3, normalization="n")
    with pytest.raises(ValueError, match="empty"):
        reconstruct_covariance(Transcript(), participant=0, rho2=1e-3)
    with pytest.raises(TypeError, match="Transcript"):
        reconstruct_covariance([], participant=0, rho2=1e-3)
    # a transcript with a missing upload: the duals cannot be replayed past it
    gap = Transcript([m for m in r.transcript if not (m.round == 1 and m.sender == 0)])
    with pytest.raises(ValueError, match=r"lacks participant 0's upload in round\(s\) \[1\]"):
        reconstruct_covariance(gap, participant=0, rho2=1e-3)
    other = Transcript([Message(0, 0, "server", "gradient", m.payload) for m in r.transcript][:1])
    with pytest.raises(ValueError, match="kinds"):
        reconstruct_covariance(other, participant=0, rho2=1e-3)
    with pytest.raises(ValueError, match="`n_samples` must have one entry per participant"):
        reconstruct_covariance(r.transcript, participant=0, rho2=1e-3, n_samples=[100])


def test_singular_round_is_refused_with_a_pointer():
    data = simulate(4, 200, participants=2, rng=0)
    r = fed_bnsl(data.participants, max_rounds=2)
    eye = np.eye(4)
    from dpbnsl.federation import Dense

    msgs = [
        Message(m.round, m.sender, m.receiver, m.kind, Dense(eye)) if m.round == 1 and m.sender == 0 else m
        for m in r.transcript
    ]
    with pytest.raises(ValueError, match="singular in round 1.*round 0"):
        reconstruct_covariance(Transcript(msgs), participant=0, rho2=1e-3, gamma2=1.25, round=1)
    rec = reconstruct_covariance(Transcript(msgs), participant=0, rho2=1e-3, gamma2=1.25)
    assert rec.round == 0


def test_record_reconstruction_from_own_mean_centred_statistic():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 20)) + 3.0
    res = reconstruct_record(_gram(X, 20), X[:-1], n_samples=20, centred=True, true_record=X[-1])
    assert res.error <= 1e-8 and res.rank_one
    with pytest.raises(ValueError, match="at least one row"):
        reconstruct_record(_gram(X, 20), X[:0], n_samples=20, centred=True)


def test_report_non_private_leaks_and_dp_does_not():
    data = simulate(20, 10 * 20, participants=10, rng=0)
    pop = population_covariance(data.W_true)
    leaky = attack_report(
        fed_bnsl(data.participants, max_rounds=30), data.participants, population_cov=pop, rng=0
    ).table
    assert (leaky.rel_error <= 1e-8).all() and (leaky.recovered == 1.0).all()
    assert (leaky.membership_auc >= 0.99).all() and (leaky.record_error[:-1] <= 1e-6).all()
    r = dp_fed_sparse_bnsl(data.participants, epsilon=1.0, delta=1e-5, feature_bound=30.0, rng=0)
    rep = attack_report(r, data.participants, population_cov=pop, rng=0)
    assert (rep.table.recovered <= 0.1).all()
    # 200 members vs 200 non-members: the null AUC has sd √((m₁+m₀+1)/(12 m₁ m₀)) ≈ 0.029;
    # 0.12 is 4 sd
    assert abs(rep.table.membership_auc.iloc[-1] - 0.5) <= 0.12
    assert rep.table.membership_auc.iloc[-1] == pytest.approx(roc_auc(rep.scores.score, rep.scores.member))


def test_server_covariances_sparse_needs_prior_and_report_validation():
    data = simulate(6, 3 * 100, participants=3, rng=0)
    r = fed_sparse_bnsl(data.participants, rounds=20)
    with pytest.raises(ValueError, match="`prior`"):
        server_covariances(r)
    est = server_covariances(r, prior=np.eye(6))
    for C in est:
        assert np.linalg.eigvalsh(C)[0] >= -1e-12
        assert C.shape == (6, 6)
    assert np.allclose(protocol_statistic(r, data.participants[0]), _gram(data.participants[0], 100))
    with pytest.raises(ValueError, match="must come from one of"):
        server_covariances(type("R", (), {"method": "notears"})())
    with pytest.raises(ValueError, match="at least 2 participants"):
        attack_report(r, data.participants[:1], population_cov=np.eye(6))


def test_population_covariance_matches_simulation():
    data = simulate(5, 200_000, participants=1, rng=0)
    X = data.participants[0]
    emp = X.T @ X / len(X)
    # entries of a sample covariance have sd ≈ √((Σ_ii Σ_jj + Σ_ij²)/n) ≤ √2·max Σ_ii/√n
    pop = population_covariance(data.W_true)
    tol = 5 * np.sqrt(2) * np.max(np.diag(pop)) / np.sqrt(len(X))
    assert np.max(np.abs(emp - pop)) <= tol


def test_cli_attack(capsys):
    assert main(["attack", "--method", "fed-bnsl", "--participants", "3", "--d", "6", "--rounds", "10"]) == 0
    out = capsys.readouterr().out
    assert "fed-bnsl: 3 participants, d = 6" in out and "membership_auc" in out
    assert main(["attack", "--method", "dp-fed-bnsl", "--participants", "3", "--d", "6"]) == 2
    assert "needs --epsilon" in capsys.readouterr().err
    assert main(["attack", "--method", "fed-bnsl", "--epsilon", "1"]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert main(["attack", "--method", "fed-bnsl", "--data", "missing.csv"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_attack_on_csv_files(tmp_path, capsys):
    data = simulate(5, 3 * 40, participants=3, rng=0)
    paths = []
    for k, X in enumerate(data.participants):
        paths.append(tmp_path / f"p{k}.csv")
        np.savetxt(paths[-1], X, delimiter=",", header=",".join(f"x{i}" for i in range(5)), comments="")
    assert (
        main(
            [
                "attack",
                "--method",
                "dp-fed-sparse-bnsl",
                "--epsilon",
                "2",
                "--feature-bound",
                "30",
                "--data",
                *map(str, paths),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "privacy: (ε, δ) = (2, 1e-05)-DP per participant, replace-one; accountant: rdp" in out


def test_printing_a_reconstruction_summarises_it():
    """The d × d arrays are attributes; the printed form is one line."""
    from dpbnsl.attacks import reconstruct_covariances

    data = simulate(6, 3 * 50, participants=3, rng=1)
    r = fed_bnsl(data.participants, max_rounds=5)
    rec = reconstruct_covariances(r.transcript, **_schedule(r))[0]
    text = repr(rec)
    assert text.startswith("CovarianceReconstruction(participant=0, round=") and "\n" not in text
    assert "d=6" in text and "[" not in text
