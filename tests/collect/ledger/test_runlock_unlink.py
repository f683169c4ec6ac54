"""One writer per runs folder even when the lock's file is deleted, replaced or the folder renamed.

The writer lock is a ``flock`` on the runs folder's own descriptor (``collect.ledger.runlock``);
``RUNS/.collect.lock`` only describes the holder. A second writer in the same process is simulated
with an empty table of held locks (what a second process starts with): it opens its own descriptors,
and ``flock`` conflicts between two open file descriptions even in one process.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import collect.ledger.runlock as runlock
from collect.ledger.runlock import RunsBusy, held_descriptors, runs_lock
from tests.conftest import REPO

ROOT = REPO
HOLD = (
    "import os, sys, time; from collect.ledger.runlock import runs_lock\n"
    "with runs_lock(sys.argv[1], 'test holder'):\n"
    "    os.unlink(os.path.join(sys.argv[1], '.collect.lock'))\n"
    "    print('held', flush=True); time.sleep(600)"
)


def _second_writer(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Take the lock as a second process would: with none of this process's held locks."""
    with monkeypatch.context() as patch:
        patch.setattr(runlock, "_held", {})
        with runs_lock(folder, "second writer"):
            pass


def test_a_deleted_lock_file_does_not_let_a_second_writer_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    with runs_lock(runs, "first writer"):
        (runs / ".collect.lock").unlink()  # what a program run by the collector could do
        with pytest.raises(RunsBusy, match="another writer"):
            _second_writer(monkeypatch, runs)
        assert not (runs / ".collect.lock").exists()  # the refused writer wrote nothing
    _second_writer(monkeypatch, runs)  # the holder gone, the folder is free again


def test_a_replaced_lock_file_or_a_renamed_folder_keeps_the_writer_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    with runs_lock(runs, "first writer"):
        (runs / ".collect.lock").unlink()
        (runs / ".collect.lock").write_text("{}")  # a fresh, unlocked file in its place
        with pytest.raises(RunsBusy):
            _second_writer(monkeypatch, runs)
        moved = tmp_path / "moved"
        runs.rename(moved)  # the lock is on the folder, not on its name
        with pytest.raises(RunsBusy):
            _second_writer(monkeypatch, moved)
    _second_writer(monkeypatch, moved)


def test_the_folder_lock_is_close_on_exec_and_listed_for_forked_workers(tmp_path: Path) -> None:
    with runs_lock(tmp_path, "holder"):
        fds = held_descriptors()
        assert len(fds) == 2  # the folder's descriptor and the description file's
        assert all(not os.get_inheritable(fd) for fd in fds)  # a program started by the collector never has them
        assert sorted(stat.S_ISDIR(os.fstat(fd).st_mode) for fd in fds) == [False, True]
    assert held_descriptors() == []


@pytest.mark.subprocess
def test_a_holder_process_that_deleted_the_lock_file_still_excludes_others(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(runs)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not (runs / ".collect.lock").exists()
        with pytest.raises(RunsBusy, match="another writer"), runs_lock(runs, "second writer"):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=60)
    with runs_lock(runs, "after the holder died"):
        pass
