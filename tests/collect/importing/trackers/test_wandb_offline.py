"""The W&B offline reader on real offline runs made by W&B's own logging API (one child process makes them all)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collect.collectors.command.identity import file_sha256
from collect.importing.trackers.base import ReadOptions, TrackerProblem, TrackerRun, Wanted
from collect.importing.trackers.wandb_offline import read_runs

needs_wandb = pytest.mark.skipif(importlib.util.find_spec("wandb") is None, reason="wandb is not installed")
MARK = "PREREG_WANDB_TEST_MARK"  # set in every process the tests start, to find any left behind

WANTED = [
    Wanted("loss_last", "loss"),
    Wanted("loss_min", "loss", "min"),
    Wanted("loss_max", "loss", "max"),
    Wanted("loss_at_1", "loss", "step", 1),
    Wanted("loss_at_7", "loss", "step", 7),
    Wanted("note", "note"),
    Wanted("only_summary", "only_summary"),
    Wanted("acc", "acc"),
]

# Run "alpha": prereg tags in wandb.init's config, loss 3, 1, 2 at steps 0..2 with W&B keeping its min as the
# summary, a text value, a summary-only value; it finishes. The unnamed run gets its tags from
# wandb.config.update after init, logs 0.5, NaN, inf and finishes with exit code 1.
MAKE_RUNS = """
import json, os, sys, wandb
a = wandb.init(mode="offline", dir=sys.argv[1], project="p", name="alpha",
               config={"prereg.run_id": "r1", "prereg.arm": "fast", "prereg.seed": 101, "lr": 0.1, "layers": 2})
wandb.define_metric("loss", summary="min")
for step, loss in enumerate([3.0, 1.0, 2.0]):
    wandb.log({"loss": loss, **({"note": "text"} if step == 0 else {})}, step=step)
a.summary["only_summary"] = 5.0
wandb.finish()
b = wandb.init(mode="offline", dir=sys.argv[1], project="p", config={"lr": 0.01})
wandb.config.update({"prereg.run_id": "r2", "prereg.arm": "slow"})
for step, loss in enumerate([0.5, float("nan"), float("inf")]):
    wandb.log({"loss": loss}, step=step)
wandb.finish(exit_code=1)
print(json.dumps({"alpha": a.id, "failed": b.id}))
"""


@dataclass
class Made:
    wandb_dir: Path
    alpha: TrackerRun
    failed: TrackerRun
    ids: dict[str, str]
    commit: str | None
    before: datetime
    after: datetime
    left: list[str]  # processes the tests started that were still alive afterwards


def _env(marker: str, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB_CONFIG_DIR": str(home / "config"),
        "WANDB_CACHE_DIR": str(home / "cache"),
        "WANDB_DATA_DIR": str(home / "data"),
        MARK: marker,
    }


def _alive_with(marker: str) -> list[str]:
    """Processes (but this one) whose environment carries ``MARK=marker``: W&B's service and its helpers
    inherit it from the child that started them."""
    found = []
    wanted = f"{MARK}={marker}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        if proc.name == str(os.getpid()):
            continue
        try:
            if wanted in (proc / "environ").read_bytes().split(b"\0"):
                found.append(f"{proc.name} {(proc / 'comm').read_text().strip()}")
        except OSError:
            continue
    return found


def _left_behind(marker: str, wait_s: float = 30.0) -> list[str]:
    """The marked processes still alive after up to ``wait_s`` (W&B's helpers stop a moment after its service;
    the wait only catches a hang)."""
    deadline = time.monotonic() + wait_s
    while (alive := _alive_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _git_commit(repo: Path) -> str | None:
    """A one-commit repository for W&B to record, or None where git is missing."""
    if shutil.which("git") is None:
        return None
    run = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    subprocess.run([*run, "commit", "-q", "--allow-empty", "-m", "start"], check=True, timeout=60)
    done = subprocess.run([*run, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """Two offline runs made in one child process (W&B's start-up is slow), then read once."""
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb is not installed")
    base = tmp_path_factory.mktemp("wandb_runs")
    repo = base / "project"
    repo.mkdir()
    commit = _git_commit(repo)
    marker = uuid.uuid4().hex
    before = datetime.now(UTC)
    done = subprocess.run(
        [sys.executable, "-c", MAKE_RUNS, str(repo / "out")],
        cwd=repo,
        env=_env(marker, base),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    after = datetime.now(UTC)
    assert done.returncode == 0, done.stderr[-2000:]
    ids = {k: str(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    left = _left_behind(marker)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MARK, marker)  # the reader's children inherit it
        runs = {r.run_id: r for r in read_runs(str(repo / "out" / "wandb"), WANTED, ReadOptions())}
    left += _left_behind(marker)
    assert sorted(runs) == sorted(ids.values())
    return Made(repo / "out" / "wandb", runs[ids["alpha"]], runs[ids["failed"]], ids, commit, before, after, left)


@pytest.mark.subprocess
def test_each_run_folder_is_one_run_named_as_wandb_names_it(made: Made) -> None:
    assert (made.alpha.tracker, made.alpha.uri) == ("wandb", f"wandb:{made.wandb_dir}")
    assert made.alpha.name == "alpha"
    assert made.failed.name == made.failed.run_id  # no display name offline: the id
    assert made.alpha.label() == f"wandb run {made.ids['alpha']} ('alpha')"


@pytest.mark.subprocess
def test_prereg_config_entries_are_the_tags_and_the_rest_the_params(made: Made) -> None:
    assert made.alpha.tags == {"prereg.run_id": "r1", "prereg.arm": "fast", "prereg.seed": "101"}
    assert made.alpha.params == {"lr": 0.1, "layers": 2}  # plain values, W&B's own _wandb entry left out
    assert made.failed.tags == {"prereg.run_id": "r2", "prereg.arm": "slow"}  # set by config.update after init
    assert made.failed.params == {"lr": 0.01}


@pytest.mark.subprocess
def test_values_are_taken_from_the_logged_history_as_the_plan_says(made: Made) -> None:
    values = made.alpha.values
    # last is the last logged (2.0), not the min W&B keeps as the summary under define_metric(summary="min")
    assert values == {"loss_last": 2.0, "loss_min": 1.0, "loss_max": 3.0, "loss_at_1": 1.0}
    missing = made.alpha.missing
    assert set(missing) == {"loss_at_7", "note", "only_summary", "acc"}
    assert "no value at step 7" in missing["loss_at_7"] and "0, 1, 2" in missing["loss_at_7"]
    assert "not as a number (str)" in missing["note"]
    assert "only in the run's summary" in missing["only_summary"] and "run.log" in missing["only_summary"]
    assert missing["acc"] == "metric 'acc' was never logged"


@pytest.mark.subprocess
def test_nan_and_infinity_come_back_as_floats(made: Made) -> None:
    assert math.isinf(made.failed.values["loss_last"]) and made.failed.values["loss_last"] > 0
    assert math.isnan(made.failed.values["loss_min"])  # any NaN in the series: refused upstream, naming the run
    assert math.isnan(made.failed.values["loss_at_1"])


@pytest.mark.subprocess
def test_status_is_what_the_exit_record_says(made: Made) -> None:
    assert made.alpha.status == "complete"
    assert made.failed.status == "failed"  # wandb.finish(exit_code=1)


@pytest.mark.subprocess
def test_times_fall_inside_the_making_and_the_commit_is_wandbs(made: Made) -> None:
    for run in (made.alpha, made.failed):
        assert run.started_at is not None and run.finished_at is not None
        assert made.before <= run.started_at <= run.finished_at <= made.after
    assert made.alpha.started_at is not None and made.failed.started_at is not None
    assert made.alpha.started_at < made.failed.started_at
    if made.commit is None:
        pytest.skip("git is not installed: W&B records no commit")
    assert made.alpha.git_commit == made.commit


@pytest.mark.subprocess
def test_no_process_is_left_behind(made: Made) -> None:
    assert made.left == []


def _log(run_folder: Path) -> Path:
    (log,) = run_folder.glob("run-*.wandb")
    return log


@pytest.mark.subprocess
def test_the_run_log_is_hashed_and_a_cut_log_reads_as_a_running_run(made: Made, tmp_path: Path) -> None:
    original = _log(next(made.wandb_dir.glob(f"*-{made.ids['alpha']}")))
    assert made.alpha.files == {original.relative_to(made.wandb_dir).as_posix(): file_sha256(original)}
    # the folder holding wandb/ reads the same, its paths relative to it
    copy = tmp_path / "holder" / "wandb" / original.parent.name
    shutil.copytree(original.parent, copy)
    (again,) = read_runs(str(tmp_path / "holder"), WANTED, ReadOptions())
    assert again.files == {
        f"wandb/{original.parent.name}/{original.name}": made.alpha.files[
            original.relative_to(made.wandb_dir).as_posix()
        ]
    }
    assert (again.values, again.tags, again.status) == (made.alpha.values, made.alpha.tags, "complete")
    # a log cut short (a run killed mid-write) loses its exit record: running, and its hash changes
    log = _log(copy)
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    (cut,) = read_runs(str(copy), WANTED, ReadOptions())
    assert cut.status == "running"
    assert cut.files == {log.name: file_sha256(log)} and file_sha256(log) != file_sha256(original)
    assert cut.content_sha256() != made.alpha.content_sha256()


@pytest.mark.subprocess
def test_a_damaged_log_is_refused_naming_it(made: Made, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(_log(next(made.wandb_dir.glob(f"*-{made.ids['alpha']}"))).parent, copy)
    log = _log(copy)
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x01
    log.write_bytes(bytes(data))
    with pytest.raises(TrackerProblem, match="damaged") as caught:
        read_runs(str(copy), WANTED, ReadOptions())
    assert str(log) in str(caught.value) and "nothing imported" in str(caught.value)


@needs_wandb
@pytest.mark.subprocess
def test_a_log_wandb_cannot_read_is_refused_naming_it(tmp_path: Path) -> None:
    run = tmp_path / "wandb" / "offline-run-20260101_000000-abc"
    run.mkdir(parents=True)
    (run / "run-abc.wandb").write_bytes(b"not a W&B log\n" * 50)
    with pytest.raises(TrackerProblem, match="W&B could not read") as caught:
        read_runs(str(tmp_path / "wandb"), WANTED, ReadOptions())
    assert str(run / "run-abc.wandb") in str(caught.value)


def test_folders_without_a_run_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TrackerProblem, match="no such folder"):
        read_runs(str(tmp_path / "absent"), WANTED, ReadOptions())
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / "notes.txt").write_text("x")
    with pytest.raises(TrackerProblem, match="no W&B run here"):
        read_runs(str(tmp_path / "wandb"), WANTED, ReadOptions())
    (tmp_path / "wandb" / "offline-run-20260101_000000-abc").mkdir()
    with pytest.raises(TrackerProblem, match=r"offline-run-20260101_000000-abc must hold exactly one .*found none"):
        read_runs(str(tmp_path / "wandb"), WANTED, ReadOptions())


def test_without_wandb_the_message_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "offline-run-20260101_000000-abc"
    run.mkdir()
    (run / "run-abc.wandb").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb now fails
    with pytest.raises(TrackerProblem, match=r"pip install 'prereg-toolkit\[wandb\]'"):
        read_runs(str(tmp_path), WANTED, ReadOptions())
