"""Code identity enforced (``gates.code_identity``): the runs of one study were made by the same code,
or the plan declares up front which parts may differ and why; every report says which."""

from __future__ import annotations

import copy
import html
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from collect.ledger.records import run_id
from collect.ledger.store import RunRecord, append_records, read_ledger
from gates.api import evaluate
from gates.artifact import write_evaluation
from prereg.api import freeze
from prereg.lock import utc_now
from prereg.lock_seal import lock_seal
from prereg.plan import PlanError, load_plan
from prereg.schema import CODE_PARTS
from reports.html.page import html_report
from reports.markdown.evaluation import evaluation_markdown
from reports.terminal.evaluation import render_evaluation
from tests.helpers import run
from tests.helpers.gates import gate_line, plan_text

BLOCKS = 4
CODE: dict[str, Any] = {
    "toolkit_version": "0.9.0",
    "collector": "command",
    "git": {"commit": "a" * 40, "dirty": False},
    "command": {
        "files": {"prog.py": "1" * 64},
        "files_sha256": "1a2b" * 16,
        "files_git": {"commit": "c" * 40, "dirty": False},
        "python": {"version": "3.12.1", "implementation": "CPython"},
        "packages": {"torch": "2.3.0", "numpy": "2.0.0"},
    },
}
#: one change per part, applied to one run's code
CHANGES = {
    "files": lambda c: c["command"].update(files_sha256="3c4d" * 16),
    "files_git": lambda c: c["command"].update(files_git={"commit": "c" * 40, "dirty": True}),
    "python": lambda c: c["command"]["python"].update(version="3.13.0"),
    "packages": lambda c: c["command"]["packages"].update(torch="2.4.0"),
    "toolkit": lambda c: c.update(toolkit_version="1.0.0"),
    "git": lambda c: c.update(git={"commit": "b" * 40, "dirty": False}),
}
DECLARED = """code_identity:
  may_differ: [files]
  reason: The data loader's off-by-one was fixed after the first two blocks; its output is unchanged.
"""


def lock_of(tmp_path: Path, extra: str = "") -> Path:
    text = plan_text(BLOCKS, gate_line("no_worse", "t", "upper < 0.5")).decode() + extra
    (tmp_path / "plan.yaml").write_text(text)
    return freeze(tmp_path / "plan.yaml").path


def ledger(tmp_path: Path, lock: Path, code_of: Any = None) -> Path:
    """A runs folder holding every planned run of ``lock`` (arms a, b x blocks), collected now; each
    record's ``code`` is ``code_of(index, block, arm)`` (default: the same ``CODE`` for all)."""
    data = json.loads(lock.read_text())
    sha, seal, records = data["plan_sha256"], lock_seal(data), []
    for block in range(1, BLOCKS + 1):
        for arm, loss in (("a", 2.0 + 0.01 * block), ("b", 2.0)):
            stratum = {"block": block}
            code = code_of(len(records), block, arm) if code_of else copy.deepcopy(CODE)
            records.append(
                RunRecord(
                    run_id=run_id(sha, stratum, arm, 0),
                    prereg_sha256=sha,
                    lock_seal=seal,
                    stratum=stratum,
                    arm=arm,
                    replicate=0,
                    status="complete",
                    metrics={"loss": loss},
                    started_at=utc_now(),
                    finished_at=utc_now(),
                    code=code,
                )
            )
    runs = tmp_path / "runs"
    append_records(runs, records)
    return runs


def changed(part: str, index: int = 7) -> Any:
    """A ``code_of`` changing ``part`` in the run at ``index`` (the last by default)."""

    def code_of(i: int, block: int, arm: str) -> dict[str, Any]:
        code = copy.deepcopy(CODE)
        if i == index:
            CHANGES[part](code)
        return code

    return code_of


def reports_of(ev: Any, runs: Path) -> dict[str, str]:
    """The terminal, Markdown and HTML reports of ``ev``, whitespace collapsed."""
    console = Console(width=100, file=io.StringIO(), no_color=True, highlight=False)
    console.print(render_evaluation(ev))
    write_evaluation(runs / "evaluation.json", ev)
    page, _ = html_report(runs / "evaluation.json")
    return {
        "terminal": " ".join(console.file.getvalue().replace("│", " ").split()),
        "markdown": " ".join(evaluation_markdown(ev).split()).replace("\\", ""),
        "html": html.unescape(" ".join(page.split())),
    }


def test_every_part_has_a_change_here():
    assert set(CHANGES) == set(CODE_PARTS)


def test_the_same_identity_refuses_nothing(tmp_path):
    lock = lock_of(tmp_path)
    runs = ledger(tmp_path, lock)
    ev = evaluate(lock, runs)
    assert ev.decision == "supported" and ev.decision_refused_by == []
    c = ev.code_identity
    assert c is not None and c.status == "same" and c.parts == [] and c.examples == []
    assert c.compared == list(CODE_PARTS) and c.runs == 2 * BLOCKS and c.without_identity == 0 and c.notes == []
    assert "all 8 run(s) with a code identity were made by the same code" in reports_of(ev, runs)["terminal"]


def test_a_changed_files_sha256_refuses_the_decision_naming_the_part_and_two_runs(tmp_path):
    lock = lock_of(tmp_path)
    runs = ledger(tmp_path, lock, changed("files"))
    ev = evaluate(lock, runs)
    assert ev.decision == "refused" and [g.verdict for g in ev.gates] == ["pass"]  # the gates stand; the decision not
    (refusal,) = ev.decision_refused_by
    first, last = read_ledger(runs).records[0].run_id, read_ledger(runs).records[-1].run_id
    assert refusal.kind == "code_identity" and refusal.id is None
    assert refusal.reason.startswith(
        f"code identity differs between runs: files_sha256 differs ({first}: 1a2b1a2b1a2b, "
        f"{last}: 3c4d3c4d3c4d); the study's runs were not made by the same code"
    )
    assert "code_identity: {may_differ: [files], reason: ...}" in refusal.reason
    c = ev.code_identity
    assert c is not None and c.status == "differs" and c.parts == ["files"]
    assert c.examples[0].runs == [first, last] and c.examples[0].record_field == "code.command.files_sha256"
    for name, text in reports_of(ev, runs).items():
        assert "CODE DIFFERS BETWEEN RUNS (the decision is refused): files_sha256 differs" in text, name
        assert "code identity differs between runs" in text, name  # the decision's reason


@pytest.mark.parametrize("part", list(CODE_PARTS))
def test_every_part_is_compared(tmp_path, part):
    lock = lock_of(tmp_path)
    ev = evaluate(lock, ledger(tmp_path, lock, changed(part, index=3)))
    assert ev.decision == "refused" and ev.code_identity is not None and ev.code_identity.parts == [part]
    words = {
        "files": "files_sha256 differs",
        "files_git": "files_git differs",
        "python": "python.version differs",
        "packages": "packages differs",
        "toolkit": "toolkit_version differs",
        "git": "git differs",
    }
    assert words[part] in ev.decision_refused_by[0].reason
    example = ev.code_identity.examples[0]
    if part == "packages":  # only the packages whose versions differ are named
        assert example.values == ["torch 2.3.0", "torch 2.4.0"]
    if part == "files_git":
        assert example.values == [f"commit {'c' * 12} (clean)", f"commit {'c' * 12} (dirty)"]
        assert any("uncommitted changes" in n and "the code file hashes do" in n for n in ev.code_identity.notes)


def test_a_part_some_runs_lack_differs_and_one_no_run_records_is_not_compared(tmp_path):
    def code_of(i: int, block: int, arm: str) -> dict[str, Any]:
        code = copy.deepcopy(CODE)
        code.pop("command")  # not a command run: no files, files_git, python, packages
        if i == 5:
            code["git"] = None  # collected outside a repository
        return code

    lock = lock_of(tmp_path)
    ev = evaluate(lock, ledger(tmp_path, lock, code_of))
    c = ev.code_identity
    assert c is not None and c.compared == ["toolkit", "git"] and c.parts == ["git"]
    assert c.examples[0].values == [f"commit {'a' * 12} (clean)", "not recorded"]
    assert ev.decision == "refused"


def test_a_declared_difference_does_not_refuse_and_every_report_says_so(tmp_path):
    lock = lock_of(tmp_path, DECLARED)
    runs = ledger(tmp_path, lock, changed("files"))
    ev = evaluate(lock, runs)
    assert ev.decision == "supported" and ev.decision_refused_by == []
    c = ev.code_identity
    assert c is not None and c.status == "differs_declared" and c.parts == c.declared == ["files"]
    assert c.reason is not None and c.reason.startswith("The data loader's off-by-one was fixed")
    for name, text in reports_of(ev, runs).items():
        assert (
            "CODE DIFFERED BETWEEN RUNS, AS THE PLAN DECLARES (may differ: files): files_sha256 differs" in text
            and "the plan's reason: \"The data loader's off-by-one was fixed" in text
        ), name


def test_a_declaration_covers_only_the_parts_it_names(tmp_path):
    lock = lock_of(tmp_path, DECLARED)

    def code_of(i: int, block: int, arm: str) -> dict[str, Any]:
        code = changed("files")(i, block, arm)
        if i == 6:
            CHANGES["python"](code)
        return code

    ev = evaluate(lock, ledger(tmp_path, lock, code_of))
    c = ev.code_identity
    assert ev.decision == "refused" and c is not None and c.status == "differs" and c.parts == ["files", "python"]
    (refusal,) = ev.decision_refused_by
    assert "python.version differs" in refusal.reason and "files_sha256" not in refusal.reason
    assert "may_differ: [python]" in refusal.reason


def test_imported_runs_are_not_compared_and_a_mix_says_so(tmp_path):
    lock = lock_of(tmp_path)
    ev = evaluate(lock, ledger(tmp_path, lock, lambda i, b, a: {"imported": True}))
    c = ev.code_identity
    assert ev.decision == "supported" and c is not None and c.status == "not_recorded" and c.runs == 0
    assert c.without_identity == 8 and "cannot be shown" in c.notes[0]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    runs = ledger(mixed, lock, lambda i, b, a: {"imported": True} if i < 2 else copy.deepcopy(CODE))
    ev = evaluate(lock, runs)
    c = ev.code_identity
    assert (
        ev.decision == "supported" and c is not None and c.status == "same" and (c.runs, c.without_identity) == (6, 2)
    )
    assert c.notes == [
        "2 of the 8 matched run(s) carry no code identity (imported: made elsewhere); only the other 6 were compared"
    ]
    assert c.notes[0] in reports_of(ev, runs)["markdown"]


def test_a_declaration_needs_parts_and_a_reason(tmp_path):
    base = plan_text(BLOCKS, gate_line("no_worse", "t", "upper < 0.5")).decode()
    for extra, words in (
        ("code_identity: {may_differ: [files]}\n", "reason"),
        ("code_identity: {may_differ: [files], reason: '  '}\n", "white space"),
        ("code_identity: {may_differ: [], reason: why}\n", "at least 1"),
        ("code_identity: {may_differ: [source], reason: why}\n", "files"),
        ("code_identity: {may_differ: [git, git], reason: why}\n", "named twice"),
    ):
        (tmp_path / "plan.yaml").write_text(base + extra)
        with pytest.raises(PlanError) as err:
            load_plan(tmp_path / "plan.yaml")
        assert "code_identity" in err.value.render() and words in err.value.render(), extra


@pytest.mark.subprocess(quick=True)
def test_freeze_refuses_a_declaration_without_a_reason_and_evaluate_exits_3(tmp_path):
    (tmp_path / "bad.yaml").write_text(
        plan_text(BLOCKS, gate_line("no_worse", "t", "upper < 0.5")).decode() + "code_identity: {may_differ: [files]}\n"
    )
    proc = run("prereg", "freeze", str(tmp_path / "bad.yaml"))
    assert proc.returncode == 2 and "code_identity" in proc.stderr and "reason" in proc.stderr, proc.stderr
    lock = lock_of(tmp_path)
    runs = ledger(tmp_path, lock, changed("files"))
    proc = run("gates", "evaluate", str(lock), str(runs), env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "code identity differs between runs: files_sha256 differs" in " ".join(proc.stdout.split())


COUNTER = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
from lib import util
run = json.load(open(os.environ["PREREG_RUN"]))
if run["params"]["site"] == 1 and os.path.exists("broken"):
    sys.exit("site 1 is broken until the fix")
json.dump({"value": run["params"]["offset"] + util.X}, open(os.environ["PREREG_METRICS"], "w"))
"""
COMMAND_PLAN = """schema: prereg/v1
study: command-identity
title: Command identity
hypothesis: Arm b's value is higher.
experiment:
  collector: collect.collectors.command.collector:CommandCollector
  params:
    argv: [{python}, prog.py]
    code: [prog.py, "lib/*.py"]
arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0}}
strata:
  factors:
    site: [0, 1]
metrics:
  value: {{unit: unit, better: higher, evidence: measured, deterministic: true}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
{extra}"""


@pytest.mark.slow
@pytest.mark.parametrize("declared", [False, True])
def test_a_code_file_edited_between_collect_runs_refuses_unless_declared(tmp_path, declared):
    """The real ``command`` collector: site 1 fails, a code file is edited (the fix). Declared: ``collect
    run --resume`` reruns the failed cells under the new code, the matched runs' files_sha256 differ and
    the report says so. Undeclared: the resume is refused before any run (``collect.engine.resume_check``)."""
    (tmp_path / "prog.py").write_text(COUNTER)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "util.py").write_text("X = 0.0\n")
    (tmp_path / "broken").write_text("")
    extra = "code_identity: {may_differ: [files], reason: The fix of site 1 touched lib/util.py only.}\n"
    (tmp_path / "study.yaml").write_text(
        COMMAND_PLAN.format(python=json.dumps(sys.executable), extra=extra if declared else "")
    )
    assert run("prereg", "freeze", "study.yaml", cwd=tmp_path).returncode == 0
    first = run("collect", "run", "study.lock.json", "--out", "runs", cwd=tmp_path, timeout=300)
    assert first.returncode == 1 and "2 runs completed, 2 failed" in first.stdout, first.stdout + first.stderr
    (tmp_path / "broken").unlink()
    (tmp_path / "lib" / "util.py").write_text("X = 0.0  # fixed\n")
    again = run("collect", "run", "study.lock.json", "--out", "runs", "--resume", cwd=tmp_path, timeout=300)
    if not declared:
        assert again.returncode == 3 and "lib/util.py (changed)" in " ".join(again.stderr.split()), again.stderr
        assert len(read_ledger(tmp_path / "runs").records) == 4  # nothing run: 2 complete, 2 failed
        return
    assert again.returncode == 0, again.stdout + again.stderr
    proc = run("gates", "evaluate", "study.lock.json", "runs", "--json", cwd=tmp_path)
    data = json.loads(proc.stdout)
    c = data["code_identity"]
    assert c["parts"] == ["files"] and "files" in c["compared"] and c["runs"] == 4
    assert proc.returncode == 0 and data["decision"] == "supported" and c["status"] == "differs_declared"
    report = run("reports", "show", "runs/evaluation.json", cwd=tmp_path, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "CODE DIFFERED BETWEEN RUNS, AS THE PLAN DECLARES" in " ".join(report.stdout.split())
