"""Machine-readable CLI: --version, --json on every command (one JSON document on stdout, the human
text on stderr), '-' for stdin/stdout, Parquet input, run bundles and `dpbnsl show`."""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os

import numpy as np
import pandas as pd
import pytest

from dpbnsl.cli.app import build_parser, main
from dpbnsl.io.bundle import read_bundle
from dpbnsl.learners import LearnResult
from dpbnsl.simulation import simulate

D = 4


@pytest.fixture()
def files(tmp_path):
    data = simulate(D, 300, participants=2, rng=1)
    cols = [f"X{i}" for i in range(D)]
    paths = []
    for k, X in enumerate(data.participants):
        p = tmp_path / f"p{k}.csv"
        pd.DataFrame(X, columns=cols).to_csv(p, index=False)
        paths.append(str(p))
    truth = tmp_path / "truth.csv"
    pd.DataFrame(data.B_true, index=cols, columns=cols).to_csv(truth)
    return tmp_path, paths, str(truth), data


def _json(argv, capsys, status=0):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == status, err
    return json.loads(out), err  # exactly one JSON document: json.loads refuses anything more


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--version"])
    assert exc.value.code == 0
    line = capsys.readouterr().out
    assert (
        line.startswith("dpbnsl ") and "numpy" in line and "dp-accounting" in line and line.count("\n") == 1
    )


def test_every_command_has_json():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name, p in sub.choices.items() if "--json" not in p._option_string_actions]
    assert missing == []


def test_learn_json_carries_the_run_and_text_goes_to_stderr(files, capsys):
    _, paths, truth, data = files
    doc, err = _json(["learn", "--data", *paths, "--truth", truth, "--json"], capsys)
    assert doc["method"] == "fed-bnsl" and doc["d"] == D and doc["variables"] == [f"X{i}" for i in range(D)]
    assert len(doc["edges"]) == doc["n_edges"] and doc["privacy"] is None
    assert doc["accuracy"]["shd"] >= 0 and "fed-bnsl: 2 participant(s)" in err


def test_private_learn_json_has_the_privacy_statement(files, capsys):
    _, paths, _, _ = files
    doc, _ = _json(
        [
            "learn",
            "--method",
            "dp-fed-bnsl",
            "--clip-norm",
            "5",
            "--epsilon",
            "1",
            "--data",
            *paths,
            "--json",
        ],
        capsys,
    )
    p = doc["privacy"]
    assert p["epsilon"] <= 1.0 and p["delta"] == 1e-5 and len(p["spent"]) == 2
    assert all(s <= 1.0 for s in p["spent"]) and p["statement"].startswith("(ε, δ) = (1")


def test_data_from_stdin_and_weights_to_stdout(files, capsys, monkeypatch):
    tmp, paths, _, _ = files
    text = open(paths[0], encoding="utf-8").read()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    rc = main(["learn", "--data", "-", "--participants", "2", "--out", "-"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    W = pd.read_csv(io.StringIO(out), index_col=0)
    assert W.shape == (D, D) and list(W.columns) == [f"X{i}" for i in range(D)]
    assert "fed-bnsl: 2 participant(s)" in err  # the human text moved to stderr
    # the same data from the file give the same weights
    rc = main(["learn", "--data", paths[0], "--participants", "2", "--out", str(tmp / "W.csv")])
    capsys.readouterr()
    assert np.array_equal(pd.read_csv(tmp / "W.csv", index_col=0).to_numpy(), W.to_numpy())


def test_stdin_problems_name_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a,b\n1,x\n")))
    assert main(["learn", "--data", "-"]) == 2
    assert "--data file '<stdin>'" in capsys.readouterr().err


def test_parquet_input(files, capsys):
    pytest.importorskip("pyarrow")
    tmp, paths, _, _ = files
    pq = []
    for k, p in enumerate(paths):
        pd.read_csv(p).to_parquet(tmp / f"p{k}.parquet")
        pq.append(str(tmp / f"p{k}.parquet"))
    a, _ = _json(["learn", "--data", *paths, "--json"], capsys)
    b, _ = _json(["learn", "--data", *pq, "--json"], capsys)
    assert a["edges"] == b["edges"]


def test_parquet_without_pyarrow_is_a_clean_error(files, capsys, monkeypatch):
    tmp, _, _, _ = files
    (tmp / "x.parquet").write_bytes(b"PAR1")
    if importlib.util.find_spec("pyarrow") is None:
        assert main(["learn", "--data", str(tmp / "x.parquet")]) == 2
        assert "needs pyarrow" in capsys.readouterr().err
    else:
        assert main(["learn", "--data", str(tmp / "x.parquet")]) == 2
        assert "cannot read --data file" in capsys.readouterr().err


def test_learn_out_dir_bundle_round_trips_and_shows(files, capsys):
    tmp, paths, truth, data = files
    out = tmp / "run"
    argv = [
        "learn",
        "--method",
        "dp-fed-bnsl",
        "--clip-norm",
        "5",
        "--epsilon",
        "2",
        "--data",
        *paths,
        "--truth",
        truth,
    ]
    doc, _ = _json([*argv, "--out-dir", str(out), "--out", str(tmp / "W.csv"), "--json"], capsys)
    result = LearnResult.load(out)
    assert np.array_equal(result.W, pd.read_csv(tmp / "W.csv", index_col=0).to_numpy())
    assert len(result.ledger) == 2 and result.privacy is not None and result.transcript is not None
    bundle = read_bundle(out)
    assert bundle.command[:2] == ("dpbnsl", "learn") and np.array_equal(bundle.truth.to_numpy(), data.B_true)
    assert bundle.summary["n_edges"] == doc["n_edges"] and doc["bundle"] == str(out)
    # refused without --force, before any work
    assert main([*argv, "--out-dir", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    shown, err = _json(["show", str(out), "--json"], capsys)
    assert shown["kind"] == "learn" and shown["result"]["method"] == "dp-fed-bnsl"
    assert shown["result"]["accuracy"]["shd"] == doc["accuracy"]["shd"]
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "participant 1 ledger:" in text and "privacy: (ε, δ) = (2" in text


def test_attack_and_audit_json_and_bundles(tmp_path, capsys):
    doc, _ = _json(
        [
            "attack",
            "--method",
            "fed-bnsl",
            "--d",
            "4",
            "--participants",
            "2",
            "--seed",
            "1",
            "--json",
            "--out-dir",
            str(tmp_path / "att"),
        ],
        capsys,
    )
    assert doc["participants"] == 2 and len(doc["table"]) == 3 and doc["table"][0]["rel_error"] < 1e-6
    att = read_bundle(tmp_path / "att")
    assert att.kind == "attack" and set(att.tables) == {"participants", "membership_scores"}
    doc, _ = _json(
        [
            "audit",
            "--mechanism",
            "gaussian-step",
            "--trials",
            "1000",
            "--seed",
            "2",
            "--json",
            "--out-dir",
            str(tmp_path / "aud"),
        ],
        capsys,
    )
    assert doc["verdict"].startswith("pass") and doc["epsilon_lb"] <= doc["claimed_epsilon"]
    aud = read_bundle(tmp_path / "aud")
    assert aud.kind == "audit" and aud.tables["audit"]["epsilon_lb"][0] == doc["epsilon_lb"]


@pytest.mark.parametrize(
    "argv",
    [
        ["noise", "--epsilon", "1"],
        ["account", "--sigma", "2", "--steps", "3"],
        ["account", "--rho", "0.5"],
    ],
)
def test_accounting_json(argv, capsys):
    doc, _ = _json([*argv, "--json"], capsys)
    assert doc


def test_simulate_json(tmp_path, capsys):
    doc, err = _json(
        ["simulate", "--d", "3", "--n", "20", "--participants", "2", "--out", str(tmp_path / "s"), "--json"],
        capsys,
    )
    assert doc["true_edges"] >= 0 and len(doc["files"]) == 4 and all(os.path.exists(f) for f in doc["files"])
    assert "wrote 2 participant files" in err


def test_non_finite_numbers_are_strict_json(capsys):
    # σ/Δ = 1e-300: ρ and ε overflow to ∞; strict JSON has no Infinity, so it is written as a string
    doc, _ = _json(["account", "--sigma", "1e-300", "--steps", "1", "--json"], capsys)
    assert doc["rho"] == "inf" and doc["epsilon"] == {"zcdp": "inf", "rdp": "inf", "pld": "inf"}


def test_show_html_to_a_file_and_to_stdout(files, capsys):
    tmp, paths, truth, _ = files
    out = tmp / "run"
    assert main(["learn", "--data", *paths, "--truth", truth, "--out-dir", str(out)]) == 0
    capsys.readouterr()
    page = tmp / "report.html"
    doc, _ = _json(["show", str(out), "--html", str(page), "--json"], capsys)
    text = page.read_text(encoding="utf-8")
    assert doc["html"] == str(page) and text.startswith("<!DOCTYPE html>") and "fed-bnsl" in text
    assert "<svg" in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert main(["show", str(out), "--html", str(page)]) == 2  # no overwrite without --force
    assert "already exists" in capsys.readouterr().err
    assert main(["show", str(out), "--html", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == text and "learn bundle" in captured.err
    assert main(["show", str(tmp / "p0.csv")]) == 2
    assert "is not a bundle" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "{tmp}/missing"], "is not a bundle"),
        (["show", "{run}", "--html", "{tmp}/page.txt"], "must end in .html or .htm"),
        (["show", "{run}", "--force"], "--force applies only with --html FILE"),
        (["show", "{run}", "--html", "{tmp}"], "must end in .html"),
        (["show", "{run}", "--html", "-", "--json"], "--json prints on stdout"),
        (["audit", "--mechanism", "gaussian-step", "--trials", "1000", "--force"], "--force applies only"),
        (
            ["audit", "--mechanism", "gaussian-step", "--trials", "1000", "--out-dir", "{tmp}/p0.csv"],
            "not a directory",
        ),
        (["attack", "--method", "fed-bnsl", "--out-dir", "{run}"], "exists and is not empty"),
        (
            ["learn", "--data", "{tmp}/p0.csv", "--out-dir", "{tmp}/no/such/run"],
            "parent directory does not exist",
        ),
        (["learn", "--data", "{tmp}/p0.csv", "--out-dir", "-"], "must name a directory"),
        (["learn", "--data", "{tmp}/p0.csv", "--epsilon", "1e308", "--json"], "--epsilon does not apply"),
    ],
)
def test_bad_input_for_the_new_options(argv, message, files, capsys):
    tmp, paths, _, _ = files
    run = tmp / "run"
    assert main(["learn", "--data", *paths, "--out-dir", str(run)]) == 0
    capsys.readouterr()
    before = sorted(p.relative_to(tmp) for p in tmp.rglob("*"))
    rc = main([a.format(tmp=tmp, run=run) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert sorted(p.relative_to(tmp) for p in tmp.rglob("*")) == before  # nothing written


def test_audit_reports_the_shape_bounds(capsys):
    """The selection audit carries the bounded-range bound against ε₀; the Gaussian step the μ-GDP
    bound; each field is null where its bound does not apply."""
    sel, text = _json(
        ["audit", "--mechanism", "selection", "--trials", "20000", "--seed", "3", "--json"], capsys
    )
    assert sel["claimed_epsilon0"] == 1.0 and 0 < sel["epsilon0_lb_bounded_range"] <= 1.0
    assert sel["flagged_bounded_range"] is False and sel["epsilon_lb_gdp"] is None
    assert "ε₀_lb (BR)" in text
    gauss, _ = _json(
        ["audit", "--mechanism", "gaussian-step", "--trials", "2000", "--seed", "3", "--json"], capsys
    )
    assert gauss["epsilon0_lb_bounded_range"] is None and gauss["claimed_epsilon0"] is None
    assert gauss["flagged_bounded_range"] is None and gauss["epsilon_lb_gdp"] is not None
