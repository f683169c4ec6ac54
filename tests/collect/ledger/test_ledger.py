"""The run ledger: append-only, durable, torn lines reported and never parsed as data."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from collect.ledger.store import RunRecord, append_records, encode_metric, ledger_path, read_ledger

HASH = "a" * 64


def record(run_id: str = "r1", **overrides) -> RunRecord:
    data = {
        "run_id": run_id,
        "prereg_sha256": HASH,
        "stratum": {"seed": 1},
        "arm": "a",
        "replicate": 0,
        "status": "complete",
        "metrics": {"loss": 1.5},
        "telemetry": {"energy_counter": {"updates": 3}},
    }
    data.update(overrides)
    return RunRecord.model_validate(data)


def test_append_and_read_back(tmp_path):
    append_records(tmp_path, [record("r1"), record("r2", arm="b")])
    append_records(tmp_path, [record("r3")])
    ledger = read_ledger(tmp_path)
    assert [r.run_id for r in ledger.records] == ["r1", "r2", "r3"]
    assert ledger.problems == [] and ledger.lines == 3 and len(ledger.sha256) == 64
    assert ledger.records[0].telemetry["energy_counter"].updates == 3
    assert all(
        json.loads(line)["record"] == "collect/run/v2" for line in ledger_path(tmp_path).read_text().splitlines()
    )


def test_appends_never_rewrite_earlier_bytes(tmp_path):
    append_records(tmp_path, [record("r1")])
    before = ledger_path(tmp_path).read_bytes()
    append_records(tmp_path, [record("r2")])
    assert ledger_path(tmp_path).read_bytes().startswith(before)


def test_torn_last_line_is_reported_not_parsed(tmp_path):
    append_records(tmp_path, [record("r1"), record("r2")])
    path = ledger_path(tmp_path)
    full = path.read_bytes()
    path.write_bytes(full[:-25])  # a crash in the middle of writing r2
    ledger = read_ledger(tmp_path)
    assert [r.run_id for r in ledger.records] == ["r1"]
    assert ledger.torn_tail and ledger.problems[0].line == 2
    append_records(tmp_path, [record("r3")])  # the next append starts on a fresh line
    ledger = read_ledger(tmp_path)
    assert [r.run_id for r in ledger.records] == ["r1", "r3"]
    assert not ledger.torn_tail and ledger.problems[0].line == 2 and "torn or corrupted" in ledger.problems[0].message


def test_invalid_lines_are_problems_with_line_numbers(tmp_path):
    append_records(tmp_path, [record("r1")])
    with open(ledger_path(tmp_path), "ab") as fh:
        fh.write(b'{"run_id": "x"}\n[1, 2]\n\xff\xfe\n')
    append_records(tmp_path, [record("r2")])
    ledger = read_ledger(tmp_path)
    assert [r.run_id for r in ledger.records] == ["r1", "r2"]
    assert [p.line for p in ledger.problems] == [2, 3, 4]


def test_non_finite_metrics_round_trip(tmp_path):
    values = {"a": math.nan, "b": math.inf, "c": -math.inf, "d": 2.0, "e": None}
    append_records(tmp_path, [record(metrics={k: encode_metric(v) for k, v in values.items()})])
    text = ledger_path(tmp_path).read_text()
    assert "NaN" in text and "Infinity" in text and "nan" not in text.replace("NaN", "")
    rec = read_ledger(tmp_path).records[0]
    assert math.isnan(rec.metric("a")) and rec.metric("b") == math.inf and rec.metric("c") == -math.inf
    assert rec.metric("d") == 2.0 and rec.metric("e") is None and rec.metric("zzz") is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"status": "done"},
        {"replicate": -1},
        {"prereg_sha256": "xyz"},
        {"run_id": "../escape"},
        {"extra": 1},
        {"metrics": {"loss": "1.5"}},
        {"telemetry": {"s": {"updates": -1}}},
    ],
)
def test_invalid_records_are_refused_before_writing(tmp_path, overrides):
    with pytest.raises(ValidationError):
        append_records(tmp_path, [record(**overrides)])
    assert not ledger_path(tmp_path).exists()


def test_missing_ledger_reads_empty(tmp_path):
    ledger = read_ledger(tmp_path / "none")
    assert ledger.records == [] and ledger.sha256 is None
