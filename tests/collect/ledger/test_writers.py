"""One writer per runs folder, a lock that never outlives its holder, workers that die with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.ledger.runlock import RunsBusy, runs_lock
from collect.ledger.store import read_ledger
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers import alive, children
from tests.helpers.collectors import SLOW
from tests.helpers.engine import collect_cli, loaded, plan_text

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

ROOT = REPO
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HOLD = (
    "import sys, time; from collect.ledger.runlock import runs_lock\nwith runs_lock(sys.argv[1], 'test holder'):\n"
    "    print('held', flush=True); time.sleep(600)"
)


def _hold(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder_and_the_lock_dies_with_it(tmp_path, monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)
    runs = tmp_path / "runs"
    holder = _hold(runs)
    try:
        with pytest.raises(RunsBusy, match=f"pid {holder.pid}"):
            engine.run_plan(*loaded(plan_text()), runs)
        lock = tmp_path / "plan.lock.json"
        (tmp_path / "plan.yaml").write_text(plan_text())
        freeze(tmp_path / "plan.yaml")  # the library: the CLI refuses a collector only this test registers
        proc = subprocess.run(
            collect_cli("run", str(lock), "--out", str(runs)), env=ENV, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 2 and "another writer" in proc.stderr and f"pid {holder.pid}" in proc.stderr
        assert "Traceback" not in proc.stderr and not read_ledger(runs).records
    finally:
        holder.send_signal(signal.SIGKILL)  # kill -9: no cleanup runs, yet the lock must go
        holder.wait(timeout=60)
    summary = engine.run_plan(*loaded(plan_text()), runs)
    assert summary.completed == 24


def test_the_lock_is_reentrant_in_one_process_and_exclusive_across(tmp_path):
    with runs_lock(tmp_path, "outer"), runs_lock(tmp_path, "inner"):
        proc = subprocess.run(
            [sys.executable, "-c", HOLD, str(tmp_path)], env=ENV, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode != 0 and "another writer" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_pool_workers_exit_when_collect_run_dies(tmp_path, sig):
    (tmp_path / "plan.yaml").write_text(plan_text(sleep=2000.0))
    freeze(tmp_path / "plan.yaml")  # the library: the CLI refuses a collector only this test registers
    proc = subprocess.Popen(
        collect_cli("run", str(tmp_path / "plan.lock.json"), "--out", str(tmp_path / "runs"), "--jobs", "2"),
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    for _ in range(600):  # wait for both workers (a generous bound, only to catch a hang)
        workers = children(proc.pid)
        if len(workers) >= 2:
            break
        time.sleep(0.1)
    assert len(workers) >= 2
    proc.send_signal(sig)
    proc.wait(timeout=60)
    for _ in range(600):
        if not any(alive(w) for w in workers):
            break
        time.sleep(0.1)
    left = [w for w in workers if alive(w)]
    for w in left:  # never leave processes behind, even when the test fails
        os.kill(w, signal.SIGKILL)
    assert left == []
    # and the folder's lock went with them: the next writer gets it at once
    with runs_lock(tmp_path / "runs", "after"):
        pass


def test_jobs_is_bounded(tmp_path):
    (tmp_path / "plan.yaml").write_text(plan_text())
    freeze(tmp_path / "plan.yaml")  # the library: the CLI refuses a collector only this test registers
    proc = subprocess.run(
        collect_cli("run", str(tmp_path / "plan.lock.json"), "--out", str(tmp_path / "r"), "--jobs", "100000"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "--jobs must be between 1 and" in proc.stderr and "CPU" in proc.stderr


def test_two_collect_runs_on_one_folder_one_is_refused(tmp_path):
    """The reported case: `collect run L --out R &` twice. One runs, the other exits 2; no cell twice.
    The first's pool workers are stopped while the second runs, so the first still holds the folder
    however slowly a loaded machine starts the second (its driver, never stopped, is between appends)."""
    (tmp_path / "plan.yaml").write_text(plan_text(sleep=300.0))
    freeze(tmp_path / "plan.yaml")  # the library: the CLI refuses a collector only this test registers
    cmd = collect_cli("run", str(tmp_path / "plan.lock.json"), "--out", str(tmp_path / "runs"), "--jobs", "2")
    first = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    for _ in range(1200):  # until the first runs its pool, lock held (a generous bound, only to catch a hang)
        workers = children(first.pid)
        if len(workers) >= 2 or first.poll() is not None:
            break
        time.sleep(0.05)
    assert len(workers) >= 2 and (tmp_path / "runs" / ".collect.lock").stat().st_size, "the first never ran its pool"
    for worker in workers:
        os.kill(worker, signal.SIGSTOP)
    try:
        second = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    finally:
        for worker in workers:
            os.kill(worker, signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2 and "another writer" in second.stderr and f"pid {first.pid}" in second.stderr
    ledger = read_ledger(tmp_path / "runs")
    ids = [r.run_id for r in ledger.records]
    assert len(ids) == len(set(ids)) == 24
