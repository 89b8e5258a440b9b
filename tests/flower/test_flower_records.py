"""What crosses Flower's records: payloads and saved states come back bitwise (NaN, −0.0 and
subnormals included); the data loader reads a participant's file or names what is wrong.
Marked ``flower``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import RecordDict

from dpbnsl.federation import Dense, Sparse
from dpbnsl.federation.protocol import ProtocolError
from dpbnsl.flower.apps import load_csv, participant_id
from dpbnsl.flower.records import get_payload, get_state, put_payload, put_state
from dpbnsl.io.tables import DataFileError

pytestmark = pytest.mark.flower
ODD = np.array([[np.nan, -0.0, 5e-324], [1e308, -np.inf, 1.0 / 3.0]])


def test_payloads_come_back_bitwise():
    dense = get_payload(put_payload(Dense(ODD)))
    assert isinstance(dense, Dense) and dense.values.tobytes() == ODD.tobytes()
    sparse = get_payload(put_payload(Sparse.from_dense(np.where(np.isnan(ODD), 0.0, ODD))))
    assert isinstance(sparse, Sparse) and sparse.shape == (2, 3)
    np.testing.assert_array_equal(sparse.to_dense(), np.where(np.isnan(ODD), 0.0, ODD))
    assert get_payload(put_payload(None)) is None


def test_saved_state_comes_back_bitwise():
    store = RecordDict()
    assert get_state(store) == {}
    state = {"B": ODD, "rng": '{"state": 340282366920938463463374607431768211455}', "x": 0.1, "n": None}
    put_state(store, state)
    back = get_state(store)
    assert back["B"].tobytes() == ODD.tobytes() and back["B"].dtype == ODD.dtype
    assert {k: back[k] for k in ("rng", "x", "n")} == {k: state[k] for k in ("rng", "x", "n")}


def test_the_loader_reads_the_participants_file_or_names_the_problem(tmp_path):
    csv = tmp_path / "site.csv"
    pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}).to_csv(csv, index=False)
    assert load_csv(0, {"data-path": str(csv)}).shape == (2, 2)
    with pytest.raises(ProtocolError, match="participant 3: the node config has no data-path"):
        load_csv(3, {})
    parquet = tmp_path / "site.parquet"
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        parquet.write_bytes(b"not read")
        with pytest.raises(DataFileError, match=r"\(participant 1\): reading Parquet needs pyarrow"):
            load_csv(1, {"data-path": str(parquet)})
    else:
        pd.DataFrame({"a": [1.0], "b": ["x"]}).to_parquet(parquet)
        with pytest.raises(DataFileError, match=r"\(participant 1\): column 'b' is not numeric"):
            load_csv(1, {"data-path": str(parquet)})


def test_a_node_without_a_participant_id_is_refused():
    assert participant_id({"participant-id": 2}) == 2 and participant_id({"partition-id": 4}) == 4
    with pytest.raises(ProtocolError, match="names no participant"):
        participant_id({"data-path": "x.csv"})
