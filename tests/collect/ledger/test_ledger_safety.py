"""A failed append leaves the ledger exactly as it was; no reader blocks on a FIFO or reads a device
without end; refusing a ledger padded with copies costs bounded memory."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import collect.ledger.files as ledger_files
from collect.ledger.store import AppendFailed, RunRecord, append_records, read_ledger, verify_chain
from tests.conftest import REPO
from tests.helpers import frozen_shared, imported_equal_work, run

SHA = "b" * 64


def _record(i: int) -> RunRecord:
    return RunRecord(
        run_id=f"run-{i}",
        prereg_sha256=SHA,
        stratum={"seed": i},
        arm="a",
        replicate=0,
        status="complete",
        metrics={"x": float(i)},
    )


def _disk_full_after(monkeypatch, keep: int, skip: int = 0) -> None:
    """``os.write`` in the ledger writer writes ``keep`` bytes of a buffer, then fails with ENOSPC
    (after ``skip`` writes that succeed: 1 lets a batch's journal be committed first)."""
    real = os.write
    done = [0]

    def write(fd: int, data) -> int:
        if len(data) > keep and done[0] >= skip:
            real(fd, bytes(data[:keep]))
            raise OSError(errno.ENOSPC, "No space left on device")
        done[0] += 1
        return real(fd, data)

    monkeypatch.setattr(ledger_files.os, "write", write)


@pytest.mark.parametrize("batch, skip", [(1, 0), (3, 0), (3, 1)])  # a record; a batch's journal; its append
def test_a_failed_append_leaves_the_ledger_exactly_as_it_was(tmp_path, monkeypatch, batch, skip):
    runs = tmp_path / "runs"
    append_records(runs, [_record(0), _record(1)])
    before = (runs / "ledger.jsonl").read_bytes()
    with monkeypatch.context() as m:
        _disk_full_after(m, 78, skip)
        with pytest.raises(AppendFailed) as info:
            append_records(runs, [_record(10 + i) for i in range(batch)])
    assert info.value.errno == errno.ENOSPC and "ledger.jsonl" in str(info.value.filename)
    assert "exactly as it was" in info.value.strerror
    assert (runs / "ledger.jsonl").read_bytes() == before  # no torn fragment
    assert not (runs / ".ledger.pending").exists() and not (runs / ".ledger.pending.tmp").exists()
    ledger = read_ledger(runs)
    assert not ledger.problems and not ledger.torn_tail and len(ledger.records) == 2
    append_records(runs, [_record(2)])  # the resume appends cleanly
    ledger = read_ledger(runs)
    assert not ledger.problems and [r.run_id for r in ledger.records] == ["run-0", "run-1", "run-2"]
    assert verify_chain(ledger).status == "intact"


def test_a_torn_tail_left_by_an_older_crash_is_still_reported(tmp_path):
    runs = tmp_path / "runs"
    append_records(runs, [_record(0)])
    with open(runs / "ledger.jsonl", "ab") as fh:
        fh.write(b'{"record":"collect/run/v2","run_id":"run-torn"')  # a crash mid-append
    ledger = read_ledger(runs)
    assert ledger.torn_tail and [p.line for p in ledger.problems] == [2]
    append_records(runs, [_record(1)])  # the fragment stays on its own line, visible
    ledger = read_ledger(runs)
    assert [r.run_id for r in ledger.records] == ["run-0", "run-1"]
    assert [p.line for p in ledger.problems] == [2] and "torn or corrupted" in ledger.problems[0].message


@pytest.mark.subprocess
@pytest.mark.parametrize("padding", ["copies", "distinct"])
def test_a_padded_ledger_is_refused_in_bounded_memory(tmp_path, padding):
    """200k extra lines -- byte copies of the records, or distinct records (each its own run_id, so
    each breaks the chain) -- are refused, exit 3, in bounded memory: parsing stops after
    MAX_BAD_LINES bad lines and the rest is only hashed."""
    from collect.ledger.store import MAX_BAD_LINES

    runs = imported_equal_work(tmp_path, frozen_shared(tmp_path))
    lines = (runs / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    with open(runs / "ledger.jsonl", "ab") as fh:
        if padding == "copies":
            for _ in range(200_000 // len(lines) + 1):
                fh.writelines(lines)
        else:
            template = json.loads(lines[0])
            for i in range(200_000):
                fh.write((json.dumps({**template, "run_id": f"forged-{i}"}, separators=(",", ":")) + "\n").encode())
    size = (runs / "ledger.jsonl").stat().st_size
    # peak RSS of this process alone: VmHWM (ru_maxrss would carry the forking pytest's peak across exec)
    script = textwrap.dedent(f"""
        import resource
        from collect.ledger.store import read_ledger, verify_chain
        ledger = read_ledger({str(runs)!r})
        report = verify_chain(ledger)
        hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM"))
        print(report.status, len(ledger.records), len(ledger.problems), ledger.stopped_at_line, ledger.lines,
              hwm // 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    status, records, problems, stopped, counted, peak_mb, maxrss_mb = proc.stdout.split()
    print(
        f"ledger of {size / 1e6:.0f} MB ({padding}): peak RSS {peak_mb} MB, parsing stopped at line {stopped} "
        f"(getrusage ru_maxrss {maxrss_mb} MB, which includes the parent's peak before exec)"
    )
    assert status == "broken" and stopped != "None" and int(counted) >= 200_000  # every line hashed and counted
    assert int(records) <= len(lines) + MAX_BAD_LINES + 1 and int(problems) <= MAX_BAD_LINES + 2
    assert int(peak_mb) < 300
    proc = run("gates", "evaluate", str(tmp_path / "equal-work.lock.json"), str(runs), timeout=300)
    assert proc.returncode == 3 and "hash chain does not verify" in proc.stderr
    assert "reading stopped there" in proc.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "args",
    [
        ["reports", "html", "{input}"],
        ["reports", "html", "{input}", "-o", "{tmp}/r.html"],
        ["reports", "show", "{input}"],
        ["reports", "plot", "{input}"],
        ["prereg", "verify", "{input}"],
        ["prereg", "freeze", "{input}"],
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_no_reader_blocks_on_a_fifo_or_reads_a_device(tmp_path, fifo, args, kind):
    source = str(fifo) if kind == "fifo" else "/dev/zero"
    argv = [a.format(input=source, tmp=tmp_path) for a in args]
    proc = run(*argv, timeout=60)  # the timeout only catches a hang
    assert proc.returncode == 2, proc.stderr
    what = "named pipe (FIFO)" if kind == "fifo" else "device"
    assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.subprocess
def test_a_runs_folder_whose_ledger_or_evaluation_is_a_fifo(tmp_path):
    runs = imported_equal_work(tmp_path, frozen_shared(tmp_path))
    evaluation = runs / "evaluation.json"
    os.mkfifo(evaluation)
    proc = run("reports", "html", str(runs), timeout=60)  # the timeout only catches a hang
    assert proc.returncode == 2 and "evaluation.json" in proc.stderr
    evaluation.unlink()
    (runs / "ledger.jsonl").unlink()
    os.mkfifo(runs / "ledger.jsonl")
    proc = run("gates", "evaluate", str(tmp_path / "equal-work.lock.json"), str(runs), timeout=60)
    assert proc.returncode == 2 and "ledger.jsonl" in proc.stderr
    proc = run("reports", "plot", str(runs), "--run", "x", timeout=60)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr
