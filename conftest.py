"""Collection rules for the whole repository (the doctests of ``dpbnsl/`` included)."""

from __future__ import annotations

import importlib.util

import pytest

# dpbnsl.flower needs the optional `flower` extra: without Flower its modules cannot be imported,
# so their doctests are not collected.
collect_ignore_glob = [] if importlib.util.find_spec("flwr") else ["dpbnsl/flower/*"]

# Doctests of importable modules that need an optional package: skipped when it is absent.
DOCTEST_NEEDS = {
    "dpbnsl.io.graph_export.to_networkx": "networkx",
    "dpbnsl.io.graph_export.from_networkx": "networkx",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        package = DOCTEST_NEEDS.get(item.name)  # a doctest item is named after its object
        if package is not None and importlib.util.find_spec(package) is None:
            item.add_marker(pytest.mark.skip(reason=f"needs the optional package {package}"))
