"""`import dpbnsl` is cheap: the exported names and subpackages load on first use (PEP 562); so is
`import dpbnsl.cli`, whose commands import their modules when they run."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpbnsl

HEAVY = ("numpy", "scipy", "pandas", "dp_accounting", "dpbnsl.learners", "dpbnsl.accounting")


@pytest.mark.parametrize("module", ["dpbnsl", "dpbnsl.cli"])
def test_import_loads_no_heavy_dependency(module):
    """Neither the package nor its command line (which ``dpbnsl --help`` imports and nothing else)
    loads numpy, scipy, pandas, dp-accounting or the learners on import."""
    code = f"import sys, {module}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_export_and_subpackage_resolves():
    for name in dpbnsl.__all__:
        assert getattr(dpbnsl, name) is not None, name
    for name in dpbnsl._SUBMODULES:
        assert type(getattr(dpbnsl, name)).__name__ == "module", name
    assert set(dpbnsl.__all__) <= set(dir(dpbnsl))


def test_unknown_and_private_names_are_attribute_errors():
    for name in ("nothing", "_codec_x"):
        try:
            getattr(dpbnsl, name)
        except AttributeError as exc:
            assert name in str(exc)
        else:
            raise AssertionError(name)
