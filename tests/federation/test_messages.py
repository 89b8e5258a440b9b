"""Tests for dpbnsl.federation: payloads, messages, transcripts and the in-process round driver."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpbnsl.federation import (
    FLOAT_BYTES,
    INDEX_BYTES,
    SERVER,
    Dense,
    Message,
    ServerReply,
    Sparse,
    Transcript,
    run_rounds,
)

# ----------------------------------------------------------------------------- payloads


def test_byte_constants():
    assert (FLOAT_BYTES, INDEX_BYTES, SERVER) == (8, 4, "server")


def test_dense_copies_its_input():
    src = np.arange(6.0).reshape(2, 3)
    p = Dense(src)
    src[0, 0] = 99.0
    np.testing.assert_array_equal(p.values, np.arange(6.0).reshape(2, 3))
    assert not np.shares_memory(p.values, src)


def test_dense_is_read_only():
    p = Dense(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="read-only"):
        p.values[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.values = np.ones((2, 2))  # type: ignore[misc]


def test_dense_converts_to_float64_and_to_dense_is_a_writable_copy():
    p = Dense([[1, 2], [3, 4]])
    assert p.values.dtype == np.float64
    assert p.shape == (2, 2)
    out = p.to_dense()
    out[0, 0] = -1.0
    assert p.values[0, 0] == 1.0


@pytest.mark.parametrize("shape", [(1,), (3,), (2, 3), (4, 4), (2, 3, 5)])
def test_dense_nbytes_is_8_per_entry(shape):
    assert Dense(np.zeros(shape)).nbytes == 8 * int(np.prod(shape))


def test_sparse_from_dense_round_trip_and_sizes():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 5)) * (rng.random((4, 5)) < 0.4)
    s = Sparse.from_dense(a)
    nnz = int(np.count_nonzero(a))
    assert s.shape == (4, 5)
    assert s.nnz == nnz > 0
    assert s.nbytes == 12 * nnz
    np.testing.assert_array_equal(s.index, np.flatnonzero(a))
    np.testing.assert_array_equal(s.values, a[a != 0])
    np.testing.assert_array_equal(s.to_dense(), a)


def test_sparse_of_all_zeros_and_of_negative_zero():
    s = Sparse.from_dense(np.array([[0.0, -0.0], [0.0, 0.0]]))
    assert s.nnz == 0 and s.nbytes == 0
    np.testing.assert_array_equal(s.to_dense(), np.zeros((2, 2)))


def test_sparse_is_copied_and_read_only():
    idx, val = np.array([0, 3]), np.array([1.0, 2.0])
    s = Sparse((2, 2), idx, val)
    idx[0], val[0] = 1, 9.0
    np.testing.assert_array_equal(s.to_dense(), [[1.0, 0.0], [0.0, 2.0]])
    with pytest.raises(ValueError, match="read-only"):
        s.values[0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        s.index[0] = 1
    assert s.index.dtype == np.int64 and s.values.dtype == np.float64
    assert Sparse([2, 2], [0], [1.0]).shape == (2, 2)


def test_sparse_from_dense_does_not_alias_source():
    a = np.array([1.0, 0.0, 2.0])
    s = Sparse.from_dense(a)
    a[0] = 7.0
    np.testing.assert_array_equal(s.to_dense(), [1.0, 0.0, 2.0])


# ----------------------------------------------------------------------------- messages


def test_message_direction_and_participant():
    up = Message(3, 2, SERVER, "local_B", Dense(np.zeros(2)))
    down = Message(3, SERVER, 5, "global_B", Sparse.from_dense(np.array([0.0, 1.0])))
    assert (up.direction, up.participant, up.nbytes) == ("up", 2, 16)
    assert (down.direction, down.participant, down.nbytes) == ("down", 5, 12)
    np.testing.assert_array_equal(down.to_dense(), [0.0, 1.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        up.round = 4  # type: ignore[misc]


# ----------------------------------------------------------------------------- transcripts


def make_transcript() -> Transcript:
    """Two rounds, two participants; round 0 dense, round 1 sparse uploads and a dense broadcast."""
    t = Transcript()
    for k in range(2):
        t.append(Message(0, k, SERVER, "local", Dense(np.full(3, float(k + 1)))))
    for k in range(2):
        t.append(Message(0, SERVER, k, "global", Dense(np.full(3, 1.5))))
    for k in range(2):
        a = np.zeros(3)
        a[k] = 10.0 + k
        t.append(Message(1, k, SERVER, "local", Sparse.from_dense(a)))
    t.append(Message(1, SERVER, 0, "stop", Dense(np.zeros(3))))
    return t


def test_transcript_sequence_behaviour():
    t = make_transcript()
    assert len(t) == 7
    assert t[0].sender == 0 and t[-1].kind == "stop"
    sl = t[1:3]
    assert isinstance(sl, Transcript) and len(sl) == 2 and sl[0] is t[1]
    assert [m.round for m in t] == [0, 0, 0, 0, 1, 1, 1]
    assert t[2] in t
    assert "7 messages, 2 rounds, 2 participants" in repr(t)


def test_transcript_rejects_non_messages():
    with pytest.raises(TypeError, match=r"`message` must be a Message; got dict"):
        Transcript().append({"round": 0})  # type: ignore[arg-type]


def test_transcript_copies_the_initial_sequence():
    msgs = list(make_transcript())
    t = Transcript(msgs)
    msgs.clear()
    assert len(t) == 7


def test_transcript_filters():
    t = make_transcript()
    assert [m.round for m in t.filter(round=1)] == [1, 1, 1]
    assert list(t.by_round(0)) == list(t)[:4]
    assert [(m.sender, m.receiver) for m in t.filter(participant=0)] == [
        (0, SERVER),
        (SERVER, 0),
        (0, SERVER),
        (SERVER, 0),
    ]
    assert list(t.by_participant(1)) == list(t.filter(participant=1))
    assert all(m.direction == "up" for m in t.filter(direction="up"))
    assert len(t.uploads()) == 4 and len(t.downloads()) == 3
    assert list(t.uploads()) == list(t.filter(direction="up"))
    assert list(t.downloads()) == list(t.filter(direction="down"))
    assert [m.kind for m in t.filter(kind="global")] == ["global", "global"]
    both = t.filter(round=1, participant=0, direction="down")
    assert len(both) == 1 and both[0].kind == "stop"
    assert len(t.filter(round=5)) == 0
    assert len(t.filter()) == len(t)


def test_transcript_filter_rejects_unknown_direction():
    with pytest.raises(ValueError, match=r"`direction` must be one of 'up', 'down'; got 'sideways'"):
        make_transcript().filter(direction="sideways")  # type: ignore[arg-type]


def test_transcript_payloads_stacks_dense_forms():
    t = make_transcript()
    np.testing.assert_array_equal(t.payloads(round=0, direction="up"), [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(t.payloads(round=1, direction="up"), [[10.0, 0, 0], [0, 11.0, 0]])
    assert t.payloads(kind="local").shape == (4, 3)
    with pytest.raises(ValueError, match=r"no message matches \{'round': 9\}"):
        t.payloads(round=9)


def test_transcript_counts_and_bytes():
    t = make_transcript()
    assert t.n_rounds == 2
    assert t.n_participants == 2
    # 4 dense uploads/downloads in round 0 (3 entries × 8 B), 2 sparse uploads (1 nnz × 12 B),
    # 1 dense download in round 1 (3 × 8 B)
    assert t.total_bytes == 4 * 24 + 2 * 12 + 24 == 144
    assert t.total_mb == pytest.approx(144 / 1e6, rel=1e-15)


def test_empty_transcript():
    t = Transcript()
    assert (len(t), t.n_rounds, t.n_participants, t.total_bytes, t.total_mb) == (0, 0, 0, 0, 0.0)
    assert list(t.to_frame().columns) == [
        "round",
        "sender",
        "receiver",
        "direction",
        "kind",
        "format",
        "entries",
        "bytes",
    ]
    assert len(t.to_frame()) == 0
    assert len(t.bytes_by_round()) == 0


def test_total_mb_uses_decimal_megabytes():
    t = Transcript([Message(0, 0, SERVER, "x", Dense(np.zeros(125_000)))])  # 10⁶ bytes
    assert t.total_bytes == 1_000_000
    assert t.total_mb == 1.0


def test_transcript_to_frame():
    df = make_transcript().to_frame()
    assert list(df.columns) == [
        "round",
        "sender",
        "receiver",
        "direction",
        "kind",
        "format",
        "entries",
        "bytes",
    ]
    assert df["round"].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert df["sender"].tolist() == [0, 1, SERVER, SERVER, 0, 1, SERVER]
    assert df["receiver"].tolist() == [SERVER, SERVER, 0, 1, SERVER, SERVER, 0]
    assert df["direction"].tolist() == ["up", "up", "down", "down", "up", "up", "down"]
    assert df["kind"].tolist() == ["local"] * 2 + ["global"] * 2 + ["local"] * 2 + ["stop"]
    assert df["format"].tolist() == ["dense"] * 4 + ["sparse"] * 2 + ["dense"]
    assert df["entries"].tolist() == [3, 3, 3, 3, 1, 1, 3]
    assert df["bytes"].tolist() == [24, 24, 24, 24, 12, 12, 24]


def test_bytes_by_round():
    t = make_transcript()
    table = t.bytes_by_round()
    assert list(table.columns) == ["round", "up", "down", "total"]
    assert table["round"].tolist() == [0, 1]
    assert table["up"].tolist() == [48, 24]
    assert table["down"].tolist() == [48, 24]
    assert table["total"].tolist() == [96, 48]
    # consistent with the frame and the total
    df = t.to_frame()
    for _, row in table.iterrows():
        sub = df[df["round"] == row["round"]]
        assert row["up"] == sub.loc[sub["direction"] == "up", "bytes"].sum()
        assert row["down"] == sub.loc[sub["direction"] == "down", "bytes"].sum()
    assert table["total"].sum() == t.total_bytes


def test_bytes_by_round_fills_missing_direction_with_zero():
    t = Transcript([Message(0, 0, SERVER, "x", Dense(np.zeros(2)))])
    table = t.bytes_by_round()
    assert table.to_dict("list") == {"round": [0], "up": [16], "down": [0], "total": [16]}


# ----------------------------------------------------------------------------- run_rounds


def toy_protocol(P, *, stop_at=None, per_participant=False, log=None):
    """Participant k uploads Dense(inbox + k) (inbox 0 in round 0); the server broadcasts the mean.

    ``log`` collects (round, k, inbox) for every participant call.
    """

    def make_step(k):
        def step(t, inbox):
            if log is not None:
                log.append((t, k, inbox))
            base = np.zeros(2) if inbox is None else inbox.values
            return "local", Dense(base + k)

        return step

    def server(t, uploads):
        assert len(uploads) == P
        mean = np.mean([u.values for u in uploads], axis=0)
        stop = stop_at is not None and t == stop_at
        if per_participant:
            return ServerReply([Dense(mean * (k + 1)) for k in range(P)], "personal", stop)
        return ServerReply(Dense(mean), "global", stop)

    return [make_step(k) for k in range(P)], server


def test_run_rounds_message_sequence_and_values():
    P, R = 3, 4
    log: list = []
    steps, server = toy_protocol(P, log=log)
    n, t = run_rounds(steps, server, rounds=R)
    assert n == R
    assert len(t) == R * 2 * P
    expected = []
    for r in range(R):
        expected += [(r, k, SERVER, "local") for k in range(P)]
        expected += [(r, SERVER, k, "global") for k in range(P)]
    assert [(m.round, m.sender, m.receiver, m.kind) for m in t] == expected
    assert (t.n_rounds, t.n_participants) == (R, P)

    # mean of k over participants is 1; broadcast after round r is (r + 1) · 1
    for r in range(R):
        np.testing.assert_array_equal(t.payloads(round=r, direction="down"), np.full((P, 2), float(r + 1)))
        np.testing.assert_array_equal(
            t.payloads(round=r, direction="up"), np.array([[r + k] * 2 for k in range(P)], float)
        )

    # inbox is None in round 0, then exactly the payload the server sent that participant
    assert [(r, k) for r, k, _ in log] == [(r, k) for r in range(R) for k in range(P)]
    for r, k, inbox in log:
        if r == 0:
            assert inbox is None
        else:
            assert inbox is t.filter(round=r - 1, participant=k, direction="down")[0].payload


def test_run_rounds_stop_flag_ends_early_and_records_last_broadcast():
    P = 2
    steps, server = toy_protocol(P, stop_at=1)
    n, t = run_rounds(steps, server, rounds=10)
    assert n == 2
    assert t.n_rounds == 2
    last = t.by_round(1)
    assert [m.direction for m in last] == ["up"] * P + ["down"] * P
    assert len(t) == 2 * 2 * P


def test_run_rounds_stop_in_round_zero():
    steps, server = toy_protocol(2, stop_at=0)
    n, t = run_rounds(steps, server, rounds=5)
    assert n == 1 and len(t.downloads()) == 2


def test_run_rounds_per_participant_reply():
    P = 3
    log: list = []
    steps, server = toy_protocol(P, per_participant=True, log=log)
    n, t = run_rounds(steps, server, rounds=2)
    assert n == 2
    downs = t.filter(round=0, direction="down")
    assert [m.receiver for m in downs] == [0, 1, 2]
    assert [m.kind for m in downs] == ["personal"] * P
    np.testing.assert_array_equal(downs.payloads(), [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    for r, k, inbox in log:
        if r == 1:
            assert inbox is downs[k].payload


def test_run_rounds_accepts_a_tuple_reply():
    def server(t, uploads):
        return ServerReply(tuple(Dense(u.values) for u in uploads), "tuple")

    steps, _ = toy_protocol(2)
    n, t = run_rounds(steps, server, rounds=1)
    assert n == 1 and [m.kind for m in t.downloads()] == ["tuple", "tuple"]


def test_run_rounds_reply_list_of_wrong_length_raises():
    def server(t, uploads):
        return ServerReply([Dense(np.zeros(2))], "oops")

    steps, _ = toy_protocol(3)
    with pytest.raises(ValueError, match=r"server reply holds 1 payloads for 3 participants"):
        run_rounds(steps, server, rounds=2)


def test_run_rounds_zero_rounds_runs_nothing():
    calls = []

    def step(t, inbox):  # pragma: no cover - must not be called
        calls.append(t)
        return "x", Dense(np.zeros(1))

    def server(t, uploads):  # pragma: no cover - must not be called
        calls.append(t)
        return ServerReply(Dense(np.zeros(1)), "y")

    n, t = run_rounds([step], server, rounds=0)
    assert (n, len(t), calls) == (0, 0, [])


def test_run_rounds_appends_to_a_given_transcript():
    steps, server = toy_protocol(2)
    existing = make_transcript()
    n, t = run_rounds(steps, server, rounds=1, transcript=existing)
    assert t is existing
    assert len(t) == 7 + 4


def test_run_rounds_validation():
    steps, server = toy_protocol(2)
    with pytest.raises(ValueError, match=r"`rounds` must be >= 0; got -1"):
        run_rounds(steps, server, rounds=-1)
    with pytest.raises(TypeError, match=r"`rounds` must be an integer; got float 2\.0"):
        run_rounds(steps, server, rounds=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`participants` must hold at least one step function"):
        run_rounds([], server, rounds=1)


def test_run_rounds_participant_cannot_corrupt_broadcast():
    # a participant that tries to write into the inbox it received hits the read-only guard
    def step(t, inbox):
        if inbox is not None:
            inbox.values[0] = 123.0
        return "x", Dense(np.zeros(1))

    def server(t, uploads):
        return ServerReply(Dense(np.ones(1)), "y")

    with pytest.raises(ValueError, match="read-only"):
        run_rounds([step, step], server, rounds=2)
