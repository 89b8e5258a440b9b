"""Long runs report their progress: the round drivers tell an installed reporter every round done
(with the most rounds planned), and the command line's display draws one line on a terminal."""

from __future__ import annotations

import io

import pytest

import dpbnsl
from dpbnsl.federation.progress import StderrProgress, reporting, round_done


def test_learners_report_every_round_with_the_plan():
    data = dpbnsl.simulate(5, 300, participants=3, rng=0)
    seen = []
    with reporting(lambda phase, done, planned: seen.append((phase, done, planned))):
        r = dpbnsl.fed_bnsl(data.participants, max_rounds=7)
        dpbnsl.dp_fed_sparse_bnsl(
            data.participants,
            epsilon=2.0,
            delta=1e-5,
            feature_bound=25.0,
            rounds=3,
            local_iters=2,
            warm_start="covariance",
            rng=0,
        )
    fed = [x for x in seen[: len(r.history)]]
    assert fed == [("rounds", t + 1, 7) for t in range(len(r.history))]
    rest = seen[len(r.history) :]
    warm = [x for x in rest if x[0] == "warm"]
    assert warm and all(planned == 200 for _, _, planned in warm)
    assert [x for x in rest if x[0] == "rounds"] == [("rounds", t, 3) for t in (1, 2, 3)]
    round_done("rounds", 1, 2)  # outside a block: nobody listens, nothing happens


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_the_display_waits_draws_one_line_and_ends_it():
    clock = iter([0.0, 0.5, 2.5, 2.6, 4.0, 4.0])
    out = _Tty()
    with StderrProgress("fed-bnsl", stream=out, clock=lambda: next(clock)) as show:
        show("rounds", 1, 10)  # 0.5 s: too early
        show("rounds", 5, 10)  # 2.5 s: drawn
        show("rounds", 6, 10)  # 2.6 s: redrawn too soon, skipped
        show("rounds", 8, 10)  # 4.0 s: drawn
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "fed-bnsl: rounds 5/10 rounds, 2 s elapsed, ≤ 2 s left (at most 10 rounds)" in text
    assert "rounds 8/10" in text


@pytest.mark.parametrize("stream", [io.StringIO()])
def test_nothing_on_a_pipe_or_log(stream):
    clock = iter([0.0, 10.0])
    with StderrProgress("x", stream=stream, clock=lambda: next(clock)) as show:
        show("rounds", 3, None)
    assert stream.getvalue() == ""
