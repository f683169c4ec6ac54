"""`reports plot RUNS --run ID` for runs of the ``command`` collector: attempts, faults, restarts, progress, loss.

The runs folder is synthetic (``tests.helpers.command_runs``: two arms of one stratum meeting the
same two faults, each restarted twice, with phase marks and progress reports). The figures must be
written with the faults and restarts labelled in them, their text equivalents must give every
attempt, fault, restart and the progress per attempt, and a changed or malformed progress trace is
refused like every other trace.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from collect.ledger.store import RunRecord, append_records
from prereg_toolkit_cli.reports import main
from reports.data.attempts import attempt_rows
from reports.data.timeline import load_block
from tests.helpers import requires
from tests.helpers.command_runs import FAULT_TIMES_S, SHA, command_runs_folder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def svg_text(path: Path) -> str:
    """Every text the SVG draws (matplotlib writes text as text: ``svg.fonttype`` none)."""
    root = ET.parse(path).getroot()
    return " ".join("".join(node.itertext()) for node in root.iter() if node.tag.rsplit("}", 1)[-1] == "text")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return command_runs_folder(tmp_path)


def test_the_block_reads_attempts_faults_restarts_and_progress(runs):
    block = load_block(runs, "run-cmd-a")
    assert [t.arm for t in block.runs] == ["ckpt_100", "ckpt_25"]  # the other stratum's run is not in the block
    for t in block.runs:
        rows = attempt_rows(t.events)
        assert [r.index for r in rows] == [0, 1, 2]
        assert [r.fault.start for r in rows if r.fault] == list(FAULT_TIMES_S)  # the same faults in both arms
        assert [r.fault.step for r in rows if r.fault] == [f.step for f in t.events if f.kind == "failure"]
        assert [r.restart is not None for r in rows] == [True, True, False]
        assert {p.attempt for p in t.progress or []} == {0, 1, 2}


@requires("matplotlib")
def test_timeline_and_progress_are_drawn_with_their_text(runs, capsys):
    assert main(["plot", str(runs), "--run", "run-cmd-a", "--format", "both"]) == 0
    text = capsys.readouterr().out
    for stem in ("timeline-run-cmd-a", "progress-run-cmd-a"):
        assert (runs / f"{stem}.png").read_bytes()[:8] == PNG_MAGIC
        assert str(runs / f"{stem}.svg") in text
    timeline = svg_text(runs / "timeline-run-cmd-a.svg")
    block = load_block(runs, "run-cmd-a")
    steps = [e.step for t in block.runs for e in t.events if e.kind == "failure"]
    for step in steps:  # every fault labelled with the program's step, in the figure and in its text
        assert f"fault at step {step}" in timeline
        assert f"ended by the fault at step {step} at " in text
    assert timeline.count("restart 1") == 2 and timeline.count("restart 2") == 2
    assert "attempt 2" in timeline and "checkpoint (phase)" in timeline
    assert "fault at step" in svg_text(runs / "progress-run-cmd-a.svg")
    story = text.split("Text equivalent of the timeline of attempts")[1].split("Text equivalent of the progress")[0]
    assert (
        "ckpt_25: run run-cmd-a (the run asked for), complete, ends at 13.72 s: 3 attempts, 2 faults, 2 restarts"
        in story
    )
    assert "  restart 1   3.00-3.50 s (the program started again with PREREG_RESTART=1)" in story
    assert "  attempt 2   7.00-13.72 s, ran to its end" in story
    assert "site" not in story  # a command run's phases say their attempt, never a site
    assert re.search(r"  replay      2: 3\.70-3\.80 attempt 1; 7\.20-7\.80 attempt 2", story)
    progress = text.split("Text equivalent of the progress the programs reported:")[1]
    assert "ckpt_25: run run-cmd-a (the run asked for): 84 reports in 3 attempts" in progress
    assert (
        "  attempt 1: 19 reports, 3.83-6.38 s, step 105-195 (resumed at step 105; last report before: step 100)"
        in progress
    )
    loss = text.split("Text equivalent of the training loss over steps:")[1]
    assert re.search(r"^ 400 +0\.5556 +0\.5556$", loss, re.M)
    assert "final ckpt_25: step 400, loss 0.5556 (run run-cmd-a; 4 reports of a step already reported" in loss
    assert "run-cmd-c" not in text


@requires("matplotlib")
def test_without_a_progress_trace_only_the_timeline_is_drawn(tmp_path, capsys):
    runs = command_runs_folder(tmp_path, with_progress=False)
    assert main(["plot", str(runs), "--run", "run-cmd-b", "--format", "svg"]) == 0
    text = capsys.readouterr().out
    assert (runs / "timeline-run-cmd-b.svg").is_file() and not (runs / "progress-run-cmd-b.svg").exists()
    assert "no progress plot: no run of the block left a progress.csv" in text


@requires("matplotlib")
def test_a_run_with_only_a_progress_trace_is_drawn(tmp_path, capsys):
    runs = command_runs_folder(tmp_path)
    name = "traces/run-cmd-d.progress.csv"
    (runs / name).write_bytes((runs / "traces" / "run-cmd-c.progress.csv").read_bytes())
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-cmd-d",
                prereg_sha256=SHA,
                stratum={"seed": 3},
                arm="ckpt_25",
                replicate=0,
                status="complete",
                metrics={},
                code={"collector": "command"},
                traces=[name],
            ),
            RunRecord(
                run_id="run-cmd-f",
                prereg_sha256=SHA,
                stratum={"seed": 5},
                arm="ckpt_25",
                replicate=0,
                status="complete",
                metrics={},
                code={"collector": "command"},
                traces=[],
            ),
        ],
    )
    assert main(["plot", str(runs), "--run", "run-cmd-d", "--format", "svg"]) == 0
    text = capsys.readouterr().out
    assert (runs / "progress-run-cmd-d.svg").is_file() and not (runs / "timeline-run-cmd-d.svg").exists()
    assert "ckpt_25: run run-cmd-d (the run asked for): 80 reports in 1 attempt" in text
    assert main(["plot", str(runs), "--run", "run-cmd-f"]) == 2  # no trace at all: one message
    assert "no event trace, trajectory or progress trace for any run of its block" in capsys.readouterr().err


def test_a_changed_or_malformed_progress_trace_is_refused(runs, capsys):
    trace = runs / "traces" / "run-cmd-b.progress.csv"
    good = trace.read_text()
    trace.write_text(good.replace(",0,", ",1,", 1))
    assert main(["plot", str(runs), "--run", "run-cmd-a"]) == 3
    assert "run-cmd-b.progress.csv changed after the run" in capsys.readouterr().err
    trace.write_text(good)
    bad = runs / "traces" / "run-cmd-e.progress.csv"  # malformed as recorded (the record's hash matches it)
    bad.write_text("t_s,attempt,step,tokens,loss\n0.5,0,3,,\n0.7,zero,4,,\n")
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-cmd-e",
                prereg_sha256=SHA,
                stratum={"seed": 4},
                arm="ckpt_25",
                replicate=0,
                status="complete",
                metrics={},
                traces=["traces/run-cmd-e.progress.csv"],
            )
        ],
    )
    assert main(["plot", str(runs), "--run", "run-cmd-e"]) == 2
    err = capsys.readouterr().err
    assert "run-cmd-e.progress.csv: line 3: malformed progress row (attempt must be an integer >= 0" in err
    assert "Traceback" not in err


def test_a_run_without_telemetry_is_told_what_it_is(runs, capsys):
    """``--telemetry`` of a run that kept none says what the run is: collected by command with its sensor,
    or imported from its table's row -- never that a collected run was imported."""
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-cmd-s",
                prereg_sha256=SHA,
                stratum={"seed": 6},
                arm="ckpt_25",
                replicate=0,
                status="complete",
                metrics={},
                code={"collector": "command", "sensor": "none"},
            ),
            RunRecord(
                run_id="imp-1",
                prereg_sha256=SHA,
                stratum={"seed": 7},
                arm="ckpt_25",
                replicate=0,
                status="complete",
                metrics={},
                code={"imported": True},
                source="import:runs.csv row 2",
            ),
        ],
    )
    assert main(["plot", str(runs), "--run", "run-cmd-s", "--telemetry"]) == 2
    err = capsys.readouterr().err
    assert (
        "run run-cmd-s: no kept telemetry trace: its record lists no traces/....telemetry.meta.json (it was "
        "collected by command with sensor none, and no telemetry trace was kept)" in " ".join(err.split())
    )
    assert "imported" not in err
    assert main(["plot", str(runs), "--run", "imp-1", "--telemetry"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no kept telemetry trace (it came from import:runs.csv row 2)" in err
    assert "an imported run keeps the numbers of its table, no trace" in err
