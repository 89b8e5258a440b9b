"""A participant's spend across runs: its node's ledger file charges each run's whole plan before
the first release and refuses a run that would go beyond the budget, recording nothing then."""

from __future__ import annotations

import json

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent

from dpbnsl.accounting import LedgerEntry
from dpbnsl.federation import SETUP_ROUND, Dense
from dpbnsl.federation.guard import Refusal
from dpbnsl.federation.spend import NodeLedger, data_key, spent_epsilon
from dpbnsl.learners.hosted import hosted
from dpbnsl.simulation import simulate

RUN = [LedgerEntry("covariance", GaussianDpEvent(5.0), 1)]


def test_runs_accumulate_until_the_budget_refuses(tmp_path):
    book = NodeLedger(tmp_path / "ledgers")
    key = data_key(np.ones((3, 2)))
    one = spent_epsilon(RUN, 1e-5)
    done = 0
    with pytest.raises(Refusal, match=r"participant 2: this study \(x\) would bring its data's spend"):
        for _ in range(100):
            book.reserve(key, RUN, budget=(1.0, 1e-5), participant=2, what="x")
            done += 1
    assert done >= 1 and book.spent(key, 1e-5) <= 1.0 < spent_epsilon(RUN * (done + 1), 1e-5)
    assert book.spent(key, 1e-5) == pytest.approx(spent_epsilon(RUN * done, 1e-5))
    assert one <= book.spent(key, 1e-5)
    doc = json.loads(book.path(key).read_text())
    assert len(doc["runs"]) == done  # the refused run recorded nothing
    assert book.spent(data_key(np.zeros((3, 2))), 1e-5) == 0.0  # another dataset: its own budget
    assert book.reserve(key, RUN, budget=(float("inf"), 1e-5), participant=2, what="x") > 1.0


def test_a_damaged_ledger_is_never_read_as_empty(tmp_path):
    book = NodeLedger(tmp_path)
    key = data_key(np.ones((2, 2)))
    book.reserve(key, RUN, budget=(5.0, 1e-5), participant=0, what="x")
    book.path(key).write_text("{not json")
    with pytest.raises(Refusal, match="cannot be read .* refuses to run until its operator restores"):
        book.reserve(key, RUN, budget=(5.0, 1e-5), participant=0, what="x")


def test_data_key_is_the_data():
    X = np.arange(6.0).reshape(3, 2)
    assert data_key(X) == data_key(X.copy()) != data_key(X[::-1]) != data_key(X.reshape(2, 3))


@pytest.mark.parametrize("name", ["dp-fed-bnsl", "dp-fed-sparse-bnsl"])
def test_a_participant_charges_its_whole_plan_before_its_first_release(name, tmp_path):
    X = simulate(4, 200, participants=1, rng=0).participants[0]
    settings = {
        "dp-fed-bnsl": dict(epsilon=1.0, delta=1e-5, clip_norm=5.0, max_rounds=3),
        "dp-fed-sparse-bnsl": dict(
            epsilon=1.0,
            delta=1e-5,
            feature_bound=25.0,
            smoothness="bounds",
            rounds=2,
            local_iters=3,
            warm_start="none",
        ),
    }[name]
    charged = []

    def reserve(entries, budget):
        charged.append((list(entries), budget, len(p.ledger.entries)))

    p = hosted(name).participant(
        X, settings=settings, participant=0, rng=np.random.default_rng(0), budget=(1.0, 1e-5), reserve=reserve
    )
    p.respond("rounds", SETUP_ROUND, None)
    assert charged == []  # the setup releases nothing
    p.respond("rounds", 0, Dense(np.array([200.0])))
    ((entries, budget, released_before),) = charged
    assert budget == (1.0, 1e-5) and released_before == 0
    assert spent_epsilon(entries, 1e-5) >= p.ledger.epsilon(1e-5) - 1e-9  # the plan covers the run
    p.respond("rounds", 1, Dense(np.zeros((4, 4))))
    assert len(charged) == 1  # once per run
