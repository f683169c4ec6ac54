"""`gates evaluate` end to end through the console scripts: every verdict, decision and exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collect.ledger.store import append_records, read_ledger
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, run
from tests.helpers.gates import evaluate, freeze, gates_by_id, imported

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


@pytest.fixture
def equal_work(tmp_path) -> Path:
    return freeze(tmp_path, shared_example_path("equal-work.yaml").read_bytes(), "equal-work.yaml")


@pytest.mark.subprocess(quick=True)
def test_supported_exit_0(tmp_path, equal_work):
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, equal_work_rows()))
    assert rc == 0 and data["decision"] == "supported"
    g = gates_by_id(data)
    assert {x["verdict"] for x in g.values()} == {"pass"}
    assert g["work_saved"]["scale"] == "ratio" and 0.85 < g["work_saved"]["estimate"] < 0.95
    assert g["learning_noninferior"]["upper"] < 0.02 and g["learning_noninferior"]["n_pairs"] == 6
    assert g["energy_saving"]["resolution"]["could_change"] is False
    assert data["runs"]["planned"] == data["runs"]["matched"] == 12
    assert len(data["blocks"]) == 6 and data["blocks"][0]["contrasts"]["work_saved"] > 0
    assert data["ledger"]["sha256"] == read_ledger(tmp_path / "runs").sha256
    assert (
        data["schema"] == "gates/evaluation/v2"
        and data["prereg_sha256"] == json.loads(equal_work.read_text())["plan_sha256"]
    )


@pytest.mark.subprocess(quick=True)
def test_not_supported_exit_1(tmp_path, equal_work):
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, equal_work_rows(nll_shift=0.05)))
    assert rc == 1 and data["decision"] == "not_supported"
    g = gates_by_id(data)
    assert g["learning_noninferior"]["verdict"] == "fail" and g["work_saved"]["verdict"] == "pass"
    assert "learning_noninferior failed" in data["decision_reason"]


def test_counter_support_fires_and_refuses_exit_3(tmp_path, equal_work):
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, equal_work_rows(updates=5)))
    assert rc == 3 and data["decision"] == "refused"
    g = gates_by_id(data)
    assert g["energy_saving"]["verdict"] == "refused" and g["energy_saving"]["refused_by"] == [
        {"kind": "invalidator", "id": "counter_support", "reason": "invalidator counter_support fired"}
    ]
    assert g["learning_noninferior"]["verdict"] == "pass"
    assert g["energy_saving"]["estimate"] is not None  # diagnostics still computed
    inv = {i["id"]: i for i in data["invalidators"]}
    assert inv["counter_support"]["fired"] and inv["counter_support"]["observed"] == 5.0
    assert not inv["sane_nll"]["fired"]


def test_missing_telemetry_fires_conservatively(tmp_path, equal_work):
    rows = equal_work_rows()
    for r in rows:
        del r["energy_counter.updates"]
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, rows))
    inv = {i["id"]: i for i in data["invalidators"]}
    assert (
        rc == 3
        and inv["counter_support"]["fired"]
        and "no telemetry for energy_counter" in inv["counter_support"]["detail"]
    )


def test_metric_bounds_fires_on_out_of_range_and_non_finite(tmp_path, equal_work):
    rows = equal_work_rows()
    rows[3]["final_nll"] = 25.0
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, rows))
    assert rc == 3 and all(g["verdict"] == "refused" for g in data["gates"])
    assert all("sane_nll" in [r["id"] for r in g["refused_by"]] for g in data["gates"])
    rows = equal_work_rows()
    rows[2]["final_nll"] = "nan"
    sub = tmp_path / "nan"
    sub.mkdir()
    rc, data = evaluate(equal_work, imported(sub, equal_work, rows))
    inv = {i["id"]: i for i in data["invalidators"]}
    assert rc == 3 and inv["sane_nll"]["observed"] == "non-finite"


def test_missing_run_refuses_the_gates_it_touches(tmp_path, equal_work):
    rows = [r for r in equal_work_rows() if not (r["arm"] == "adaptive" and r["outage_site"] == 2 and r["seed"] == 102)]
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, rows))
    assert rc == 3
    assert data["runs"]["missing"] == ["arm adaptive in outage_site=2, seed=102 #0"]
    for g in data["gates"]:
        assert g["verdict"] == "refused"
        assert {"kind": "run", "id": None, "reason": "missing run: arm adaptive in outage_site=2, seed=102 #0"} in g[
            "refused_by"
        ]


def test_duplicate_and_other_plan_runs_are_named(tmp_path, equal_work):
    runs = imported(tmp_path, equal_work, equal_work_rows())
    first = read_ledger(runs).records[0]
    append_records(runs, [first.model_copy(update={"run_id": "dup-1"})])
    append_records(runs, [first.model_copy(update={"run_id": "other-1", "prereg_sha256": "b" * 64})])
    rc, data = evaluate(equal_work, runs)
    assert rc == 3
    assert data["runs"]["duplicate"][0].startswith("dup-1 (arm fixed, outage_site=0, seed=101 #0) repeats")
    assert "other-1" in data["runs"]["other_plan"][0] and "bbbbbbbbbbbb" in data["runs"]["other_plan"][0]
    assert any(r["reason"].startswith("duplicate run: dup-1") for r in gates_by_id(data)["work_saved"]["refused_by"])


def test_unplanned_and_failed_runs(tmp_path, equal_work):
    runs = imported(tmp_path, equal_work, equal_work_rows())
    first = read_ledger(runs).records[0]
    append_records(runs, [first.model_copy(update={"run_id": "odd-1", "stratum": {"outage_site": 9, "seed": 101}})])
    append_records(runs, [first.model_copy(update={"run_id": "crash-1", "status": "failed"})])
    rc, data = evaluate(equal_work, runs)
    assert "odd-1" in data["runs"]["unplanned"][0] and "crash-1" in data["runs"]["failed"][0]
    assert rc == 3  # the unplanned run touches arm 'fixed'; the failed one (a retried cell) refuses nothing
    assert all(not any(r["reason"].startswith("failed") for r in g["refused_by"]) for g in data["gates"])


def test_torn_ledger_line_is_reported(tmp_path, equal_work):
    runs = imported(tmp_path, equal_work, equal_work_rows())
    ledger = runs / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes()[:-40])
    rc, data = evaluate(equal_work, runs)
    assert rc == 3 and data["ledger"]["torn_tail"] is True
    assert data["runs"]["ledger_problems"][0].startswith("ledger line 12: torn last line")
    assert data["runs"]["missing"] == ["arm adaptive in outage_site=2, seed=102 #0"]


def test_lock_tampered_after_runs_exit_3(tmp_path, equal_work):
    runs = imported(tmp_path, equal_work, equal_work_rows(nll_shift=0.05))
    data = json.loads(equal_work.read_text())
    data["plan"]["gates"][0]["pass_if"] = "upper < 0.5"  # moving the margin after seeing the data
    equal_work.chmod(0o644)
    equal_work.write_text(json.dumps(data))
    proc = run("gates", "evaluate", str(equal_work), str(runs))
    assert proc.returncode == 3 and "does not verify" in proc.stderr
    assert not (runs / "evaluation.json").exists()


def test_amended_plan_refuses_runs_of_the_parent(tmp_path, equal_work):
    runs = imported(tmp_path, equal_work, equal_work_rows())
    plan = equal_work.with_name("equal-work.yaml")
    plan.write_text(plan.read_text().replace("upper < 0.02", "upper < 0.03"))
    assert run("prereg", "amend", str(plan), "--reason", "wider", "--runs", str(runs)).returncode == 0
    rc, data = evaluate(equal_work, runs)
    assert rc == 3 and len(data["runs"]["other_plan"]) == 12 and data["amendments"][0]["post_data"] is True


def test_unresolvable_when_bounds_are_coarse_or_absent(tmp_path, equal_work):
    rows = equal_work_rows()
    for r in rows:
        r["energy_counter.bound"] = 400.0  # J, on ~5000 J values: coarser than the 0.95 margin's distance
    rc, data = evaluate(equal_work, imported(tmp_path, equal_work, rows))
    g = gates_by_id(data)["energy_saving"]
    assert rc == 3 and g["verdict"] == "unresolvable" and g["resolution"]["could_change"] is True
    assert "gate energy_saving is unresolvable" in data["decision_reason"]
    rows = equal_work_rows()
    for r in rows:
        del r["energy_counter.bound"]
    sub = tmp_path / "nobound"
    sub.mkdir()
    rc, data = evaluate(equal_work, imported(sub, equal_work, rows))
    g = gates_by_id(data)["energy_saving"]
    assert g["verdict"] == "unresolvable" and "no measurement bound" in g["notes"][0]


@pytest.mark.subprocess(quick=True)
def test_bad_inputs_exit_2(tmp_path, equal_work):
    assert run("gates", "evaluate", str(equal_work), str(tmp_path / "none")).returncode == 2
    (tmp_path / "empty").mkdir()
    assert "no ledger" in run("gates", "evaluate", str(equal_work), str(tmp_path / "empty")).stderr
    (tmp_path / "x.json").write_text("[]")
    assert run("gates", "evaluate", str(tmp_path / "x.json"), str(tmp_path / "empty")).returncode == 2
    assert run("gates", "evaluate").returncode == 2
