"""End to end through the installed console scripts: every subcommand, its JSON and its exit codes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.conftest import REPO, shared_example_path
from tests.helpers import run

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


@pytest.fixture
def study(tmp_path: Path) -> Path:
    target = tmp_path / "equal-work.yaml"
    target.write_bytes(shared_example_path("equal-work.yaml").read_bytes())
    return target


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.subprocess(quick=True)
def test_validate(study):
    proc = run("prereg", "validate", str(study))
    assert proc.returncode == 0
    assert "valid prereg/v1 plan" in proc.stdout and "2 arms, 6 strata" in proc.stdout
    data = json.loads(run("prereg", "validate", str(study), "--json").stdout)
    assert data["ok"] and len(data["plan_sha256"]) == 64


def test_validate_reports_line_and_field(study):
    edit(study, "pass_if: upper < 0.02", "pass_if: upper > 0.02")
    proc = run("prereg", "validate", str(study))
    assert proc.returncode == 2
    assert f"{study}:54:14: gates[0].pass_if:" in proc.stderr
    data = json.loads(run("prereg", "validate", str(study), "--json").stdout)
    assert data["ok"] is False and data["exit_code"] == 2
    assert data["details"][0] == {
        "field": "gates[0].pass_if",
        "line": 54,
        "column": 14,
        "message": data["details"][0]["message"],
    }


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "empty"),
        (b"\x00\x01\x02\xff" * 50, "NUL"),
        (b"\x89PNG\r\n\x1a\n\xff\xd8", "UTF-8"),
        (b"[1, 2", "invalid YAML"),
        (b"a: !!python/object/apply:os.system [ls]", "tags"),
    ],
)
def test_validate_junk(tmp_path, content, words):
    target = tmp_path / "junk.yaml"
    target.write_bytes(content)
    proc = run("prereg", "validate", str(target))
    assert proc.returncode == 2 and words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_validate_missing_and_directory(tmp_path):
    assert "no such file" in run("prereg", "validate", str(tmp_path / "none.yaml")).stderr
    proc = run("prereg", "validate", str(tmp_path))
    assert proc.returncode == 2 and "is a folder" in proc.stderr


@pytest.mark.subprocess(quick=True)
def test_usage_errors_exit_2():
    assert run("prereg", "frobnicate").returncode == 2
    assert run("prereg", "validate").returncode == 2
    assert run("prereg").returncode == 2


@pytest.mark.subprocess(quick=True)
def test_freeze_writes_a_read_only_lock_and_is_idempotent(study):
    proc = run("prereg", "freeze", str(study))
    assert proc.returncode == 0, proc.stderr
    lock_path = study.with_name("equal-work.lock.json")
    lock = json.loads(lock_path.read_text())
    assert set(lock) >= {
        "format",
        "plan",
        "plan_sha256",
        "yaml_sha256",
        "frozen_at",
        "toolkit_version",
        "environment",
        "amendments",
    }
    assert lock["plan_sha256"] in proc.stdout and lock["amendments"] == []
    assert lock["frozen_at"].endswith("Z") and lock["environment"]["python"]
    assert not lock_path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert [p.name for p in study.parent.iterdir() if p.name.startswith(".")] == []  # no temp files left
    again = json.loads(run("prereg", "freeze", str(study), "--json").stdout)
    assert again["status"].startswith("already frozen") and again["plan_sha256"] == lock["plan_sha256"]
    assert json.loads(lock_path.read_text())["frozen_at"] == lock["frozen_at"]  # not rewritten


def test_freeze_refuses_a_changed_plan(study):
    run("prereg", "freeze", str(study))
    edit(study, "upper < 0.02", "upper < 0.05")
    proc = run("prereg", "freeze", str(study))
    assert proc.returncode == 2 and "prereg amend" in proc.stderr


def test_freeze_output_path_and_invalid_plan(study, tmp_path):
    out = tmp_path / "locks" / "deep" / "x.lock.json"
    assert run("prereg", "freeze", str(study), "-o", str(out)).returncode == 0 and out.is_file()
    edit(study, "method: t", "method: z")
    proc = run("prereg", "freeze", str(study), "-o", str(tmp_path / "y.lock.json"))
    assert proc.returncode == 2 and not (tmp_path / "y.lock.json").exists()


def test_verify(study):
    run("prereg", "freeze", str(study))
    lock = str(study.with_name("equal-work.lock.json"))
    proc = run("prereg", "verify", lock)
    assert proc.returncode == 0 and "intact" in proc.stdout
    edit(study, "# Preregistration", "# Comment changed\n# Preregistration")
    proc = run("prereg", "verify", lock)
    assert proc.returncode == 0 and "comments or layout" in proc.stdout
    edit(study, "upper < 0.02", "upper < 0.05")
    proc = run("prereg", "verify", lock)
    assert proc.returncode == 3 and "gates[0].pass_if" in proc.stderr
    report = json.loads(run("prereg", "verify", lock, "--json").stdout)
    assert report["ok"] is False and report["differences"]
    edit(study, "method: t", "method: zz")
    proc = run("prereg", "verify", lock)
    assert proc.returncode == 3 and "no longer validates" in proc.stderr


def test_verify_explicit_yaml_and_bad_inputs(study, tmp_path):
    run("prereg", "freeze", str(study), "-o", str(tmp_path / "elsewhere.lock.json"))
    lock = str(tmp_path / "elsewhere.lock.json")
    assert run("prereg", "verify", lock, "--yaml", str(study)).returncode == 0
    assert run("prereg", "verify", lock, "--yaml", str(tmp_path / "no.yaml")).returncode == 2
    (tmp_path / "junk.json").write_text("{not json")
    assert run("prereg", "verify", str(tmp_path / "junk.json")).returncode == 2
    (tmp_path / "other.json").write_text('{"hello": 1}')
    proc = run("prereg", "verify", str(tmp_path / "other.json"))
    assert proc.returncode == 2 and "not a prereg lock" in proc.stderr
    assert run("prereg", "verify", str(tmp_path)).returncode == 2


def tamper(lock_path: Path, change) -> Path:
    lock = json.loads(lock_path.read_text())
    change(lock)
    target = lock_path.with_name("tampered.lock.json")
    target.write_text(json.dumps(lock))
    return target


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["plan"]["gates"][0].update(pass_if="upper < 0.5"), "does not match"),
        (lambda d: d.update(plan_sha256="0" * 64), "does not match"),
        (lambda d: d["plan"]["gates"][0].update(method="nonsense"), "no longer validates"),
        (lambda d: d.pop("amendments"), "amendment chain"),
        (lambda d: d["amendments"][0].update(reason="something nicer"), "edited after it was written"),
        (lambda d: d["amendments"][0]["parent_plan"]["gates"][0].update(pass_if="upper < 9.0"), "parent"),
        (lambda d: d["amendments"][0].update(amended_at="2000-01-01T00:00:00Z"), "backwards"),
        (lambda d: d.update(amendments=[]), "does not match"),
    ],
)
def test_tampered_locks_fail_with_exit_3(study, change, words):
    run("prereg", "freeze", str(study))
    edit(study, "upper < 0.02", "upper < 0.03")
    assert run("prereg", "amend", str(study), "--reason", "pilot showed 0.02 is too tight").returncode == 0
    lock_path = study.with_name("equal-work.lock.json")
    assert run("prereg", "verify", str(lock_path)).returncode == 0
    target = tamper(lock_path, change)
    proc = run("prereg", "verify", str(target))
    assert proc.returncode == 3 and words in proc.stderr, proc.stderr


def test_amend_chain(study, tmp_path):
    lock_path = study.with_name("equal-work.lock.json")
    run("prereg", "freeze", str(study))
    first = json.loads(lock_path.read_text())["plan_sha256"]
    edit(study, "upper < 0.02", "upper < 0.03")
    runs = tmp_path / "runs"
    runs.mkdir()
    out = json.loads(
        run("prereg", "amend", str(study), "--reason", "before data", "--runs", str(runs), "--json").stdout
    )
    assert out["post_data"] is False and out["runs_checked"] is True and out["changed"] == ["gates[0].pass_if"]
    assert out["parent_plan_sha256"] == first and out["version"] == 2
    (runs / "ledger.jsonl").write_text('{"run_id": "r1"}\n')
    edit(study, "upper < 0.03", "upper < 0.04")
    out = json.loads(run("prereg", "amend", str(study), "--reason", "after data", "--runs", str(runs), "--json").stdout)
    assert out["post_data"] is True and out["version"] == 3
    edit(study, "multiplicity: none", "multiplicity: holm")
    proc = run("prereg", "amend", str(study), "--reason", "no runs named")
    assert proc.returncode == 0 and "not checked" in proc.stdout
    lock = json.loads(lock_path.read_text())
    assert [a["version"] for a in lock["amendments"]] == [2, 3, 4]
    assert lock["amendments"][0]["parent_plan_sha256"] == first
    assert lock["amendments"][1]["runs"]["ledger_lines"] == 1
    assert run("prereg", "verify", str(lock_path)).returncode == 0
    shown = run("prereg", "show", str(lock_path), env={"NO_COLOR": "1", "COLUMNS": "80"})
    assert shown.returncode == 0 and "POST-DATA" in shown.stdout and "after data" in shown.stdout
    assert "\x1b[" not in shown.stdout
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80


def test_amend_refusals(study, tmp_path):
    assert "freeze the plan first" in run("prereg", "amend", str(study), "--reason", "x").stderr
    run("prereg", "freeze", str(study))
    assert "nothing to amend" in run("prereg", "amend", str(study), "--reason", "x").stderr
    edit(study, "upper < 0.02", "upper < 0.03")
    assert run("prereg", "amend", str(study), "--reason", "  ").returncode == 2
    assert run("prereg", "amend", str(study)).returncode == 2  # --reason is required
    assert run("prereg", "amend", str(study), "--reason", "x", "--runs", str(tmp_path / "none")).returncode == 2
    lock_path = study.with_name("equal-work.lock.json")
    broken = json.loads(lock_path.read_text())
    broken["plan_sha256"] = "f" * 64
    lock_path.chmod(0o644)
    lock_path.write_text(json.dumps(broken))
    proc = run("prereg", "amend", str(study), "--reason", "x")
    assert proc.returncode == 3 and "refusing to amend" in proc.stderr


def test_show(study):
    run("prereg", "freeze", str(study))
    lock = str(study.with_name("equal-work.lock.json"))
    proc = run("prereg", "show", lock, env={"COLUMNS": "80"})
    assert proc.returncode == 0
    for words in ("learning_noninferior", "energy_counter", "INTACT", "Amendments: none", "Claim:"):
        assert words in proc.stdout
    data = json.loads(run("prereg", "show", lock, "--json").stdout)
    assert data["verification"]["ok"]
    gates, invalidators = data["sentences"]["gates"], data["sentences"]["invalidators"]
    assert gates["learning_noninferior"].startswith(
        "passes if the one-sided 95% upper bound of adaptive - fixed final_nll [nats] is below 0.02 nats"
    )
    assert "the ratio adaptive / fixed of energy (analysed on the log scale) is below 0.95" in gates["energy_saving"]
    assert invalidators["counter_support"].endswith("fewer than 20 updates of energy_counter; blocks energy_saving.")


def sentences(lock: Path) -> dict:
    data = json.loads(run("prereg", "show", str(lock), "--json").stdout)
    return {**data["sentences"]["gates"], **data["sentences"]["invalidators"]}


def test_show_own_examples_with_every_sentence_kind(tmp_path):
    for example in (REPO / "examples").glob("*.yaml"):
        out = tmp_path / (example.stem + ".lock.json")
        assert run("prereg", "freeze", str(example), "-o", str(out)).returncode == 0
        proc = run("prereg", "show", str(out), env={"COLUMNS": "80"})
        assert proc.returncode == 0 and "passes if" in proc.stdout
    churn = sentences(tmp_path / "churn-cadence.lock.json")
    assert (
        "interval of exact - young efficiency [fraction] lies within [-0.005, 0.005]"
        in churn["exact_equivalent_to_young"]
    )
    assert (
        "one-sided 95% lower bound of exact - young efficiency [fraction] is above -0.005"
        in churn["exact_noninferior_to_young"]
    )
    assert "one-sided 97.5% upper bound of the ratio exact / doubled" in churn["exact_beats_doubled"]
    multi = sentences(tmp_path / "multisite-recovery.lock.json")
    assert "agree exactly on completion_time in the control strata where outage_site = none" in multi["controls_agree"]
    assert "non-finite or outside [0, 1] ratio" in multi["sane_goodput"]
    assert "sensitivity gate" in multi["goodput_signflip"]
    assert "lower bound" in multi["goodput_signflip"]


def test_init(tmp_path):
    target = tmp_path / "study.yaml"
    assert run("prereg", "init", str(target)).returncode == 0
    assert run("prereg", "validate", str(target)).returncode == 0
    before = target.read_bytes()
    proc = run("prereg", "init", str(target))
    assert proc.returncode == 2 and "already exists" in proc.stderr and target.read_bytes() == before
    assert run("prereg", "init", cwd=tmp_path).returncode == 2  # the default path, study.yaml, exists


def test_init_plan_runs_as_written(tmp_path):
    """The starter plan freezes, runs with its collector and evaluates without an amendment."""
    assert run("prereg", "init", cwd=tmp_path).returncode == 0
    assert run("prereg", "freeze", "study.yaml", cwd=tmp_path).returncode == 0
    collected = run("collect", "run", "study.lock.json", "--out", "runs", "--json", cwd=tmp_path)
    assert collected.returncode == 0, collected.stderr
    assert json.loads(collected.stdout)["completed"] == 12
    evaluated = run("gates", "evaluate", "study.lock.json", "runs", "--json", cwd=tmp_path)
    assert evaluated.returncode in (0, 1), evaluated.stderr  # a decision, never refused or bad input
    result = json.loads(evaluated.stdout)
    assert result["decision"] in ("supported", "not_supported")
    assert all(g["verdict"] in ("pass", "fail") for g in result["gates"])


def test_schema():
    proc = run("prereg", "schema")
    schema = json.loads(proc.stdout)
    assert proc.returncode == 0 and schema["$id"] == "prereg/v1"
    assert {"schema", "study", "arms", "strata", "metrics", "gates", "decision"} <= set(schema["required"])
    assert "pass_if" in schema["$defs"]["Gate"]["properties"]
    assert schema["additionalProperties"] is False


@pytest.mark.subprocess(quick=True)
def test_other_console_scripts_exist():
    for prog in ("collect", "gates", "reports"):
        proc = run(prog, "--help")
        assert proc.returncode == 0 and "exit codes" in proc.stdout
