"""A study on loopback processes, as on separate machines: a SuperLink, one SuperNode per participant
(each with its own CSV file), the Flower App written by `dpbnsl flower-app` and submitted with
`flwr run`. The learned W and transcript equal the in-process learner's; a participant killed
mid-run ends the run with an error naming it and its round, and no result directory is written.
Every process is started here in its own session and ended here. Marked ``flower``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from dpbnsl.cli.app import main as cli
from dpbnsl.cli.files import read_csv
from dpbnsl.learners.linear.fed_bnsl import fed_bnsl
from dpbnsl.simulation import simulate

pytestmark = pytest.mark.flower
BIN = Path(sys.executable).parent
P = 3


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2 :].split()[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), None once it is gone: with the pid it
    names one process, so a pid reused by an unrelated process is never taken for ours."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[19])


def _running(proc: tuple[int, int | None]) -> bool:
    pid, start = proc
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[0] != "Z" and int(fields[19]) == start


class Federation:
    """A SuperLink and P SuperNodes on 127.0.0.1, with a private FLWR_HOME."""

    def __init__(self, work: Path, data_paths: list[Path], node_config: tuple[str, ...] = ()) -> None:
        self.work, self.port = work, _port()
        home = work / "flwr_home"
        home.mkdir()
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = "127.0.0.1:{self.port}"\ninsecure = true\n'
        )
        self.env = dict(
            os.environ,
            FLWR_HOME=str(home),
            FLWR_TELEMETRY_ENABLED="0",
            PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        )
        self.procs: dict[str, subprocess.Popen] = {}
        self.seen: set[tuple[int, int | None]] = set()  # (pid, start time)
        self._start(
            "superlink",
            "flower-superlink",
            "--insecure",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--disable-runtime-dependency-installation",
        )
        self._wait(lambda: self._listening(self.port), 60, "the SuperLink to listen")
        for k, path in enumerate(data_paths):
            self._start(
                f"node{k}",
                "flower-supernode",
                "--insecure",
                "--superlink",
                f"127.0.0.1:{self.port}",
                "--port",
                str(_port()),
                "--max-retries",
                "3",
                "--node-config",
                f'participant-id={k} data-path="{path}"' + "".join(f" {c}" for c in node_config[k : k + 1]),
            )
        log = work / "superlink.log"
        self._wait(lambda: log.read_text().count("Activated node_id") >= len(data_paths), 90, "the nodes")

    @staticmethod
    def _listening(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    @staticmethod
    def _wait(ready, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > end:
                raise TimeoutError(f"waited {timeout} s for {what}")
            time.sleep(0.1)

    def _start(self, name: str, *cmd: str) -> None:
        log = open(self.work / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen(
            [str(BIN / cmd[0]), *cmd[1:]],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )

    def flwr(self, *args: str) -> dict:
        self._note()
        r = subprocess.run(
            [str(BIN / "flwr"), *args, "--format", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return json.loads(r.stdout)

    def submit(self, app: Path, run_config: str) -> int:
        res = self.flwr("run", str(app), "local", "--run-config", run_config)
        assert res.get("success"), res  # `flwr run` exits 0 even when it fails
        return int(res["run-id"])

    def wait(self, run_id: int, timeout: float) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            info = self.flwr("ls", "local", "--run-id", str(run_id))["runs"][0]
            if str(info["status"]).startswith("finished"):
                return info
            time.sleep(0.5)
        raise TimeoutError(f"run {run_id} did not finish within {timeout} s")

    def _note(self) -> None:
        for p in self.procs.values():
            self.seen.update((pid, _start_time(pid)) for pid in [p.pid, *_descendants(p.pid)])

    def close(self) -> list[int]:
        """End every process this federation started (and their children); returns those that
        had to be killed."""
        self._note()
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end and any(_running(proc) for proc in self.seen):
            time.sleep(0.1)
        left = [proc for proc in self.seen if _running(proc)]
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 10  # a killed process takes a moment to be gone
        while time.monotonic() < end and any(_running(proc) for proc in left):
            time.sleep(0.1)
        return [pid for pid, _ in left]


def _write(where: Path, participants) -> list[Path]:
    """One CSV per participant (a header row, every digit of every value)."""
    paths = []
    for k, X in enumerate(participants):
        paths.append(where / f"participant{k}.csv")
        header = ",".join(f"x{j}" for j in range(X.shape[1]))
        np.savetxt(paths[-1], X, delimiter=",", header=header, comments="", fmt="%.17g")
    return paths


@pytest.fixture
def study(tmp_path):
    paths = _write(tmp_path, simulate(5, P * 100, participants=P, rng=4).participants)
    app = tmp_path / "app"
    assert cli(["flower-app", str(app), "--protocol", "fed-bnsl", "--participants", str(P)]) == 0
    fed = Federation(tmp_path, paths)
    try:
        yield fed, app, paths
    finally:
        fed.close()
        assert not any(_running(proc) for proc in fed.seen)  # every process started here has ended


def test_a_deployment_on_loopback_equals_the_learner(study, tmp_path):
    from dpbnsl.flower.deployment import load_run

    fed, app, paths = study
    out = tmp_path / "result"
    rid = fed.submit(
        app, f'participants={P} out-dir="{out}" settings=\'{{"max_rounds": 3}}\' round-timeout=120.0'
    )
    info = fed.wait(rid, 600)
    assert info["status"] == "finished:completed", info.get("status-details")
    run = load_run(out)
    ref = fed_bnsl([read_csv(p, "data") for p in paths], max_rounds=3)
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    assert len(run.transcript) == len(ref.transcript) == 2 * P + 3 * 2 * P
    for a, b in zip(run.transcript, ref.transcript):
        assert (a.round, a.sender, a.receiver, a.kind) == (b.round, b.sender, b.receiver, b.kind)
        np.testing.assert_array_equal(a.to_dense(), b.to_dense())


def test_a_participant_killed_mid_run_is_named_and_nothing_is_written(study, tmp_path):
    fed, app, _ = study
    out = tmp_path / "result"
    rid = fed.submit(
        app, f'participants={P} out-dir="{out}" settings=\'{{"max_rounds": 200}}\' round-timeout=20.0'
    )
    log = tmp_path / "node1.log"
    # participant 1 has answered the setup and round 0 (its node logs each reply it sends)
    Federation._wait(
        lambda: log.read_text().count("Sent successfully") >= 2, 120, "participant 1's first replies"
    )
    fed.procs["node1"].send_signal(signal.SIGKILL)
    info = fed.wait(rid, 240)
    assert info["status"] == "finished:failed", info
    assert "participant 1" in info["status-details"] and "no reply within 20 s" in info["status-details"], (
        info
    )
    assert not out.exists()


# --- secure aggregation on loopback: Flower's SecAgg+ between separate processes -------------

#: the deployment's ClientApp with a fault a test can set per node (node config ``drop-at``: the
#: SecAgg+ stage at which the node fails, or "request" for the secure round's request, as a machine
#: that goes away mid-round)
_FAULTY_CLIENT = """\
from dpbnsl.flower.apps import make_client_app
from dpbnsl.flower.secagg import share_stage


def _drop(msg, ctx, call_next):
    stage = str(ctx.node_config.get("drop-at", ""))
    at_request = msg.metadata.message_type == "query" and msg.content["config"]["phase"] == "covariance"
    if stage and (at_request if stage == "request" else share_stage(msg) == stage):
        raise RuntimeError("this node went away")
    return call_next(msg, ctx)


app = make_client_app(mods=[_drop])
"""


@pytest.fixture
def secure_study(tmp_path, request):
    drops = request.param
    paths = _write(tmp_path, simulate(5, P * 300, participants=P, rng=4).participants)
    app = tmp_path / "app"
    assert cli(["flower-app", str(app), "--protocol", "dp-fed-bnsl", "--participants", str(P)]) == 0
    (app / "dpbnsl_study" / "client_app.py").write_text(_FAULTY_CLIENT)
    config = tuple(
        "seed=7 accept-study-budget=true" + (f' drop-at="{drops[k]}"' if k in drops else "") for k in range(P)
    )
    fed = Federation(tmp_path, paths, config)
    try:
        yield fed, app, paths
    finally:
        fed.close()
        assert not any(_running(proc) for proc in fed.seen)


SECURE = {"aggregation": "secure", "epsilon": 1.0, "delta": 1e-5, "clip_norm": 10.0, "dropouts": 1}


def _secure_config(out: Path) -> str:
    settings = json.dumps(dict(SECURE, participants=P, n_total=P * 300))
    return f"participants={P} out-dir=\"{out}\" settings='{settings}' round-timeout=120.0"


@pytest.mark.parametrize("secure_study", [{2: "request"}], indirect=True)
def test_a_secagg_deployment_survives_a_dropout_within_the_threshold(secure_study, tmp_path):
    """P = 3, t = 1 (threshold 2): participant 2's node fails at the secure round's request; the
    run completes with participants 0 and 1's shares, bitwise the in-process sum of those two."""
    from dpbnsl.federation.secure_sum import InProcessSum
    from dpbnsl.flower.deployment import load_run
    from dpbnsl.learners.hosted import hosted

    fed, app, paths = secure_study
    out = tmp_path / "result"
    rid = fed.submit(app, _secure_config(out))
    info = fed.wait(rid, 600)
    assert info["status"] == "finished:completed", info.get("status-details")
    run = load_run(out)
    settings = dict(SECURE, participants=P, n_total=P * 300)
    proto = hosted("dp-fed-bnsl")
    data = [read_csv(p, "data") for p in paths]
    clients = [
        proto.participant(X, settings=settings, participant=k, rng=g, budget="study")
        for k, (X, g) in enumerate(zip(data, np.random.default_rng(7).spawn(P)))
    ]
    server = proto.server(settings=settings, n_participants=P)
    reply = server.receive("rounds", -1, {k: c.respond("rounds", -1, None)[1] for k, c in enumerate(clients)})
    shares = {k: c.respond("covariance", 0, reply.for_participant(k))[1] for k, c in enumerate(clients)}
    server.receive_sum("covariance", 0, InProcessSum()({0: shares[0], 1: shares[1]}))
    np.testing.assert_array_equal(run.W_raw, server.learned()[1])
    assert [m.sender for m in run.transcript if m.kind == "secure_share"] == [0, 1]
    assert run.contributors == {"covariance:0": (0, 1)}
    assert list(run.dropped) == ["covariance:0"] and "participant 2" in run.dropped["covariance:0"][0]


@pytest.mark.parametrize(
    "secure_study", [{1: "collect_masked_vectors", 2: "collect_masked_vectors"}], indirect=True
)
def test_a_secagg_deployment_beyond_the_threshold_fails_naming_them_and_writes_nothing(
    secure_study, tmp_path
):
    fed, app, _ = secure_study
    out = tmp_path / "result"
    rid = fed.submit(app, _secure_config(out))
    info = fed.wait(rid, 600)
    assert info["status"] == "finished:failed", info
    details = info["status-details"]
    assert "participant 1 (in SecAgg+'s masking stage), participant 2" in details, details
    assert "nothing released" in details
    assert not out.exists()


@pytest.mark.slow
def test_a_d200_covariance_over_secagg_on_loopback_with_ten_participants(tmp_path, capsys):
    """d = 200 (20,100 residues per share), 10 SuperNodes on loopback: the run completes within
    the wait's 15 minutes and equals the in-process run bit for bit (its wall time is printed)."""
    from dpbnsl.flower.deployment import load_run
    from dpbnsl.learners.linear.dp_fed_bnsl import dp_fed_bnsl

    P10, d, n = 10, 200, 300
    paths = _write(tmp_path, simulate(d, P10 * n, participants=P10, rng=6).participants)
    app = tmp_path / "app"
    assert cli(["flower-app", str(app), "--protocol", "dp-fed-bnsl", "--participants", str(P10)]) == 0
    (app / "dpbnsl_study" / "client_app.py").write_text(_FAULTY_CLIENT)
    fed = Federation(tmp_path, paths, tuple("seed=3 accept-study-budget=true" for _ in range(P10)))
    try:
        settings = dict(SECURE, epsilon=5.0, dropouts=0, participants=P10, n_total=P10 * n)
        out = tmp_path / "result"
        began = time.monotonic()
        rid = fed.submit(
            app, f"participants={P10} out-dir=\"{out}\" settings='{json.dumps(settings)}' round-timeout=600.0"
        )
        info = fed.wait(rid, 900)
        wall = time.monotonic() - began
    finally:
        fed.close()
    assert info["status"] == "finished:completed", info.get("status-details")
    run = load_run(out)
    ref = dp_fed_bnsl(
        [read_csv(p, "data") for p in paths],
        aggregation="secure",
        rng=3,
        epsilon=5.0,
        delta=1e-5,
        clip_norm=10.0,
    )
    np.testing.assert_array_equal(run.W_raw, ref.W_raw)
    with capsys.disabled():
        print(f"\nd = 200 over SecAgg+ on loopback, 10 nodes: {wall:.0f} s wall, server {run.seconds:.0f} s")
