"""Issue 11: the preregistration's promises, each hole closed and checked through the console scripts.

Data after the plan (time order), claims in the right direction, margins in plausible units,
evidence as collected, predecessors that are what they say, an edited YAML said in words,
controls that give no pairs, post-data amendments explained once, and import/usage messages that
say what the command expects.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import OWN_EXAMPLES, shared_example_path
from tests.helpers import equal_work_rows, run, write_csv
from tests.helpers.gates import evaluate, freeze, gates_by_id, imported

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


def _shift(stamp: str, **delta: float) -> str:
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(**delta)
    return when.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _lock(path: Path) -> dict:
    return json.loads(path.read_text())


def _with_start(rows: list[dict], started_at: str) -> list[dict]:
    return [{**r, "started_at": started_at} for r in rows]


PRE_EXISTING = b"""
data:
  pre_existing: true
  reason: Re-analysis of the pilot runs collected in November.
"""

# -- 1. time order ------------------------------------------------------------------------------


def test_runs_started_before_the_freeze_refuse_the_decision(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    early = _shift(_lock(lock)["frozen_at"], days=-11)
    runs = imported(tmp_path, lock, _with_start(equal_work_rows(), early))
    rc, data = evaluate(lock, runs)
    assert rc == 3 and data["decision"] == "refused"
    assert "12 run(s) started before the plan was frozen" in data["decision_reason"]
    assert len(data["time_order"]["before_freeze"]) == 12 and data["time_order"]["pre_existing"] is False
    proc = run("gates", "evaluate", str(lock), str(runs), env={"NO_COLOR": "1", "COLUMNS": "80"})
    flat = " ".join(proc.stdout.split())
    assert proc.returncode == 3 and "RUNS STARTED BEFORE THE PLAN" in flat
    assert "REFUSED" in flat and "started before the plan was frozen" in flat


def test_declared_pre_existing_data_stands_and_is_said_everywhere(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes + PRE_EXISTING)
    early = _shift(_lock(lock)["frozen_at"], days=-11)
    runs = imported(tmp_path, lock, _with_start(equal_work_rows(), early))
    md = tmp_path / "report.md"
    proc = run("gates", "evaluate", str(lock), str(runs), "--markdown", str(md), env={"NO_COLOR": "1"})
    flat = " ".join(proc.stdout.split())
    assert proc.returncode == 0, proc.stdout
    assert "SUPPORTED (ANALYSIS OF PRE-EXISTING DATA)" in flat  # the decision line
    assert "Data ANALYSIS OF PRE-EXISTING DATA: the plan declares" in flat  # the header
    assert "Re-analysis of the pilot runs" in flat
    text = md.read_text()
    assert "**SUPPORTED (ANALYSIS OF PRE-EXISTING DATA)**" in text and "- Data: **ANALYSIS OF PRE-EXISTING" in text
    shown = run("prereg", "show", str(lock), env={"NO_COLOR": "1"})
    assert "PRE-EXISTING DATA declared" in " ".join(shown.stdout.split())


def test_unknown_starts_are_counted_and_named_but_refuse_nothing(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    runs = imported(tmp_path, lock, equal_work_rows())  # no started_at column
    rc, data = evaluate(lock, runs)
    assert rc == 0 and len(data["time_order"]["unknown_start"]) == 12
    proc = run("reports", "show", str(runs / "evaluation.json"), "--verbose", env={"NO_COLOR": "1"})
    flat = " ".join(proc.stdout.split())
    assert "12 run(s) with the start not recorded: that they followed the plan cannot be shown" in flat
    assert all(name.split(" ")[0] in flat for name in data["time_order"]["unknown_start"])


def test_import_reads_started_at_and_refuses_a_time_without_zone(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    later = _shift(_lock(lock)["frozen_at"], minutes=1)  # after the freeze, not in the future
    runs = imported(tmp_path, lock, _with_start(equal_work_rows(), later))
    first = json.loads((runs / "ledger.jsonl").read_text().splitlines()[0])
    assert first["started_at"] == later
    proc = run(
        "collect",
        "import",
        str(write_csv(tmp_path / "t.csv", _with_start(equal_work_rows(), "2026-01-01 10:00"))),
        "--lock",
        str(lock),
        "--out",
        str(tmp_path / "other"),
    )
    assert proc.returncode == 2 and "has no time zone" in proc.stderr and proc.stderr.count("row ") == 1


def test_collect_run_stamps_started_at_after_the_freeze(tmp_path):
    plan = tmp_path / "ms.yaml"
    shutil.copy(OWN_EXAMPLES / "multisite-recovery.yaml", plan)
    assert run("prereg", "freeze", str(plan)).returncode == 0
    lock = tmp_path / "ms.lock.json"
    proc = run("collect", "run", str(lock), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    frozen = _lock(lock)["frozen_at"]
    records = [json.loads(line) for line in (tmp_path / "runs" / "ledger.jsonl").read_text().splitlines()]
    assert len(records) == 48 and all(r["started_at"] >= frozen for r in records)
    assert all(r["evidence"]["completion_time"] == "modeled" for r in records)  # hole 4: recorded per metric
    rc, data = evaluate(lock, tmp_path / "runs")
    assert rc == 0 and data["time_order"]["unknown_start"] == [] and data["time_order"]["before_freeze"] == []


def test_a_run_started_before_an_amendment_it_is_judged_under_refuses(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    frozen = _lock(lock)["frozen_at"]
    time.sleep(1.1)  # amended_at has one-second resolution: make it strictly later than frozen_at
    (tmp_path / "plan.yaml").write_bytes(equal_work_bytes.replace(b"upper < 0.02", b"upper < 0.03"))
    assert run("prereg", "amend", str(tmp_path / "plan.yaml"), "--reason", "wider margin").returncode == 0
    runs = imported(tmp_path, lock, _with_start(equal_work_rows(), frozen))  # after the freeze, before v2
    rc, data = evaluate(lock, runs)
    assert rc == 3 and len(data["time_order"]["before_amendment"]) == 12
    assert "before amendment v2" in data["time_order"]["before_amendment"][0]
    assert "started before an amendment they are judged under" in data["decision_reason"]


# -- 2. direction -------------------------------------------------------------------------------

DIRECTION = """schema: prereg/v1
study: direction
title: Is async training no worse?
hypothesis: Async is at most 0.01 nats worse than the baseline.
arms: {{baseline: {{mode: sync}}, async: {{mode: async}}}}
strata: {{factors: {{seed: [1, 2, 3, 4, 5, 6]}}}}
metrics:
  val_loss: {{unit: nats, better: {better}, evidence: measured}}
gates:
  - id: g
    metric: val_loss
    contrast: {contrast}
    method: t
    confidence: 0.9
    pass_if: {rule}{extra}
decision: {{claim: Async is no worse.}}
"""


def _direction_plan(
    tmp_path: Path, better="lower", contrast="async - baseline", rule="lower > -0.01", extra=""
) -> Path:
    path = tmp_path / "direction.yaml"
    path.write_text(DIRECTION.format(better=better, contrast=contrast, rule=rule, extra=extra))
    return path


def test_a_rule_in_the_wrong_direction_is_refused_with_the_corrected_rule(tmp_path):
    proc = run("prereg", "validate", str(_direction_plan(tmp_path)))
    assert proc.returncode == 2 and "gates[0].pass_if" in proc.stderr
    assert "passes however much worse async is than baseline" in proc.stderr
    assert "'pass_if: upper < 0.01'" in proc.stderr and "direction: first_arm_worse" in proc.stderr
    higher = run("prereg", "validate", str(_direction_plan(tmp_path, better="higher", rule="upper < 0.02")))
    assert higher.returncode == 2 and "'pass_if: lower > -0.02'" in higher.stderr
    ratio = run("prereg", "validate", str(_direction_plan(tmp_path, contrast="async / baseline", rule="lower > 0.95")))
    assert ratio.returncode == 2 and "'pass_if: upper < 1.05263'" in ratio.stderr
    # the first arm is the one the claim is about: the same rule on the swapped contrast is refused too
    swapped = run("prereg", "validate", str(_direction_plan(tmp_path, contrast="baseline - async")))
    assert swapped.returncode == 2 and "worse baseline is than async" in swapped.stderr
    fixed = run("prereg", "validate", str(_direction_plan(tmp_path, rule="upper < 0.01")))
    assert fixed.returncode == 0, fixed.stderr


def test_declared_intent_validates_and_is_printed_in_words(tmp_path):
    plan = _direction_plan(tmp_path, extra="\n    direction: first_arm_worse")
    assert run("prereg", "validate", str(plan)).returncode == 0
    assert run("prereg", "freeze", str(plan)).returncode == 0
    shown = run("prereg", "show", str(tmp_path / "direction.lock.json"), env={"NO_COLOR": "1", "COLUMNS": "200"})
    flat = " ".join(shown.stdout.split())
    assert "DECLARED INTENT first_arm_worse: a pass shows async is WORSE than baseline" in flat
    wrong = _direction_plan(tmp_path, rule="upper < 0.01", extra="\n    direction: first_arm_worse")
    proc = run("prereg", "validate", str(wrong))
    assert proc.returncode == 2 and "gates[0].direction" in proc.stderr and "'pass_if: lower > -0.01'" in proc.stderr


def test_interaction_gates_of_the_shared_examples_still_validate(tmp_path, cadence_bytes):
    lock = freeze(tmp_path, cadence_bytes, "cadence.yaml")
    shown = run("prereg", "show", str(lock), "--json")
    sentences = json.loads(shown.stdout)["sentences"]["gates"]
    assert shown.returncode == 0 and "an interaction (a difference of differences)" in sentences["energy_interaction"]
    assert "a pass shows sparse_sparse is better than sparse_restart" in sentences["sparse_saves_energy"]
    assert (
        "sparse_sparse is at most 0.01 nats worse than sparse_restart (noninferiority)"
        in sentences["sparse_keeps_learning"]
    )


# -- 3. margins ---------------------------------------------------------------------------------


def test_implausible_ratio_margins_warn_and_are_stated_as_percentages(tmp_path, equal_work_bytes):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(equal_work_bytes.replace(b"pass_if: upper < 0.95", b"pass_if: upper < 5"))
    proc = run("prereg", "validate", str(plan))
    assert proc.returncode == 0 and "warning:" in proc.stderr and "outside [0.5, 2]" in proc.stderr
    assert "allows up to 400% higher" in proc.stderr and "gates[2].pass_if" in proc.stderr
    assert run("prereg", "freeze", str(plan)).returncode == 0
    shown = run("prereg", "show", str(tmp_path / "plan.lock.json"), env={"NO_COLOR": "1", "COLUMNS": "200"})
    flat = " ".join(shown.stdout.split())
    assert "below 5 (a ratio) (allows up to 400% higher)" in flat and "(requires lower)" in flat
    percent = tmp_path / "pct.yaml"
    percent.write_bytes(equal_work_bytes.replace(b"confidence: 0.90             #", b"confidence: 90 #", 1))
    bad = run("prereg", "validate", str(percent))
    assert bad.returncode == 2 and "90 looks like a percentage" in bad.stderr and "0.9 for 90%" in bad.stderr


def test_shared_examples_are_accepted_and_warn_only_of_what_collect_run_would_refuse():
    """Both shared examples validate as written. equal-work.yaml declares its energy measured while
    torch.multisite's default (simulated) sensor gives modeled evidence: collect run refuses it as
    written (its runs are imported with the evidence they recorded), and validate says so in one
    warning -- its only one; cadence-energy.yaml gives none."""
    for name, expected in (("equal-work.yaml", 1), ("cadence-energy.yaml", 0)):
        proc = run("prereg", "validate", str(shared_example_path(name)))
        warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning")]
        assert proc.returncode == 0 and len(warnings) == expected, proc.stderr
        assert all(
            "metric energy is declared 'measured', but collector torch.multisite gives 'modeled'" in w
            and "collect run refuses the plan as written" in w
            for w in warnings
        )


# -- 4. evidence --------------------------------------------------------------------------------


def test_collect_run_refuses_a_plan_claiming_more_than_its_collector_gives(tmp_path):
    text = (OWN_EXAMPLES / "multisite-recovery.yaml").read_text()
    text = text.replace(
        "completion_time: {unit: s,    better: lower,  evidence: modeled}",
        "completion_time: {unit: s,    better: lower,  evidence: measured}",
    )
    assert "evidence: measured" in text
    plan = tmp_path / "ms.yaml"
    plan.write_text(text)
    assert run("prereg", "freeze", str(plan)).returncode == 0
    proc = run("collect", "run", str(tmp_path / "ms.lock.json"), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and "nothing was run" in proc.stderr
    assert "metric completion_time is declared 'measured', but collector sim.multisite gives 'modeled'" in proc.stderr
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()


def test_import_refuses_an_evidence_column_weaker_than_the_plan(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    rows = [{**r, "energy_counter.evidence": "modeled"} for r in equal_work_rows()]
    proc = run(
        "collect",
        "import",
        str(write_csv(tmp_path / "t.csv", rows)),
        "--lock",
        str(lock),
        "--out",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 2 and "column 'energy_counter.evidence': 12 of 12 rows" in proc.stderr
    assert "the plan declares energy 'measured'" in proc.stderr and proc.stderr.count("energy_counter.evidence =") == 1


def test_a_gate_reports_the_weakest_of_plan_and_recorded_evidence(tmp_path, equal_work_bytes):
    from collect.ledger.store import RunRecord, append_records, read_ledger

    lock = freeze(tmp_path, equal_work_bytes)
    runs = imported(tmp_path, lock, equal_work_rows())
    records = read_ledger(runs).records
    shutil.rmtree(runs)
    append_records(
        runs, [RunRecord.model_validate({**r.model_dump(), "evidence": {"final_nll": "modeled"}}) for r in records]
    )
    rc, data = evaluate(lock, runs)
    gate = gates_by_id(data)["learning_noninferior"]
    assert gate["evidence"] == "modeled" and gate["evidence_declared"] == "measured"
    md = run("reports", "show", str(runs / "evaluation.json"), "--markdown", "-").stdout
    assert "final\\_nll, modeled (simulator); plan declared measured, the runs recorded modeled" in md


# -- 5. predecessors ----------------------------------------------------------------------------


def _with_predecessor(plan_bytes: bytes, path: str, sha: str) -> bytes:
    return (
        plan_bytes
        + f"""
predecessors:
  - path: {path}
    sha256: {sha}
    changes: Same plan, new runs.
""".encode()
    )


def test_a_mismatched_or_missing_predecessor_refuses_and_its_conclusion_is_shown(tmp_path, equal_work_bytes):
    first = tmp_path / "first"
    first.mkdir()
    lock = freeze(first, equal_work_bytes)
    runs = imported(first, lock, equal_work_rows())
    assert evaluate(lock, runs)[0] == 0
    second = tmp_path / "second"
    second.mkdir()
    shutil.copy(runs / "evaluation.json", second / "previous.json")
    good = hashlib.sha256((second / "previous.json").read_bytes()).hexdigest()
    for sha, name, expect in ((good, "ok", 0), ("ab" * 32, "bad", 3)):
        folder = second / name
        folder.mkdir()
        shutil.copy(second / "previous.json", folder / "previous.json")
        lock2 = freeze(folder, _with_predecessor(equal_work_bytes, "previous.json", sha))
        runs2 = imported(folder, lock2, equal_work_rows())
        rc, data = evaluate(lock2, runs2)
        pred = data["predecessors"][0]
        assert rc == expect and pred["recorded_decision"] == "supported"
        proc = run("reports", "show", str(runs2 / "evaluation.json"), env={"NO_COLOR": "1", "COLUMNS": "200"})
        flat = " ".join(proc.stdout.split())
        assert "it recorded SUPPORTED on" in flat
    assert pred["status"] == "mismatch" and "does not have the SHA-256 the plan states" in data["decision_reason"]
    assert "HASH MISMATCH" in flat and f"the file now has {good[:12]}" in flat
    missing = second / "missing"
    missing.mkdir()
    lock3 = freeze(missing, _with_predecessor(equal_work_bytes, "gone.json", good))
    rc, data = evaluate(lock3, imported(missing, lock3, equal_work_rows()))
    assert (
        rc == 3 and data["predecessors"][0]["status"] == "missing" and "gone.json is missing" in data["decision_reason"]
    )


# -- 6. an edited YAML --------------------------------------------------------------------------


def test_an_edited_yaml_beside_the_lock_is_said_in_report_and_artifact(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    runs = imported(tmp_path, lock, equal_work_rows())
    (tmp_path / "plan.yaml").write_bytes(equal_work_bytes.replace(b"upper < 0.02", b"upper < 0.05"))
    verify = run("prereg", "verify", str(lock))
    assert verify.returncode == 3 and "gates[0].pass_if" in verify.stderr
    md = tmp_path / "r.md"
    proc = run(
        "gates", "evaluate", str(lock), str(runs), "--markdown", str(md), env={"NO_COLOR": "1", "COLUMNS": "200"}
    )
    assert proc.returncode == 0  # the locked plan is what is evaluated
    flat = " ".join(proc.stdout.split())
    assert "no longer matches the lock" in flat and "changed: gates[0].pass_if" in flat
    assert "The locked plan was evaluated, not the edited YAML" in flat
    data = json.loads((runs / "evaluation.json").read_text())
    assert data["plan_yaml"]["status"] == "changed" and data["plan_yaml"]["changed"] == ["gates[0].pass_if"]
    assert "no longer matches the lock" in md.read_text()


# -- 7. controls --------------------------------------------------------------------------------


def test_no_failure_controls_give_no_pairs_unless_the_plan_says_so(tmp_path):
    text = (OWN_EXAMPLES / "multisite-recovery.yaml").read_text()
    results = {}
    for name, extra in (("default", ""), ("paired", "  pair_controls: true\n")):
        folder = tmp_path / name
        folder.mkdir()
        plan = folder / "ms.yaml"
        plan.write_text(text.replace("  replicates: 1\n", "  replicates: 1\n" + extra))
        assert run("prereg", "freeze", str(plan)).returncode == 0
        lock = folder / "ms.lock.json"
        assert run("collect", "run", str(lock), "--out", str(folder / "runs")).returncode == 0
        results[name] = evaluate(lock, folder / "runs")
    rc, data = results["default"]
    assert rc == 0 and data["decision"] == "supported"  # the example's documented decision stands
    assert {g["n_pairs"] for g in data["gates"]} == {9}  # 12 non-calibration blocks, 3 of them controls
    assert data["controls"]["paired"] is False and len(data["controls"]["blocks"]) == 4
    assert not any("outage_site=none" in b["block"] for b in data["blocks"])
    rc, data = results["paired"]
    assert {g["n_pairs"] for g in data["gates"]} == {12} and data["controls"]["paired"] is True
    proc = run("reports", "show", str(tmp_path / "default" / "runs" / "evaluation.json"), env={"NO_COLOR": "1"})
    assert "give no pairs to the gates" in " ".join(proc.stdout.split())


def test_declared_control_strata_give_no_pairs(tmp_path, equal_work_bytes):
    plan = equal_work_bytes.replace(
        b"    seed: [101, 102]\n", b"    seed: [101, 102]\n  controls: [{outage_site: 2}]\n"
    )
    assert b"controls:" in plan
    lock = freeze(tmp_path, plan)
    rc, data = evaluate(lock, imported(tmp_path, lock, equal_work_rows()))
    assert {g["n_pairs"] for g in data["gates"]} == {4} and len(data["controls"]["blocks"]) == 2


# -- 8. post-data amendments --------------------------------------------------------------------


def test_post_data_amendment_is_explained_once_with_the_next_step(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    runs = imported(tmp_path, lock, equal_work_rows())
    (tmp_path / "plan.yaml").write_bytes(equal_work_bytes.replace(b"upper < 0.02", b"upper < 0.03"))
    amend = run("prereg", "amend", str(tmp_path / "plan.yaml"), "--reason", "wider", "--runs", str(runs))
    assert amend.returncode == 0 and "POST-DATA" in amend.stdout
    rc, data = evaluate(lock, runs)
    assert rc == 3 and len(data["runs"]["other_plan"]) == 12  # the artifact keeps the full list
    note = data["other_plan_note"]
    assert "12 run(s) were collected under plan" in note and "a post-data amendment (v2" in note
    assert "Next step" in note and "collect run" in note
    for gate in data["gates"]:  # one line per kind of problem, not one per run
        assert sum("another plan hash" in r["reason"] for r in gate["refused_by"]) == 1
        assert "12 missing runs of arms adaptive, fixed" in gate["refused_by"][-3]["reason"]
        assert all(r["kind"] == "run" for r in gate["refused_by"] if "runs" in r["reason"] or "run(s)" in r["reason"])
        assert len(gate["refused_by"]) <= 4
    proc = run("gates", "evaluate", str(lock), str(runs), env={"NO_COLOR": "1", "COLUMNS": "200"})
    ids = [r.split(" ")[0] for r in data["runs"]["other_plan"]]
    assert proc.returncode == 3 and sum(proc.stdout.count(i) for i in ids) == 0
    assert proc.stdout.count("Next step") == 1 and "none of the runs in the ledger was collected" in proc.stdout
    verbose = run("gates", "evaluate", str(lock), str(runs), "--verbose", env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert all(i in verbose.stdout for i in ids)
    assert "--plan-version 1" in note
    out = tmp_path / "v1.json"
    proc = run(
        "gates",
        "evaluate",
        str(lock),
        str(runs),
        "--plan-version",
        "1",
        "--out",
        str(out),
        env={"NO_COLOR": "1", "COLUMNS": "200"},
    )
    flat = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "EARLIER VERSION of the plan, later amended: v2" in flat
    v1 = json.loads(out.read_text())
    assert v1["decision"] == "supported" and v1["superseded_by"][0].startswith("v2 ") and v1["runs"]["other_plan"] == []
    bad = run("gates", "evaluate", str(lock), str(runs), "--plan-version", "3")
    assert bad.returncode == 2 and "versions 1 to 2" in bad.stderr


# -- 9. messages that say what is expected ------------------------------------------------------


def test_whole_column_import_problems_are_said_once_with_did_you_mean(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)

    def attempt(rows: list[dict]) -> str:
        proc = run(
            "collect",
            "import",
            str(write_csv(tmp_path / "t.csv", rows)),
            "--lock",
            str(lock),
            "--out",
            str(tmp_path / "runs"),
        )
        assert proc.returncode == 2 and not (tmp_path / "runs").exists()
        return proc.stderr

    units = attempt(
        [{("final_nll (nats)" if k == "final_nll" else k): v for k, v in r.items()} for r in equal_work_rows()]
    )
    assert units.count("final_nll (nats)") == 1 and "did you mean 'final_nll'? Units belong in the plan" in units
    assert "expected columns: arm, outage_site, seed" in units and "row " not in units
    index = attempt([{"Unnamed: 0": i, **r} for i, r in enumerate(equal_work_rows())])
    assert "pandas index column" in index and index.count("Unnamed: 0") == 1
    floats = attempt([{**r, "seed": f"{r['seed']}.0"} for r in equal_work_rows()])
    assert "column 'seed': 12 of 12 rows do not fit" in floats and "without '.0'" in floats
    assert floats.count("is not a level") == 1


def test_wrong_files_get_what_the_command_expects(tmp_path, equal_work_bytes):
    lock = freeze(tmp_path, equal_work_bytes)
    runs = imported(tmp_path, lock, equal_work_rows())
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    proc = run("collect", "import", str(table), "--lock", str(tmp_path / "plan.yaml"), "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "run 'prereg freeze" in proc.stderr and "plan.lock.json" in proc.stderr
    proc = run("gates", "evaluate", str(tmp_path / "plan.yaml"), str(runs))
    assert proc.returncode == 2 and "run 'prereg freeze" in proc.stderr
    proc = run("reports", "show", str(runs / "ledger.jsonl"))
    assert (
        proc.returncode == 2 and "is a run ledger, not an evaluation" in proc.stderr and "gates evaluate" in proc.stderr
    )
    proc = run("reports", "show", str(runs))
    assert proc.returncode == 2 and "is a folder" in proc.stderr and "evaluation.json" in proc.stderr
    proc = run("gates", "evaluate", str(lock), str(table))
    assert proc.returncode == 2 and "is a table of runs" in proc.stderr and "collect import" in proc.stderr
    proc = run("gates", "evaluate", str(lock), str(runs / "ledger.jsonl"))
    assert proc.returncode == 2 and "not the ledger file" in proc.stderr
