"""A study on separate machines: the deployment ServerApp and ClientApp, the Flower App project that
``flwr run`` submits (:func:`write_app`), and the run directory the server writes at the end
(:func:`save_run`, :func:`load_run`).

The server's run config: ``protocol`` (a hosted protocol, e.g. ``"dp-fed-sparse-bnsl"``),
``settings`` (the learner's public keywords as a JSON object), ``participants`` (how many),
``out-dir`` (a directory that must not exist yet, written only when the run completes),
``round-timeout`` (seconds a round may take before the run ends with an error naming the missing
participants; 0: no limit) and ``node-timeout`` (seconds to wait for the nodes to connect).
Each participant's node config: ``participant-id`` (0, …, P − 1), ``data-path`` (its CSV file) and,
for a private protocol, its own budget ``epsilon-budget`` and ``delta-budget`` (or, knowingly,
``accept-study-budget=true``): a private participant without one refuses to run, and it refuses a
study beyond its budget, any request its plan does not have and changed settings
(:mod:`dpbnsl.federation.guard`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from ..federation import Dense, Masked, Message, Sparse, Transcript
from ..federation.spend import DEFAULT_LEDGER_DIR
from ..learners.hosted import hosted
from .apps import FlowerRun, make_client_app, run_on_grid

__all__ = ["server_app", "client_app", "write_app", "save_run", "load_run", "check_out_dir"]

#: The participant's ClientApp of a deployment: it reads its data from node config ``data-path`` and
#: keeps its spend across runs in ``~/.dpbnsl/ledgers`` (node config ``ledger-dir`` elsewhere).
client_app = make_client_app(ledger_dir=DEFAULT_LEDGER_DIR)
#: The deployment's ServerApp: it reads the study from the run config (see the module docstring).
server_app = ServerApp()


def check_out_dir(path: str | os.PathLike[str]) -> Path:
    """The output directory of a run: it must not exist yet, and its parent must."""
    out = Path(path)
    if not str(path):
        raise ValueError("the run config's out-dir is empty: give the directory the results go to")
    if out.exists():
        raise FileExistsError(f"out-dir {str(out)!r} exists already: give a new directory")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"the parent of out-dir {str(out)!r} is not a directory")
    return out


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    protocol = str(cfg.get("protocol", ""))
    hosted(protocol)
    settings = json.loads(str(cfg.get("settings", "{}")))
    if not isinstance(settings, dict):
        raise ValueError(f"the run config's settings must be a JSON object; got {cfg.get('settings')!r}")
    out = check_out_dir(str(cfg.get("out-dir", "")))  # before any work
    timeout = float(cfg.get("round-timeout", 0.0)) or None
    run = run_on_grid(
        grid,
        protocol,
        settings,
        int(cfg["participants"]),
        round_timeout=timeout,
        node_timeout=float(cfg.get("node-timeout", 120.0)),
    )
    save_run(run, out, settings=settings)


_PYPROJECT = """\
# A Flower App that runs a dpbnsl study (written by `dpbnsl flower-app`). Submit it with
#   flwr run {directory} <connection> --run-config 'participants={participants} out-dir="..."'
# Every machine needs dpbnsl with its flower extra installed: pip install "dpbnsl[flower]"
# A participant of a private protocol starts its SuperNode with its own budget,
#   --node-config 'participant-id=K data-path="..." epsilon-budget=E delta-budget=D'
# and, to run only apps it trusts, --trusted-entities (see the package's Flower guide).
[project]
name = "dpbnsl-study"
version = "1.0.0"
description = "A dpbnsl study on Flower"
license = "MIT"
dependencies = []

[tool.flwr.app]
publisher = "dpbnsl"

[tool.flwr.app.components]
serverapp = "dpbnsl_study.server_app:app"
clientapp = "dpbnsl_study.client_app:app"

[tool.flwr.app.config]
protocol = "{protocol}"
settings = "{{}}"
participants = {participants}
out-dir = ""
round-timeout = 0.0
node-timeout = 120.0
"""


def write_app(
    directory: str | os.PathLike[str], *, protocol: str = "fed-bnsl", participants: int = 2
) -> Path:
    """Write the Flower App project that ``flwr run`` submits: a ``pyproject.toml`` whose
    components are this module's apps (the run config's defaults: ``protocol``, ``participants``).
    The directory must not exist yet."""
    hosted(protocol)
    if int(participants) < 1:
        raise ValueError(f"`participants` must be >= 1; got {participants!r}")
    root = Path(directory)
    if root.exists():
        raise FileExistsError(f"{str(root)!r} exists already: give a new directory")
    if not root.parent.is_dir():
        raise FileNotFoundError(f"the parent of {str(root)!r} is not a directory")
    tmp = Path(tempfile.mkdtemp(prefix=".dpbnsl-app-", dir=root.parent))
    try:
        pkg = tmp / "dpbnsl_study"
        pkg.mkdir()
        (pkg / "__init__.py").write_text('"""A dpbnsl study on Flower."""\n')
        # Flower accepts a component only as a plain assignment `app = ...`
        (pkg / "server_app.py").write_text(
            "from dpbnsl.flower.deployment import server_app as _server_app\n\napp = _server_app\n"
        )
        (pkg / "client_app.py").write_text(
            "from dpbnsl.flower.deployment import client_app as _client_app\n\napp = _client_app\n"
        )
        text = _PYPROJECT.format(directory=root, protocol=protocol, participants=int(participants))
        (tmp / "pyproject.toml").write_text(text)
        os.rename(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return root


def _versions() -> dict[str, str]:
    out = {}
    for name in ("dpbnsl", "numpy", "scipy", "flwr"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover
            out[name] = "unknown"
    return out


def _save_transcript(t: Transcript, path: Path) -> None:
    index, arrays = [], {}
    for i, m in enumerate(t):
        if isinstance(m.payload, Masked):  # a share the server never read: its size and modulus
            index.append([m.round, m.sender, m.receiver, m.kind, "masked"])
            arrays[f"{i}.masked"] = np.array([m.payload.size, m.payload.bits], dtype=np.int64)
            continue
        index.append(
            [m.round, m.sender, m.receiver, m.kind, "sparse" if isinstance(m.payload, Sparse) else "dense"]
        )
        if isinstance(m.payload, Sparse):
            arrays[f"{i}.shape"] = np.array(m.payload.shape, dtype=np.int64)
            arrays[f"{i}.index"] = np.array(m.payload.index)
        arrays[f"{i}.values"] = np.array(m.payload.values)
    np.savez_compressed(path.with_suffix(".npz"), **arrays)  # type: ignore[arg-type]
    path.with_suffix(".json").write_text(json.dumps(index))


def _load_transcript(path: Path) -> Transcript:
    index = json.loads(path.with_suffix(".json").read_text())
    with np.load(path.with_suffix(".npz")) as arrays:
        msgs = []
        for i, (rnd, sender, receiver, kind, fmt) in enumerate(index):
            if fmt == "masked":
                size, bits = (int(v) for v in arrays[f"{i}.masked"])
                payload: Any = Masked(size, bits)
            elif fmt == "sparse":
                payload = Sparse(tuple(arrays[f"{i}.shape"]), arrays[f"{i}.index"], arrays[f"{i}.values"])
            else:
                payload = Dense(arrays[f"{i}.values"])
            msgs.append(Message(int(rnd), sender, receiver, str(kind), payload))
    return Transcript(msgs)


def save_run(run: FlowerRun, out: str | os.PathLike[str], *, settings: dict[str, Any] | None = None) -> Path:
    """Write a run directory (all or nothing: a temporary directory renamed at the end): ``W.csv``
    (thresholded), ``W_raw.csv``, ``history.csv``, one transcript per phase (``transcript-*.npz`` and
    ``.json``), the participants' ``reports.json`` and ``run.json`` (protocol, settings, seconds,
    versions, and for secure rounds the participants whose shares reached each sum and why any
    were left out at the request)."""
    out = check_out_dir(out)
    tmp = Path(tempfile.mkdtemp(prefix=".dpbnsl-run-", dir=out.parent))
    try:
        pd.DataFrame(run.W).to_csv(tmp / "W.csv", index=False)
        pd.DataFrame(run.W_raw).to_csv(tmp / "W_raw.csv", index=False)
        if run.history is not None:
            run.history.to_csv(tmp / "history.csv", index=False)
        for phase, t in run.transcripts.items():
            _save_transcript(t, tmp / f"transcript-{phase}")
        (tmp / "reports.json").write_text(json.dumps({str(k): v for k, v in sorted(run.reports.items())}))
        meta = {
            "protocol": run.protocol,
            "settings": settings or {},
            "seconds": run.seconds,
            "versions": _versions(),
            "contributors": {key: list(ks) for key, ks in run.contributors.items()},
            "dropped": run.dropped,
        }
        (tmp / "run.json").write_text(json.dumps(meta, indent=1))
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_run(directory: str | os.PathLike[str]) -> FlowerRun:
    """The :class:`FlowerRun` a deployment's server wrote with :func:`save_run`."""
    root = Path(directory)
    if not (root / "run.json").is_file():
        raise FileNotFoundError(f"{str(root)!r} is not a run directory (no run.json)")
    meta = json.loads((root / "run.json").read_text())
    run = FlowerRun(meta["protocol"], seconds=float(meta["seconds"]))
    run.W = pd.read_csv(root / "W.csv", float_precision="round_trip").to_numpy(dtype=float)
    run.W_raw = pd.read_csv(root / "W_raw.csv", float_precision="round_trip").to_numpy(dtype=float)
    if (root / "history.csv").is_file():
        run.history = pd.read_csv(root / "history.csv")
    for path in sorted(root.glob("transcript-*.json")):
        run.transcripts[path.stem[len("transcript-") :]] = _load_transcript(path.with_suffix(""))
    run.reports = {int(k): v for k, v in json.loads((root / "reports.json").read_text()).items()}
    run.contributors = {key: tuple(ks) for key, ks in meta.get("contributors", {}).items()}
    run.dropped = {key: list(why) for key, why in meta.get("dropped", {}).items()}
    return run
