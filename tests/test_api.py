"""The public Python API: integrity rules hold for library callers, and evaluations render safely."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import collect
import gates
import prereg
import reports  # registers the Jupyter table of an Evaluation (gates.htmlview)
from prereg.errors import EXIT_BAD_INPUT, EXIT_INTEGRITY, InputError, IntegrityError, ToolkitError
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, write_csv


@pytest.fixture
def study(tmp_path: Path) -> Path:
    path = tmp_path / "study.yaml"
    shutil.copyfile(shared_example_path("equal-work.yaml"), path)
    return path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _rewrite(lock_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(lock_path.read_text())
    change(data)
    os.chmod(lock_path, 0o644)
    lock_path.write_text(json.dumps(data))


def test_freeze_returns_a_lock_and_is_idempotent(study: Path) -> None:
    lock = prereg.freeze(study)
    assert isinstance(lock, prereg.Lock)
    assert lock.path == study.with_name("study.lock.json") and lock.path.is_file()
    assert lock.version == 1 and lock.genesis_sha256 == lock.plan_sha256
    assert lock.plan.study == "equal-work-continuation"
    again = prereg.freeze(study)
    assert again.plan_sha256 == lock.plan_sha256 and again.frozen_at == lock.frozen_at


def test_freeze_of_a_changed_plan_over_an_existing_lock_is_refused(study: Path) -> None:
    lock = prereg.freeze(study)
    before = lock.path.read_bytes()
    _edit(study, "upper < 0.02", "upper < 0.05")
    with pytest.raises(InputError, match="re-freezing is refused") as info:
        prereg.freeze(study)
    assert info.value.exit_code == EXIT_BAD_INPUT and "prereg amend" in str(info.value)
    assert lock.path.read_bytes() == before


def test_freeze_over_a_tampered_lock_of_the_same_plan_is_an_integrity_failure(study: Path) -> None:
    lock = prereg.freeze(study)

    def backdate(data: dict) -> None:
        data["frozen_at"] = "2001-01-01T00:00:00Z"

    _rewrite(lock.path, backdate)
    with pytest.raises(IntegrityError, match="does not verify"):
        prereg.freeze(study)


def test_load_lock_of_a_tampered_lock_raises_integrity_error(study: Path) -> None:
    lock = prereg.freeze(study)

    def loosen(data: dict) -> None:
        data["plan"]["gates"][0]["pass_if"] = "upper < 0.5"

    _rewrite(lock.path, loosen)
    with pytest.raises(IntegrityError, match="does not verify") as info:
        prereg.load_lock(lock.path)
    assert info.value.exit_code == EXIT_INTEGRITY
    assert not prereg.verify(lock.path).ok


def test_amend_records_post_data_and_refuses_a_broken_lock(study: Path, tmp_path: Path) -> None:
    lock = prereg.freeze(study)
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    collect.import_table(lock, tmp_path / "runs.csv", tmp_path / "runs")
    with pytest.raises(InputError, match="nothing to amend"):
        prereg.amend(study, reason="no change", runs=tmp_path / "runs")
    _edit(study, "upper < 0.02", "upper < 0.03")
    with pytest.raises(InputError, match="--reason"):
        prereg.amend(study, reason="  ")
    amended = prereg.amend(study, reason="pilot showed 0.02 is too tight", runs=tmp_path / "runs")
    entry = amended.data["amendments"][-1]
    assert amended.version == 2 and entry["post_data"] is True and entry["runs_checked"] is True
    assert prereg.load_lock(amended.path).plan_sha256 == amended.plan_sha256

    def drop_reason(data: dict) -> None:
        data["amendments"][0]["reason"] = ""

    _rewrite(amended.path, drop_reason)
    _edit(study, "upper < 0.03", "upper < 0.04")
    with pytest.raises(IntegrityError, match="refusing to amend"):
        prereg.amend(study, reason="again")


def test_evaluate_returns_an_evaluation_with_a_frame_row_per_gate(study: Path, tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    lock = prereg.freeze(study)
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    records = collect.import_table(str(lock.path), tmp_path / "runs.csv", tmp_path / "runs")
    assert len(records) == 12 and len(collect.read_ledger(tmp_path / "runs").records) == 12
    ev = gates.evaluate(lock, tmp_path / "runs")
    assert isinstance(ev, gates.Evaluation) and ev.decision == "supported"
    assert not (tmp_path / "runs" / "evaluation.json").exists()  # nothing written unless asked
    frame = ev.to_frame()
    assert list(frame["id"]) == [g.id for g in ev.gates] == ["learning_noninferior", "work_saved", "energy_saving"]
    assert {"verdict", "estimate", "lower", "upper", "confidence", "method", "n_pairs", "pvalue"} <= set(frame.columns)
    assert list(frame["verdict"]) == ["pass"] * 3 and list(frame["n_pairs"]) == [6] * 3
    gates.evaluate(lock, tmp_path / "runs", out=tmp_path / "ev.json")
    assert gates.read_evaluation(tmp_path / "ev.json").decision == "supported"


def test_evaluate_refuses_a_ledger_file_and_a_tampered_ledger(study: Path, tmp_path: Path) -> None:
    lock = prereg.freeze(study)
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    collect.import_table(lock, tmp_path / "runs.csv", tmp_path / "runs")
    ledger = tmp_path / "runs" / "ledger.jsonl"
    with pytest.raises(InputError, match="expects the runs folder"):
        gates.evaluate(lock, ledger)
    lines = ledger.read_text().splitlines()
    record = json.loads(lines[0])
    record["metrics"]["final_nll"] = 1.0
    ledger.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    with pytest.raises(IntegrityError, match="hash chain does not verify"):
        gates.evaluate(lock, tmp_path / "runs")


def test_repr_html_escapes_a_malicious_gate_id_and_title(study: Path, tmp_path: Path) -> None:
    lock = prereg.freeze(study)
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    collect.import_table(lock, tmp_path / "runs.csv", tmp_path / "runs")
    ev = gates.evaluate(lock, tmp_path / "runs")
    evil_gate = ev.gates[0].model_copy(update={"id": "<script>alert(1)</script>", "method": 'x" onload="y'})
    evil = ev.model_copy(update={"title": "<img src=x onerror=alert(2)>", "study": "a&b", "gates": [evil_gate]})
    html = evil._repr_html_()
    assert "<script>" not in html and "<img" not in html and 'x" onload' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "a&amp;b" in html and "SUPPORTED" in html and html.count("<tr>") == 2
    assert reports.html_report(evil) == html


def test_repr_html_before_reports_registers_a_view_is_escaped_text(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gates.htmlview

    lock = prereg.freeze(study)
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    collect.import_table(lock, tmp_path / "runs.csv", tmp_path / "runs")
    ev = gates.evaluate(lock, tmp_path / "runs")
    evil_gate = ev.gates[0].model_copy(update={"id": "<script>alert(1)</script>"})
    evil = ev.model_copy(update={"title": "<img src=x onerror=alert(2)>", "gates": [evil_gate]})
    monkeypatch.setattr(gates.htmlview, "_view", None)  # as in a notebook that imported gates only
    html = evil._repr_html_()
    assert html.startswith("<pre") and "<script>" not in html and "<img" not in html
    assert f"&lt;script&gt;alert(1)&lt;/script&gt; {evil_gate.verdict}" in html and "decision: SUPPORTED" in html
    assert "import reports" in html


def test_import_of_a_table_that_does_not_fit_names_it(study: Path, tmp_path: Path) -> None:
    lock = prereg.freeze(study)
    rows = equal_work_rows()
    rows[0]["arm"] = "bogus"
    write_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(collect.ImportProblem) as info:
        collect.import_table(lock, tmp_path / "bad.csv", tmp_path / "runs")
    assert str(info.value).startswith(f"{tmp_path / 'bad.csv'}: nothing imported")
    assert info.value.details and isinstance(info.value, ToolkitError)
    assert not (tmp_path / "runs").exists()
