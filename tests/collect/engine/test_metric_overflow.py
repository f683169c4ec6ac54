"""A number past a double (a 400-digit integer, ``1e400``) entering as a metric is one clear refusal
naming the metric and the value's size -- the run fails, the import refuses the row -- never an
``OverflowError`` and never a silent infinity; ``inf`` written as such is still kept as infinity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import collect.engine.runs as engine_runs
from collect.api import import_table
from collect.collectors.base import RunContext, RunResult
from collect.collectors.command.outputs import RunFailure, parse_metrics
from collect.engine.runs import PlannedRun, execute_run
from collect.ledger.store import read_ledger
from prereg.api import freeze
from prereg.errors import InputError
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, write_csv
from tests.helpers.collectors import SlowCollector

DIGITS_400 = "1" + "0" * 400  # 401 digits: past a double (about 1.8e308), below Python's int-string limit
TOO_LARGE = "is beyond the range of a double (about 1.8e308)"


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    plan = tmp_path / "equal-work.yaml"
    plan.write_bytes(shared_example_path("equal-work.yaml").read_bytes())
    return freeze(plan).path


def _jsonl(path: Path, rows: list[dict], row: int, column: str, literal: str) -> Path:
    """``rows`` as JSON Lines, row ``row``'s ``column`` written as the bare number ``literal``."""
    lines = [json.dumps(r) for r in rows]
    lines[row] = json.dumps({**rows[row], column: "@"}).replace('"@"', literal)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("kind", "literal", "shown"),
    [
        ("csv", DIGITS_400, "<a 401-digit number>"),
        ("csv", "1e400", "1e400"),
        ("csv", "-1.5E+999", "-1.5E+999"),
        ("jsonl", DIGITS_400, "<a 401-digit integer>"),  # JSON reads it exactly, as an int
        ("jsonl", "1e400", "1e400"),  # JSON's float reader gives inf: marked, then refused
        ("rows", DIGITS_400, "<a 401-digit integer>"),  # a DataFrame's or list's Python int
    ],
    ids=["csv-digits", "csv-exponent", "csv-negative", "jsonl-int", "jsonl-exponent", "dataframe-int"],
)
def test_an_import_refuses_the_row_naming_the_metric_and_the_size(tmp_path, lock, kind, literal, shown):
    rows = equal_work_rows()
    if kind == "csv":
        table = write_csv(
            tmp_path / "t.csv", [{**r, "final_nll": literal} if i == 2 else r for i, r in enumerate(rows)]
        )
    elif kind == "jsonl":
        table = _jsonl(tmp_path / "t.jsonl", rows, 2, "final_nll", literal)
    else:
        pd = pytest.importorskip("pandas")
        table = pd.DataFrame([{**r, "final_nll": int(literal)} if i == 2 else r for i, r in enumerate(rows)])
    with pytest.raises(InputError) as err:
        import_table(lock, table, tmp_path / "runs")
    assert f"row 3: final_nll: {shown} {TOO_LARGE}" in str(err.value), str(err.value)
    assert "nothing imported; the table does not fit the plan" in str(err.value)
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()


def test_a_sensor_update_count_past_64_bits_is_refused(tmp_path, lock):
    rows = equal_work_rows()
    table = _jsonl(tmp_path / "t.jsonl", rows, 4, "energy_counter.updates", DIGITS_400)
    with pytest.raises(InputError) as err:
        import_table(lock, table, tmp_path / "runs")
    assert "row 5: energy_counter.updates: <a 401-digit integer> is not a count of sensor updates" in str(err.value)
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()


@pytest.mark.parametrize("column", ["replicate", "seed"])
def test_a_replicate_or_seed_cell_of_400_digits_is_named_by_its_size_not_printed(tmp_path, lock, column):
    rows = equal_work_rows()
    table = _jsonl(tmp_path / "t.jsonl", rows, 1, column, DIGITS_400)
    with pytest.raises(InputError) as err:
        import_table(lock, table, tmp_path / "runs")
    message = str(err.value)
    assert f"row 2: {column}" in message and "<a 401-digit integer>" in message and DIGITS_400 not in message, message
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()


def test_infinity_written_as_such_is_still_kept(tmp_path, lock):
    rows = equal_work_rows()
    table = write_csv(tmp_path / "t.csv", [{**r, "final_nll": "inf"} if i == 2 else r for i, r in enumerate(rows)])
    import_table(lock, table, tmp_path / "runs")
    jsonl = _jsonl(tmp_path / "t.jsonl", rows, 2, "final_nll", "Infinity")  # another tool's bare literal
    import_table(lock, jsonl, tmp_path / "again", [])
    for runs in ("runs", "again"):
        assert read_ledger(tmp_path / runs).records[2].metrics["final_nll"] == "Infinity"


@pytest.mark.parametrize(
    ("literal", "shown"),
    [(DIGITS_400, "<a 401-digit integer>"), (DIGITS_400 + ".5", "<a 402-digit number>"), ("1e400", "1e400")],
    ids=["int", "decimal", "exponent"],
)
def test_a_command_programs_metrics_file_fails_the_run_naming_the_metric(literal, shown):
    with pytest.raises(RunFailure) as err:
        parse_metrics(('{"value": ' + literal + "}").encode(), ["value"])
    assert (
        str(err.value)
        == f"metrics file metrics.json: metric value = {shown} {TOO_LARGE}, so not a number the formats hold"
    )


class HugeMetricCollector(SlowCollector):
    """Returns a metric as a 401-digit Python integer."""

    def run(self, ctx: RunContext) -> RunResult:
        return RunResult(metrics={"value": int(DIGITS_400), "seed_echo": 1.0})


def test_a_python_collectors_huge_metric_fails_the_run_in_words(tmp_path, monkeypatch):
    monkeypatch.setattr(engine_runs, "load_collector", lambda name: HugeMetricCollector)
    planned = PlannedRun("run-1", {"site": 0}, "a", 0, 7, {"sleep_ms": 0.0, "offset": 0.0, "fail": False, "site": 0})
    record = execute_run("test.huge", planned, "0" * 64, str(tmp_path), {})
    assert record["status"] == "failed" and record["metrics"] == {}
    assert (
        record["error"] == f"the collector returned metric value = <a 401-digit integer> {TOO_LARGE}, so not a "
        "number the formats hold"
    )
