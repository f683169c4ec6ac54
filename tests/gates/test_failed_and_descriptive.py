"""Every report says why each run failed, and describes every metric per arm (declared or not).

A ledger is built in a temporary folder (no subprocess): complete runs of a plan with a declared
metric no gate uses (``lost_steps``), a failed run whose program's stderr the error quotes, a
failed run of collector code (its source location in the ledger), and a failure later retried.
The evaluation artifact, the terminal, Markdown and HTML reports are checked on it.
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from collect.ledger.store import RunRecord, append_records
from gates.api import evaluate
from gates.artifact import Evaluation, read_evaluation
from gates.descriptive import summarise
from prereg.api import freeze
from reports.html.page import html_report
from reports.markdown.evaluation import evaluation_markdown
from reports.terminal.evaluation import render_evaluation

PLAN = """schema: prereg/v1
study: failed-runs
title: Failed runs and every metric
hypothesis: Arm b's value is higher.
arms:
  a: {policy: x}
  b: {policy: y}
strata:
  factors: {site: [0, 1, 2, 3]}
  replicates: 1
metrics:
  value: {unit: nats, better: higher, evidence: measured}
  lost_steps: {unit: steps, better: lower, evidence: measured}
gates:
  - {id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}
decision: {claim: b is higher}
"""
STDERR_ERROR = "the program exited with status 1; stderr ends: " + repr(
    'Traceback (most recent call last):\n  File "train.py", line 3\nloading shard 7\n'
    "RuntimeError: CUDA error: out of memory\n"
)
CODE_ERROR = "KeyError: 'lr' at trainer.py:212"


def _record(sha: str, seal: str, site: int, arm: str, status: str = "complete", **fields: object) -> RunRecord:
    base = {
        "run_id": f"run-{arm}{site}{status[0]}",
        "prereg_sha256": sha,
        "lock_seal": seal,
        "stratum": {"site": site},
        "arm": arm,
        "replicate": 0,
        "status": status,
        "started_at": "2099-01-01T00:00:00Z",
        "metrics": {},
    }
    return RunRecord.model_validate({**base, **fields})


@pytest.fixture
def evaluated(tmp_path: Path) -> tuple[Evaluation, Path]:
    """The evaluation of a ledger with complete, failed and retried runs (written to RUNS/evaluation.json)."""
    (tmp_path / "plan.yaml").write_text(PLAN)
    lock = freeze(tmp_path / "plan.yaml")
    sha, seal = lock.plan_sha256, lock.seal
    records = []
    for site in range(4):
        for arm, offset in (("a", 0.0), ("b", 1.0)):
            if (site, arm) in ((3, "a"), (3, "b")):
                continue
            undeclared = (
                {"code": {"undeclared_metrics": {"tokens_per_s": 100.0 + site, "note": None}}} if arm == "b" else {}
            )
            records.append(
                _record(
                    sha,
                    seal,
                    site,
                    arm,
                    metrics={"value": offset + site / 10, "lost_steps": 10.0 * site + offset},
                    **undeclared,
                )
            )
    records.append(_record(sha, seal, 3, "a", "failed", error=STDERR_ERROR))
    records.append(_record(sha, seal, 3, "b", "failed", error=CODE_ERROR))
    records.append(
        _record(
            sha,
            seal,
            0,
            "a",
            "failed",
            run_id="run-retried",
            error="timed out after 5 s (timeout_s); its process group was killed (nothing on stderr)",
        )
    )
    runs = tmp_path / "runs"
    append_records(runs, records)
    return evaluate(lock, runs, out=runs / "evaluation.json"), runs


def _terminal(ev: Evaluation, verbose: bool = False) -> str:
    out = io.StringIO()
    Console(file=out, width=80, no_color=True).print(render_evaluation(ev, verbose=verbose))
    return out.getvalue()


def test_the_artifact_lists_each_failed_run_with_its_reason_in_words(evaluated):
    ev, runs = evaluated
    failed = {f["run_id"]: f for f in json.loads((runs / "evaluation.json").read_text())["failed_runs"]}
    assert set(failed) == {"run-a3f", "run-b3f", "run-retried"}
    oom = failed["run-a3f"]
    assert (oom["arm"], oom["stratum"], oom["replicate"]) == ("a", {"site": 3}, 0)
    assert oom["reason"] == "the program exited with status 1" and not oom["cell_complete"]
    assert oom["stderr_tail"] == [
        '  File "train.py", line 3',
        "loading shard 7",
        "RuntimeError: CUDA error: out of memory",
    ]
    assert failed["run-b3f"]["reason"] == "KeyError: 'lr'" and failed["run-b3f"]["stderr_tail"] == []
    retried = failed["run-retried"]
    assert (
        retried["cell_complete"]
        and retried["reason"] == "timed out after 5 s (timeout_s); its process group was killed"
    )
    assert read_evaluation(runs / "evaluation.json").failed_runs == ev.failed_runs


def test_every_declared_metric_is_described_per_arm_with_failed_runs_excluded(evaluated):
    ev, _ = evaluated
    metrics = {m.metric: m for m in ev.descriptive_metrics}
    lost = metrics["lost_steps"]  # no gate uses it: described here alone
    assert lost.declared and lost.gates == [] and lost.unit == "steps"
    a, b = lost.arms["a"], lost.arms["b"]
    assert (a.n, a.mean, a.median, a.min, a.max) == (3, 10.0, 10.0, 0.0, 20.0)  # sites 0-2; site 3 failed
    assert a.sd == pytest.approx(10.0) and (b.n, b.mean) == (3, 11.0)
    assert metrics["value"].gates == ["offset"] and metrics["value"].arms["b"].median == pytest.approx(1.1)
    kept = metrics["tokens_per_s"]  # undeclared: kept by the collector, described, never analysed
    assert not kept.declared and kept.unit is None and kept.gates == []
    assert (kept.arms["b"].n, kept.arms["b"].mean, kept.arms["a"].n, kept.arms["a"].missing) == (3, 101.0, 0, 3)
    assert metrics["note"].arms["b"].non_finite == 3  # a value that was not a number: counted, not summarised
    assert [m.metric for m in ev.descriptive_metrics] == ["lost_steps", "value", "note", "tokens_per_s"]
    assert all(g.metric != "tokens_per_s" for g in ev.gates)


def test_the_terminal_report_shows_reasons_stderr_and_the_per_arm_table(evaluated):
    ev, _ = evaluated
    text = _terminal(ev)
    assert "Failed runs (why each failed)" in text
    assert "run-a3f (arm a, site=3 #0): the program exited with status 1" in text
    assert "  stderr: RuntimeError: CUDA error: out of memory" in text
    assert re.search(r"run-b3f \(arm b, site=3 #0\): KeyError: 'lr' *\n", text) and "trainer.py:212" not in text
    assert "refuses nothing" in text  # the retried cell's failure
    table = text[text.index("Every metric per arm (descriptive, not a test)") :]
    assert re.search(r"lost_steps .*│ a +│ +3 \(1 failed\) │ +10 │ +10 │ +10 │ +0 - 20 │", table)
    assert "steps; no gate" in table and re.search(r"tokens_per_s +│ a +│ +0 \(3 missing\) │", table)
    assert "undeclared" in table
    assert "Descriptive, not a test" in table


def test_without_verbose_the_terminal_names_ten_failed_runs_and_counts_the_rest(evaluated):
    ev, _ = evaluated
    many = ev.model_copy(
        update={"failed_runs": [ev.failed_runs[0].model_copy(update={"run_id": f"run-x{i}"}) for i in range(12)]}
    )
    short, full = _terminal(many), _terminal(many, verbose=True)
    assert "run-x9 " in short and "run-x10 " not in short and "... and 2 more (--verbose" in short
    assert "run-x11 " in full and "... and" not in full


def test_markdown_and_html_carry_the_failed_runs_and_the_per_arm_table(evaluated):
    ev, runs = evaluated
    md = evaluation_markdown(ev)
    assert "## Failed runs (why each failed)" in md and "`RuntimeError: CUDA error: out of memory`" in md
    assert "## Every metric per arm (descriptive, not a test)" in md
    assert "| `lost_steps` (steps; no gate) | a | 3 (1 failed) | 10 | 10 | 10 | 0 - 20 |" in md
    page, _ = html_report(runs)
    failed = re.search(r'<section id="failed-runs".*?</section>', page, re.S)
    assert failed and "run-a3f (arm a, site=3 #0): the program exited with status 1" in failed.group(0)
    assert "<code>RuntimeError: CUDA error: out of memory</code>" in failed.group(0)
    metrics = re.search(r'<section id="metrics".*?</section>', page, re.S)
    assert metrics and "<code>lost_steps</code>" in metrics.group(0) and "tokens_per_s" in metrics.group(0)
    assert 'href="#failed-runs"' in page and 'href="#metrics"' in page


def test_an_artifact_without_the_new_lists_still_reads_and_renders(evaluated):
    ev, runs = evaluated
    data = json.loads((runs / "evaluation.json").read_text())
    del data["failed_runs"], data["descriptive_metrics"]
    old = Evaluation.model_validate(data)
    assert old.failed_runs == [] and old.descriptive_metrics == []
    text = _terminal(old)
    assert "Failed runs (why" not in text and "Every metric per arm" not in text


def test_a_programs_stderr_reaches_the_terminal_escaped(evaluated):
    ev, _ = evaluated
    planted = ev.failed_runs[0].model_copy(update={"stderr_tail": ["red \x1b[31mALERT\x1b[0m"]})
    text = _terminal(ev.model_copy(update={"failed_runs": [planted]}))
    assert "\x1b" not in text and "stderr: red \\x1b[31mALERT\\x1b[0m" in text


def test_a_summary_counts_what_it_leaves_out_and_never_overflows():
    s = summarise([1e308, 1.7e308, None, math.nan, math.inf])
    assert (s.n, s.missing, s.non_finite) == (2, 1, 2)
    assert s.mean == pytest.approx(1.35e308) and s.median == pytest.approx(1.35e308) and s.max == 1.7e308
    assert summarise([2.0]).sd is None and summarise([]).mean is None
    assert summarise(np.array([1.0, np.nan, np.nan]), missing=1).model_dump(include={"n", "missing", "non_finite"}) == {
        "n": 1,
        "missing": 1,
        "non_finite": 1,
    }  # of the gates' array, one NaN was never recorded
