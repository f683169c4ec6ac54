"""The ledger's hash chain: every single-record edit is detected, and gates evaluate refuses it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.ledger.store import GENESIS, read_ledger, record_hash, verify_chain
from prereg.errors import RetiredFormat
from tests.helpers import frozen_shared, imported_equal_work, run
from tests.helpers.collectors import SLOW
from tests.helpers.engine import loaded, plan_text


@pytest.fixture
def runs(tmp_path: Path, monkeypatch) -> Path:
    """24 records written by the engine (a fake collector that writes one trace per run)."""
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)
    plan, sha = loaded(plan_text())
    engine.run_plan(plan, sha, tmp_path / "runs")
    return tmp_path / "runs"


def _lines(runs: Path) -> list[dict]:
    return [json.loads(line) for line in (runs / "ledger.jsonl").read_text().splitlines()]


def _write(runs: Path, lines: list[dict | str]) -> None:
    text = "".join(
        (x if isinstance(x, str) else json.dumps(x, sort_keys=True, separators=(",", ":"))) + "\n" for x in lines
    )
    (runs / "ledger.jsonl").write_text(text)


def _mutate(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 3 + 1
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return ("1" if value[0] != "1" else "2") + value[1:]  # another well-formed hash
        return value + "x"
    if isinstance(value, dict):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            return {k: v * 3 for k, v in value.items()}
        return {**value, "x": 1}
    if isinstance(value, list):
        return [*value, "traces/x"]
    return "edited"


def test_chain_fields_and_intact_report(runs):
    ledger = read_ledger(runs)
    assert len(ledger.records) == 24
    first = ledger.records[0]
    assert first.prev_sha256 == GENESIS and first.record_sha256 == ledger.hashes[0]
    assert all(r.prev_sha256 == h for r, h in zip(ledger.records[1:], ledger.hashes, strict=False))
    assert set(first.trace_sha256) == set(first.traces) and len(first.traces) == 1
    report = verify_chain(ledger)
    assert report.status == "intact" and report.head == ledger.hashes[-1] and report.problems == []


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_every_single_record_edit_is_detected(runs):
    """Change one field of one record (every field of every record): the chain names that record."""
    original = _lines(runs)
    cases = detected = 0
    for i, rec in enumerate(original):
        for key in rec:
            lines = copy.deepcopy(original)
            lines[i][key] = _mutate(rec[key])
            _write(runs, lines)
            report = verify_chain(read_ledger(runs))
            cases += 1
            if report.status == "broken" and any(f"ledger line {i + 1}" in p for p in report.problems):
                detected += 1
            else:
                pytest.fail(f"edit of {key} in record {i + 1} went unnoticed: {report}")
    assert cases == detected and cases >= 24 * 15


def test_structural_edits_are_detected(runs):
    original = _lines(runs)
    raw = (runs / "ledger.jsonl").read_text().splitlines()
    trace = runs / original[3]["traces"][0]
    fabricated = {**copy.deepcopy(original[5]), "run_id": "run-fabricated"}
    fabricated["record_sha256"] = record_hash(fabricated)  # a forger who re-hashes the record itself
    a, b = copy.deepcopy(original[0]), copy.deepcopy(original[1])
    a["metrics"], b["metrics"] = b["metrics"], a["metrics"]
    cases = {
        "removed": original[:4] + original[5:],
        "swapped lines": [original[1], original[0], *original[2:]],
        "metrics swapped between arms": [a, b, *original[2:]],
        "fabricated record inserted": original[:6] + [fabricated] + original[6:],
        "fabricated record appended without hashes": original
        + [{k: v for k, v in fabricated.items() if k not in ("record_sha256", "prev_sha256")}],
        "key written twice": raw[:2] + [raw[2][:-1] + ',"status":"complete"}'] + raw[3:],
        "a record replaced by junk JSON": original[:2] + ['{"note": "deleted"}'] + original[3:],
    }
    for name, lines in cases.items():
        _write(runs, lines)  # type: ignore[arg-type]
        report = verify_chain(read_ledger(runs))
        assert report.status == "broken", name
    _write(runs, original)
    trace.write_text(trace.read_text() + "edited\n")
    assert verify_chain(read_ledger(runs)).status == "broken"


def test_what_the_chain_cannot_prove_is_caught_by_the_published_head(runs):
    """Dropping the last record keeps the chain intact; only the published head hash shows it."""
    original = _lines(runs)
    head = verify_chain(read_ledger(runs)).head
    _write(runs, original[:-1])
    report = verify_chain(read_ledger(runs))
    assert report.status == "intact" and report.head != head


@pytest.mark.parametrize("dropped", [("record_sha256", "prev_sha256"), ("record_sha256",), ("prev_sha256",)])
def test_a_stored_record_without_its_chain_is_refused_not_read_as_unprotected(runs, dropped):
    lines = _lines(runs)
    lines[5] = {k: v for k, v in lines[5].items() if k not in dropped}
    _write(runs, lines)
    ledger = read_ledger(runs)
    assert len(ledger.records) == 23 and ledger.refused_lines == [6]
    assert "every stored record carries the hash chain" in ledger.problems[0].message
    report = verify_chain(ledger)
    assert report.status == "broken" and not report.ok


def test_a_v1_ledger_is_one_message_naming_what_wrote_it_and_what_to_rerun(runs):
    lines = _lines(runs)
    lines[0]["record"] = "collect/run/v1"
    _write(runs, lines)
    with pytest.raises(RetiredFormat) as err:
        read_ledger(runs)
    assert err.value.exit_code == 2
    assert "line 1: written in collect/run/v1 by prereg-toolkit 0.1.x" in str(err.value)
    assert "this toolkit reads collect/run/v2 only" in str(err.value) and "collect run LOCK --out" in str(err.value)


@pytest.fixture
def imported(tmp_path: Path) -> tuple[Path, Path]:
    lock = frozen_shared(tmp_path)
    return lock, imported_equal_work(tmp_path, lock)


@pytest.mark.subprocess
def test_gates_evaluate_prints_the_head_and_refuses_an_edited_ledger(imported):
    lock, runs = imported
    head = verify_chain(read_ledger(runs)).head
    proc = run("gates", "evaluate", str(lock), str(runs))
    assert proc.returncode in (0, 1) and head in proc.stdout and "hash chain intact" in proc.stdout
    assert json.loads((runs / "evaluation.json").read_text())["ledger"]["head_sha256"] == head
    lines = _lines(runs)
    lines[3]["metrics"]["final_nll"] *= 3  # a valid-JSON edit that could change the decision
    _write(runs, lines)
    proc = run("gates", "evaluate", str(lock), str(runs), "--out", str(runs / "again.json"))
    assert proc.returncode == 3 and "ledger line 4" in proc.stderr and "changed after it was written" in proc.stderr
    assert not (runs / "again.json").exists()


@pytest.mark.subprocess
def test_gates_evaluate_on_a_v1_ledger_exits_2_with_one_message(imported):
    lock, runs = imported
    _write(runs, [{**rec, "record": "collect/run/v1"} for rec in _lines(runs)])
    proc = run("gates", "evaluate", str(lock), str(runs))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "written in collect/run/v1 by prereg-toolkit 0.1.x" in proc.stderr
    assert not (runs / "evaluation.json").exists()


def test_one_serialisation_gives_the_canonical_line_and_hash(runs):
    """The writer's placeholder route writes exactly the canonical line, and the reader's cut-line
    hash equals the canonical re-hash for every record written; an edited line falls back."""
    from collect.ledger.hashing import sealed_line, stored_line_hash
    from prereg.jsoncodec import canonical_bytes

    for line in (runs / "ledger.jsonl").read_bytes().splitlines():
        data = json.loads(line)
        assert stored_line_hash(line) == data["record_sha256"] == record_hash(data)
        body = {k: v for k, v in data.items() if k != "record_sha256"}
        assert sealed_line(body) == (canonical_bytes(data), data["record_sha256"])
        # a reformatted line (same content) or an edited one is not vouched for by its bytes
        assert stored_line_hash(json.dumps(data).encode()) is None
        assert stored_line_hash(line.replace(b'"arm":"', b'"arm":"x', 1)) is None
    # a nested key spelled like the field: still the canonical result, by the slow route
    odd = {"a": {"record_sha256": "p" * 64}, "b": 1}
    assert sealed_line(odd) == (canonical_bytes({**odd, "record_sha256": record_hash(odd)}), record_hash(odd))
