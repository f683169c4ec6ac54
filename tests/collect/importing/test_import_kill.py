"""kill -9 of ``collect import`` of many rows, mid-flight: the batch is in the ledger whole or not at
all, with no torn line; nothing acknowledged before is lost; re-running the import finishes it, and
the ledger is then byte for byte the one an uninterrupted import writes.

The kills land where they matter -- part-way through the journal, after the commit, part-way
through the ledger append (mid-line, at a line boundary, after the last byte), before the journal
is removed -- by a child that kills itself there with SIGKILL (what the kernel does to a write when
the signal arrives: it stops between pages), and at random moments of a real run.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from collect.ledger.journal import PENDING_NAME, pending_path
from collect.ledger.store import LedgerAppender, read_ledger, verify_chain
from tests.conftest import REPO
from tests.helpers import frozen_shared, run

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

ROOT = REPO
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ROWS, ACKNOWLEDGED = 3000, 1000
CHILD = r"""
import os, signal, sys
import collect.ledger.store as ledger, collect.ledger.journal as journal
point, arg, argv = sys.argv[1], sys.argv[2], sys.argv[3:]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def cut(data):
    if arg == "line":  # just after a complete line, in the middle of the batch
        return data.index(b"\n", len(data) // 2) + 1
    return int(len(data) * float(arg))

def partial(real):
    def write(fd, data, path):
        if len(data) < 100_000:
            return real(fd, data, path)
        view, k = memoryview(data)[: cut(data)], 0
        while k < len(view):
            k += os.write(fd, view[k:])
        die()
    return write

if point == "ledger-write":
    ledger.write_all = partial(ledger.write_all)
elif point == "journal-write":
    journal.write_all = partial(journal.write_all)
elif point == "after-commit":
    real_commit, real_staged = journal.commit, journal.commit_staged
    journal.commit = lambda *a: (real_commit(*a), die())
    journal.commit_staged = lambda *a: (real_staged(*a), die())  # a batch journaled chunk by chunk
elif point == "before-finish":
    journal.finish = lambda *a: die()
from prereg_toolkit_cli.collect import main
sys.exit(main(argv))
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A plan, a table of ``ROWS`` runs whose first ``ACKNOWLEDGED`` were imported before, and the
    ledger an uninterrupted import of the whole table leaves."""
    folder = tmp_path_factory.mktemp("study")
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "benchmarks" / "bench_scale.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    plan, table = bench.write_study(folder, ROWS)
    lock = frozen_shared(folder, "scale.yaml", plan.read_text())
    lines = table.read_text().splitlines(keepends=True)
    (folder / "first").mkdir()
    first = folder / "first" / table.name  # the same name: a record's source names its table
    first.write_text("".join(lines[: ACKNOWLEDGED + 1]))
    ref = folder / "ref"
    for t in (first, table):
        assert _import(t, lock, ref).returncode == 0
    return {
        "lock": lock,
        "table": table,
        "first": first,
        "before": _ledger(folder, first, lock),
        "reference": (ref / "ledger.jsonl").read_bytes(),
    }


def _import(table: Path, lock: Path, runs: Path) -> subprocess.CompletedProcess:
    return run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs))


def _ledger(folder: Path, first: Path, lock: Path) -> bytes:
    """The acknowledged ledger: the first rows, imported (the same bytes in every trial)."""
    runs = folder / "acknowledged"
    if not runs.exists():
        assert _import(first, lock, runs).returncode == 0
    return (runs / "ledger.jsonl").read_bytes()


def _fresh(tmp_path: Path, study: dict) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "ledger.jsonl").write_bytes(study["before"])
    return runs


def _check_after_kill(runs: Path, study: dict, whole: bool | None) -> bool:
    """The ledger as any reader sees it after the kill; whether the batch is in (``whole``: must be)."""
    ledger = read_ledger(runs)
    assert ledger.problems == [] and not ledger.torn_tail, ledger.problems  # no torn line, nothing unreadable
    assert verify_chain(ledger).status == "intact"
    assert (runs / "ledger.jsonl").read_bytes().startswith(study["before"])  # nothing acknowledged lost
    assert len(ledger.records) in (ACKNOWLEDGED, ROWS)  # the batch whole, or not at all
    batch_in = len(ledger.records) == ROWS
    if whole is not None:
        assert batch_in == whole
    return batch_in


def _check_rerun(runs: Path, study: dict) -> None:
    proc = _import(study["table"], study["lock"], runs)
    assert proc.returncode == 0, proc.stderr
    assert (runs / "ledger.jsonl").read_bytes() == study["reference"]  # finished, byte for byte
    assert not pending_path(runs).exists() and not (runs / (PENDING_NAME + ".tmp")).exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "arg", "whole"),
    [
        ("journal-write", "0.5", False),  # not committed: absent
        ("after-commit", "0", True),  # committed, not a byte appended: whole
        ("ledger-write", "0", True),
        ("ledger-write", "0.37", True),  # torn in the middle of a line
        ("ledger-write", "line", True),  # cut at a line boundary: complete lines of a part of the batch
        ("ledger-write", "1", True),  # all of it written, killed before the fsync
        ("before-finish", "0", True),  # appended and fsynced, the journal still there
    ],
)
def test_kill_9_at_each_step_of_the_append(tmp_path, study, point, arg, whole):
    runs = _fresh(tmp_path, study)
    argv = ["import", str(study["table"]), "--lock", str(study["lock"]), "--out", str(runs)]
    proc = subprocess.run([sys.executable, "-c", CHILD, point, arg, *argv], env=ENV, capture_output=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    _check_after_kill(runs, study, whole)
    _check_rerun(runs, study)


@pytest.mark.slow
def test_kill_9_at_random_moments_of_a_real_import(tmp_path, study):
    """SIGKILL from outside, at random moments: half of the trials as soon as the journal appears."""
    rng = random.Random(14)
    outcomes = []
    for trial in range(6):
        (tmp_path / str(trial)).mkdir()
        runs = _fresh(tmp_path / str(trial), study)
        cmd = [
            sys.executable,
            "-m",
            "prereg_toolkit_cli.collect",
            "import",
            str(study["table"]),
            "--lock",
            str(study["lock"]),
            "--out",
            str(runs),
        ]
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if trial % 2:
            while proc.poll() is None and not pending_path(runs).exists():
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.004))
        else:
            time.sleep(rng.uniform(0, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=600)
        outcomes.append(_check_after_kill(runs, study, None))
        _check_rerun(runs, study)
    assert len(outcomes) == 6


def test_a_reader_never_sees_a_batch_half_written(tmp_path, study):
    """A reader waits while a live writer holds the ledger's lock part-way through a batch, then sees all of it."""
    runs = _fresh(tmp_path, study)
    holder = (
        "import os, sys, fcntl\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, b'{\"torn\": ')\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
        "os.ftruncate(fd, int(sys.argv[2]))\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder, str(runs / "ledger.jsonl"), str(len(study["before"]))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "held"
    seen = []
    reader = threading.Thread(target=lambda: seen.append(read_ledger(runs)))
    reader.start()
    reader.join(0.3)
    assert not seen  # blocked on the lock, not reading the half-written line
    child.stdin.write("go\n")
    child.stdin.flush()
    child.wait(timeout=60)
    reader.join(60)
    assert seen and seen[0].problems == [] and len(seen[0].records) == ACKNOWLEDGED


def test_a_journal_that_does_not_continue_the_ledger_is_never_applied(tmp_path, study):
    runs = _fresh(tmp_path, study)
    pending_path(runs).write_bytes(
        b'{"format": "collect/ledger-pending/v1", "offset": 5, "length": 3, "sha256": "0"}\nabc'
    )
    ledger = read_ledger(runs)
    assert len(ledger.records) == ACKNOWLEDGED and ledger.pending and "ignored" in ledger.pending
    with pytest.raises(OSError, match="does not continue the ledger") as caught:
        LedgerAppender(runs, ledger).write(b"{}\n{}\n", "0" * 64)
    assert caught.value.filename == str(pending_path(runs))
    assert (runs / "ledger.jsonl").read_bytes() == study["before"]
