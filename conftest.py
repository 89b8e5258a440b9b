"""Collection rules for the whole repository (the doctests of ``dpbnsl/`` included)."""

from __future__ import annotations

import importlib.util

# dpbnsl.flower needs the optional `flower` extra: without Flower its modules cannot be imported,
# so their doctests are not collected.
collect_ignore_glob = [] if importlib.util.find_spec("flwr") else ["dpbnsl/flower/*"]
