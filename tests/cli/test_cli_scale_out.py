"""Bad input to the options this package added for federation and scale-out: one line on stderr,
exit status 2, nothing written."""

from __future__ import annotations

import importlib.util

import pytest

from dpbnsl.cli.app import main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["audit", "--mechanism", "dp-pgcd", "--jobs", "0"], "--jobs"),
        (["audit", "--mechanism", "dp-pgcd", "--jobs", "1e308"], "--jobs"),
        (["audit", "--mechanism", "dp-pgcd", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
        (["flower-app", "x", "--protocol", "notears"], "--protocol"),
        (["flower-app", "x", "--participants", "-3"], "--participants"),
    ],
)
def test_bad_scale_out_options_are_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_flower_app_refuses_an_existing_or_unreachable_directory(capsys, tmp_path):
    (tmp_path / "taken").mkdir()
    for target in (tmp_path / "taken", tmp_path / "missing" / "app"):
        assert main(["flower-app", str(target)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("dpbnsl: error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert list((tmp_path / "taken").iterdir()) == []
    if importlib.util.find_spec("flwr") is None:  # without the extra: the install hint, exit 2
        assert main(["flower-app", str(tmp_path / "new")]) == 2
        assert "pip install" in capsys.readouterr().err
        assert not (tmp_path / "new").exists()
