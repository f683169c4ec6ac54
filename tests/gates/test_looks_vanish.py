"""A monitored study's looks cannot vanish unseen: run records carry the look ledger's head, the
evaluation names it, and a look ledger that lost them is refused (exit 3)."""

from __future__ import annotations

import json

import pytest

import gates
from collect.api import run_plan
from collect.ledger.looks import read_looks
from collect.ledger.store import read_ledger
from gates.integrity import LooksTampered
from prereg_toolkit_cli.gates import main
from tests.helpers.looks import frozen, plan_text, run_strata


def _two_looks(tmp_path):
    """Look 1 at 4 strata, then 2 more strata run (their records saw look 1), then an interim reading."""
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    first = gates.evaluate(lock, runs)
    run_strata(lock, runs, 6)
    gates.evaluate(lock, runs)
    return lock, runs, first


def test_run_records_carry_the_look_ledger_head_they_saw(tmp_path):
    lock, runs, first = _two_looks(tmp_path)
    records = read_ledger(runs).records
    assert [r.looks_head for r in records[:8]] == [None] * 8  # before any look
    assert {(r.looks_head, r.looks_count) for r in records[8:]} == {(first.monitoring.looks_head, 1)}
    assert read_looks(runs).records[0].record_sha256 == first.monitoring.looks_head


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_looks_that_vanished_refuse_the_evaluation(tmp_path, capsys, how):
    lock, runs, _ = _two_looks(tmp_path)
    path = runs / "looks.jsonl"
    if how == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"")
    assert main(["evaluate", str(lock.path), str(runs)]) == 3
    err = capsys.readouterr().err
    assert "look ledger does not verify" in err and "after look record 1" in err
    assert not path.exists() or path.read_bytes() == b""  # nothing was recorded on top of the loss


def test_a_look_cut_from_the_end_that_later_runs_saw_refuses(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 3)
    gates.evaluate(lock, runs)  # interim reading, look record 1
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs)  # look 1, look record 2
    run_strata(lock, runs, 5)  # these records saw look record 2
    path = runs / "looks.jsonl"
    path.write_bytes(path.read_bytes().splitlines(keepends=True)[0])  # look record 2 erased; record 1 verifies
    with pytest.raises(LooksTampered, match="after look record 2"):
        gates.evaluate(lock, runs)


def test_an_evaluation_in_the_runs_folder_naming_a_vanished_look_refuses(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)  # every run record precedes the look: only the evaluation names it
    ev = gates.evaluate(lock, runs, out=runs / "evaluation.json")
    assert json.loads((runs / "evaluation.json").read_text())["monitoring"]["looks_head"] == ev.monitoring.looks_head
    (runs / "looks.jsonl").unlink()
    with pytest.raises(LooksTampered, match="names look ledger head"):
        gates.evaluate(lock, runs)


def test_data_imported_at_once_and_evaluated_once_is_a_first_look(tmp_path, capsys):
    lock = frozen(tmp_path, plan_text(looks="[4, 12]"))
    runs = tmp_path / "runs"
    run_strata(lock, runs, 12)  # all the data at once, no look before it: nothing to have vanished
    assert all(r.looks_head is None for r in read_ledger(runs).records)
    assert main(["evaluate", str(lock.path), str(runs)]) == 0
    out = capsys.readouterr().out
    head = read_looks(runs).head
    assert "look ledger head sha256" in out and head in out
    assert json.loads((runs / "evaluation.json").read_text())["monitoring"]["looks_head"] == head


def test_an_unmonitored_plan_records_no_looks_head(tmp_path):
    text = plan_text().split("monitoring:")[0]
    lock = frozen(tmp_path, text)
    runs = tmp_path / "runs"
    run_plan(lock, runs)
    ev = gates.evaluate(lock, runs)
    assert ev.monitoring is None and not (runs / "looks.jsonl").exists()
    assert all(r.looks_head is None and r.looks_count is None for r in read_ledger(runs).records)


def test_collect_run_says_each_look_head_and_refuses_to_resume_over_vanished_looks(tmp_path):
    from gates.monitor import run_monitored

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    lines: list[str] = []
    result = run_monitored(lock, runs, say=lines.append)
    assert result.stopped == "success" and result.stopped_at == 2
    heads = [r.record_sha256 for r in read_looks(runs).records]
    assert [s["looks_head"] for s in result.to_json()["looks"]] == heads
    assert all(line.endswith(f"look ledger head {head}") for line, head in zip(lines, heads, strict=True))
    (runs / "looks.jsonl").unlink()  # the stop for success erased: a re-run would look again
    with pytest.raises(LooksTampered, match="after look record 1"):
        run_monitored(lock, runs)
