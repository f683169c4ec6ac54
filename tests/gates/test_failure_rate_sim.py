"""The ``failure_rate`` invalidator on a simulator's own failure events, end to end through the console
scripts (``prereg freeze``, ``collect run`` of ``sim.churn``, ``gates evaluate``): the preemptions the
simulated jobs met, counted against the plan's rate (8 workers, one-hour MTBF each) times the seconds
each job was exposed, are plausible when the simulator runs the planned MTBF, and fire the invalidator
(refusing the gate) when it preempts ten times as often or ten times as rarely as planned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import freeze_collect_evaluate

pytestmark = pytest.mark.subprocess  # console scripts

PLAN = """schema: prereg/v1
study: churn-failure-rate
title: Preemptions at the planned rate
hypothesis: The exact interval is no less efficient than Young's.
experiment:
  collector: sim.churn
  params: {{mtbf_s: {mtbf_s}, checkpoint_s: 120, restart_s: 300, workers: 8, work_s: 86400}}
arms:
  exact: {{interval: exact}}
  young: {{interval: young}}
strata:
  factors: {{seed: [1, 2, 3, 4, 5, 6, 7, 8]}}
metrics:
  efficiency: {{unit: fraction, better: higher, evidence: modeled}}
  failures: {{unit: count, better: lower, evidence: modeled}}
  exposed_s: {{unit: s, better: lower, evidence: modeled}}
invalidators:
  - id: preemptions_as_planned
    kind: failure_rate
    count: failures
    exposure: exposed_s
    rate: 0.0022222222          # 8 workers / 3600 s: preemptions per exposed second
    blocks: all
gates:
  - {{id: exact_ok, metric: efficiency, contrast: exact - young, method: t, confidence: 0.9, pass_if: lower > -0.005}}
decision: {{claim: The exact interval is noninferior to Young's.}}
"""


@pytest.mark.parametrize(("mtbf_s", "fires"), [(3600, False), (360, True), (36000, True)])
def test_the_simulators_preemptions_are_checked_against_the_planned_rate(
    tmp_path: Path, mtbf_s: int, fires: bool
) -> None:
    plan = tmp_path / "churn.yaml"
    plan.write_text(PLAN.format(mtbf_s=mtbf_s), encoding="utf-8")
    frozen, collected, report = freeze_collect_evaluate(plan, tmp_path)
    assert frozen.returncode == 0 and collected.returncode == 0, frozen.stderr + collected.stderr
    ev = json.loads((tmp_path / "runs" / "evaluation.json").read_text())
    (check,) = ev["invalidators"]
    assert check["kind"] == "failure_rate" and check["fired"] is fires, check["detail"]
    assert "arm exact:" in check["detail"] and "pooled: not tested" in check["detail"]  # arms share seeds
    (gate,) = ev["gates"]
    if fires:
        assert report.returncode == 3 and ev["decision"] == "refused" and gate["verdict"] == "refused"
        assert check["observed"] < check["threshold"]
    else:
        assert report.returncode == 0 and ev["decision"] == "supported", report.stdout
        assert check["observed"] >= check["threshold"]
