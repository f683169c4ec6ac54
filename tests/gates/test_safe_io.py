"""Outputs never overwrite what they must not; shown text carries no control sequences; artifacts
that contradict themselves (or their seal) are refused by ``reports show``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gates.artifact import seal_hash
from tests.conftest import shared_example_path
from tests.helpers import frozen_shared, imported_equal_work, run

EVIL = r'"Evil \e[2K\rSUPPORTED \x9b31m \u202e"'


def _study(tmp_path: Path, title: str | None = None) -> tuple[Path, Path]:
    text = shared_example_path("equal-work.yaml").read_text()
    if title:
        text = "\n".join(f"title: {title}" if line.startswith("title:") else line for line in text.splitlines()) + "\n"
    lock = frozen_shared(tmp_path, text=text)
    return lock, imported_equal_work(tmp_path, lock)


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path]:
    return _study(tmp_path)


@pytest.mark.subprocess
def test_outputs_never_replace_a_ledger_lock_plan_trace_or_special_file(study, tmp_path):
    lock, runs = study
    ledger = runs / "ledger.jsonl"
    (runs / "traces").mkdir()
    trace = runs / "traces" / "run.events.jsonl"
    trace.write_text("{}\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere.json")
    protected = [ledger, lock, tmp_path / "equal-work.yaml", trace, runs / ".collect.lock"]
    before = {p: p.read_bytes() for p in protected}
    for target in [*protected, tmp_path / "fifo", tmp_path / "link", runs, Path("/dev/null")]:
        for flag in ("--out", "--markdown"):
            proc = run("gates", "evaluate", str(lock), str(runs), flag, str(target), "--force")
            assert proc.returncode == 2, (target, flag, proc.stdout)
            assert str(target) in proc.stderr and "never written over" in proc.stderr
    assert {p: p.read_bytes() for p in protected} == before
    assert not (tmp_path / "elsewhere.json").exists()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


@pytest.mark.subprocess
def test_other_files_need_force_and_own_outputs_are_replaced(study, tmp_path):
    lock, runs = study
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    proc = run("gates", "evaluate", str(lock), str(runs), "--markdown", str(mine))
    assert proc.returncode == 2 and "--force" in proc.stderr and mine.read_text() == "my notes\n"
    assert run("gates", "evaluate", str(lock), str(runs), "--markdown", str(mine), "--force").returncode in (0, 1)
    assert mine.read_text().startswith("# Evaluation: ")
    # re-evaluating replaces the toolkit's own evaluation.json and Markdown without --force
    assert run("gates", "evaluate", str(lock), str(runs), "--markdown", str(mine)).returncode in (0, 1)
    report = run("reports", "show", str(runs / "evaluation.json"), "--markdown", str(tmp_path / "equal-work.yaml"))
    assert report.returncode == 2 and "never written over" in report.stderr
    assert report.stdout == ""


@pytest.mark.subprocess
def test_control_characters_from_the_plan_never_reach_the_terminal(tmp_path):
    lock, runs = _study(tmp_path, EVIL)
    outputs = [
        run("prereg", "show", str(lock)),
        run("gates", "evaluate", str(lock), str(runs), "--markdown", str(tmp_path / "r.md")),
        run("reports", "show", str(runs / "evaluation.json")),
        run("reports", "show", str(runs / "evaluation.json"), "--markdown", "-"),
        run("gates", "evaluate", str(lock), str(runs), "--json"),
    ]
    texts = [p.stdout + p.stderr for p in outputs] + [(tmp_path / "r.md").read_text()]
    for text in texts:
        assert not any(c in text for c in ("\x1b", "\r", "\x9b", "\u202e")), text[:200]
    assert all("Evil" in text for text in texts)
    assert "\\x1b[2K" in texts[0] and "\\x1b[2K" in texts[2]


def _artifact(study) -> tuple[Path, dict]:
    lock, runs = study
    assert run("gates", "evaluate", str(lock), str(runs)).returncode in (0, 1, 3)
    path = runs / "evaluation.json"
    return path, json.loads(path.read_text())


def _save(path: Path, data: dict, reseal: bool) -> None:
    if reseal:
        data["seal_sha256"] = seal_hash(data)
    path.write_text(json.dumps(data, indent=2))


@pytest.mark.subprocess
def test_reports_show_refuses_an_edited_or_inconsistent_artifact(study):
    path, original = _artifact(study)
    assert run("reports", "show", str(path)).returncode == 0
    gate = next(i for i, g in enumerate(original["gates"]) if g["role"] == "primary" and g["upper"] is not None)
    flip = {"supported": "not_supported", "not_supported": "supported", "refused": "supported"}
    edits = {
        "decision": lambda d: d.update(decision=flip[d["decision"]]),
        "verdict": lambda d: d["gates"][gate].update(
            verdict="pass" if d["gates"][gate]["verdict"] == "fail" else "fail", refused_by=[]
        ),
        "interval": lambda d: d["gates"][gate].update(
            upper=d["gates"][gate]["upper"] + 1e6, lower=d["gates"][gate]["lower"] - 1e6
        ),
    }
    for name, edit in edits.items():
        for reseal in (False, True):
            data = json.loads(json.dumps(original))
            edit(data)
            _save(path, data, reseal)
            proc = run("reports", "show", str(path))
            assert proc.returncode == 3 and "INCONSISTENT" in proc.stderr, (name, reseal, proc.stdout[-300:])
            assert ("seal" in proc.stderr) == (not reseal) or reseal
    unsealed = {k: v for k, v in original.items() if k != "seal_sha256"}
    _save(path, unsealed, reseal=False)
    proc = run("reports", "show", str(path))  # beside its runs: re-verified, and a missing seal is refused
    assert proc.returncode == 3 and "the artifact carries no seal" in proc.stderr
    alone = path.parent.parent / "alone.json"
    _save(alone, unsealed, reseal=False)
    proc = run("reports", "show", str(alone))  # without its runs: shown, saying what could not be checked
    assert proc.returncode == 0 and "carries no seal" in proc.stderr and "could not be re-verified" in proc.stderr


def test_trace_paths_never_leave_the_runs_folder(tmp_path):
    from collect.ledger.store import trace_path

    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "ok.events.jsonl").write_text("{}\n")
    (tmp_path / "traces" / "link.events.jsonl").symlink_to("/etc/hostname")
    assert trace_path(tmp_path, "traces/ok.events.jsonl") == tmp_path / "traces" / "ok.events.jsonl"
    for bad in (
        "../secret.events.jsonl",
        "traces/../../secret",
        "/etc/hostname",
        "traces/link.events.jsonl",
        "ledger.jsonl",
    ):
        with pytest.raises(OSError):
            trace_path(tmp_path, bad)
