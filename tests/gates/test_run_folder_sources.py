"""A changed run-folder file refuses the gates whose numbers it sourced; files that source no number are
only reported (gates.traces.trace_role decides by role, in one place)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gates
from collect.api import planned_runs
from collect.ledger.store import RunRecord, append_records
from prereg.api import Lock, freeze
from prereg.lock import utc_now
from prereg.lock_seal import lock_seal
from tests.helpers.gates import gate_line, plan_text

FILES = ("metrics.json", "marks.txt", "stdout.txt", "stderr.txt", "run.json")


def command_like_runs(tmp_path: Path) -> tuple[Lock, Path]:
    """A frozen a-vs-b plan (metric ``loss``, 6 blocks, a passes by 1 nat) and a runs folder whose
    records list a ``command``-style run folder (``traces/<run_id>.run/...``) each, hashed on append."""
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(plan_text(6, gate_line("g", "t", "upper < 0.5")))
    lock = freeze(plan)
    runs = tmp_path / "runs"
    records = []
    for p in planned_runs(lock):
        folder = runs / "traces" / f"{p.run_id}.run"
        folder.mkdir(parents=True)
        loss = 1.0 + 0.01 * p.stratum["block"] if p.arm == "a" else 2.0
        contents = {
            "metrics.json": f'{{"loss": {loss}}}',
            "marks.txt": "",
            "stdout.txt": "step 1\n",
            "stderr.txt": "",
            "run.json": "{}",
        }
        for name, text in contents.items():
            (folder / name).write_text(text)
        now = utc_now()
        records.append(
            RunRecord(
                run_id=p.run_id,
                prereg_sha256=lock.plan_sha256,
                lock_seal=lock_seal(lock.data),
                stratum=p.stratum,
                arm=p.arm,
                replicate=p.replicate,
                status="complete",
                metrics={"loss": loss},
                started_at=now,
                finished_at=now,
                seed=p.seed,
                traces=[f"traces/{p.run_id}.run/{name}" for name in FILES],
            )
        )
    append_records(runs, records)
    return lock, runs


def test_roles_are_decided_by_name_in_one_place():
    from gates.traces import trace_role

    assert trace_role("traces/run-1.run/metrics.json") == "program"
    assert trace_role("traces/run-1.run/marks.txt") == "sensor"
    assert trace_role("traces/run-1.telemetry.polls.jsonl") == "sensor"
    for name in (
        "traces/run-1.run/stdout.txt",
        "traces/run-1.run/stderr.txt",
        "traces/run-1.run/run.json",
        "traces/run-1.run/sub/metrics.json",
        "traces/run-1.events.jsonl",
    ):
        assert trace_role(name) is None, name


@pytest.mark.parametrize("how", ["rewritten", "deleted"])
def test_a_changed_metrics_file_refuses_the_gate_it_sourced_and_the_decision(tmp_path, how):
    lock, runs = command_like_runs(tmp_path)
    assert gates.evaluate(lock, runs).decision == "supported"
    target = sorted((runs / "traces").glob("*.run/metrics.json"))[0]
    if how == "rewritten":  # e.g. a daemon the program left behind, after the record was appended
        target.write_text('{"loss": 0.0}')
    else:
        target.unlink()
    ev = gates.evaluate(lock, runs)
    gate = ev.gates[0]
    assert gate.verdict == "refused" and "trace_integrity" in [r.id for r in gate.refused_by]
    assert ev.decision == "refused"
    check = next(c for c in ev.invalidators if c.id == "trace_integrity")
    assert check.fired and check.blocks == ["g"] and target.parent.name in check.detail


@pytest.mark.parametrize("name", ["stdout.txt", "stderr.txt", "run.json"])
def test_a_changed_file_that_sources_no_number_is_only_reported(tmp_path, name):
    lock, runs = command_like_runs(tmp_path)
    target = sorted((runs / "traces").glob(f"*.run/{name}"))[0]
    target.write_text("rewritten\n")
    ev = gates.evaluate(lock, runs)
    check = next(c for c in ev.invalidators if c.id == "trace_integrity")
    assert check.fired and check.blocks == [] and name in check.detail and "none is refused" in check.detail
    assert ev.gates[0].verdict == "pass" and ev.decision == "supported"
