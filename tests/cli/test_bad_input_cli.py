"""Bad input through the command line, case by case: exit status 2, one line on stderr that names
the offending flag or file, no traceback, no output file left behind, inputs unchanged, and an
answer at once (a hang guard aborts after 60 s). A few valid controls must still succeed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbnsl.cli import main

D = 4


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Input files, good and bad, in one directory (never written by the cases)."""
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    cols = [f"X{i}" for i in range(D)]
    f: dict[str, str] = {}

    def frame(name, df, **kw):
        df.to_csv(root / name, **kw)
        f[name] = str(root / name)

    X = rng.normal(size=(40, D))
    frame("p0.csv", pd.DataFrame(X[:20], columns=cols), index=False)
    frame("p1.csv", pd.DataFrame(X[20:], columns=cols), index=False)
    frame("other_names.csv", pd.DataFrame(X[20:], columns=["a", "b", "c", "d"]), index=False)
    frame("index.csv", pd.DataFrame(X[:20], columns=cols))  # pandas' default: the index too
    frame("one_row.csv", pd.DataFrame(X[:1], columns=cols), index=False)
    nan = X[:20].copy()
    nan[3, 2] = np.nan
    frame("nan.csv", pd.DataFrame(nan, columns=cols), index=False)
    inf = X[:20].copy()
    inf[5, 1] = np.inf
    frame("inf.csv", pd.DataFrame(inf, columns=cols), index=False)
    text = pd.DataFrame(X[:20], columns=cols)
    text["X3"] = "word"
    frame("text.csv", text, index=False)
    (root / "header_only.csv").write_text(",".join(cols) + "\n")
    (root / "empty.csv").write_text("")
    (root / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (root / "dup.csv").write_text("X0,X0,X1\n1,2,3\n4,5,6\n")
    (root / "extra_fields.csv").write_text("X0,X1\n1,2,3\n4,5,6\n")
    (root / "empty_cell.csv").write_text("X0,X1\n1,2\n3,\n5,6\n")
    (root / "a_directory").mkdir()
    (root / "regular.txt").write_text("not a directory\n")
    f.update(
        {
            n: str(root / n)
            for n in (
                "header_only.csv",
                "empty.csv",
                "binary.csv",
                "dup.csv",
                "extra_fields.csv",
                "empty_cell.csv",
                "a_directory",
                "regular.txt",
            )
        }
    )
    f["missing"] = str(root / "missing.csv")
    truth = np.zeros((D, D))
    truth[0, 1] = truth[1, 2] = 1
    frame("truth.csv", pd.DataFrame(truth, index=cols, columns=cols))
    frame("truth_rect.csv", pd.DataFrame(np.zeros((D, D - 1)), index=cols, columns=cols[:-1]))
    two_cycle = truth.copy()  # a 3-cycle is a valid (cyclic) reference; a 2-cycle is not
    two_cycle[1, 0] = 1
    frame("truth_2cycle.csv", pd.DataFrame(two_cycle, index=cols, columns=cols))
    loop = truth.copy()
    loop[3, 3] = 1
    frame("truth_loop.csv", pd.DataFrame(loop, index=cols, columns=cols))
    tnan = truth.copy()
    tnan[0, 3] = np.nan
    frame("truth_nan.csv", pd.DataFrame(tnan, index=cols, columns=cols))
    frame("truth_big.csv", pd.DataFrame(np.zeros((D + 1, D + 1))))
    frame("truth_plain.csv", pd.DataFrame(truth), index=False)
    frame("truth_labels.csv", pd.DataFrame(truth, index=list("ABCD"), columns=list("ABCD")))
    frame("truth_order.csv", pd.DataFrame(truth, index=cols[::-1], columns=cols[::-1]))
    f["root"] = str(root)
    return f


def _digest(root: str) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(root).iterdir())
        if p.is_file()
    }


P = ["{p0.csv}", "{p1.csv}"]
LEARN = ["learn", "--data", *P]
DPS = ["learn", "--method", "dp-fed-sparse-bnsl", "--data", *P, "--feature-bound", "4"]
DPB = ["learn", "--method", "dp-fed-bnsl", "--clip-norm", "5", "--data", *P]

# (argv with {file} placeholders and {out} for a fresh output path, text the error must contain)
CASES = {
    # --- input files -----------------------------------------------------------------------
    "missing file": (["learn", "--data", "{missing}"], "does not exist"),
    "directory as data": (["learn", "--data", "{a_directory}"], "is a directory"),
    "header only": (["learn", "--data", "{header_only.csv}"], "has a header but no data rows"),
    "empty file": (["learn", "--data", "{empty.csv}"], "is empty"),
    "binary file": (["learn", "--data", "{binary.csv}"], "binary.csv"),
    "nan cell": (
        ["learn", "--data", "{p0.csv}", "{nan.csv}"],
        "(participant 1): missing value at data row 3 (0-based, header excluded), column 'X2'",
    ),
    "inf cell": (["learn", "--data", "{inf.csv}"], "non-finite (inf) value at data row 5"),
    "empty cell": (["learn", "--data", "{empty_cell.csv}"], "missing value at data row 1"),
    "index column": (["learn", "--data", "{index.csv}"], "column 1 has no name in the header"),
    "duplicate headers": (["learn", "--data", "{dup.csv}"], "duplicate column name(s) ['X0']"),
    "more fields than header": (
        ["learn", "--data", "{extra_fields.csv}"],
        "more fields than the header has names",
    ),
    "non-numeric column": (
        ["learn", "--data", "{text.csv}"],
        "column 'X3' is not numeric (e.g. 'word' at data row 0)",
    ),
    "different columns": (
        ["learn", "--data", "{p0.csv}", "{other_names.csv}"],
        "every participant needs the same variables",
    ),
    "one row": (
        ["learn", "--data", "{p0.csv}", "{one_row.csv}"],
        "(participant 1) has 1 rows; at least 2 are required",
    ),
    "same file twice": (["learn", "--data", "{p0.csv}", "{p0.csv}"], "twice"),
    "same file twice by another path": (["learn", "--data", "{p0.csv}", "{root}/./p0.csv"], "twice"),
    "attack same file twice": (
        [
            "attack",
            "--method",
            "dp-fed-bnsl",
            "--epsilon",
            "1",
            "--clip-norm",
            "3",
            "--data",
            "{p0.csv}",
            "{p0.csv}",
        ],
        "twice",
    ),
    "simulate over another simulation": (
        ["simulate", "--participants", "2", "--out", "{stale_dir}"],
        "holds participant_7.csv",
    ),
    "force without out": ([*LEARN, "--force"], "--force applies only with --out"),
    "curve force without plot": (
        ["curve", "--seeds", "1", "--out", "{out}", "--force"],
        "--force applies only with --plot",
    ),
    "attack different columns": (
        ["attack", "--method", "fed-bnsl", "--data", "{p0.csv}", "{other_names.csv}"],
        "every participant needs the same",
    ),
    "attack nan": (["attack", "--method", "fed-bnsl", "--data", "{nan.csv}"], "nan.csv"),
    "attack directory": (["attack", "--method", "fed-bnsl", "--data", "{a_directory}"], "is a directory"),
    # --- output paths ------------------------------------------------------------------------
    "out is a directory": ([*LEARN, "--out", "{a_directory}"], "is a directory; give a file"),
    "out /dev/full": ([*LEARN, "--out", "/dev/full"], "is not a regular file"),
    "out under a file": ([*LEARN, "--out", "{regular.txt}/W.csv"], "is not a directory"),
    "out exists": ([*LEARN, "--out", "{p1.csv}"], "already exists; pass --force"),
    "simulate out is a file": (["simulate", "--out", "{regular.txt}"], "is not a directory"),
    "simulate out holds files": (
        ["simulate", "--participants", "2", "--out", "{sim_dir}"],
        "already holds true_graph.csv",
    ),
    "demo out holds curve": (["demo", "--out", "{out_with_curve}"], "already holds curve.csv"),
    "curve plot suffix": (
        ["curve", "--seeds", "1", "--d", "5", "--out", "{out}", "--plot", "{out}.txt"],
        "must end in .png or .svg",
    ),
    "curve plot exists": (
        ["curve", "--seeds", "1", "--d", "5", "--out", "{out}", "--plot", "{existing_png}"],
        "already exists; pass --force",
    ),
    "curve plot without private": (
        [
            "curve",
            "--methods",
            "fed-bnsl",
            "--seeds",
            "1",
            "--d",
            "5",
            "--out",
            "{out}",
            "--plot",
            "{out}.png",
        ],
        "needs a private method",
    ),
    "curve out directory": (["curve", "--out", "{a_directory}"], "is a directory"),
    # --- truth ---------------------------------------------------------------------------------
    "truth not square": (
        [*LEARN, "--truth", "{truth_rect.csv}", "--out", "{out}"],
        "must be a square matrix",
    ),
    "truth 2-cycle": ([*LEARN, "--truth", "{truth_2cycle.csv}", "--out", "{out}"], "has the 2-cycle"),
    "truth self-loop": ([*LEARN, "--truth", "{truth_loop.csv}", "--out", "{out}"], "has a self-loop on"),
    "json with out -": ([*LEARN, "--json", "--out", "-"], "--json prints on stdout"),
    "stdin twice": (["learn", "--data", "-", "--truth", "-"], "cannot both read stdin"),
    "out-dir a file": ([*LEARN, "--out-dir", "{truth.csv}"], "exists and is not a directory"),
    "truth nan": ([*LEARN, "--truth", "{truth_nan.csv}", "--out", "{out}"], "missing value"),
    "truth wrong size": (
        [*LEARN, "--truth", "{truth_big.csv}", "--out", "{out}"],
        "has 5 variables but the data have 4",
    ),
    "truth other order": ([*LEARN, "--truth", "{truth_order.csv}", "--out", "{out}"], "in another order"),
    # --- numbers -------------------------------------------------------------------------------
    **{
        f"learn eps {e}": ([*DPS, "--epsilon", e, "--out", "{out}"], "--epsilon")
        for e in ("0", "-1", "nan", "1e-300", "1e-10", "1e308")
    },
    **{f"dp-fed-bnsl eps {e}": ([*DPB, "--epsilon", e], "--epsilon") for e in ("1e-300", "1e308")},
    **{f"noise eps {e}": (["noise", "--epsilon", e], "--epsilon") for e in ("0", "nan", "1e-10", "1e308")},
    **{
        f"audit eps {e}": (
            ["audit", "--mechanism", "gaussian-step", "--epsilon", e, "--trials", "100"],
            "--epsilon",
        )
        for e in ("0", "1e308")
    },
    "delta 0": ([*DPS, "--epsilon", "1", "--delta", "0"], "--delta"),
    "delta 1": ([*DPB, "--epsilon", "1", "--delta", "1"], "--delta"),
    "rounds 0": ([*DPS, "--epsilon", "1", "--rounds", "0"], "argument --rounds: must be between"),
    "rounds -1": (
        ["learn", "--method", "fed-sparse-bnsl", "--data", *P, "--rounds", "-1"],
        "argument --rounds",
    ),
    "rounds 1e12": ([*DPS, "--epsilon", "1", "--rounds", "1000000000000"], "argument --rounds"),
    "rounds float": ([*DPS, "--epsilon", "1", "--rounds", "1e12"], "argument --rounds: must be an integer"),
    "local iters 0": ([*DPS, "--epsilon", "1", "--local-iters", "0"], "argument --local-iters"),
    "max rounds 0": ([*LEARN, "--max-rounds", "0"], "argument --max-rounds"),
    "trials 50": (["audit", "--mechanism", "selection", "--trials", "50"], "argument --trials"),
    "trials 1e12": (["audit", "--mechanism", "selection", "--trials", "1000000000000"], "argument --trials"),
    "demo trials 50": (["demo", "--trials", "50", "--out", "{out}"], "argument --trials"),
    "account sigma 0": (["account", "--sigma", "0", "--steps", "1"], "--sigma"),
    "account sigma nan": (["account", "--sigma", "nan", "--steps", "1"], "--sigma"),
    "account steps 0": (["account", "--sigma", "1", "--steps", "0"], "argument --steps"),
    "account rho -1": (["account", "--rho", "-1"], "--rho"),
    "noise smoothness-d 0": (["noise", "--epsilon", "1", "--smoothness-d", "0"], "argument --smoothness-d"),
    "clip 0": ([*DPS, "--epsilon", "1", "--clip", "0"], "--clip"),
    "clip nan": ([*DPS, "--epsilon", "1", "--clip", "nan"], "--clip"),
    "clip scheme unknown": (
        [*DPS, "--epsilon", "1", "--clip-scheme", "foo"],
        "argument --clip-scheme: invalid choice: 'foo'",
    ),
    "clip scheme for fed-bnsl": (
        [*LEARN, "--clip-scheme", "relative"],
        "--clip-scheme does not apply to --method fed-bnsl",
    ),
    "clip 1e308": ([*DPS, "--epsilon", "1", "--clip", "1e308"], "--clip must be <= 1e+100"),
    "warm start unknown": (
        [*DPS, "--epsilon", "1", "--warm-start", "yes"],
        "argument --warm-start: invalid choice: 'yes'",
    ),
    "warm share 0": ([*DPS, "--epsilon", "1", "--warm-share", "0"], "--warm-share"),
    "warm share inf": ([*DPS, "--epsilon", "1", "--warm-share", "inf"], "--warm-share"),
    "warm clip norm -1": ([*DPS, "--epsilon", "1", "--warm-clip-norm", "-1"], "--warm-clip-norm"),
    "warm share for dp-fed-bnsl": (
        [*DPB, "--epsilon", "1", "--warm-share", "0.5"],
        "--warm-share does not apply to --method dp-fed-bnsl",
    ),
    "calibration classic for dp-fed-sparse-bnsl": (
        [*DPS, "--epsilon", "1", "--calibration", "classic"],
        "--calibration must be one of 'tight', 'paper'; got 'classic'",
    ),
    "calibration paper for dp-fed-bnsl": (
        [*DPB, "--epsilon", "1", "--calibration", "paper"],
        "--calibration must be one of 'tight', 'classic', 'zcdp'; got 'paper'",
    ),
    "calibration unknown": (
        [*DPB, "--epsilon", "1", "--calibration", "analytic"],
        "argument --calibration: invalid choice: 'analytic'",
    ),
    "feature bound -1": ([*DPS[:-1], "-1", "--epsilon", "1"], "--feature-bound"),
    "clip norm 1e308": ([*DPB, "--epsilon", "1", "--clip-norm", "1e308"], "--clip-norm"),
    "attack clip norm 1e308": (
        ["attack", "--method", "dp-fed-bnsl", "--epsilon", "1", "--clip-norm", "1e308"],
        "--clip-norm",
    ),
    "learn eps inf dp-fed-bnsl": ([*DPB, "--epsilon", "inf"], "run --method fed-bnsl instead"),
    "learn eps inf sparse": ([*DPS, "--epsilon", "inf"], "run --method fed-sparse-bnsl instead"),
    "attack eps inf": (
        ["attack", "--method", "dp-fed-bnsl", "--epsilon", "inf"],
        "--epsilon inf would switch the noise off",
    ),
    "truth other labels": (
        [*LEARN, "--truth", "{truth_labels.csv}", "--out", "{out}"],
        "names variables ['A', 'B', 'C', 'D'] but the data have",
    ),
    "notears one row": (
        ["learn", "--method", "notears", "--data", "{one_row.csv}"],
        "pools the rows and needs at least 2",
    ),
    "clip norm 0": ([*DPB, "--epsilon", "1", "--clip-norm", "0"], "--clip-norm"),
    "threshold nan": ([*LEARN, "--threshold", "nan"], "--threshold"),
    "lambda1 inf": ([*LEARN, "--lambda1", "inf"], "--lambda1"),
    "seed -1": ([*DPB, "--epsilon", "1", "--seed", "-1"], "argument --seed"),
    "seed 2**64": ([*DPB, "--epsilon", "1", "--seed", str(2**64)], "argument --seed"),
    "participants 0": (["learn", "--data", "{p0.csv}", "--participants", "0"], "argument --participants"),
    "simulate d 1": (["simulate", "--d", "1", "--out", "{out}"], "argument --d"),
    "simulate n 0": (["simulate", "--n", "0", "--out", "{out}"], "argument --n"),
    "simulate more participants than rows": (
        ["simulate", "--n", "5", "--participants", "6", "--out", "{out}"],
        "exceeds --n",
    ),
    "network unknown": (["simulate", "--network", "asia", "--out", "{out}"], "argument --network"),
    "network more participants than rows": (
        ["simulate", "--network", "ecoli70", "--n", "5", "--participants", "6", "--out", "{out}"],
        "exceeds --n",
    ),
    "network out is a file": (
        ["simulate", "--network", "child", "--out", "{regular.txt}"],
        "is not a directory",
    ),
    "network out under a file": (
        ["simulate", "--network", "ecoli70", "--standardise", "--out", "{regular.txt}/sub"],
        "is not a directory",
    ),
    "network with s0": (["simulate", "--network", "ecoli70", "--s0", "3", "--out", "{out}"], "--s0"),
    "standardise a discrete network": (
        ["simulate", "--network", "alarm", "--standardise", "--out", "{out}"],
        "--standardise applies",
    ),
    "max-iter 0": ([*LEARN, "--method", "notears", "--max-iter", "0"], "argument --max-iter"),
    "max-iter float": ([*LEARN, "--method", "notears", "--max-iter", "1e400"], "argument --max-iter"),
    "max-iter for fed-bnsl": ([*LEARN, "--max-iter", "3"], "--max-iter"),
    "sortnregress epsilon": ([*LEARN, "--method", "sortnregress", "--epsilon", "1"], "--epsilon"),
    "dp-sortnregress without clip norm": (
        [*LEARN, "--method", "dp-sortnregress", "--epsilon", "1"],
        "needs --clip-norm",
    ),
    "dp-sortnregress clip norm inf": (
        [*LEARN, "--method", "dp-r2-sortnregress", "--epsilon", "1", "--clip-norm", "inf"],
        "--clip-norm",
    ),
    "lag 0": (["learn", "--method", "fed-dbn", "--data", *P, "--lag", "0"], "argument --lag"),
    "alpha 2": (["learn", "--method", "pc", "--data", *P, "--alpha", "2"], "--alpha"),
    "curve seeds 0": (["curve", "--seeds", "0", "--out", "{out}"], "argument --seeds"),
    "curve d huge": (["curve", "--d", "100000000", "--out", "{out}"], "--d values must lie"),
    "curve eps 1e308": (
        ["curve", "--epsilons", "1e308", "--seeds", "1", "--d", "5", "--out", "{out}"],
        "--epsilons",
    ),
    # --- options that do not apply are refused, even at their default value ------------------
    "clip default for fed-bnsl": ([*LEARN, "--clip", "30"], "--clip does not apply to --method fed-bnsl"),
    "seed for fed-bnsl": ([*LEARN, "--seed", "1"], "--seed does not apply to --method fed-bnsl"),
    "epsilon for fed-bnsl": ([*LEARN, "--epsilon", "1"], "--epsilon does not apply"),
    "private needs epsilon": (DPB, "needs --epsilon"),
    "attack d with data": (
        ["attack", "--method", "fed-bnsl", "--data", *P, "--d", "5"],
        "--d applies to simulated participants only",
    ),
    "attack n with data": (
        ["attack", "--method", "fed-bnsl", "--data", *P, "--n-per-participant", "20"],
        "--n-per-participant applies",
    ),
    "attack clip for fed-bnsl": (
        ["attack", "--method", "fed-bnsl", "--clip", "1"],
        "--clip does not apply to --method fed-bnsl",
    ),
    "attack clip-norm for sparse": (
        ["attack", "--method", "dp-fed-sparse-bnsl", "--epsilon", "1", "--clip-norm", "10"],
        "--clip-norm does not apply",
    ),
    "attack epsilon for fed-bnsl": (
        ["attack", "--method", "fed-bnsl", "--epsilon", "1"],
        "--epsilon does not apply",
    ),
    "attack target out of range": (
        ["attack", "--method", "fed-bnsl", "--data", *P, "--target", "9"],
        "--target 9 is not a column index",
    ),
}


def _fill(argv, files, tmp_path) -> tuple[list[str], list[Path]]:
    """Substitute placeholders; returns the argv and the output paths that must not appear."""
    out = tmp_path / "out"
    existing_png = tmp_path / "existing.png"
    existing_png.write_bytes(b"an earlier plot")
    with_curve = tmp_path / "with_curve"
    with_curve.mkdir()
    (with_curve / "curve.csv").write_text("an earlier demo's curve\n")
    stale_dir = tmp_path / "stale_dir"
    stale_dir.mkdir()
    (stale_dir / "participant_7.csv").write_text("X0\n1\n")
    sim_dir = tmp_path / "sim_dir"
    sim_dir.mkdir()
    (sim_dir / "true_graph.csv").write_text("an earlier simulation's truth\n")
    values = {
        **files,
        "out": str(out),
        "existing_png": str(existing_png),
        "out_with_curve": str(with_curve),
        "sim_dir": str(sim_dir),
        "stale_dir": str(stale_dir),
    }
    filled = []
    for a in argv:
        for key, value in values.items():
            a = a.replace("{" + key + "}", value)
        filled.append(a)
    fresh = [out, Path(f"{out}.txt"), Path(f"{out}.png"), out.with_suffix(".lagged.csv")]
    return filled, fresh


@pytest.fixture(autouse=True)
def _no_hang(hang_guard):
    """Every case answers at once (see ``hang_guard`` in conftest)."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_with_one_line(case, files, tmp_path, capsys):
    template, text = CASES[case]
    argv, fresh = _fill(template, files, tmp_path)
    before = _digest(files["root"])
    with_curve = (tmp_path / "with_curve" / "curve.csv").read_text()
    png = (tmp_path / "existing.png").read_bytes()
    cwd = os.getcwd()
    os.chdir(tmp_path)  # commands with a default output directory write nothing here either
    try:
        listing = sorted(p.name for p in tmp_path.iterdir())
        rc = main(argv)
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("dpbnsl: error: "), err
    assert "Traceback" not in err
    assert text in err, err
    assert not any(p.exists() for p in fresh), "an output was written before the refusal"
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert not [p for p in Path(files["root"]).rglob(".*.tmp*")], "a temporary file was left"
    assert _digest(files["root"]) == before, "an input file was changed"
    assert (tmp_path / "with_curve" / "curve.csv").read_text() == with_curve
    assert (tmp_path / "existing.png").read_bytes() == png
    assert sorted(p.name for p in (tmp_path / "sim_dir").iterdir()) == ["true_graph.csv"]
    assert sorted(p.name for p in (tmp_path / "stale_dir").iterdir()) == ["participant_7.csv"]


VALID = {
    "learn fed-bnsl": LEARN + ["--max-rounds", "5"],
    "learn with truth and out": LEARN + ["--max-rounds", "5", "--truth", "{truth.csv}", "--out", "{out}"],
    "learn out over an existing file with --force": LEARN
    + ["--max-rounds", "5", "--out", "{existing_png}", "--force"],
    "learn private": [*DPS, "--epsilon", "1", "--rounds", "2"],
    "tiny sigma is a valid question": ["account", "--sigma", "1e-300", "--steps", "10"],
    "huge sigma": ["account", "--sigma", "1e300", "--steps", "10"],
    "huge rho": ["account", "--rho", "1e308"],
    "edge of the epsilon range": ["noise", "--epsilon", "100"],
    "other edge": ["noise", "--epsilon", "1e-6", "--calibration", "paper"],
    "delta tiny": ["noise", "--epsilon", "1", "--delta", "1e-300"],
    "delta subnormal": ["noise", "--epsilon", "1", "--delta", "1e-310"],
    "delta subnormal private run": [*DPS, "--epsilon", "1", "--delta", "1e-310", "--rounds", "2"],
    "delta tiny for the zcdp calibration": [
        *DPB,
        "--epsilon",
        "1",
        "--delta",
        "1e-300",
        "--calibration",
        "zcdp",
        "--max-rounds",
        "3",
    ],
    "truth without labels": LEARN + ["--max-rounds", "3", "--truth", "{truth_plain.csv}"],
}


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_controls_succeed(case, files, tmp_path, capsys):
    argv, _ = _fill(VALID[case], files, tmp_path)
    assert main(argv) == 0, capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err


def test_simulate_refuses_then_overwrites_with_force(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", "--d", "4", "--n", "60", "--participants", "3", "--out", str(out)]) == 0
    first = (out / "participant_0.csv").read_bytes()
    assert (
        main(["simulate", "--d", "4", "--n", "60", "--participants", "2", "--seed", "1", "--out", str(out)])
        == 2
    )
    assert "already holds participant_0.csv" in capsys.readouterr().err
    assert (out / "participant_0.csv").read_bytes() == first
    assert (
        main(
            [
                "simulate",
                "--d",
                "4",
                "--n",
                "60",
                "--participants",
                "2",
                "--seed",
                "1",
                "--out",
                str(out),
                "--force",
            ]
        )
        == 0
    )
    assert "removed 1 participant file(s) of an earlier simulation" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "participant_0.csv",
        "participant_1.csv",
        "true_graph.csv",
        "true_weights.csv",
    ]


def test_a_failed_write_leaves_nothing(files, tmp_path, monkeypatch, capsys):
    """A write that fails half-way (disk full, say) removes what it staged and reports one line."""
    import pandas as _pd

    def full(self, path, *a, **k):
        Path(path).write_text("partial")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(_pd.DataFrame, "to_csv", full)
    out = tmp_path / "new_dir" / "W.csv"
    assert main([*_fill(LEARN, files, tmp_path)[0], "--max-rounds", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpbnsl: error: No space left on device") and err.count("\n") == 1
    assert not (tmp_path / "new_dir").exists()


def test_warnings_are_one_line_each(files, tmp_path, capsys):
    """A local scale warning reaches the user as one `dpbnsl: warning:` line, not Python's
    two-line warning with a source excerpt."""
    argv, _ = _fill([*DPB, "--epsilon", "1", "--clip-norm", "0.01", "--max-rounds", "3"], files, tmp_path)
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("dpbnsl: warning: participant ") for line in err)
    assert any("100% of its rows have norm above --clip-norm 0.01" in line for line in err)  # in flags


def test_write_files_is_all_or_nothing_and_keeps_permissions(tmp_path):
    """Replacing two files where the second move fails restores the first; a replaced file keeps
    its mode; a new file gets the umask's."""
    from dpbnsl.cli import files as _cli_files

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("old a")
    os.chmod(a, 0o600)
    _cli_files.write_files([(a, lambda t: Path(t).write_text("new a"))])
    assert a.read_text() == "new a" and (a.stat().st_mode & 0o777) == 0o600
    real_replace = os.replace

    def fail_on_b(src, dst):
        if Path(dst) == b:
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst)

    import unittest.mock as mock

    with mock.patch.object(_cli_files.os, "replace", fail_on_b):
        with pytest.raises(OSError):
            _cli_files.write_files(
                [(a, lambda t: Path(t).write_text("newer a")), (b, lambda t: Path(t).write_text("b"))]
            )
    assert a.read_text() == "new a" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]  # no temporary left
    umask = os.umask(0)
    os.umask(umask)
    c = tmp_path / "c.csv"
    _cli_files.write_files([(c, lambda t: Path(t).write_text("c"))])
    assert (c.stat().st_mode & 0o777) == 0o666 & ~umask
