"""The experiment and benchmark scripts run BLAS with one thread.

OpenBLAS reads ``OPENBLAS_NUM_THREADS`` once, when numpy imports it; setting the variable later has
no effect, and two multithreaded worker processes on two cores slow the small-matrix learners down
badly (see the README's Performance section). A script that imports pandas before ``_runner`` ran
every worker of the d = 50 nonlinear experiment with two BLAS threads. This checks the order
statically: the first top-level statement that loads numpy (directly or through pandas, scipy,
matplotlib or dpbnsl) must come after the one that sets the limit.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOADS_NUMPY = ("numpy", "pandas", "scipy", "matplotlib", "dpbnsl")
SCRIPTS = sorted(
    p
    for folder in ("experiments", "benchmarks")
    for p in (ROOT / folder).glob("*.py")
    if p.name != "_runner.py"
)


def _imports(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def _order(source: str) -> tuple[int | None, int | None]:
    """Indices of the first top-level statement that pins BLAS and of the first that loads numpy."""
    body = ast.parse(source).body
    pins = loads = None
    for i, node in enumerate(body):
        names = _imports(node)
        if pins is None and (
            "_runner" in names
            or (
                not names
                and "OPENBLAS_NUM_THREADS" in ast.get_source_segment(source, node)
                and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
            )
        ):
            pins = i
        if loads is None and any(n.split(".")[0] in LOADS_NUMPY or n.startswith("bench_") for n in names):
            loads = i
    return pins, loads


def test_the_check_sees_a_late_limit():
    late = "import pandas\nfrom _runner import run_tasks\n"
    early = "import os\nos.environ.setdefault('OPENBLAS_NUM_THREADS', '1')\nimport numpy\n"
    assert _order(late) == (1, 0)
    assert _order(early) == (1, 2)


def _calls_single_thread(source: str) -> bool:
    """Whether the script limits BLAS through dpbnsl.blas (directly or by importing _runner):
    threadpoolctl applies whenever it is called, so the import order no longer matters."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if any(n == "_runner" for n in _imports(node)) if isinstance(node, ast.stmt) else False:
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "single_thread",
            "learner_threads",
        ):
            return True  # learner_threads(n): the script sets the count of every measurement itself
    return False


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_blas_is_limited(script):
    """Every script runs with one BLAS thread: through dpbnsl.blas.single_thread, or (the two
    benchmarks that compare thread settings in child processes) by the environment variables
    set before numpy loads; a benchmark comparing thread counts in process sets each count with
    dpbnsl.blas.learner_threads."""
    source = script.read_text(encoding="utf-8")
    if _calls_single_thread(source):
        return
    pins, loads = _order(source)
    assert pins is not None, f"{script.name} never limits BLAS threads"
    assert loads is None or pins < loads, f"{script.name} loads numpy before pinning BLAS"
