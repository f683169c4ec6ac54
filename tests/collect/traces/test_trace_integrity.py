"""Every reader of a trace checks it against its record first: resume, plot, probe replay; no links followed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from collect.ledger.store import RunRecord, append_records
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Phase, Trace, write_trace
from tests.conftest import REPO
from tests.helpers import frozen_shared, imported_equal_work, run

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

EXAMPLES = REPO / "examples"
PLAIN = {"NO_COLOR": "1", "COLUMNS": "200"}
SHA = "a" * 64


@pytest.fixture(scope="module")
def multisite(tmp_path_factory) -> tuple[Path, Path]:
    """A real sim.multisite runs folder (events traces), made by the console scripts: (lock, runs)."""
    root = tmp_path_factory.mktemp("ms")
    lock = root / "ms.lock.json"
    assert run("prereg", "freeze", str(EXAMPLES / "multisite-recovery.yaml"), "-o", str(lock)).returncode == 0
    proc = run("collect", "run", str(lock), "--out", str(root / "runs"), "--jobs", "2", env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    return lock, root / "runs"


def _copy(runs: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, symlinks=True)
    return copy


def _records(runs: Path) -> list[dict]:
    return [json.loads(line) for line in (runs / "ledger.jsonl").read_text().splitlines()]


def _edit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


def test_resume_refuses_an_edited_trace_and_resumes_once_it_is_restored(multisite, tmp_path):
    lock, runs = multisite
    copy = _copy(runs, tmp_path)
    trace = copy / _records(copy)[3]["traces"][0]
    good = trace.read_bytes()
    _edit(trace)
    before = (copy / "ledger.jsonl").read_bytes()
    proc = run("collect", "run", str(lock), "--out", str(copy), "--resume", env=PLAIN)
    assert proc.returncode == 3, proc.stderr
    assert str(trace) in proc.stderr and "changed after the run" in proc.stderr and "Nothing was run" in proc.stderr
    assert (copy / "ledger.jsonl").read_bytes() == before
    trace.write_bytes(good)
    proc = run("collect", "run", str(lock), "--out", str(copy), "--resume", env=PLAIN)
    assert proc.returncode == 0 and "48 already complete" in proc.stdout, proc.stdout + proc.stderr


def test_plot_refuses_an_edited_event_trace_naming_it(multisite, tmp_path):
    _, runs = multisite
    copy = _copy(runs, tmp_path)
    record = _records(copy)[0]
    _edit(copy / record["traces"][0])
    proc = run("reports", "plot", str(copy), "--run", record["run_id"], "--out", str(tmp_path / "p"), env=PLAIN)
    assert proc.returncode == 3
    assert record["traces"][0] in proc.stderr and "changed after the run" in proc.stderr
    assert not list((tmp_path / "p").glob("timeline-*")) if (tmp_path / "p").exists() else True


def test_traces_through_a_symbolic_link_are_never_read(multisite, tmp_path):
    lock, runs = multisite
    copy = _copy(runs, tmp_path)
    record = _records(copy)[0]
    outside = tmp_path / "outside"
    shutil.move(str(copy / "traces"), outside)
    (copy / "traces").symlink_to(outside)
    proc = run("reports", "plot", str(copy), "--run", record["run_id"], env=PLAIN)
    assert proc.returncode == 3 and "symbolic link" in proc.stderr
    proc = run("collect", "run", str(lock), "--out", str(copy), "--resume", env=PLAIN)
    assert proc.returncode in (2, 3) and "symbolic link" in proc.stderr
    (copy / "traces").unlink()
    shutil.move(str(outside), copy / "traces")
    trace = copy / record["traces"][0]
    target = tmp_path / "elsewhere.jsonl"
    shutil.move(str(trace), target)
    trace.symlink_to(target)  # the same bytes, through a link
    proc = run("reports", "plot", str(copy), "--run", record["run_id"], env=PLAIN)
    assert proc.returncode == 3 and "symbolic link" in proc.stderr and record["traces"][0] in proc.stderr


def test_an_events_file_planted_for_an_imported_run_is_not_drawn(tmp_path):
    runs = imported_equal_work(tmp_path, frozen_shared(tmp_path))
    run_id = _records(runs)[0]["run_id"]
    (runs / "traces").mkdir(exist_ok=True)
    planted = runs / "traces" / f"{run_id}.events.jsonl"
    planted.write_text(json.dumps({"kind": "failure", "site": 0, "start_ns": 0, "end_ns": 10**9}) + "\n")
    proc = run("reports", "plot", str(runs), "--run", run_id, "--out", str(tmp_path / "p"), env=PLAIN)
    assert proc.returncode == 2, proc.stderr
    assert str(planted) in proc.stderr and "no record lists" in proc.stderr and "not drawn" in proc.stderr
    assert not (tmp_path / "p").exists() or not list((tmp_path / "p").iterdir())


def _kept_trace(folder: Path, run_id: str) -> list[str]:
    """A telemetry trace like a torch run keeps, written with the toolkit's writer; its file names."""
    n = 40
    t = np.arange(n, dtype=np.int64) * 100_000_000
    trace = Trace(
        signal=np.array(["energy_counter"] * n, dtype=object),
        t_before_ns=t,
        t_after_ns=t + 1000,
        value=np.cumsum(np.full(n, 30_000.0)),
        status=np.array(["ok"] * n, dtype=object),
        driver_ts_us=np.full(n, np.nan),
        signals={"energy_counter": SignalInfo("energy_counter", "mJ", "counter", "modeled")},
        requested_poll_ms=100.0,
        poll_ns=t,
        phases=[Phase("train", 0, int(t[-1]), 0)],
        sensor="sim",
        evidence="modeled",
    )
    folder.mkdir(parents=True, exist_ok=True)
    return [p.name for p in write_trace(trace, folder / f"{run_id}.telemetry")]


@pytest.fixture
def replay_runs(tmp_path: Path) -> tuple[Path, Path]:
    """A runs folder whose one record lists a kept telemetry trace: (runs, the trace's meta file)."""
    runs = tmp_path / "runs"
    names = _kept_trace(runs / "traces", "run-1")
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-1",
                prereg_sha256=SHA,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                traces=[f"traces/{n}" for n in names],
            )
        ],
    )
    return runs, next(runs / "traces" / n for n in names if n.endswith(".meta.json"))


def test_probe_replay_checks_a_kept_trace_against_its_record(replay_runs):
    runs, meta = replay_runs
    proc = run("collect", "probe", "--sensor", f"replay:{meta}")
    assert proc.returncode == 0 and "energy_counter" in proc.stdout and "note" not in proc.stderr, proc.stderr
    polls = next(p for p in (runs / "traces").iterdir() if ".polls." in p.name)
    by_polls = run("collect", "probe", "--sensor", f"replay:{polls}")  # the polls file names the trace too
    assert by_polls.returncode == 0 and by_polls.stdout.split("\n")[1:] == proc.stdout.split("\n")[1:], by_polls.stderr
    _edit(polls)
    for sensor in (f"replay:{meta}", f"replay:{str(meta)[: -len('.meta.json')]}", f"replay:{polls}"):
        proc = run("collect", "probe", "--sensor", sensor, "--json")
        assert proc.returncode == 3 and polls.name in proc.stderr and "changed after the run" in proc.stderr


def test_probe_replay_refuses_a_trace_no_record_lists(replay_runs):
    runs, _ = replay_runs
    names = _kept_trace(runs / "traces", "run-planted")
    meta = runs / "traces" / next(n for n in names if n.endswith(".meta.json"))
    proc = run("collect", "probe", "--sensor", f"replay:{meta}")
    assert proc.returncode == 3 and "no record" in proc.stderr and meta.name in proc.stderr


def test_probe_replay_outside_a_runs_folder_says_it_is_unchecked(tmp_path):
    names = _kept_trace(tmp_path / "loose", "run-9")
    meta = tmp_path / "loose" / next(n for n in names if n.endswith(".meta.json"))
    proc = run("collect", "probe", "--sensor", f"replay:{meta}")
    assert proc.returncode == 0 and "no ledger record can vouch for it" in proc.stderr


@pytest.mark.subprocess(quick=True)
@pytest.mark.parametrize("sensor", ["replay:", "replay:  "])
def test_probe_replay_without_a_path_is_exit_2(sensor):
    proc = run("collect", "probe", "--sensor", sensor)
    assert proc.returncode == 2 and "needs the path of a kept trace" in proc.stderr
