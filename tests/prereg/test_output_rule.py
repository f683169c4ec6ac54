"""The one output rule (``prereg.fileio``), in process: what every output-writing command may write.

Never written over, even with ``force``: a ledger, runs-folder lock, look ledger, plan lock, plan,
trace or evaluation (by name, suffix, ``traces/`` or first bytes; a lock or an evaluation only by its
own writer: an amendment, an evaluation of the same study), a link, folder, FIFO, device or socket;
nothing in a runs folder (or below it) but an earlier output of the same kind. Files are created
with ``link(2)`` and replaced only if still the approved file, so a file that appears or is swapped
while the output is written is never written over.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from gates.api import evaluate, write_evaluation
from prereg import fileio
from prereg.api import freeze
from prereg.fileio import OutputRefused, check_output, write_text_atomically
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, write_csv
from tests.helpers.evaluations import realistic_evaluation

LEDGER_LINE = b'{"record": "collect/run/v2", "run_id": "r1"}\n'


def _never(_path: Path) -> bool:
    return False


def _always(_path: Path) -> bool:
    return True


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A runs folder with a ledger, its lock, a look ledger, a trace and a command program's run folder."""
    folder = tmp_path / "runs"
    (folder / "traces").mkdir(parents=True)
    (folder / "runs" / "run-1").mkdir(parents=True)
    (folder / "ledger.jsonl").write_bytes(LEDGER_LINE)
    (folder / ".collect.lock").write_text('{"pid": 1}')
    (folder / "looks.jsonl").write_text('{"record": "collect/looks/v1"}\n')
    (folder / "traces" / "run-1.telemetry.meta.json").write_text('{"format": "collect/trace/v2"}')
    (folder / "runs" / "run-1" / "stdout.txt").write_text("the program's output\n")
    (folder / "notes.txt").write_text("the author's notes\n")
    return folder


def _protected(tmp_path: Path, runs: Path) -> list[Path]:
    """One file of each protected kind, some recognised by name, some only by their first bytes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {
        outside / "study.lock.json": b'{"format": "prereg/lock/v1"}',
        outside / "copy-of-lock.txt": b'{\n  "format": "prereg/lock/v1",\n  "plan": {}}',
        outside / "study.yaml": b"schema: prereg/v1\n",
        outside / "plan.txt": b"# my plan\nschema: prereg/v1\n",
        outside / "ledger-copy.txt": LEDGER_LINE,
        outside / "events.jsonl": b"{}\n",
        outside / "trace.meta.json": b'{"format": "collect/trace/v2"}',
        outside / "result.json": b'{\n  "schema": "gates/evaluation/v2",\n  "prereg_sha256": "00"}',
        outside / "evaluation.json": b"{}",
    }
    for path, data in files.items():
        path.write_bytes(data)
    (outside / "study.lock.json").chmod(0o444)
    return [
        *files,
        runs / "ledger.jsonl",
        runs / ".collect.lock",
        runs / "looks.jsonl",
        runs / "traces" / "run-1.telemetry.meta.json",
    ]


def test_protected_kinds_are_never_written_over_even_with_force(tmp_path: Path, runs: Path) -> None:
    targets = _protected(tmp_path, runs)
    before = {p: p.read_bytes() for p in targets}
    for target in targets:
        for force in (False, True):
            with pytest.raises(OutputRefused, match="never written over") as caught:
                fileio.write_output(target, b"OVERWRITTEN", force=force, ours=_never)
            assert str(target) in str(caught.value)
    assert {p: p.read_bytes() for p in targets} == before


def test_links_folders_fifos_devices_and_sockets_are_never_written_over(tmp_path: Path, runs: Path) -> None:
    (tmp_path / "to-ledger").symlink_to(runs / "ledger.jsonl")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        for target in (
            tmp_path / "to-ledger",
            tmp_path / "dangling",
            tmp_path / "fifo",
            tmp_path / "folder",
            tmp_path / "sock",
            Path("/dev/null"),
        ):
            with pytest.raises(OutputRefused, match="never written over"):
                fileio.write_output(target, b"x", force=True, ours=_always)
    assert (runs / "ledger.jsonl").read_bytes() == LEDGER_LINE
    assert not (tmp_path / "nowhere").exists() and stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_nothing_in_a_runs_folder_is_written_over_but_an_earlier_output_of_the_same_kind(runs: Path) -> None:
    foreign = [runs / "notes.txt", runs / "runs" / "run-1" / "stdout.txt"]
    before = {p: p.read_bytes() for p in foreign}
    for target in foreign:
        with pytest.raises(OutputRefused, match="runs folder") as caught:
            fileio.write_output(target, b"x", force=True, ours=_never)
        assert str(runs) in str(caught.value)
    assert {p: p.read_bytes() for p in foreign} == before
    fileio.write_output(runs / "notes.txt", b"a new report\n", ours=_always)  # an earlier output of this kind
    fileio.write_output(runs / "runs" / "report.md", b"new\n")  # a new file: created
    assert (runs / "notes.txt").read_bytes() == b"a new report\n" and (runs / "runs" / "report.md").is_file()
    assert (
        fileio.runs_folder_of(runs / "traces" / "x") == runs
        and fileio.runs_folder_of(runs / "runs" / "run-1" / "y") == runs
    )


def test_a_runs_folder_reached_through_a_link_is_still_a_runs_folder(tmp_path: Path, runs: Path) -> None:
    (tmp_path / "alias").symlink_to(runs / "runs")
    with pytest.raises(OutputRefused, match="runs folder"):
        fileio.write_output(tmp_path / "alias" / "run-1" / "stdout.txt", b"x", force=True)
    assert (runs / "runs" / "run-1" / "stdout.txt").read_text() == "the program's output\n"


def test_elsewhere_a_foreign_file_needs_force_and_an_own_output_is_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    with pytest.raises(OutputRefused, match="--force"):
        write_text_atomically(mine, "report\n")
    assert mine.read_text() == "my notes\n"
    write_text_atomically(mine, "report\n", force=True)
    assert mine.read_text() == "report\n"
    write_text_atomically(mine, "report 2\n", ours=_always)
    assert mine.read_text() == "report 2\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def _racing(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action`` once, while the output's bytes are being written (at its fsync)."""
    real = fileio.os.fsync
    done: list[bool] = []

    def fsync(fd: int) -> None:
        if not done:
            done.append(True)
            action()
        real(fd)

    monkeypatch.setattr(fileio.os, "fsync", fsync)


def test_a_file_that_appears_or_is_swapped_while_writing_is_never_written_over(
    tmp_path: Path, runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tmp_path / "new.md"
    _racing(monkeypatch, lambda: os.link(runs / "ledger.jsonl", new))  # a hard link to the ledger appears
    with pytest.raises(OutputRefused, match="appeared"):
        fileio.write_output(new, b"OVERWRITTEN")
    assert (runs / "ledger.jsonl").read_bytes() == LEDGER_LINE and new.read_bytes() == LEDGER_LINE
    monkeypatch.undo()
    old = tmp_path / "old.md"
    old.write_text("an earlier report\n")
    check_output(old, ours=_always)  # approved: the command computes, then writes

    def swap() -> None:
        old.unlink()
        old.symlink_to(runs / "ledger.jsonl")

    _racing(monkeypatch, swap)
    with pytest.raises(OutputRefused, match="replaced or removed"):
        fileio.write_output(old, b"OVERWRITTEN", ours=_always)
    assert (runs / "ledger.jsonl").read_bytes() == LEDGER_LINE and old.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_collect_plan_refuses_its_output_before_reading_the_lock(tmp_path: Path, runs: Path) -> None:
    from collect.importing.outputs import write_plan_listing

    missing_lock = tmp_path / "no-such.lock.json"  # never read: the output is refused first
    write_evaluation(runs / "evaluation.json", realistic_evaluation())
    for target in (
        runs / "ledger.jsonl",
        runs / "notes.txt",
        runs / "evaluation.json",
        runs / "traces",
        Path("/dev/null"),
    ):
        with pytest.raises(OutputRefused):
            write_plan_listing(missing_lock, target, force=True)
    assert (runs / "ledger.jsonl").read_bytes() == LEDGER_LINE


def test_collect_plan_replaces_only_its_own_earlier_listing(tmp_path: Path) -> None:
    from collect.importing.outputs import write_plan_listing

    lock = freeze(_plan(tmp_path)).path
    listing = tmp_path / "plan.csv"
    write_plan_listing(lock, listing)
    write_plan_listing(lock, listing, "json")  # its own earlier listing: replaced
    assert listing.read_text().startswith('{\n  "prereg_sha256"')
    other = tmp_path / "other.csv"
    other.write_text("a,b\n")
    with pytest.raises(OutputRefused, match="--force"):
        write_plan_listing(lock, other)
    assert other.read_text() == "a,b\n"


def test_a_recorded_trace_is_never_replaced_by_a_converted_log(tmp_path: Path, runs: Path) -> None:
    from collect.importing.outputs import check_trace_outputs

    meta = runs / "traces" / "run-1.telemetry.meta.json"
    for output in (runs / "traces" / "run-1.telemetry", meta):
        with pytest.raises(OutputRefused, match="never written over"):
            check_trace_outputs(output)
    (tmp_path / "old.telemetry.polls.parquet").write_bytes(b"PAR1")  # one file of a trace is enough to refuse
    with pytest.raises(OutputRefused, match="a trace"):
        check_trace_outputs(tmp_path / "old.telemetry")
    check_trace_outputs(tmp_path / "fresh.telemetry")  # nothing there: allowed


def _plan(tmp_path: Path, title: str | None = None) -> Path:
    text = shared_example_path("equal-work.yaml").read_text()
    if title is not None:
        text = "\n".join(f"title: {title}" if line.startswith("title:") else line for line in text.splitlines()) + "\n"
    folder = tmp_path / (title or "study").replace(" ", "-")
    folder.mkdir(exist_ok=True)
    plan = folder / "equal-work.yaml"
    plan.write_text(text)
    return plan


def test_another_studys_lock_never_replaces_a_runs_folders_evaluation(tmp_path: Path, runs: Path) -> None:
    theirs = realistic_evaluation()
    write_evaluation(runs / "evaluation.json", theirs)
    before = (runs / "evaluation.json").read_bytes()
    lock = freeze(_plan(tmp_path, "Another study")).path
    with pytest.raises(OutputRefused, match="evaluation of another study"):
        evaluate(lock, runs, out=runs / "evaluation.json", force=True)
    assert (runs / "evaluation.json").read_bytes() == before
    write_evaluation(runs / "evaluation.json", theirs)  # the same study's evaluation replaces it


@pytest.mark.slow  # an import and two evaluations: about 1 s on a busy machine
def test_an_evaluation_of_the_same_study_replaces_the_earlier_one(tmp_path: Path) -> None:
    from collect.api import import_table

    plan = _plan(tmp_path)
    lock = freeze(plan).path
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    import_table(lock, table, tmp_path / "runs")
    first = evaluate(lock, tmp_path / "runs", out=tmp_path / "runs" / "evaluation.json")
    second = evaluate(lock, tmp_path / "runs", out=tmp_path / "runs" / "evaluation.json")
    assert first.decision == second.decision and (tmp_path / "runs" / "evaluation.json").is_file()


def test_freeze_never_writes_its_lock_through_a_link(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    target = tmp_path / "elsewhere.txt"
    link = tmp_path / "study.lock.json"
    link.symlink_to(target)  # dangling: 'exists' is false, yet the name is taken
    with pytest.raises(OutputRefused, match="symbolic link"):
        freeze(plan, link)
    assert not target.exists() and link.is_symlink()


def test_amend_replaces_its_own_lock_never_one_reached_through_a_link(tmp_path: Path) -> None:
    from prereg.api import amend

    plan = _plan(tmp_path)
    lock = freeze(plan).path
    link = tmp_path / "link.lock.json"
    link.symlink_to(lock)
    plan.write_text(plan.read_text().replace("title:", "title: Amended -", 1))
    before = lock.read_bytes()
    with pytest.raises(OutputRefused, match="symbolic link"):
        amend(plan, link, "a clearer title")
    assert lock.read_bytes() == before and link.is_symlink()
    amended = amend(plan, lock, "a clearer title")  # the lock itself: its next version replaces it
    assert len(amended.data["amendments"]) == 1 and stat.S_IMODE(os.lstat(lock).st_mode) == 0o444
