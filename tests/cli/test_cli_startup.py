"""The command line starts fast: ``main`` builds only the command it runs, and each command imports
only what it uses (the learner registry alone costs about a second). The import checks run in a
fresh interpreter, where nothing the test suite loaded can hide an import."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from dpbnsl.blas import THREAD_VARIABLES
from dpbnsl.cli import app, build_parser, main
from dpbnsl.cli.common import COMMANDS, MAX_COUNT

#: modules that only the commands running learners, audits or plots may import (the learner
#: registry itself is a light table: its learners are imported on use)
LEARNING = (
    "dpbnsl.learners.linear",
    "dpbnsl.learners.admm",
    "dpbnsl.audits.games",
    "dpbnsl.attacks.covariance",
    "dpbnsl.simulation",
    "matplotlib",
)
#: what the accounting needs: nothing may import it before a command runs
ACCOUNTING = ("numpy", "scipy", "pandas", "dp_accounting", "dpbnsl.accounting")


def _loaded_after(argv: list[str]) -> tuple[int, set[str]]:
    """(exit status, the modules of LEARNING + ACCOUNTING loaded) after ``main(argv)`` in a fresh
    interpreter."""
    code = (
        "import sys, json\n"
        "from dpbnsl.cli.app import main\n"
        f"status = main({argv!r})\n"
        f"watched = {LEARNING + ACCOUNTING!r}\n"
        "print(json.dumps([status, [m for m in watched if m in sys.modules]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    status, loaded = json.loads(out.strip().splitlines()[-1])
    return status, set(loaded)


@pytest.mark.parametrize(
    "argv",
    [["--help"], [], ["nope"], ["noise", "--help"], ["noise", "--epsilon", "x"], ["account", "--help"]],
)
def test_help_and_argument_errors_import_nothing_heavy(argv):
    status, loaded = _loaded_after(argv)
    assert status in (0, 2) and loaded == set()


#: what a usage error or a bad path may cost: none of these (numpy alone is loaded before a
#: command runs, for its floating-point settings)
HEAVY = ("scipy", "pandas", "dp_accounting", "matplotlib", "dpbnsl.learners.linear", "dpbnsl.audits.games")


@pytest.mark.parametrize(
    "argv",
    [
        *[[command, "--bogus"] for command in COMMANDS],
        ["learn", "--data", "missing.csv"],
        ["learn", "--method", "fedbnsl", "--data", "x.csv"],
        ["learn", "--method", "dp-fed-bnsl", "--data", "x.csv"],
        ["learn", "--data", "missing.csv", "--truth", "missing_truth.csv"],
        ["attack", "--method", "dp-fed-bnsl", "--epsilon", "1", "--data", "missing.csv", "--clip-norm", "3"],
        ["attack", "--method", "dp-fed-bnsl", "--epsilon", "1", "--data", "missing.csv"],
        ["show", "missing_bundle"],
        ["audit", "--mechanism", "gausian-step"],
        ["curve", "--methods", "fedbnsl", "--out", "x.csv"],
        ["flower-app", "study", "--protocol", "fedbnsl"],
        ["simulate", "--participants", "20", "--n", "10"],
    ],
)
def test_usage_errors_and_bad_paths_answer_before_anything_heavy(argv, tmp_path, monkeypatch):
    """A typo answers at once (the CPU time is in ``benchmarks/bench_import.py``): nothing heavy is
    imported before the command has refused it."""
    monkeypatch.chdir(tmp_path)
    code = (
        "import sys, json\n"
        "from dpbnsl.cli.app import main\n"
        f"status = main({argv!r})\n"
        f"print(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 2 and loaded == [], (done.stderr, loaded)
    assert done.stderr.count("dpbnsl: error:") == 1


def test_noise_imports_no_learner():
    status, loaded = _loaded_after(["noise", "--epsilon", "1", "--rounds", "2", "--local-iters", "3"])
    assert status == 0
    assert loaded.isdisjoint(LEARNING), loaded & set(LEARNING)


def test_account_imports_no_learner():
    status, loaded = _loaded_after(["account", "--sigma", "2", "--steps", "10"])
    assert status == 0
    assert loaded.isdisjoint(LEARNING), loaded & set(LEARNING)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_the_table_lists_every_command_of_the_full_parser_in_order():
    full = _subparsers(build_parser())
    assert list(full.choices) == list(COMMANDS)
    assert [(a.dest, a.help) for a in full._choices_actions] == list(COMMANDS.items())


def test_the_top_level_help_does_not_depend_on_what_is_built(capsys):
    texts = []
    for built in ((), ("noise",), ("learn", "show"), tuple(COMMANDS)):
        with pytest.raises(SystemExit):
            app._parser(built).parse_args(["--help"])
        texts.append(capsys.readouterr().out)
    assert all(t == texts[0] for t in texts) and all(f"    {c}" in texts[0] for c in COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_help_works(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: dpbnsl {command} ") and "-h, --help" in out


def _outcome(parser: argparse.ArgumentParser, argv: list[str], capsys) -> tuple:
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        captured = capsys.readouterr()
        return ("exit", exc.code, captured.out, captured.err)
    return ("parsed", sorted((k, repr(v)) for k, v in vars(args).items()))


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["--version"],
        ["noise"],
        ["noise", "--epsilon", "1"],
        ["noise", "--epsilon", "1", "--rounds", "0"],
        ["--", "noise", "--epsilon", "1"],
        ["-1", "noise"],
        ["-", "noise"],
        ["--help", "noise"],
        ["nois", "--epsilon", "1"],
        ["account", "--rho", "1", "--sigma", "2"],
        ["learn", "--data", "a.csv", "--method", "fed-bnsl"],
        ["show", "bundle", "--html", "-"],
        ["simulate", "--d", "1"],
        ["-h", "learn", "noise"],
    ],
)
def test_the_lazy_parser_reads_argv_as_the_full_one(argv, capsys):
    """What ``main`` builds for ``argv`` parses it exactly as the parser of every command does."""
    lazy = app._parser(app._to_build(argv))
    assert _outcome(lazy, argv, capsys) == _outcome(build_parser(), argv, capsys)


def test_given_options_are_those_typed():
    parser = app._parser(("noise",))
    argv = ["noise", "--epsilon", "1", "--rounds", "100", "--json"]
    parser.parse_args(argv)
    assert app._given(parser, argv) == {"epsilon", "rounds", "json"}


def test_dp_accounting_unsupported_event_is_a_user_error(monkeypatch, capsys):
    from dp_accounting import UnsupportedEventError

    def refuse(args):
        raise UnsupportedEventError("beyond the accountant's range")

    monkeypatch.setattr("dpbnsl.cli.accounting.run_noise", refuse)
    assert main(["noise", "--epsilon", "1"]) == 2
    assert capsys.readouterr().err == "dpbnsl: error: beyond the accountant's range\n"


def test_cli_count_bound_is_the_learners():
    from dpbnsl.learners.admm import MAX_COUNT as LEARNERS_MAX_COUNT

    assert MAX_COUNT == LEARNERS_MAX_COUNT


def test_console_script_runs_the_command_with_one_blas_thread(tmp_path):
    """The console script limits BLAS before ``main``; ``main`` loads the command's modules (and
    with them numpy's and scipy's BLAS) afterwards, and must limit those too."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    code = (
        "import sys\n"
        f"sys.argv = ['dpbnsl', 'learn', '--data', {str(tmp_path / 'x.csv')!r}]\n"
        "import dpbnsl._entry as entry\n"
        "from dpbnsl.cli import app\n"
        "from threadpoolctl import threadpool_info\n"
        "def spy(args):\n"
        "    blas = [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']\n"
        "    print('BLAS', len(blas), max(blas))\n"
        "    return 0\n"
        "app._run = spy\n"
        "sys.exit(entry.main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    libraries, threads = map(int, out.split()[1:3])
    assert libraries >= 1 and threads == 1
