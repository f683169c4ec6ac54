"""Joining a head started as Ray ships it (`ray start --head`): with token authentication on, and bound
to the loopback. Each head runs in its own session and temporary HOME, and is ended by its process
group in a finally; `collect run` is a child whose exit status and words are checked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers.engine import collect_cli, plan_text
from tests.helpers.ray_procs import descendants

pytestmark = [
    pytest.mark.ray_instance,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]
ray = pytest.importorskip("ray")

RAY = Path(sys.executable).parent / "ray"
WAIT_S = 300  # a generous bound on any one step, only to catch a hang
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")  # set only where a test sets them


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _ray_env(fixed: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    """This process's environment with ``fixed`` and ``env``, and no Ray address or authentication but what
    ``env`` sets (a local ray.init earlier in this process sets RAY_AUTH_MODE=token)."""
    unset = {"RAY_ADDRESS", *AUTH_VARS} - set(env)
    return {k: v for k, v in {**os.environ, **fixed, **env}.items() if k not in unset}


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


@contextmanager
def _head(home: Path, host: str, env: dict[str, str]) -> Iterator[int]:
    """`ray start --head --block` on a free port, in a session of its own; yields the port."""
    port = _free_port()
    cmd = [str(RAY), "start", "--head", "--block", f"--port={port}", "--num-cpus=1", "--include-dashboard=false"]
    head_env = _ray_env({"HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0"}, env)
    log = home / f"ray-start-{port}.log"  # what `ray start` said, shown when the head does not start
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=head_env, start_new_session=True, stdout=out, stderr=subprocess.STDOUT)
    seen: set[int] = set()
    try:
        for _ in range(WAIT_S * 10):
            seen |= descendants({proc.pid})
            if proc.poll() is not None or _answers(host, port):
                break
            time.sleep(0.1)
        assert proc.poll() is None and _answers(host, port), "the head did not start: " + log.read_text()[-3000:]
        time.sleep(2)  # its raylet registers after the GCS answers
        yield port
    finally:
        seen |= descendants({proc.pid})
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        seen |= descendants({proc.pid})
        for pid in {proc.pid, *seen}:  # the group, and Ray workers in sessions of their own
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def _lock(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text())
    freeze(plan)
    return tmp_path / "plan.lock.json"


def _collect(
    lock: Path, runs: Path, address: str, home: Path, *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    child_env = _ray_env({"PYTHONPATH": str(REPO), "HOME": str(home), "PYTHONFAULTHANDLER": "1"}, env)
    args = ("run", str(lock), "--out", str(runs), "--executor", "ray", "--address", address, "--json", *extra)
    return subprocess.run(collect_cli(*args), env=child_env, cwd=REPO, capture_output=True, text=True, timeout=WAIT_S)


def test_a_head_with_token_authentication_is_refused_saying_what_to_set_then_joined_with_its_token(tmp_path):
    head_home, driver_home = tmp_path / "head-home", tmp_path / "driver-home"
    head_home.mkdir()
    driver_home.mkdir()
    subprocess.run(
        [str(RAY), "get-auth-token", "--generate"],
        env={**os.environ, "HOME": str(head_home)},
        check=True,
        capture_output=True,
        timeout=WAIT_S,
    )
    token = (head_home / ".ray" / "auth_token").read_text().strip()
    lock = _lock(tmp_path)
    host = ray.util.get_node_ip_address()
    with _head(head_home, host, {"RAY_AUTH_MODE": "token"}) as port:
        address = f"{host}:{port}"
        for env in ({}, {"RAY_AUTH_MODE": "token"}):  # no token at all; token mode on, but no token
            refused = _collect(lock, tmp_path / "refused", address, driver_home, **env)
            assert refused.returncode == 2, refused.stderr[-3000:]
            assert f"could not join the Ray cluster at {address}: it requires token authentication" in refused.stderr
            assert "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN" in refused.stderr and "Traceback" not in refused.stderr
            assert not (tmp_path / "refused" / "ledger.jsonl").exists()
        auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        joined = _collect(lock, tmp_path / "runs", address, driver_home, **auth)
        if joined.returncode < 0:  # the driver died by a signal inside Ray (a SIGSEGV has been seen under load)
            warnings.warn(f"collect run died by signal {-joined.returncode}: {joined.stderr[-3000:]}", stacklevel=1)
            joined = _collect(lock, tmp_path / "runs", address, driver_home, "--resume", **auth)
        assert joined.returncode == 0, joined.stderr[-3000:]
        assert len(read_ledger(tmp_path / "runs").records) == 24, joined.stdout


def test_a_head_bound_to_the_loopback_is_refused_saying_what_to_set_then_joined_with_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    lock = _lock(tmp_path)
    if ray.util.get_node_ip_address().startswith("127."):
        pytest.skip("this machine has no network address besides the loopback")
    loopback = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # Ray's switch for a cluster on the loopback
    with _head(home, "127.0.0.1", loopback) as port:
        address = f"127.0.0.1:{port}"
        refused = _collect(lock, tmp_path / "refused", address, home)  # never ray.init, which would hang
        assert refused.returncode == 2, refused.stderr[-3000:]
        assert f"could not join the Ray cluster at {address}: its head listens on the loopback only" in refused.stderr
        assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in refused.stderr and "Traceback" not in refused.stderr
        joined = _collect(lock, tmp_path / "runs", address, home, **loopback)
        assert joined.returncode == 0, joined.stderr[-3000:]
        assert '"completed": 24' in joined.stdout
