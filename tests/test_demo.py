"""The README's demo end to end through the console scripts (CI runs it; SKIP_DEMO=1 skips it locally)."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import OWN_EXAMPLES, REPO
from tests.helpers import run

pytestmark = pytest.mark.skipif(os.environ.get("SKIP_DEMO") == "1", reason="SKIP_DEMO=1")


def test_readme_demo_pipeline(tmp_path):
    pytest.importorskip("torch")
    readme = (REPO / "README.md").read_text()
    first = re.findall(r"```\n(python3 -m venv[^\n]*)\n```", readme)[0]
    assert "examples/equal-work-torch.yaml" in first and "collect run" in first and "gates evaluate" in first
    lock = tmp_path / "equal-work.lock.json"
    assert run("prereg", "freeze", str(OWN_EXAMPLES / "equal-work-torch.yaml"), "-o", str(lock)).returncode == 0
    collected = run("collect", "run", str(lock), "--out", str(tmp_path / "runs"), "--jobs", "2")
    assert collected.returncode == 0, collected.stderr
    report = run("gates", "evaluate", str(lock), str(tmp_path / "runs"), env={"NO_COLOR": "1", "COLUMNS": "80"})
    assert report.returncode == 0, report.stdout
    evaluation = json.loads((tmp_path / "runs" / "evaluation.json").read_text())
    gates = {g["id"]: g for g in evaluation["gates"]}
    # on a CPU machine the energy is modeled, never a measured pass
    assert gates["energy_saving"]["evidence"] == "modeled" and "modeled" in report.stdout
    assert gates["learning_noninferior"]["evidence"] == "measured"
    traces = list((tmp_path / "runs" / "traces").iterdir())
    assert any(p.name.endswith(".events.jsonl") for p in traces) and any(p.name.endswith(".trajectory.csv") for p in traces)
    assert not any(p.name.endswith(".ckpt") for p in traces)  # checkpoints are cleaned up
