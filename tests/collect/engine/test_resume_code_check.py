"""A resume into a runs folder whose code files changed since its first run is refused before any run,
naming the files and the ways on (``collect.engine.resume_check``)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from collect.engine.resume_check import CodeChanged, check_code_unchanged
from collect.engine.runs import PlannedRun
from collect.ledger.store import read_ledger
from prereg.api import freeze
from prereg.errors import EXIT_INTEGRITY
from prereg.plan import parse_plan
from tests.helpers import run

TARGET = "collect.collectors.command.collector:CommandCollector"
PROGRAM = """import json, os
run = json.load(open(os.environ["PREREG_RUN"]))
json.dump({"value": run["params"]["offset"] + run["seed"] % 7}, open(os.environ["PREREG_METRICS"], "w"))
"""
PLAN = """schema: prereg/v1
study: resume-code
title: Resume after a code edit
hypothesis: Arm b's value is higher.
experiment:
  collector: {collector}
  params:
    argv: [{python}, prog.py]
    code: [prog.py, "lib/*.py"]
{extra}arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0}}
strata:
  factors:
    site: [0, 1]
metrics:
  value: {{unit: unit, better: higher, evidence: measured}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""
MAY_DIFFER = "code_identity: {may_differ: [files], reason: a bug fix half-way through collection}\n"


def plan_text(collector: str = "command", extra: str = "") -> str:
    return PLAN.format(collector=collector, python=json.dumps(sys.executable), extra=extra)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _record(run_id: str, files: dict[str, str] | None, git: dict | None = None) -> SimpleNamespace:
    code = (
        {"collector": "command"}
        if files is None
        else {"collector": "command", "command": {"files": files, "files_git": git}}
    )
    return SimpleNamespace(run_id=run_id, code=code, started_at="2026-01-02T03:04:05Z")


def _planned(workdir: Path) -> list[PlannedRun]:
    params = {"argv": ["python", "prog.py"], "code": ["prog.py", "lib/*.py"], "workdir": str(workdir)}
    return [PlannedRun(f"r{i}", {"site": i}, arm, 0, 7, params) for i in range(2) for arm in "ab"]


def _project(root: Path) -> dict[str, str]:
    (root / "lib").mkdir()
    (root / "prog.py").write_text(PROGRAM)
    (root / "lib" / "util.py").write_text("X = 1\n")
    return {"prog.py": sha(PROGRAM), "lib/util.py": sha("X = 1\n")}


def test_changed_new_and_gone_files_are_named_with_the_recorded_commit(tmp_path):
    recorded = _project(tmp_path)
    plan = parse_plan(plan_text().encode()).plan
    planned = _planned(tmp_path)
    git = {"commit": "0123456789abcdef" * 2 + "01234567", "dirty": False}
    records = [_record("r0", None), _record("r0", recorded, git), _record("r1", {"prog.py": "0" * 64})]
    check_code_unchanged(plan, "command", planned, records, tmp_path / "runs", "s.lock.json")  # nothing changed
    (tmp_path / "prog.py").write_text(PROGRAM + "# tuned\n")
    (tmp_path / "lib" / "new.py").write_text("Y = 2\n")
    (tmp_path / "lib" / "util.py").unlink()
    with pytest.raises(CodeChanged) as caught:
        check_code_unchanged(plan, "command", planned, records, tmp_path / "runs", "s.lock.json")
    err = caught.value
    assert err.exit_code == EXIT_INTEGRITY
    assert err.details == ["prog.py (changed)", "lib/new.py (new: not there at the first run)", "lib/util.py (gone)"]
    text = str(err)
    assert "since this runs folder's first run (r0, started 2026-01-02T03:04:05Z)" in text  # the first with files
    assert "Nothing was run" in text
    assert "commit 0123456789ab (clean)" in text and "git checkout 0123456789ab -- prog.py lib/util.py" in text
    assert f"collect run s.lock.json --out {tmp_path / 'runs'} --resume" in text
    assert "collect into a new one ('collect run s.lock.json --out NEW_RUNS')" in text


def test_no_git_commit_a_declared_difference_and_other_collectors(tmp_path):
    recorded = _project(tmp_path)
    (tmp_path / "prog.py").write_text(PROGRAM + "# tuned\n")
    records = [_record("r0", recorded)]
    planned = _planned(tmp_path)
    plan = parse_plan(plan_text().encode()).plan
    with pytest.raises(CodeChanged, match=r"no git commit recorded .*their SHA-256 are in the folder's records"):
        check_code_unchanged(plan, "command", planned, records, tmp_path, "s.lock.json")
    # a run of an earlier plan version (another run id) is the folder's first run too
    with pytest.raises(CodeChanged):
        check_code_unchanged(plan, "command", planned, [_record("older-plan-run", recorded)], tmp_path, "s.lock.json")
    declared = parse_plan(plan_text(extra=MAY_DIFFER).encode()).plan
    check_code_unchanged(declared, "command", planned, records, tmp_path, "s.lock.json")  # the plan said so
    check_code_unchanged(plan, "sim.churn", planned, records, tmp_path, "s.lock.json")  # no code files recorded
    check_code_unchanged(plan, "command", planned, [_record("r0", None)], tmp_path, "s.lock.json")  # failed runs


@pytest.mark.subprocess
def test_collect_run_resume_after_a_code_edit_exits_3_and_runs_nothing(tmp_path, monkeypatch):
    """A partial sweep, an edit of prog.py, then ``collect run --resume``: exit 3 with the message; the
    ledger keeps its one run. With the file restored the resume finishes the sweep."""
    import collect.api

    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(collector=TARGET))
    freeze(plan_file)
    lock = tmp_path / "plan.lock.json"
    first = collect.api.planned_runs(lock)[0].run_id
    summary = collect.api.run_plan(lock, tmp_path / "runs", only=[first])
    assert (summary.completed, summary.failed) == (1, 0)
    (tmp_path / "prog.py").write_text(PROGRAM + "# a fix before the resume\n")
    proc = run("collect", "run", str(lock), "--out", "runs", "--resume", cwd=tmp_path, timeout=300)
    assert proc.returncode == EXIT_INTEGRITY, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert "the code files changed since this runs folder's first run" in message and "prog.py (changed)" in message
    assert "Traceback" not in proc.stderr
    assert [r.run_id for r in read_ledger(tmp_path / "runs").records] == [first]
    (tmp_path / "prog.py").write_text(PROGRAM)
    proc = run("collect", "run", str(lock), "--out", "runs", "--resume", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(read_ledger(tmp_path / "runs").records) == 4
