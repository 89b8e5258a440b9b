"""A whole study on Flower's simulation engine, in one process: the same ClientApp and ServerApp a
deployment runs, with each participant's data handed over in memory."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._validation import as_participants
from ..learners.hosted import hosted
from .apps import FlowerRun, make_client_app, make_server_app

__all__ = ["simulate_on_flower", "DEFAULT_BACKEND"]

#: Ray backend settings: one CPU per participant's ClientApp call, at most two at a time.
DEFAULT_BACKEND: dict[str, Any] = {
    "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
    "init_args": {"num_cpus": 2, "num_gpus": 0},
}


def simulate_on_flower(
    protocol: str,
    participants: Any,
    *,
    settings: Mapping[str, Any] | None = None,
    seed: int | None = None,
    budgets: Mapping[int, tuple[float, float]] | None = None,
    round_timeout: float | None = None,
    backend_config: Mapping[str, Any] | None = None,
) -> FlowerRun:
    """Run hosted protocol ``protocol`` (e.g. ``"fed-bnsl"``, ``"dp-fed-sparse-bnsl"``) on Flower's
    simulation engine with one virtual node per dataset in ``participants``.

    ``settings`` are the learner's public keywords (JSON-serialisable: lists for tuples and
    arrays). ``seed`` fixes the private protocols' noise to the in-process learner's ``rng=seed``
    (participant k draws from stream k), **for tests on simulated data only**; unset, every
    participant draws fresh entropy. For a protocol whose server draws public randomness (the
    initial parameters of ``"fed-bnsl-mlp"``), ``seed`` is the server's, as the learner's ``rng``.
    ``budgets`` maps a participant id to its own (ε, δ) budget: a private participant refuses a
    study that asks for more, and the run ends with an error naming it. A participant without an
    entry gets the study's (ε, δ) as its budget (you run every side of the simulation). Needs the
    ``flower`` extra (it brings Ray, the engine's backend).
    """
    from flwr.simulation import run_simulation

    proto = hosted(protocol)
    arrays, _ = as_participants(participants, min_rows=1)
    settings = dict(settings or {})
    if settings.get("aggregation") == "secure":  # you run every side: the study's P and N are known
        settings.setdefault("participants", len(arrays))
        settings.setdefault("n_total", sum(X.shape[0] for X in arrays))
    if not (proto.private or proto.server_random or proto.participant_random) and seed is not None:
        raise ValueError(f"`seed` applies to protocols that draw random numbers; {protocol!r} draws none")
    if proto.private and {"epsilon", "delta"} <= set(settings):
        # you run every side of a simulation: each participant's budget is the study's, unless
        # `budgets` says otherwise
        study = (float(settings["epsilon"]), float(settings["delta"]))
        budgets = {**{k: study for k in range(len(arrays))}, **dict(budgets or {})}
    results: dict[str, FlowerRun] = {}
    server_app = make_server_app(
        protocol,
        settings,
        len(arrays),
        results=results,
        round_timeout=round_timeout,
        server_rng=seed if proto.server_random else None,
    )
    client_app = make_client_app(
        lambda k, _cfg: arrays[k],
        seed=seed,
        budgets=budgets,
        accept_study_budget=True,
        protocols=(protocol,),  # the one study this simulation runs
    )
    saved = os.environ.get("PYTHONPATH")  # the engine overwrites it for its workers
    try:
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=len(arrays),
            backend_config=dict(backend_config or DEFAULT_BACKEND),
        )
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    if "run" not in results:
        raise RuntimeError(f"the Flower simulation of {protocol!r} ended without a result (see its log)")
    return results["run"]
