"""The CLI's accounting commands: `dpbnsl noise` (calibration table) and `dpbnsl account` (ε of a
given noise) agree with the library, print JSON on request, and fail with one line and status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from dp_accounting import GaussianDpEvent

from dpbnsl.accounting import (
    BoundedRangeDpEvent,
    PrivacyLedger,
    calibrate_dp_pgcd,
    calibrate_dp_pgcd_laplace,
    calibrate_smoothness,
    format_up,
    gaussian_delta,
    rho_to_epsilon,
)
from dpbnsl.cli import main

NOISE = ["noise", "--epsilon", "1", "--delta", "1e-5", "--rounds", "10", "--local-iters", "10"]
COLUMNS = ["method", "gumbel_multiplier", "gaussian_multiplier", "rho_per_step", "eps_zcdp", "eps_rdp"]


@pytest.fixture(scope="module")
def scales():
    return {m: calibrate_dp_pgcd(1.0, 1e-5, rounds=10, local_iters=10, method=m) for m in ("tight", "paper")}


def _run(argv, capsys) -> str:
    """The command's stdout; with --json the human-readable text goes to stderr (and must be
    there: the same table), else stderr stays empty."""
    assert main(argv) == 0
    captured = capsys.readouterr()
    if "--json" in argv:
        assert captured.err.strip() and "{" not in captured.err
    else:
        assert captured.err == ""
    return captured.out


def _rows(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the table whose header line starts with ``header``, keyed by first cell."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith(("tight uses", "Laplace", "smoothness")):
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def test_noise_table_matches_library(scales, capsys):
    out = _run(NOISE, capsys)
    header = next(line for line in out.splitlines() if line.startswith("method"))
    assert header.split() == COLUMNS
    rows = _rows(out, "method")
    assert list(rows) == ["tight", "paper"]
    for method, s in scales.items():
        expected = [s.gumbel_multiplier, s.gaussian_multiplier, s.rho_per_step, s.epsilon_zcdp, s.epsilon_rdp]
        # rounded up: a multiplier or an ε copied from the table never understates the noise or
        # the loss
        assert rows[method] == [format_up(v) for v in expected]
        assert all(float(cell) >= v for cell, v in zip(rows[method], expected))
    saving = 100 * (1 - scales["tight"].gaussian_multiplier / scales["paper"].gaussian_multiplier)
    assert f"tight uses {saving:.1f}% less noise than paper (Theorem 5.1)" in out
    assert 10 < saving < 30


def test_noise_json_matches_library(scales, capsys):
    data = json.loads(_run(NOISE + ["--json"], capsys))  # one JSON object and nothing else
    assert (data["epsilon"], data["delta"], data["rounds"], data["local_iters"], data["steps"]) == (
        1.0,
        1e-5,
        10,
        10,
        100,
    )
    assert [r["method"] for r in data["rows"]] == ["tight", "paper"]
    for row in data["rows"]:
        s = scales[row["method"]]
        assert row == {
            "method": s.method,
            "gumbel_multiplier": s.gumbel_multiplier,
            "gaussian_multiplier": s.gaussian_multiplier,
            "rho_per_step": s.rho_per_step,
            "eps_zcdp": s.epsilon_zcdp,
            "eps_rdp": s.epsilon_rdp,
        }
    assert data["saving_percent"] == pytest.approx(
        100 * (1 - scales["tight"].gaussian_multiplier / scales["paper"].gaussian_multiplier), rel=1e-12
    )
    assert "laplace" not in data and "smoothness" not in data


def test_noise_single_method_laplace_and_smoothness(scales, capsys):
    out = _run(NOISE + ["--calibration", "paper", "--laplace", "--smoothness-d", "7"], capsys)
    assert list(_rows(out, "method  gumbel")) == ["paper"]
    assert "less noise" not in out
    lap = calibrate_dp_pgcd_laplace(1.0, 1e-5, rounds=10, local_iters=10)
    assert _rows(out, "method   selection")["laplace"] == [
        f"{v:.6g}" for v in (lap.selection_multiplier, lap.update_multiplier, lap.epsilon_per_step)
    ]
    smooth = _rows(out, "method  multiplier")
    assert smooth == {"paper": [format_up(calibrate_smoothness(1.0, 1e-5, d=7, method="paper"))]}

    data = json.loads(
        _run(NOISE + ["--calibration", "paper", "--laplace", "--smoothness-d", "7", "--json"], capsys)
    )
    assert data["saving_percent"] is None and len(data["rows"]) == 1
    assert data["rows"][0]["gaussian_multiplier"] == scales["paper"].gaussian_multiplier
    assert data["laplace"] == {
        "selection_multiplier": lap.selection_multiplier,
        "update_multiplier": lap.update_multiplier,
        "eps_per_step": lap.epsilon_per_step,
    }
    assert data["smoothness"] == {"d": 7, "paper": calibrate_smoothness(1.0, 1e-5, d=7, method="paper")}


def test_account_rho_matches_rho_to_epsilon(capsys):
    out = _run(["account", "--rho", "0.03125", "--delta", "1e-3"], capsys)
    rows = _rows(out, "conversion")
    bs = rho_to_epsilon(0.03125, 1e-3, conversion="bun-steinke")
    cks = rho_to_epsilon(0.03125, 1e-3, conversion="cks")
    assert rows == {"bun-steinke": [format_up(bs)], "cks": [format_up(cks)]}
    assert rows["cks"] == ["0.688003"]  # 0.688002455…, rounded up
    data = json.loads(_run(["account", "--rho", "0.03125", "--delta", "1e-3", "--json"], capsys))
    assert data == {"rho": 0.03125, "delta": 1e-3, "epsilon": {"bun-steinke": bs, "cks": cks}}


def test_account_sigma_matches_ledger(capsys):
    ledger = PrivacyLedger()
    ledger.record("g", GaussianDpEvent(20.0), 50)
    expected = {a: ledger.epsilon(1e-5, accountant=a) for a in ("zcdp", "rdp", "pld")}
    out = _run(["account", "--sigma", "20", "--steps", "50"], capsys)
    assert _rows(out, "accountant") == {a: [format_up(e)] for a, e in expected.items()}
    data = json.loads(_run(["account", "--sigma", "20", "--steps", "50", "--json"], capsys))
    assert data["epsilon"] == expected and data["rho"] == ledger.rho()
    assert expected["pld"] < expected["rdp"] < expected["zcdp"]


def test_account_dp_pgcd_steps_reproduce_the_calibration(scales, capsys):
    s = scales["tight"]
    m = repr(s.gaussian_multiplier)
    data = json.loads(
        _run(["account", "--sigma", m, "--steps", "100", "--selection-scale", m, "--json"], capsys)
    )
    assert data["epsilon"]["rdp"] == pytest.approx(s.epsilon_rdp, rel=1e-12)
    assert data["epsilon"]["zcdp"] == pytest.approx(s.epsilon_zcdp, rel=1e-12)
    assert data["epsilon"]["pld"] is None
    ledger = PrivacyLedger()
    ledger.record("s", BoundedRangeDpEvent(2.0 / s.gumbel_multiplier), 100)
    ledger.record("g", GaussianDpEvent(s.gaussian_multiplier), 100)
    assert data["rho"] == pytest.approx(ledger.rho(), rel=1e-12)
    out = _run(["account", "--sigma", m, "--steps", "100", "--selection-scale", m], capsys)
    assert " ".join(_rows(out, "accountant")["pld"]) == "n/a (Gaussian events only)"


def test_account_gives_the_exact_pld_figure_at_huge_losses(capsys):
    # ρ = 5000: Gaussian-only, so the closed form, not dp-accounting's PLD (which took minutes)
    data = json.loads(_run(["account", "--sigma", "0.01", "--steps", "1", "--json"], capsys))
    assert 1000 < data["epsilon"]["pld"] < data["epsilon"]["rdp"]
    assert gaussian_delta(100.0, data["epsilon"]["pld"]) <= data["delta"]


def _error(argv, capsys) -> str:
    rc = main(argv)  # argparse errors too: main returns their status
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dpbnsl: error: ")
    return err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["noise", "--epsilon", "0"], "--epsilon must be > 0; got 0.0"),
        (["noise", "--epsilon", "-1"], "--epsilon must be > 0; got -1.0"),
        (["noise", "--epsilon", "nan"], "--epsilon must be finite; got nan"),
        (["noise", "--epsilon", "1", "--delta", "1.5"], "--delta must be < 1; got 1.5"),
        (["noise", "--epsilon", "1", "--delta", "0"], "--delta must be > 0; got 0.0"),
        (
            ["noise", "--epsilon", "1", "--rounds", "0"],
            "argument --rounds: must be between 1 and 1,000,000; got 0",
        ),
        (["noise", "--epsilon", "1", "--local-iters", "-3"], "argument --local-iters: must be between"),
        (["noise", "--epsilon", "1", "--rounds", "2.5"], "argument --rounds: must be an integer; got '2.5'"),
        (["noise", "--epsilon", "1", "--smoothness-d", "0"], "argument --smoothness-d: must be between"),
        (["noise", "--epsilon", "1", "--method", "best"], "argument --method: invalid choice: 'best'"),
        (["noise"], "the following arguments are required: --epsilon"),
        (["account"], "one of the arguments --rho --sigma is required"),
        (["account", "--rho", "1", "--sigma", "2"], "argument --sigma: not allowed with argument --rho"),
        (["account", "--sigma", "2"], "--sigma needs --steps"),
        (["account", "--rho", "1", "--steps", "3"], "go with --sigma, not --rho"),
        (["account", "--rho", "-1"], "--rho must be >= 0; got -1.0"),
        (["account", "--rho", "nan"], "--rho must be finite; got nan"),
        (["account", "--rho", "0.1", "--delta", "1"], "--delta must be < 1; got 1.0"),
        (["account", "--sigma", "0", "--steps", "3"], "--sigma must be > 0; got 0.0"),
        (["account", "--sigma", "2", "--steps", "0"], "argument --steps: must be between 1 and"),
        (
            ["account", "--sigma", "2", "--steps", "3", "--selection-scale", "-1"],
            "--selection-scale must be > 0; got -1.0",
        ),
    ],
)
def test_bad_input_is_one_line_with_status_2(argv, message, capsys):
    assert message in _error(argv, capsys)


def test_help_shows_defaults(capsys):
    out = subprocess.run(
        [sys.executable, "-m", "dpbnsl", "noise", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for text in ("(default: 1e-05)", "(default: dp-", "(required)"):
        assert text in out
    assert "(default: False)" not in out  # flags carry no default note
    assert main(["account", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(--rho RHO | --sigma SIGMA)" in out and "(default: 1e-05)" in out
