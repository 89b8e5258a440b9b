"""Run the federated learners on Flower (optional extra ``flower``: ``pip install "dpbnsl[flower]"``).

Each participant runs :func:`make_client_app` on its own machine with its own data, noise and
privacy ledger; the server runs :func:`make_server_app` (or :func:`run_on_grid` inside its own
ServerApp). :func:`simulate_on_flower` runs a study on Flower's simulation engine in one process.
The protocols are the hosted objects of :mod:`dpbnsl.learners.hosted`, so a Flower run learns
what the in-process learner learns with the same seeds, and its transcript is the same.
"""

from __future__ import annotations

try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        'dpbnsl.flower needs Flower: install the extra with  pip install "dpbnsl[flower]"  (Python >= 3.11)'
    ) from exc

from .apps import FlowerRun, make_client_app, make_server_app, participant_id, run_on_grid
from .simulation import simulate_on_flower

__all__ = [
    "FlowerRun",
    "make_client_app",
    "make_server_app",
    "participant_id",
    "run_on_grid",
    "simulate_on_flower",
]
