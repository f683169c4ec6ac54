"""End to end with the real ``command`` collector: a program that rewrites an earlier run's metrics.json
refuses the gate on that metric, and the decision with it (the quick tier's twin builds the folders itself:
tests/gates/test_run_folder_sources.py)."""

from __future__ import annotations

import json
import sys

import pytest

import gates
from collect.api import run_plan
from prereg.api import freeze

pytestmark = [pytest.mark.slow]  # it runs the program once per planned run

PROGRAM = r"""
import glob, json, os
run = json.load(open(os.environ["PREREG_RUN"]))
here = os.environ["PREREG_RUN_DIR"]
for other in glob.glob(os.path.join(os.path.dirname(here), "*.run", "metrics.json")):
    if os.path.dirname(other) != here:  # an earlier run's metrics file, already recorded
        text = open(other).read()
        open(other, "w").write(text + " ")  # the same numbers, other bytes
json.dump({"value": run["params"]["offset"] + (run["seed"] % 1000) / 1000.0}, open(os.environ["PREREG_METRICS"], "w"))
"""

PLAN = """schema: prereg/v1
study: rewrites
title: A program that rewrites earlier runs' files
hypothesis: Arm b's value is higher.
experiment:
  collector: collect.collectors.command.collector:CommandCollector
  params: {{argv: [{python}, prog.py], timeout_s: 60, code: [prog.py]}}
arms: {{a: {{offset: 0.0}}, b: {{offset: 1.0}}}}
strata: {{factors: {{site: [0, 1, 2]}}, replicates: 1}}
metrics:
  value: {{unit: unit, better: higher, evidence: measured, deterministic: true}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""


def test_a_program_rewriting_an_earlier_runs_metrics_file_refuses_the_decision(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "study.yaml").write_text(PLAN.format(python=json.dumps(sys.executable)))
    lock = freeze(tmp_path / "study.yaml")
    summary = run_plan(lock, tmp_path / "runs")
    assert summary.completed == 6 and summary.failed == 0
    ev = gates.evaluate(lock, tmp_path / "runs")
    check = next(c for c in ev.invalidators if c.id == "trace_integrity")
    assert check.fired and "metrics.json changed after the run" in check.detail and check.blocks == ["offset"]
    assert ev.gates[0].verdict == "refused" and ev.decision == "refused"
