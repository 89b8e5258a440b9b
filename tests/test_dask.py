"""A sweep and an audit on a local Dask cluster on loopback (the ``dask`` extra): the same rows and
scores as in one process, through the Python API and through the CLI's ``--scheduler``. Marked
``dask`` (run with ``-m dask``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from dpbnsl.audits.parallel import play  # noqa: E402
from dpbnsl.audits.tradeoff import COLUMNS, sweep  # noqa: E402
from dpbnsl.cli.app import main as cli  # noqa: E402

pytestmark = pytest.mark.dask
GRID = dict(
    methods=["fed-sparse-bnsl", "dp-fed-sparse-bnsl"],
    epsilons=[2.0],
    d=5,
    participants=2,
    n_per_participant=200,
    progress=False,
    method_options={"fed-sparse-bnsl": {"rounds": 5}, "dp-fed-sparse-bnsl": {"rounds": 5}},
)


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as c,
        distributed.Client(c) as client,
    ):
        yield c, client


def test_a_sweep_on_the_cluster_gives_the_serial_rows(cluster):
    _, client = cluster
    cols = [c for c in COLUMNS if c != "seconds"]
    serial = sweep(seeds=[0, 1], **GRID)
    remote = sweep(seeds=[0, 1], executor=client.get_executor(), **GRID)
    key = ["method", "epsilon", "seed"]
    pd.testing.assert_frame_equal(
        remote.frame[cols].sort_values(key).reset_index(drop=True),
        serial.frame[cols].sort_values(key).reset_index(drop=True),
    )


def test_an_audit_on_the_cluster_gives_the_serial_scores(cluster):
    _, client = cluster
    kw = dict(epsilon=1.0, delta=1e-5, trials=450, rng=9)  # three seeded blocks
    serial = play("dp-fed-sparse-bnsl", **kw)
    remote = play("dp-fed-sparse-bnsl", executor=client.get_executor(), **kw)
    np.testing.assert_array_equal(remote.scores0, serial.scores0)
    np.testing.assert_array_equal(remote.scores1, serial.scores1)


def test_the_cli_runs_on_a_scheduler(cluster, tmp_path, capsys):
    c, _ = cluster
    base = [
        "curve",
        "--methods",
        "fed-sparse-bnsl",
        "--epsilons",
        "2",
        "--seeds",
        "2",
        "--d",
        "5",
        "--participants",
        "2",
        "--n-per-participant",
        "100",
    ]
    assert cli([*base, "--out", str(tmp_path / "serial.csv")]) == 0
    assert cli([*base, "--out", str(tmp_path / "dask.csv"), "--scheduler", c.scheduler_address]) == 0
    cols = [c for c in COLUMNS if c != "seconds"]
    a, b = (
        pd.read_csv(tmp_path / f).sort_values("seed").reset_index(drop=True)[cols]
        for f in ("serial.csv", "dask.csv")
    )
    pd.testing.assert_frame_equal(a, b)
    capsys.readouterr()  # the curves' output
    audit = ["audit", "--mechanism", "dp-pgcd", "--trials", "600", "--seed", "1"]
    assert cli([*audit, "--scheduler", c.scheduler_address]) == 0
    remote = capsys.readouterr().out
    assert cli(audit) == 0
    assert capsys.readouterr().out == remote
