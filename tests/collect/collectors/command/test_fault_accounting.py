"""Work accounting from progress reports, and whether each planned fault landed (no program run)."""

from __future__ import annotations

import signal

from collect.collectors.command.attempts import Attempt, event_rows, fault_record, merged_phases, work_metrics
from collect.collectors.command.injector import Fault, Report, parse_report
from collect.collectors.command.outputs import MarkedPhase
from collect.collectors.command.process import Finished


def _finished(start_s: float, end_s: float, code: int) -> Finished:
    return Finished(code, False, int(start_s * 1e9), int(end_s * 1e9), b"", b"", 0, 0)


def _reports(attempt: int, resumed: int | None, last: int, t0: float) -> list[Report]:
    out = [] if resumed is None else [Report(int(t0 * 1e9), attempt, "resumed", resumed)]
    first = (resumed or 0) + 1
    out += [Report(int((t0 + 0.01 * n) * 1e9), attempt, "step", n) for n in range(first, last + 1)]
    return out


def test_attempted_is_retained_plus_lost_and_replayed_equals_lost_for_a_finished_run() -> None:
    # start 0: steps 1..75, killed (checkpoint at 60); start 1 resumes at 60, killed at 70 (no new
    # checkpoint); start 2 resumes at 60 and finishes at 100.
    reports = _reports(0, 0, 75, 0) + _reports(1, 60, 70, 10) + _reports(2, 60, 100, 20)
    faults = [
        Fault(0, 75, fired_ns=int(9e9), attempt=0, step=75, killed=True),
        Fault(1, 70, fired_ns=int(19e9), attempt=1, step=70, killed=True),
    ]
    attempts = [
        Attempt(0, _finished(0, 9, -signal.SIGKILL), faults[0]),
        Attempt(1, _finished(10, 19, -signal.SIGKILL), faults[1]),
        Attempt(2, _finished(20, 30, 0), None),
    ]
    work = work_metrics(reports, attempts, fault_record(faults, attempts))
    assert work["retained_steps"] == 100
    assert work["lost_steps"] == (75 - 60) + (70 - 60)
    assert work["attempted_steps"] == work["retained_steps"] + work["lost_steps"] == 75 + 10 + 40
    assert work["replayed_steps"] == work["lost_steps"]
    assert work["faults_landed"] == 2 and work["restarts"] == 2


def test_a_start_without_resumed_picks_up_before_its_first_report() -> None:
    reports = _reports(0, None, 30, 0) + _reports(1, None, 50, 5)[20:]  # start 1's first report: step 21
    faults = [Fault(0, 30, fired_ns=int(4e9), attempt=0, step=30, killed=True)]
    attempts = [Attempt(0, _finished(0, 4, -9), faults[0]), Attempt(1, _finished(5, 9, 0), None)]
    work = work_metrics(reports, attempts, fault_record(faults, attempts))
    assert (work["lost_steps"], work["retained_steps"], work["attempted_steps"]) == (10, 50, 60)


def test_faults_that_did_not_land_say_why() -> None:
    done = [Attempt(0, _finished(0, 5, 0), None)]
    never = fault_record([Fault(0, 300)], done)[0]
    assert not never["landed"] and "finished before it" in never["why"]
    late = Fault(
        0, 50, fired_ns=int(4.9e9), attempt=0, step=50, killed=False, detail="the program had already finished"
    )
    assert fault_record([late], done)[0]["why"] == "the program had already finished"
    no_restart = Fault(0, 5, fired_ns=int(1e9), attempt=0, step=5, killed=True)
    row = fault_record([no_restart], [Attempt(0, _finished(0, 1, -9), no_restart)])[0]
    assert not row["landed"] and "did not start again" in row["why"]


def test_progress_lines_parse_strictly() -> None:
    assert parse_report("step 12 tokens=4096 loss=1.5") == ("step", 12, 4096, 1.5)
    assert parse_report("resumed 0") == ("resumed", 0, None, None)
    assert parse_report("step 3 loss=nan")[3] != parse_report("step 3 loss=nan")[3]  # NaN kept
    for bad in ("step", "step -1", "steps 3", "step 3 color=red", "step 3 tokens=x"):
        assert parse_report(bad) is None


def test_phase_marks_are_merged_into_bands_and_events_cover_starts_faults_restarts() -> None:
    phases = [MarkedPhase("compute", i * 10, i * 10 + 8, 0) for i in range(5)]
    phases.append(MarkedPhase("checkpoint", 50, 60, 0))
    phases += [MarkedPhase("compute", 61 + i * 10, 69 + i * 10, 0) for i in range(2)]
    assert merged_phases(phases) == [
        ("compute", 0, 48, 0, 5, 0),
        ("checkpoint", 50, 60, 0, 1, 0),
        ("compute", 61, 79, 0, 2, 0),
    ]
    restarted = [Attempt(0, _finished(0, 3.5e-8, -9), None), Attempt(1, _finished(3.5e-8, 1, 0), None)]
    assert [(r[0], r[4], r[5]) for r in merged_phases(phases, restarted)] == [  # a restart (at 35 ns) ends a band
        ("compute", 4, 0),
        ("compute", 1, 1),
        ("checkpoint", 1, 1),
        ("compute", 2, 1),
    ]
    fault = Fault(0, 30, fired_ns=int(4e9), attempt=0, step=30, killed=True)
    attempts = [Attempt(0, _finished(0, 4, -9), fault), Attempt(1, _finished(5, 9, 0), None)]
    rows = event_rows(attempts, [fault], [], [])
    kinds = [r["kind"] for r in rows]
    assert kinds == ["attempt", "failure", "restart", "attempt"]
    assert rows[1]["start_ns"] == rows[1]["end_ns"] == int(4e9) and rows[1]["step"] == 30
    assert rows[0]["aborted"] is True and rows[3]["aborted"] is False
    assert [r["id"] for r in rows] == list(range(4))
