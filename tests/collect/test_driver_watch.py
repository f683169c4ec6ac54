"""The guard of Ray workers (collect.engine.workers.watch_driver): a worker exits once its driver is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collect.engine.workers import process_identity

REPO = Path(__file__).resolve().parents[2]
WORKER = (
    "import sys, time; from collect.engine.workers import watch_driver; "
    "watch_driver(int(sys.argv[1]), int(sys.argv[2])); print('watching', flush=True); time.sleep(600)"
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _worker(pid: int, start: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(pid), str(start)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )


def _ends(proc: subprocess.Popen) -> int | None:
    """The worker's exit status, waiting generously (only to catch a hang); killed and None if it never ends."""
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def test_process_identity():
    pid, start = process_identity()
    assert pid == os.getpid() and start > 0 and process_identity(pid) == (pid, start)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child_pid = child.pid
    while process_identity(child_pid)[1] != -1:  # a zombie until reaped: already counted as gone
        time.sleep(0.01)
    child.wait()
    assert process_identity(child_pid) == (child_pid, -1)  # reaped: gone


def test_a_watching_worker_exits_when_its_driver_is_killed():
    driver = subprocess.Popen(["sleep", "600"])
    worker = _worker(*process_identity(driver.pid))
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "watching"
        assert worker.poll() is None  # alive while the driver is
        driver.send_signal(signal.SIGKILL)  # left unreaped for a while: a zombie is dead too
        assert _ends(worker) == 1
    finally:
        driver.kill()
        driver.wait()
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_recycled_pid_is_not_the_driver():
    pid, start = process_identity()  # this process, but with another start time: a pid reused since
    worker = _worker(pid, start + 1)
    assert _ends(worker) == 1
