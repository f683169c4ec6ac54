"""One runs folder, one plan; imports warn about runs that started before the freeze; DataFrames import."""

from __future__ import annotations

import json
import warnings
from datetime import UTC
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, frozen_shared, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


def do_import(table: Path, lock: Path, runs: Path, *extra: str):
    return run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs), *extra)


def other_plan(tmp_path: Path) -> Path:
    """An unrelated plan with the same columns (another study)."""
    text = (
        shared_example_path("equal-work.yaml")
        .read_text()
        .replace("study: equal-work-continuation", "study: another-study")
    )
    return frozen_shared(tmp_path, "other.yaml", text)


def test_rows_of_another_plan_are_refused_naming_the_folder_s_plan(tmp_path):
    first = frozen_shared(tmp_path)
    second = other_plan(tmp_path)
    runs = tmp_path / "runs"
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    assert do_import(table, first, runs).returncode == 0
    before = (runs / "ledger.jsonl").read_bytes()
    proc = do_import(table, second, runs)
    assert proc.returncode == 3, proc.stderr
    sha = json.loads(first.read_text())["plan_sha256"]
    assert f"12 run(s) of plan {sha[:12]} (study 'equal-work-continuation'" in proc.stderr
    assert "'another-study'" in proc.stderr and "nothing appended" in proc.stderr
    assert (runs / "ledger.jsonl").read_bytes() == before
    # the first plan's evaluation is untouched, and never suggests --plan-version for an unrelated plan
    ev = run("gates", "evaluate", str(first), str(runs), "--json")
    assert ev.returncode in (0, 1) and "--plan-version" not in ev.stdout


def test_collect_run_refuses_a_folder_of_another_plan_alike(tmp_path):
    first = frozen_shared(tmp_path)
    runs = tmp_path / "runs"
    assert do_import(write_csv(tmp_path / "runs.csv", equal_work_rows()), first, runs).returncode == 0
    second = other_plan(tmp_path)
    proc = run("collect", "run", str(second), "--out", str(runs))
    assert proc.returncode == 3 and "refused, nothing appended" in proc.stderr, proc.stderr
    assert len(read_ledger(runs).records) == 12


def test_an_amendment_may_continue_its_parent_s_folder(tmp_path):
    lock = frozen_shared(tmp_path)
    runs = tmp_path / "runs"
    rows = equal_work_rows()
    assert do_import(write_csv(tmp_path / "a.csv", rows[:6]), lock, runs).returncode == 0
    plan = tmp_path / "equal-work.yaml"
    plan.write_text(plan.read_text().replace("confidence: 0.90             #", "confidence: 0.95             #"))
    amend = run("prereg", "amend", str(plan), "--reason", "a stricter level", "--runs", str(runs))
    assert amend.returncode == 0, amend.stderr
    proc = do_import(write_csv(tmp_path / "b.csv", rows[6:]), lock, runs)
    assert proc.returncode == 0, proc.stderr


def _stamped(rows: list[dict], when: str) -> list[dict]:
    return [{**r, "started_at": when} for r in rows]


def test_runs_started_before_the_freeze_are_warned_about_at_import(tmp_path):
    lock = frozen_shared(tmp_path)
    frozen_at = json.loads(lock.read_text())["frozen_at"]
    rows = _stamped(equal_work_rows(), "2020-01-01T00:00:00Z")
    proc = do_import(write_csv(tmp_path / "runs.csv", rows), lock, tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr
    warning = " ".join(proc.stderr.split())
    assert "warning: 12 of the 12 rows imported started before the plan was frozen" in warning
    assert frozen_at in warning and "prereg amend" in warning
    ev = run("gates", "evaluate", str(lock), str(tmp_path / "runs"))
    assert ev.returncode == 3 and "prereg amend" in " ".join(ev.stdout.split())
    # the advice can be followed once frozen: amend to declare pre-existing data, import into a new folder
    plan = tmp_path / "equal-work.yaml"
    plan.write_text(plan.read_text() + "data:\n  pre_existing: true\n  reason: the runs were made last year\n")
    assert (
        run(
            "prereg", "amend", str(plan), "--reason", "declare pre-existing data", "--runs", str(tmp_path / "runs")
        ).returncode
        == 0
    )
    again = do_import(write_csv(tmp_path / "runs.csv", rows), lock, tmp_path / "new")
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    ev = run("gates", "evaluate", str(lock), str(tmp_path / "new"), "--json")
    assert ev.returncode in (0, 1), ev.stdout[-2000:]


def test_runs_after_the_freeze_or_without_a_start_are_not_warned_about(tmp_path):
    lock = frozen_shared(tmp_path)
    rows = equal_work_rows()
    from datetime import datetime, timedelta

    after = (datetime.now(UTC) + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")  # after the freeze
    rows = _stamped(rows[:6], after) + rows[6:]
    proc = do_import(write_csv(tmp_path / "runs.csv", rows), lock, tmp_path / "runs")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_import_table_takes_a_data_frame(tmp_path):
    pd = pytest.importorskip("pandas")
    import collect
    from collect.importing.importer import ImportProblem
    from collect.importing.time_order import EarlyRunsWarning
    from prereg.errors import InputError

    lock = frozen_shared(tmp_path)
    frame = pd.DataFrame(equal_work_rows())
    records = collect.import_table(lock, frame, tmp_path / "runs")
    assert len(records) == 12 and records[0].source == "import:DataFrame row 1"
    assert records[0].stratum == {"outage_site": 0, "seed": 101}
    from_csv = collect.import_table(lock, write_csv(tmp_path / "t.csv", equal_work_rows()), tmp_path / "csv")
    assert [r.metrics for r in records] == [r.metrics for r in from_csv]
    indexed = frame.set_index(["arm", "outage_site", "seed"])  # a named index is columns, not dropped
    assert collect.import_table(lock, indexed, tmp_path / "runs") == []  # all already in, identically
    bad = frame.copy()
    bad.loc[3, "arm"] = "adaptve"
    with pytest.raises(ImportProblem, match="(?s)the DataFrame: nothing imported.*row 4: arm 'adaptve'"):
        collect.import_table(lock, bad, tmp_path / "bad")
    with pytest.raises(InputError, match="not a list"):
        collect.import_table(lock, equal_work_rows(), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    early = pd.DataFrame(_stamped(equal_work_rows(), "2020-01-01T00:00:00Z"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        collect.import_table(lock, early, tmp_path / "early")
    assert any(issubclass(w.category, EarlyRunsWarning) for w in caught)


def test_a_start_in_the_future_is_refused_naming_the_rows(tmp_path):
    """A run cannot have started after the import: a future started_at (a wrong clock or zone, or a
    stamp meant to look later than the freeze) is refused, exit 2, nothing written."""
    lock = frozen_shared(tmp_path)
    rows = [{**r, "started_at": "2099-01-01T00:00:00Z" if i == 3 else ""} for i, r in enumerate(equal_work_rows())]
    proc = run(
        "collect",
        "import",
        str(write_csv(tmp_path / "t.csv", rows)),
        "--lock",
        str(lock),
        "--out",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 2 and "row 4" in proc.stderr and "is in the future" in proc.stderr, proc.stderr
    assert not (tmp_path / "runs").exists()
