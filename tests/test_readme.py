"""The documentation's promises: every ``python`` block of the README and of the pages under
``docs/`` runs, every ``bash`` block with a ``dpbnsl`` command runs as written (in a shell, in a
fresh directory, the blocks of a page in order), every ``dpbnsl`` command they show parses, CI
runs exactly the README's test command, and the site builds with ``mkdocs build --strict``
(marker ``docs``).

Conventions (docs/development.md, "Documentation tests"): a block runs when its fence is exactly
```` ```python ```` or ```` ```bash ````; any other fence (```` ```text ````, ```` ```console ````,
or ```` ```python title="…" ````) is not run. A page holding the line
``<!-- docs-test: slow -->`` (on a line of its own) has its blocks marked ``slow``; the line
``<!-- docs-test: slow block -->`` right before a fence marks that block only (the page's other
blocks run by default, without it; with ``-m slow`` all of them run, in order). A ``bash`` block
that installs (``pip install``, ``venv``) or serves (``mkdocs``) is not run: CI runs those.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SLOW_MARK = re.compile(r"^<!-- docs-test: slow -->$", flags=re.M)  # a line of its own
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", flags=re.S | re.M)
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _python_blocks():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        marks = [pytest.mark.slow] if SLOW_MARK.search(text) else []
        for i, code in enumerate(PYTHON_BLOCK.findall(text)):
            yield pytest.param(_name(page), code, id=f"{_name(page)}:{i}", marks=marks)


def _commands():
    for page in PAGES:
        for block in BASH_BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():  # continuation lines joined
                for part in re.split(r"&&|\|", line.split("#", 1)[0]):  # commands of a pipeline too
                    argv = shlex.split(part)
                    argv = argv[: argv.index(">")] if ">" in argv else argv  # not the redirection
                    if argv[:1] == ["dpbnsl"] and "--help" not in argv:
                        yield pytest.param(argv[1:], id=f"{_name(page)}:{shlex.join(argv)[:60]}")


DOC_BLOCKS = list(_python_blocks())

#: a bash block, with the block-level slow marker on the line before its fence when it has one
SHELL_BLOCK = re.compile(r"^(<!-- docs-test: slow block -->\n)?```bash\n(.*?)^```", flags=re.S | re.M)
#: commands a docs shell test never runs (installs, servers): CI and the README tests cover them
NOT_RUN = ("pip install", "python3 -m venv", "mkdocs serve")


def _shell_pages():
    """One case per page with runnable bash blocks (the fast ones), and one slow case per page
    that has slow blocks (all its blocks, in order)."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = [
            (bool(mark), code)
            for mark, code in SHELL_BLOCK.findall(text)
            if re.search(r"(^|[|;&(]\s*)dpbnsl\b", code, flags=re.M) and not any(x in code for x in NOT_RUN)
        ]
        if not blocks:
            continue
        page_slow = bool(SLOW_MARK.search(text))
        fast = [code for slow, code in blocks if not slow]
        if fast:
            marks = [pytest.mark.slow] if page_slow else []
            yield pytest.param(_name(page), fast, id=f"{_name(page)}:shell", marks=marks)
        if any(slow for slow, _ in blocks):
            codes = [code for _, code in blocks]
            yield pytest.param(_name(page), codes, id=f"{_name(page)}:shell-all", marks=[pytest.mark.slow])


@pytest.mark.parametrize("page, blocks", list(_shell_pages()))
def test_shell_blocks_run_as_written(page, blocks, tmp_path):
    """The page's bash blocks, as one script in a fresh directory, with this environment's
    ``dpbnsl`` first on the PATH; every command must succeed (``set -euo pipefail``)."""
    import os

    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "dpbnsl").exists():
        pytest.skip("the dpbnsl console script is not installed beside this interpreter")
    if importlib.util.find_spec("flwr") is None:  # `dpbnsl flower-app` needs the flower extra
        blocks = [b for b in blocks if "dpbnsl flower-app" not in b]
        if not blocks:
            pytest.skip("the flower extra is not installed (pip install 'dpbnsl[flower]')")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("DPBNSL_DEBUG", None)
    script = "set -euo pipefail\n" + "\n".join(blocks)
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, f"{page}: exit {done.returncode}\n{done.stderr[-3000:]}"
    assert "internal error" not in done.stderr


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 1
    assert len(DOC_BLOCKS) >= 20


@pytest.mark.parametrize("page, code", DOC_BLOCKS)
def test_python_block_runs(page, code, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # anything an example writes lands here
    exec(compile(code, page, "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("argv", list(_commands()))
def test_documented_command_parses(argv):
    from dpbnsl.cli import build_parser

    build_parser().parse_args(argv)  # raises SystemExit on an unknown command or option


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    test_cmd = next(
        line
        for block in commands
        for line in block.splitlines()
        if "pytest" in line and not line.startswith("#")
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_cmd.strip() in [line.strip() for line in ci]


def test_readme_main_command_uses_existing_cli_options():
    from dpbnsl.cli import build_parser

    main_cmd = next(
        line for line in README.splitlines() if line.startswith("python3 -m venv") and "dpbnsl demo" in line
    )
    for part in main_cmd.split("&&")[3:]:
        argv = part.split()[1:]
        argv = [a.replace("*", "0") for a in argv]
        build_parser().parse_args(argv)  # raises SystemExit on an unknown option


def test_docs_repeat_the_readme_commands_exactly():
    """The two commands a newcomer needs are the same in the README and on the site."""
    wanted = [line for line in README.splitlines() if line.startswith("python3 -m venv")]
    assert len(wanted) == 2
    for page in ("index.md", "install.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
        assert all(line in text for line in wanted), page


@pytest.mark.docs
def test_site_builds_strict(tmp_path):
    missing = [
        m
        for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.skip(
            f'the docs extra is not installed (missing {", ".join(missing)}): pip install -e ".[docs]"'
        )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "learners" / "index.html").is_file()
