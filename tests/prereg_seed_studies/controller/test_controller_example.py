"""examples/controller.yaml as written freezes; its sim.controller twin runs and evaluates with every part.

The example itself (240 torch runs, about 3 minutes on 2 cores) is run by the command in docs/controller-and-energy.md;
here the same plan with the simulator twin (the same stress, loop and infrastructure; learning
from the declared prior) goes through the console scripts in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import run

pytestmark = pytest.mark.subprocess  # its tests run the console scripts (one says quick)

EXAMPLE = REPO / "examples" / "controller.yaml"


def sim_twin() -> str:
    text = EXAMPLE.read_text()
    text = text.replace("collector: torch.controller", "collector: sim.controller")
    text = text.replace("    heldout_tokens: 4096\n", "")
    # the twin's learning is the declared prior, fixed by its design: equal in both arms of a block
    text = text.replace(
        "final_nll:           {unit: nats/token, better: lower, evidence: measured}",
        "final_nll:           {unit: nats/token, better: lower, evidence: prior, deterministic: true}",
    )
    return text.replace("evidence: measured}", "evidence: modeled}").replace(
        "evidence: measured,", "evidence: modeled,"
    )


def test_the_example_freezes_as_written(tmp_path: Path) -> None:
    proc = run("prereg", "freeze", str(EXAMPLE), "-o", str(tmp_path / "c.lock.json"))
    assert proc.returncode == 0, proc.stderr
    shown = run("prereg", "show", str(tmp_path / "c.lock.json"), env={"COLUMNS": "400"})
    assert "chosen from the calibration strata ONLY" in shown.stdout
    assert "every gate is judged on each held-out family alone" in shown.stdout


@pytest.mark.slow
def test_the_sim_twin_runs_and_evaluates_with_every_part(tmp_path: Path) -> None:
    plan = tmp_path / "controller-sim.yaml"
    plan.write_text(sim_twin())
    assert run("prereg", "freeze", str(plan)).returncode == 0
    lock = tmp_path / "controller-sim.lock.json"
    proc = run("collect", "run", str(lock), "--out", str(tmp_path / "runs"), "--jobs", "2")
    assert proc.returncode == 0 and "240 runs completed, 0 failed" in proc.stdout, proc.stderr
    proc = run("gates", "evaluate", str(lock), str(tmp_path / "runs"))
    assert proc.returncode in (0, 1), proc.stderr
    ev = json.loads((tmp_path / "runs" / "evaluation.json").read_text())
    c = ev["comparator"]
    assert c["arm"] in ("sync", "local4", "local16") and c["runs_used"] == 3 * 24
    assert all(
        any(f"family={fam}" in s for fam in ("calm", "congestion", "compound", "rolling_outages"))
        for s in c["calibration_strata"]
    )
    families = [f["family"] for f in ev["families"]]
    assert families == [
        "bandwidth_collapse",
        "latency_spikes",
        "site_outage",
        "straggler",
        "flapping_membership",
        "partition_heals",
    ]
    assert all(f["blocks"] == 6 and f["hindsight"]["best_arm"] for f in ev["families"])
    assert len(ev["ranking"]) == 12 and {r["ranking"] for r in ev["ranking"]} <= {
        "adaptive",
        "comparator",
        "flip",
        "abstain",
    }
    assert all(r["reason"] and r["infrastructure"][0]["parameter"] == "base_bandwidth_mbps" for r in ev["ranking"])
    # one held-out family's timeline, adaptive and comparator on one axis, with its text equivalent
    proc = run(
        "reports",
        "plot",
        str(tmp_path / "runs" / "evaluation.json"),
        "--family",
        "site_outage",
        "--out",
        str(tmp_path / "plots"),
        "--format",
        "svg",
    )
    assert proc.returncode == 0, proc.stderr
    assert "abstentions" in proc.stdout and f"{c['arm']}: run" in proc.stdout
    # the web report carries the same timeline in words, and the ranking table
    proc = run("reports", "html", str(tmp_path / "runs"), "-o", str(tmp_path / "report.html"))
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "report.html").read_text()
    assert 'id="commits"' in page and "bandwidth_collapse" in page and "abstentions (" in page
    assert 'id="ranking-table"' in page and 'id="timeline"' not in page
