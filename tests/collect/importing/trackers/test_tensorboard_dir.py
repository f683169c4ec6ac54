"""The TensorBoard reader on real event files written by ``torch.utils.tensorboard.SummaryWriter``: run folders
(planned run ids, other names, nested), a writer re-opened (two event files), the values the plan wants
(float32, as add_scalar keeps them), times, file hashes; truncated, foreign and missing sources."""

from __future__ import annotations

import hashlib
import sys
import types
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collect.importing.trackers import tensorboard_dir
from collect.importing.trackers.base import ReadOptions, TrackerProblem, TrackerRun, Wanted
from prereg.errors import EXIT_BAD_INPUT

PLANNED = "run-0123456789abcdef0123"  # a planned run id, as `collect plan --tracker tensorboard` names the folder
NESTED_PLANNED = "run-aaaaaaaaaabbbbbbbbbb"
WANTED = [
    Wanted("loss_last", "loss"),
    Wanted("loss_min", "loss", "min"),
    Wanted("loss_max", "loss", "max"),
    Wanted("loss_at_1", "loss", "step", 1),
    Wanted("loss_at_5", "loss", "step", 5),
    Wanted("loss_at_9", "loss", "step", 9),
    Wanted("acc", "acc"),
    Wanted("never", "never_logged"),
]
# PLANNED: a first writer logs loss at steps 0..3 and acc; a second one, re-opened on the same folder, steps
# 4, 5 and 5 again (later): two event files.
FIRST_WRITER = [(0, 3.0), (1, 1.1), (2, 2.2), (3, 0.7)]
SECOND_WRITER = [(4, 0.6), (5, 0.9), (5, 0.4)]


def f32(value: float) -> float:
    """A value as add_scalar keeps it (float32), read back as a float."""
    import numpy as np  # lazy: numpy

    return float(np.float32(value))


@dataclass
class Board:
    root: Path
    started: datetime
    ended: datetime


def write(torch: types.ModuleType, folder: Path, scalars: list[tuple[str, int, float]]) -> None:
    """One SummaryWriter session on ``folder``: one new event file."""
    writer = torch.utils.tensorboard.SummaryWriter(log_dir=str(folder))
    for tag, step, value in scalars:
        writer.add_scalar(tag, value, step)
    writer.close()


@pytest.fixture(scope="module")
def torch_tb(torch: types.ModuleType) -> types.ModuleType:
    pytest.importorskip("tensorboard")
    import torch.utils.tensorboard  # lazy: torch's writer imports tensorboard

    return torch


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory, torch_tb: types.ModuleType) -> Board:
    root = tmp_path_factory.mktemp("tb")
    started = datetime.now(UTC)
    write(torch_tb, root / PLANNED, [("loss", s, v) for s, v in FIRST_WRITER] + [("acc", 0, 0.5)])
    write(torch_tb, root / PLANNED, [("loss", s, v) for s, v in SECOND_WRITER])
    write(torch_tb, root / "plain", [("loss", 0, 2.5)])
    write(torch_tb, root / "group" / "seed-1", [("loss", 0, 1.25), ("loss", 1, 1.0)])
    write(torch_tb, root / "group" / NESTED_PLANNED, [("loss", 0, 0.75)])
    write(torch_tb, root / "other-tags", [("lr", 0, 0.1)])
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("no event files here\n")
    return Board(root, started, datetime.now(UTC))


def read(location: Path, wanted: list[Wanted] = WANTED) -> dict[str, TrackerRun]:
    return {run.run_id: run for run in tensorboard_dir.read_runs(str(location), wanted, ReadOptions())}


@pytest.fixture(scope="module")
def runs(board: Board) -> dict[str, TrackerRun]:
    return read(board.root)


def test_each_folder_with_event_files_is_one_run_named_by_its_path(board: Board, runs: dict[str, TrackerRun]) -> None:
    assert sorted(runs) == sorted([PLANNED, "plain", "group/seed-1", f"group/{NESTED_PLANNED}", "other-tags"])
    for run_id, run in runs.items():
        assert (run.tracker, run.uri, run.name) == ("tensorboard", f"tensorboard:{board.root}", run_id)
        assert (run.params, run.status, run.git_commit) == ({}, "complete", None)


def test_a_folder_named_as_a_planned_run_id_carries_it_as_its_tag(runs: dict[str, TrackerRun]) -> None:
    assert {run_id: run.tags for run_id, run in runs.items()} == {
        PLANNED: {"prereg.run_id": PLANNED},
        f"group/{NESTED_PLANNED}": {"prereg.run_id": NESTED_PLANNED},
        "plain": {},
        "group/seed-1": {},
        "other-tags": {},
    }


def test_values_across_both_event_files_last_min_max_and_at_a_step(runs: dict[str, TrackerRun]) -> None:
    run = runs[PLANNED]
    assert run.values == {
        "loss_last": f32(0.4),  # the highest step; of the two values at step 5, the later
        "loss_min": f32(0.4),
        "loss_max": f32(3.0),
        "loss_at_1": f32(1.1),  # from the first event file
        "loss_at_5": f32(0.4),
        "acc": f32(0.5),
    }
    assert run.values["loss_at_1"] != 1.1  # float32, as add_scalar keeps it
    assert run.missing == {
        "loss_at_9": "metric 'loss' has no value at step 9 (steps logged: 0..5, 6 steps)",
        "never": "no scalar tag 'never_logged' (tags: acc, loss)",
    }


def test_the_other_runs_values_and_missing_tags(runs: dict[str, TrackerRun]) -> None:
    assert runs["group/seed-1"].values["loss_last"] == 1.0
    assert runs["group/seed-1"].values["loss_max"] == 1.25
    assert runs["group/seed-1"].missing["loss_at_5"] == "metric 'loss' has no value at step 5 (steps logged: 0, 1)"
    assert runs["plain"].values["loss_min"] == 2.5
    assert runs["other-tags"].values == {}
    assert runs["other-tags"].missing["loss_last"] == "no scalar tag 'loss' (tags: lr)"


def test_times_are_the_first_event_and_the_last_wanted_scalar_in_utc(board: Board, runs: dict[str, TrackerRun]) -> None:
    for run_id, run in runs.items():
        assert run.started_at is not None and run.started_at.utcoffset() == timedelta(0)
        assert board.started <= run.started_at <= board.ended, run_id
        if run_id == "other-tags":
            assert run.finished_at is None  # no wanted scalar: no last time
            continue
        assert run.finished_at is not None and run.finished_at.utcoffset() == timedelta(0)
        assert run.started_at <= run.finished_at <= board.ended, run_id


def test_every_event_file_of_a_run_is_hashed(board: Board, runs: dict[str, TrackerRun]) -> None:
    for run_id, run in runs.items():
        folder = board.root / run_id
        events = sorted(folder.glob("events.out.tfevents.*"))
        assert len(events) == (2 if run_id == PLANNED else 1), run_id
        assert run.files == {
            p.relative_to(board.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in events
        }


def test_the_same_folder_read_twice_has_the_same_content_hash(board: Board, runs: dict[str, TrackerRun]) -> None:
    assert {k: r.content_sha256() for k, r in read(board.root).items()} == {
        k: r.content_sha256() for k, r in runs.items()
    }


def test_a_run_folder_given_as_the_source_is_one_run_named_by_the_folder(board: Board) -> None:
    (run,) = read(board.root / PLANNED).values()
    assert (run.run_id, run.tags) == (PLANNED, {"prereg.run_id": PLANNED})
    assert set(run.files) == {p.name for p in (board.root / PLANNED).glob("events.out.tfevents.*")}


def test_an_appended_event_changes_the_hash_and_the_content_hash(tmp_path: Path, torch_tb: types.ModuleType) -> None:
    write(torch_tb, tmp_path / "r", [("loss", 0, 1.0)])
    before = read(tmp_path)["r"]
    write(torch_tb, tmp_path / "r", [("loss", 1, 0.5)])  # the writer re-opened: a second file
    after = read(tmp_path)["r"]
    assert len(after.files) == 2 and set(before.files) < set(after.files)
    assert (before.values["loss_last"], after.values["loss_last"]) == (1.0, 0.5)
    assert after.content_sha256() != before.content_sha256()


def test_scalars_written_by_tensorboards_own_writer_are_read(tmp_path: Path) -> None:
    summary = pytest.importorskip("tensorboard.summary")
    writer = summary.Writer(str(tmp_path / "native"))  # TensorBoard's writer: scalars as tensors, as TF 2 writes
    for step, value in enumerate([3.0, 1.1]):
        writer.add_scalar("loss", value, step)
    writer.close()
    run = read(tmp_path)["native"]
    assert run.values == {"loss_last": f32(1.1), "loss_min": f32(1.1), "loss_max": 3.0, "loss_at_1": f32(1.1)}


# -- sources refused or cut short --------------------------------------------------------------------------------


def test_a_truncated_event_file_gives_the_values_before_the_cut(tmp_path: Path, torch_tb: types.ModuleType) -> None:
    write(torch_tb, tmp_path / "cut", [("loss", step, float(step)) for step in range(5)])
    (events,) = (tmp_path / "cut").glob("events.out.tfevents.*")
    events.write_bytes(events.read_bytes()[:-3])  # the last record (step 4) loses its tail
    run = read(tmp_path)["cut"]
    # TensorBoard's reader takes a torn last record for one still being written: the values before it
    assert (run.values["loss_last"], run.values["loss_max"]) == (3.0, 3.0)
    assert run.missing["loss_at_9"] == "metric 'loss' has no value at step 9 (steps logged: 0..3, 4 steps)"
    assert run.files == {f"cut/{events.name}": hashlib.sha256(events.read_bytes()).hexdigest()}


@pytest.mark.parametrize("content", [b"", b"not an event file, some text instead\n" * 3], ids=["empty", "text"])
def test_an_event_file_with_no_events_is_refused_naming_the_run(
    tmp_path: Path, torch_tb: types.ModuleType, content: bytes
) -> None:
    write(torch_tb, tmp_path / "good", [("loss", 0, 1.0)])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "events.out.tfevents.1.host.1.0").write_bytes(content)
    with pytest.raises(TrackerProblem) as caught:
        read(tmp_path)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert str(caught.value).startswith(f"tensorboard:{tmp_path}: bad: the event files cannot be read (")


def test_a_folder_without_event_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log").write_text("step 1 loss 0.5\n")
    with pytest.raises(TrackerProblem) as caught:
        read(tmp_path)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert str(caught.value) == (f"tensorboard:{tmp_path}: no event files (events.out.tfevents.*) under this folder")


def test_a_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrackerProblem) as caught:
        read(tmp_path / "absent")
    assert str(caught.value) == f"tensorboard:{tmp_path / 'absent'}: no such folder"
    assert not (tmp_path / "absent").exists()


def test_without_tensorboard_installed_the_extra_is_named(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("tensorboard", "tensorboard.backend", "tensorboard.backend.event_processing"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError
    with pytest.raises(TrackerProblem, match=r"needs the tensorboard package.*'prereg-toolkit\[tensorboard\]'"):
        read(board.root)
