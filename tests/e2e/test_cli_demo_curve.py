"""`dpbnsl demo` (the README's main job) and `dpbnsl curve`."""

from __future__ import annotations

import importlib.util

import pandas as pd

from dpbnsl.cli import main


def test_demo_runs_every_section(tmp_path, capsys):
    stale = "method,epsilon,delta,d,P,n_k,seed,shd,tpr,fdr,f1,nnz,comm_mb,seconds\n"
    (tmp_path / "curve.csv").write_text(stale)  # an earlier demo's curve
    # an existing output is never overwritten silently: refused before any work, file untouched
    assert main(["demo", "--out", str(tmp_path), "--trials", "20000"]) == 2
    assert "already holds curve.csv; pass --force" in capsys.readouterr().err
    assert (tmp_path / "curve.csv").read_text() == stale
    # --seed: 20 000 trials flag the broken control on most seeds, not all; the default 100 000
    # flags it at every seed tried (the demo's own runs are unseeded)
    assert main(["demo", "--out", str(tmp_path), "--trials", "20000", "--force", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "privacy: (ε, δ) = (1, 1e-05)-DP per participant, replace-one; accountant: rdp" in out
    for part in (
        "noise for ε = 1",
        "Fed-BNSL: the server reconstructs",
        "the same attack fails",
        "audits at ε = 1",
        "FLAGGED",
        "privacy-utility curve",
        "demo finished",
    ):
        assert part in out, part
    frame = pd.read_csv(tmp_path / "curve.csv")
    assert set(frame.method) == {"fed-sparse-bnsl", "dp-fed-sparse-bnsl"}
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curve_resumes_and_refuses_bad_input(tmp_path, capsys):
    csv = tmp_path / "c.csv"
    argv = [
        "curve",
        "--epsilons",
        "1,10",
        "--seeds",
        "1",
        "--d",
        "5",
        "--participants",
        "2",
        "--n-per-participant",
        "60",
        "--out",
        str(csv),
    ]
    assert main(argv) == 0
    assert "3 runs computed, 0 already" in capsys.readouterr().out
    before = csv.read_bytes()
    assert main(argv) == 0
    assert "0 runs computed, 3 already" in capsys.readouterr().out
    assert csv.read_bytes() == before
    assert main(argv[:1] + ["--methods", "foo", "--out", str(csv)]) == 2
    assert "--methods: unknown method 'foo'" in capsys.readouterr().err
    assert main(argv[:1] + ["--epsilons", "1,x", "--out", str(csv)]) == 2
    assert "--epsilons must be comma-separated numbers" in capsys.readouterr().err
    assert main(argv[:1] + ["--d", "5,6", "--participants", "2,3", "--out", str(csv)]) == 2
    assert "not both" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(argv[:-1] + [str(bad)]) == 2
    assert bad.read_text() == "a,b\n1,2\n"
