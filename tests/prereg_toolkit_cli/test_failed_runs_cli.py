"""End to end through the console scripts: a ``command`` run whose program fails says why everywhere
(``collect run``, its ``--json``, ``gates evaluate``, ``evaluation.json``, the HTML report), and a
program's undeclared metric is kept as descriptive with a warning instead of failing the run."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import run

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

PROGRAM = r"""
import json, os, sys
run = json.load(open(os.environ["PREREG_RUN"]))
p = run["params"]
if run["arm"] == "a" and p["site"] == 1:
    print("step 1 ok", file=sys.stderr)
    print("loading shard 7", file=sys.stderr)
    sys.exit("RuntimeError: CUDA error: out of memory")  # exit status 1, the message on stderr
metrics = {"value": p["offset"] + p["site"] / 10, "lost_steps": 3 * p["site"]}
if p["write_extra"]:
    metrics["tokens_per_s"] = 1000.0 + p["site"]
json.dump(metrics, open(os.environ["PREREG_METRICS"], "w"))
"""

PLAN = """schema: prereg/v1
study: failed-runs-cli
title: Failed runs say why
hypothesis: Arm b's value is higher.
experiment:
  collector: command
  params:
    argv: [{python}, prog.py]
    timeout_s: 60
    code: [prog.py]
    write_extra: {extra}
arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0}}
strata:
  factors:
    site: [0, 1, 2]
  replicates: 1
metrics:
  value: {{unit: nats, better: higher, evidence: measured}}
  lost_steps: {{unit: steps, better: lower, evidence: measured}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""
LINE = re.compile(r"^  (run-[0-9a-f]{20}): arm a, site=1 #0: the program exited with status 1$", re.M)


def _study(tmp_path: Path, extra: bool) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "plan.yaml").write_text(PLAN.format(python=json.dumps(sys.executable), extra=str(extra).lower()))
    proc = run("prereg", "freeze", "plan.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "plan.lock.json"


def test_a_failed_run_says_why_in_collect_run_its_json_gates_evaluate_and_the_reports(tmp_path):
    _study(tmp_path, extra=False)
    proc = run("collect", "run", "plan.lock.json", "--out", "runs", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "5 runs completed, 1 failed" in out
    found = LINE.search(out)
    assert found, out
    run_id = found.group(1)
    after = out[found.end() :].splitlines()[1:4]
    assert after == ["      step 1 ok", "      loading shard 7", "      RuntimeError: CUDA error: out of memory"]
    assert out.index("ledger head sha256") < found.start()  # after the summary

    proc = run("collect", "run", "plan.lock.json", "--out", "runs", "--json", cwd=tmp_path)  # retries the failed run
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["completed"], data["failed"], data["skipped"]) == (0, 1, 5)
    assert data["failed_runs"] == [
        {
            "run_id": run_id,
            "arm": "a",
            "stratum": {"site": 1},
            "replicate": 0,
            "reason": "the program exited with status 1",
            "stderr_tail": ["step 1 ok", "loading shard 7", "RuntimeError: CUDA error: out of memory"],
        }
    ]

    proc = run("gates", "evaluate", "plan.lock.json", "runs", env={"COLUMNS": "100"}, cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr  # refused: the cell stays missing
    assert f"{run_id} (arm a, site=1 #0): the program exited with status 1" in proc.stdout
    assert "stderr: RuntimeError: CUDA error: out of memory" in proc.stdout
    assert "Every metric per arm (descriptive, not a test)" in proc.stdout and "lost_steps" in proc.stdout
    artifact = json.loads((tmp_path / "runs" / "evaluation.json").read_text())
    assert [(f["run_id"], f["reason"], f["cell_complete"]) for f in artifact["failed_runs"]] == [
        (run_id, "the program exited with status 1", False)
    ] * 2  # the first sweep's failure and the retry's
    lost = next(m for m in artifact["descriptive_metrics"] if m["metric"] == "lost_steps")
    assert lost["gates"] == [] and lost["arms"]["a"]["n"] == 2 and lost["arms"]["b"]["mean"] == 3.0

    proc = run("reports", "html", "runs", "-o", "report.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "report.html").read_text()
    section = re.search(r'<section id="failed-runs".*?</section>', page, re.S)
    assert section and run_id in section.group(0) and "CUDA error: out of memory" in section.group(0)


def test_an_undeclared_metric_is_kept_as_descriptive_with_a_warning_and_fails_nothing(tmp_path):
    _study(tmp_path, extra=True)
    proc = run("collect", "run", "plan.lock.json", "--out", "runs", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # only the planted failure
    data = json.loads(proc.stdout)
    assert (data["completed"], data["failed"]) == (5, 1)
    assert len(data["undeclared_metrics"]) == 5
    assert all(set(kept) == {"tokens_per_s"} for kept in data["undeclared_metrics"].values())
    assert (
        len(data["warnings"]) == 1
        and "wrote metric(s) tokens_per_s the plan does not declare: kept as descriptive, not analysed"
        in data["warnings"][0]
    )
    assert "collect run: warning: 5 runs" in proc.stderr and "tokens_per_s the plan does not declare" in proc.stderr

    proc = run("gates", "evaluate", "plan.lock.json", "runs", "--json", cwd=tmp_path)
    artifact = json.loads(proc.stdout)
    kept = next(m for m in artifact["descriptive_metrics"] if m["metric"] == "tokens_per_s")
    assert not kept["declared"] and kept["arms"]["b"]["n"] == 3 and kept["arms"]["b"]["mean"] == 1001.0
    assert all(g["metric"] != "tokens_per_s" for g in artifact["gates"])
    assert all("tokens_per_s" not in values for b in artifact["blocks"] for values in [b["values"]])
