"""The README's promises: every ``python`` block runs, and CI runs exactly the README's test command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SHARED_SACHS = ROOT.parent / "shared" / "data" / "sachs"
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(code, monkeypatch, capsys):
    if "load_sachs" in code and importlib.util.find_spec("cdt") is None:
        if not SHARED_SACHS.is_dir():
            pytest.skip("neither cdt nor the shared Sachs copy is available")
        import dpbnsl.datasets as datasets

        monkeypatch.setattr(datasets, "_cdt_resource_dir", lambda: SHARED_SACHS)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    test_cmd = next(line for block in commands for line in block.splitlines()
                    if "pytest" in line and not line.startswith("#"))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_cmd.strip() in [line.strip() for line in ci]


def test_readme_main_command_uses_existing_cli_options():
    from dpbnsl.cli import build_parser

    main_cmd = next(line for line in README.splitlines() if line.startswith("python3 -m venv")
                    and "dpbnsl demo" in line)
    for part in main_cmd.split("&&")[3:]:
        argv = part.split()[1:]
        argv = [a.replace("*", "0") for a in argv]
        build_parser().parse_args(argv)  # raises SystemExit on an unknown option
