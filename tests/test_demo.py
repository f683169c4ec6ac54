"""The README's demo end to end through the console scripts (CI runs it; SKIP_DEMO=1 skips it locally)."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import OWN_EXAMPLES, REPO
from tests.helpers import freeze_collect_evaluate

pytestmark = [
    pytest.mark.skipif(os.environ.get("SKIP_DEMO") == "1", reason="SKIP_DEMO=1"),
    pytest.mark.subprocess,  # the console scripts, with two training runs at a time
]


def test_readme_demo_pipeline(tmp_path):
    """examples/equal-work-torch.yaml frozen, collected with two jobs and evaluated."""
    pytest.importorskip("torch")
    readme = (REPO / "README.md").read_text()
    first = re.findall(r"```\n(python3 -m venv[^\n]*)\n```", readme)[0]
    assert "examples/equal-work-torch.yaml" in first and "collect run" in first and "gates evaluate" in first
    work = tmp_path
    frozen, collected, report = freeze_collect_evaluate(OWN_EXAMPLES / "equal-work-torch.yaml", work)
    for proc in (frozen, collected, report):
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert frozen.args[1:3] == ["freeze", str(OWN_EXAMPLES / "equal-work-torch.yaml")]
    assert frozen.returncode == 0, frozen.stderr
    assert collected.returncode == 0, collected.stderr
    assert report.returncode == 0, report.stdout
    evaluation = json.loads((work / "runs" / "evaluation.json").read_text())
    gates = {g["id"]: g for g in evaluation["gates"]}
    # on a CPU machine the energy is modeled, never a measured pass
    assert gates["energy_saving"]["evidence"] == "modeled" and "modeled" in report.stdout
    assert gates["learning_noninferior"]["evidence"] == "measured"
    traces = list((work / "runs" / "traces").iterdir())
    assert any(p.name.endswith(".events.jsonl") for p in traces) and any(
        p.name.endswith(".trajectory.csv") for p in traces
    )
    assert not any(p.name.endswith(".ckpt") for p in traces)  # checkpoints are cleaned up
