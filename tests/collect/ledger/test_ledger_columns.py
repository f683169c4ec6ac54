"""The ledger read column-wise (``collect.ledger.columns``) gives what the record-by-record reader gives:
the same validated fields, hashes, lines and problems, on a clean ledger and on every kind of damage."""

from __future__ import annotations

import json
import math

import pytest

import collect.ledger.columns as columns_module
from collect.ledger.columns import FIELDS, LedgerColumns, RecordRow, read_ledger_columns
from collect.ledger.store import RunRecord, TelemetrySummary, append_records, read_ledger

SHA = "c" * 64


def _record(i: int, **extra) -> RunRecord:
    fields = dict(
        run_id=f"run-{i}",
        prereg_sha256=SHA,
        stratum={"seed": i, "site": "a" if i % 2 else 1.5},
        arm="ab"[i % 2],
        replicate=i % 3,
        status="complete" if i % 7 else "failed",
        metrics={"x": float(i), "y": None if i % 5 == 0 else ("NaN" if i % 11 == 0 else -i)},
        telemetry={"e": TelemetrySummary(updates=i, bound=0.5, evidence="measured")} if i % 4 else {},
        evidence={"x": "modeled"} if i % 6 == 0 else None,
        started_at="2026-01-01T00:00:00Z",
        seed=i,
        code={"toolkit": "0.2"},
        source=f"row {i}",
    )
    fields.update(extra)
    return RunRecord(**fields)


def _same(runs) -> LedgerColumns:
    """Both readers on ``runs``: everything they report must agree; returns the columns."""
    ledger, cols = read_ledger(runs), read_ledger_columns(runs)
    expected = LedgerColumns.from_ledger(ledger)
    for name in (
        "problems",
        "sha256",
        "lines",
        "torn_tail",
        "hashes",
        "record_lines",
        "refused_lines",
        "pending",
        "stopped_at_line",
    ):
        assert getattr(cols, name) == getattr(expected, name), name
    assert cols.columns.keys() == expected.columns.keys() == set(FIELDS)
    for name in FIELDS:  # == and the same types (an int metric stays what the model makes of it)
        assert cols.columns[name] == expected.columns[name], name
        assert [type(v) for v in cols.columns[name]] == [type(v) for v in expected.columns[name]], name
    return cols


@pytest.fixture
def runs(tmp_path):
    folder = tmp_path / "runs"
    append_records(folder, [_record(i) for i in range(40)])
    return folder


def test_a_clean_ledger_gives_the_records_fields_as_columns(runs, monkeypatch):
    monkeypatch.setattr(columns_module, "CHUNK", 7)  # several chunks, the last one short

    def no_fallback(_runs):
        raise AssertionError("a clean ledger is read column-wise, not record by record")

    with monkeypatch.context() as m:
        m.setattr(columns_module, "read_ledger", no_fallback)
        read_ledger_columns(runs)
    cols = _same(runs)
    ledger = read_ledger(runs)
    assert cols.size == len(ledger.records) == 40 and not cols.problems
    for record, row in zip(ledger.records, cols.records, strict=True):
        assert isinstance(row, RecordRow)
        for name in FIELDS:
            assert getattr(row, name) == getattr(record, name), name
        for metric in ("x", "y", "z"):
            a, b = row.metric(metric), record.metric(metric)
            assert a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))
        assert row.as_record() == record
    floats = cols.metric_floats("y")
    assert [math.isnan(v) for v in floats] == [
        r.metric("y") is None or math.isnan(r.metric("y")) for r in ledger.records
    ]


def _edit(runs, index: int, change) -> None:
    """Line ``index`` of the ledger replaced by ``change(line bytes)``."""
    path = runs / "ledger.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[index] = change(lines[index])
    path.write_bytes(b"\n".join(lines))


def _field(name, value):
    def change(line: bytes) -> bytes:
        data = json.loads(line)
        if value is KeyError:
            del data[name]
        else:
            data[name] = value
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()

    return change


DAMAGE = {
    "a value of the wrong type": _field("replicate", "1"),
    "a value out of range": _field("replicate", -1),
    "an int where the model wants a string": _field("arm", 3),
    "a key that is no field": _field("extra", 1),
    "a required field missing": _field("arm", KeyError),
    "an optional field missing": _field("seed", KeyError),
    "a nested model refusing": _field("telemetry", {"e": {"updates": -1}}),
    "a bad run id": _field("run_id", "../x"),
    "a chain field missing": _field("prev_sha256", KeyError),
    "a key written twice": lambda line: line[:-1] + b',"arm":"b"}',
    "not JSON": lambda line: line[:20],
    "a copy of the line before": None,
    "the retired format": _field("record", "collect/run/v1"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damage_is_read_as_the_record_reader_reads_it(runs, damage, monkeypatch):
    monkeypatch.setattr(columns_module, "CHUNK", 8)
    if damage == "a copy of the line before":
        lines = (runs / "ledger.jsonl").read_bytes().split(b"\n")
        _edit(runs, 13, lambda _: lines[12])
    else:
        _edit(runs, 13, DAMAGE[damage])
    if damage == "the retired format":
        from prereg.errors import RetiredFormat

        with pytest.raises(RetiredFormat):
            read_ledger_columns(runs)
        return
    cols = _same(runs)
    if damage != "an optional field missing":  # still a valid record (its hash no longer matches)
        assert cols.problems and cols.problems[0].line == 14


def test_a_torn_last_line_and_a_line_beyond_the_stop(runs):
    with open(runs / "ledger.jsonl", "ab") as fh:
        fh.write(b'{"arm":"a","code"')
    cols = _same(runs)
    assert cols.torn_tail and cols.size == 40


def test_an_empty_or_absent_ledger(tmp_path):
    assert read_ledger_columns(tmp_path).size == 0
    (tmp_path / "ledger.jsonl").write_bytes(b"")
    assert _same(tmp_path).size == 0
