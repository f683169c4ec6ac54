"""The tutorial's worked examples hold: each example table gives the decision docs/tutorial.md shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import OWN_EXAMPLES, shared_example_path
from tests.helpers import run

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


def evaluate_example(tmp_path: Path, plan: Path, table: str, *extra: str):
    lock = tmp_path / (plan.stem + ".lock.json")
    assert run("prereg", "freeze", str(plan), "-o", str(lock)).returncode == 0
    proc = run(
        "collect", "import", str(OWN_EXAMPLES / "runs" / table), "--lock", str(lock), "--out", str(tmp_path / "runs")
    )
    assert proc.returncode == 0, proc.stderr
    return run("gates", "evaluate", str(lock), str(tmp_path / "runs"), *extra, env={"NO_COLOR": "1", "COLUMNS": "80"})


@pytest.mark.parametrize(
    "plan, table, code, words",
    [
        (OWN_EXAMPLES / "continuation.yaml", "continuation.csv", 0, "SUPPORTED:"),
        ("equal-work.yaml", "equal-work.csv", 3, "gate energy_saving was refused"),
        ("cadence-energy.yaml", "cadence-energy.csv", 1, "gate sparse_keeps_learning"),
        (OWN_EXAMPLES / "cadence-continuation.yaml", "cadence-energy.csv", 0, "SUPPORTED:"),
    ],
)
def test_example_decisions(tmp_path, plan, table, code, words):
    plan_path = plan if isinstance(plan, Path) else shared_example_path(plan)
    proc = evaluate_example(tmp_path, plan_path, table, "--markdown", str(tmp_path / "report.md"))
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert words in " ".join(proc.stdout.split())
    report = [line for line in proc.stdout.splitlines() if not line.startswith("evaluation written to")]
    assert max(len(line.rstrip()) for line in report) <= 80
    markdown = (tmp_path / "report.md").read_text()
    gate_rows = [
        line
        for line in markdown.splitlines()
        if line.startswith("| ") and ("PASS" in line or "FAIL" in line or "REFUSED" in line)
    ]
    assert len(gate_rows) >= 3
    reprint = run("reports", "show", str(tmp_path / "runs" / "evaluation.json"), env={"NO_COLOR": "1", "COLUMNS": "80"})
    assert reprint.returncode == 0 and words in " ".join(reprint.stdout.split())


def test_example_tables_are_reproducible(tmp_path):
    """examples/make_runs.py regenerates the committed tables byte for byte."""
    import subprocess
    import sys

    copy = tmp_path / "examples"
    shutil.copytree(OWN_EXAMPLES, copy)
    subprocess.run([sys.executable, str(copy / "make_runs.py")], check=True, capture_output=True)
    for name in ("continuation.csv", "equal-work.csv", "cadence-energy.csv"):
        assert (copy / "runs" / name).read_bytes() == (OWN_EXAMPLES / "runs" / name).read_bytes()
