"""Planned faults put into a real program by the command collector: they land where planned, the
program restarts and resumes, the work adds up, and a fault that cannot land is said not to have."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from collect.collectors.base import RunContext, RunResult
from collect.collectors.command.collector import CommandCollector
from collect.collectors.command.outputs import RunFailure
from collect.traces.events import read_events
from collect.traces.progress import read_progress

pytestmark = pytest.mark.slow  # each test starts the program a few times (a Python interpreter each)

#: resumes from its JSON checkpoint, reports each step, checkpoints every EVERY steps
PROGRAM = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from collect.marks import restart, resumed, step
    steps, every, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ck = os.path.join(os.environ["PREREG_RUN_DIR"], "ck.json")
    done = json.load(open(ck))["step"] if os.path.exists(ck) else 0
    if mode == "rank" and restart() == 0:  # a second rank, in a child process, that the fault kills
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 env={**os.environ, "RANK": "1"})
    if mode != "silent":
        resumed(done)
    while done < steps:
        done += 1
        if mode == "slow":
            time.sleep(0.05)
        if mode != "silent":
            step(done, loss=1.0 / done)
        if done % every == 0:
            json.dump({"step": done}, open(ck + ".part", "w"))
            os.replace(ck + ".part", ck)
        if mode == "rank" and restart() == 0 and done == 8:
            sys.exit(0 if child.wait() == 0 else 1)  # the lost rank fails the job
    json.dump({"final": done, "starts": restart() + 1}, open(os.environ["PREREG_METRICS"], "w"))
""")
WORK = ["attempted_steps", "retained_steps", "lost_steps", "replayed_steps", "faults_landed", "restarts"]


def _run(
    tmp_path: Path,
    failures: dict[str, Any] | None,
    mode: str = "plain",
    steps: int = 20,
    metrics: list[str] | None = None,
    sensor: str = "none",
) -> RunResult:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "traces").mkdir(exist_ok=True)
    spec = (
        None
        if failures is None
        else {
            "unit": "step",
            "at": None,
            "fractions": None,
            "poisson_rate": None,
            "horizon": None,
            "action": "kill_tree",
            "rank": 0,
            "max_restarts": 10,
            **failures,
        }
    )
    params = {
        "argv": [sys.executable, "prog.py", str(steps), "5", mode],
        "workdir": str(tmp_path),
        "code": ["prog.py"],
        "timeout_s": 120.0,
        "sensor": sensor,
        "metrics": metrics or ["final", "starts", *WORK],
        "failures": spec,
    }
    checked = CommandCollector.check_run(params, {"k": 1})
    return CommandCollector().run(RunContext("r1", checked, 5, {"k": 1}, "a", 0, tmp_path / "traces"))


def test_step_faults_land_exactly_and_the_work_adds_up(tmp_path: Path) -> None:
    result = _run(tmp_path, {"at": [7, 13]})
    m = result.metrics
    assert m["final"] == 20 and m["starts"] == 3 and m["restarts"] == 2 and m["faults_landed"] == 2
    # killed at 7 (checkpoint 5) and at 13 (checkpoint 10): 2 + 3 steps lost, and redone
    assert (m["lost_steps"], m["replayed_steps"], m["retained_steps"]) == (5, 5, 20)
    assert m["attempted_steps"] == m["retained_steps"] + m["lost_steps"]
    record = result.info["faults"]["record"]
    assert [(r["step"], r["attempt"], r["restart"], r["landed"]) for r in record] == [(7, 0, 1, True), (13, 1, 2, True)]
    events = read_events(tmp_path / "traces" / "r1.events.jsonl")
    assert [e.kind for e in events if e.kind in ("attempt", "failure", "restart")] == [
        "attempt",
        "failure",
        "restart",
        "attempt",
        "failure",
        "restart",
        "attempt",
    ]
    assert [e.aborted for e in events if e.kind == "attempt"] == [True, True, False]
    progress = read_progress(tmp_path / "traces" / "r1.progress.csv")
    assert [p.step for p in progress if p.attempt == 1] == list(range(6, 14))
    assert "r1.events.jsonl" in result.traces and "r1.progress.csv" in result.traces


def test_a_fault_past_the_end_of_the_program_does_not_land(tmp_path: Path) -> None:
    result = _run(tmp_path, {"at": [50]})
    row = result.info["faults"]["record"][0]
    assert not row["landed"] and row["fired_s"] is None and "finished before it" in row["why"]
    assert result.metrics["faults_landed"] == 0 and result.metrics["restarts"] == 0


def test_a_program_that_reports_no_progress_meets_no_step_fault_and_has_no_work_metrics(tmp_path: Path) -> None:
    with pytest.raises(RunFailure, match="reported no progress"):
        _run(tmp_path, {"at": [3]}, mode="silent")
    result = _run(tmp_path, {"at": [3]}, mode="silent", metrics=["final", "starts"])
    assert result.info["faults"]["record"][0]["landed"] is False


def test_a_time_fault_lands_while_the_program_runs(tmp_path: Path) -> None:
    result = _run(tmp_path, {"unit": "s", "at": [0.4]}, mode="slow", steps=60)  # 60 steps of 50 ms: 3 s and more
    row = result.info["faults"]["record"][0]
    assert row["landed"] and row["fired_s"] >= 0.4 and 1 <= row["step"] < 60
    assert result.metrics["final"] == 60 and result.metrics["starts"] == 2


def test_kill_rank_kills_only_the_process_with_that_rank(tmp_path: Path) -> None:
    result = _run(tmp_path, {"at": [3], "action": "kill_rank", "rank": 1}, mode="rank")
    row = result.info["faults"]["record"][0]
    assert row["landed"] and row["restart"] == 1, row
    assert result.metrics["starts"] == 2 and result.metrics["final"] == 20
    # the reporting rank went on after the kill (steps 4..8 were computed, then lost to the restart at 5)
    assert result.metrics["lost_steps"] == 3


def test_a_sensor_records_the_whole_run_across_its_restarts(tmp_path: Path) -> None:
    """One telemetry recording spans every start: the energy is the run's, faults and restarts included."""
    result = _run(
        tmp_path,
        {"at": [7]},
        mode="slow",
        metrics=["final", "starts", "energy", "lost_steps"],
        sensor="sim:clock=virtual",
    )
    assert result.metrics["starts"] == 2 and result.metrics["lost_steps"] == 2
    assert result.metrics["energy"] > 0 and result.info["faults"]["record"][0]["landed"]
    assert "r1.telemetry.meta.json" in result.traces


def test_control_stratum_runs_once_and_counts_its_work(tmp_path: Path) -> None:
    result = _run(tmp_path, None)
    assert result.info["faults"]["planned"] == [] and result.metrics["restarts"] == 0
    assert result.metrics["attempted_steps"] == result.metrics["retained_steps"] == 20
    assert json.loads(json.dumps(result.info))  # plain data for the ledger
