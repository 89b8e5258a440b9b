"""The package's import graph reads cleanly: no cycle, no import of an enclosing package, no
private name or private module used across modules, learner families independent of each other,
and no module hidden behind a function of the same name. Read from the source (ast), so a
violation anywhere fails here, whichever code path a test happens to run."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections import defaultdict
from pathlib import Path

import pytest

import dpbnsl

ROOT = Path(dpbnsl.__file__).parent
FAMILIES = ("linear", "nonlinear", "temporal", "constraint")


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ["dpbnsl", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports() -> list[tuple[str, str, str | None, int]]:
    """(importer, imported module, imported name or None, line) for every import of dpbnsl."""
    found = []
    for mod, path in MODULES.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("dpbnsl"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:  # `from package import module`
                        found.append((mod, sub, None, node.lineno))
                    else:
                        found.append((mod, target, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                found.extend(
                    (mod, a.name, None, node.lineno) for a in node.names if a.name.startswith("dpbnsl")
                )
    return found


IMPORTS = _imports()


def test_the_walk_sees_the_package():
    assert {
        "dpbnsl.learners.registry",
        "dpbnsl.cli.app",
        "dpbnsl.simulation.linear",
        "dpbnsl.learners.linear.pgcd",
    } <= set(MODULES)
    assert len(IMPORTS) > 200


def test_no_import_cycle():
    graph = defaultdict(set)
    for importer, target, _, _ in IMPORTS:
        if target in MODULES and target != importer:
            graph[importer].add(target)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(MODULES):
        if v not in index:
            visit(v)
    assert cycles == []


def test_no_import_of_an_enclosing_package():
    """A module never imports a package that contains it (its ``__init__`` imports the module)."""
    upward = [(i, t, line) for i, t, _, line in IMPORTS if t != i and (i + ".").startswith(t + ".")]
    assert upward == []


def test_no_private_name_or_module_across_modules():
    bad = []
    for importer, target, name, line in IMPORTS:
        if name is not None and name.startswith("_") and target != importer:
            bad.append((importer, f"{target}.{name}", line))
        last = target.rpartition(".")[2]
        owner = target.rpartition(".")[0]
        if (
            last.startswith("_")
            and not last.startswith("__")
            and not (importer == owner or importer.startswith(owner + "."))
        ):
            bad.append((importer, target, line))  # a private module from outside its package
    assert bad == []


def test_learner_families_never_import_each_other():
    bad = []
    for importer, target, _, line in IMPORTS:
        fam = [f for f in FAMILIES if importer.startswith(f"dpbnsl.learners.{f}.")]
        other = [
            f
            for f in FAMILIES
            if target == f"dpbnsl.learners.{f}" or target.startswith(f"dpbnsl.learners.{f}.")
        ]
        if fam and other and fam != other:
            bad.append((importer, target, line))
    assert bad == []


@pytest.mark.parametrize("package", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_no_module_hidden_by_a_function_of_its_name(package):
    """``package.name`` is the submodule ``name`` for every submodule (never a re-exported
    function of the same name that would hide it)."""
    if package == "dpbnsl.flower":
        pytest.importorskip("flwr")  # the optional `flower` extra
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        value = getattr(pkg, info.name, None)
        assert value is None or type(value).__name__ == "module", (package, info.name, value)


#: the layers from the bottom up; a module may import its own layer and the ones below it only
LAYERS = (
    (
        "dpbnsl._validation",
        "dpbnsl._lazy",
        "dpbnsl.graphs",
        "dpbnsl.scores",
        "dpbnsl.metrics",
        "dpbnsl._sortability",
        "dpbnsl.timeseries",
    ),
    ("dpbnsl.blas", "dpbnsl.tasks", "dpbnsl.simulation", "dpbnsl.mechanisms"),
    ("dpbnsl.accounting",),
    ("dpbnsl.federation",),
    ("dpbnsl.learners",),
    ("dpbnsl.attacks", "dpbnsl.audits", "dpbnsl.io"),
    ("dpbnsl.flower",),
    ("dpbnsl.cli", "dpbnsl._entry", "dpbnsl.__main__"),
)


def _layer(module):
    for i, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return None


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m != "dpbnsl" and _layer(m) is None] == []


def test_no_import_runs_up_the_layers():
    """The architecture of the package's root: nothing imports a higher layer (the command line is
    the top; the Flower hosting reads data through ``dpbnsl.io``, never through the CLI). Imports
    inside functions count too: they are lazy, not exempt. Exceptions, each an on-demand import
    of a result's own writer: a LearnResult saving itself as a bundle or exporting its graph
    (``dpbnsl.io``), the sweeps stamping package versions in their table."""
    allowed = {
        ("dpbnsl.learners.result", "dpbnsl.io.bundle"),
        ("dpbnsl.learners.result", "dpbnsl.io.graph_export"),
        ("dpbnsl.audits.tradeoff", "dpbnsl.io.bundle"),
    }
    bad = []
    for importer, target, _, line in IMPORTS:
        if importer == "dpbnsl" or (importer, target) in allowed:
            continue
        lo, hi = _layer(importer), _layer(target)
        if hi is not None and lo is not None and hi > lo:
            bad.append((importer, target, line))
    assert bad == []


def test_the_light_name_tables_agree_with_what_they_name():
    """The command line builds its parsers from light tables, so that a typo answers before the
    heavy modules load; each must list exactly what the heavy module defines."""
    from dpbnsl.attacks.report import ATTACKABLE
    from dpbnsl.audits.game_base import GAME_NAMES
    from dpbnsl.audits.games import GAMES
    from dpbnsl.audits.tradeoff import METHODS
    from dpbnsl.cli import attack, curve
    from dpbnsl.learners.hosted import HOSTED
    from dpbnsl.learners.registry import names

    assert GAME_NAMES == tuple(GAMES)
    assert sorted(names(hosted=True)) == sorted(HOSTED)
    assert attack.ATTACKABLE == ATTACKABLE and curve.METHODS == METHODS
