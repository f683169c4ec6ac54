"""The ledger's one duplicate rule (``collect.ledger.cells``), as gates and reports apply it."""

from __future__ import annotations

import pytest

from collect.ledger.cells import DuplicateCell, cell_of, run_record, split_repeats, standing
from collect.ledger.store import RunRecord, append_records, read_ledger
from prereg_seed_studies.controller.report.commit_select import block_run_ids
from reports.data.timeline import find_run, load_block


def rec(run_id: str, arm: str = "a", status: str = "complete", plan: str = "a" * 64, **stratum) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        prereg_sha256=plan,
        stratum=stratum or {"site": 1},
        arm=arm,
        replicate=0,
        status=status,
        metrics={"m": 1.0} if status == "complete" else {},
    )


def test_the_first_complete_record_stands_and_later_ones_are_repeats():
    records = [rec("f", status="failed"), rec("x"), rec("y"), rec("z", arm="b"), rec("w", site=1.0)]
    first, repeats = split_repeats(records)
    assert [r.run_id for r in first.values()] == ["x", "z", "w"]  # 1.0 is another level than 1: another cell
    assert [(r.run_id, f.run_id) for r, f in repeats] == [("y", "x")]
    assert cell_of(records[1]) == cell_of(records[2]) != cell_of(records[4])


def test_a_retry_after_a_failure_stands_and_a_failure_alone_is_kept():
    retried = standing([rec("r", status="failed"), rec("r"), rec("q", arm="b", status="failed")])
    assert [(r.run_id, r.status) for r in retried.values()] == [("r", "complete"), ("q", "failed")]
    assert run_record([rec("r", status="failed"), rec("r")], "r").status == "complete"
    assert run_record([rec("r")], "other") is None


def test_two_complete_records_of_a_cell_are_refused_not_chosen():
    with pytest.raises(DuplicateCell) as err:
        standing([rec("x"), rec("y")])
    assert err.value.exit_code == 2 and "runs x and y" in str(err.value) and "gates evaluate refuses" in str(err.value)
    other_plan = standing([rec("x"), rec("y", plan="b" * 64)])  # another plan's cell: no repeat
    assert len(other_plan) == 2


def test_reports_refuse_to_draw_a_duplicated_cell_as_gates_refuse_its_gates(tmp_path):
    runs = tmp_path / "runs"
    append_records(runs, [rec("x"), rec("x-b", arm="b")])
    assert block_run_ids(runs, "x") == ["x", "x-b"]
    append_records(runs, [rec("x-again")])  # the cell of x, complete a second time
    assert len(read_ledger(runs).records) == 3
    assert find_run(runs, "x-b")[1].run_id == "x-b"
    for draw in (lambda: block_run_ids(runs, "x-b"), lambda: load_block(runs, "x-b")):
        with pytest.raises(DuplicateCell, match="runs x and x-again"):
            draw()
