"""Warm start: one shared trained state, made once, hashed in every record, bitwise the same start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run

pytest.importorskip("torch")

PLAN = """schema: prereg/v1
study: warm-small
title: Warm-started runs
hypothesis: Continuing keeps learning.
experiment:
  collector: torch.multisite
  params:
    sites: 3
    useful_tokens: 6144
    micro_batch: 64
    train_tokens: 16384
    heldout_tokens: 2048
    width: 32
    checkpoint_every_steps: 8
    outage_count: 1
    outage_horizon_ticks: 20
    outage_duration_ticks: 5
    outage_duration_dist: fixed
    idle_baseline_ms: 0
    warm_start_steps: {steps}
arms:
  restart: {{policy: restart}}
  continue: {{policy: continue}}
strata:
  factors:
    outage_site: [0, 1]
    seed: [5, 6]
metrics:
  final_nll: {{unit: nats, better: lower, evidence: measured}}
gates:
  - {{id: nll_close, metric: final_nll, contrast: continue - restart, method: t, confidence: 0.90, pass_if: upper < 0.5}}
decision:
  claim: Continuing keeps learning.
  require: all
  multiplicity: none
"""


def _collect(tmp: Path, steps: int) -> tuple[Path, list[dict], object]:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "plan.yaml").write_text(PLAN.format(steps=steps))
    assert run("prereg", "freeze", str(tmp / "plan.yaml"), "-o", str(tmp / "l.json")).returncode == 0
    proc = run("collect", "run", str(tmp / "l.json"), "--out", str(tmp / "runs"), "--jobs", "2")
    records = [json.loads(x) for x in (tmp / "runs" / "ledger.jsonl").read_text().splitlines()] if proc.returncode == 0 else []
    return tmp / "runs", records, proc


def test_every_run_starts_from_the_same_warm_state(tmp_path):
    runs, records, proc = _collect(tmp_path / "warm", 30)
    assert proc.returncode == 0, proc.stderr
    assert len(records) == 8 and all(r["status"] == "complete" for r in records)
    warm = {json.dumps(r["code"]["warm_start"], sort_keys=True) for r in records}
    assert len(warm) == 1  # one warm start, the same identity in every record
    identity = records[0]["code"]["warm_start"]
    assert {r["code"]["initial_state_sha256"] for r in records} == {identity["state_sha256"]}
    made = sorted((runs / "shared").iterdir())
    assert [p.suffix for p in made] == [".json", ".pt"]
    import hashlib

    assert hashlib.sha256((runs / identity["file"]).read_bytes()).hexdigest() == identity["file_sha256"]
    # trained, not fresh: a warm start learns before the study, so its runs begin below a fresh run's NLL
    cold_runs, cold, proc = _collect(tmp_path / "cold", 0)
    assert proc.returncode == 0, proc.stderr
    assert len({r["code"]["initial_state_sha256"] for r in cold}) == 4  # one fresh init per stratum, shared by its arms
    assert all(r["code"]["warm_start"] is None for r in cold)
    warm_initial = {r["metrics"]["initial_nll"] for r in records}
    assert len(warm_initial) > 0 and max(warm_initial) < min(r["metrics"]["initial_nll"] for r in cold)


def test_a_changed_warm_start_is_refused_before_any_run(tmp_path):
    runs, records, proc = _collect(tmp_path / "w", 10)
    assert proc.returncode == 0, proc.stderr
    pt = next((runs / "shared").glob("*.pt"))
    pt.write_bytes(pt.read_bytes()[:-1] + bytes([pt.read_bytes()[-1] ^ 1]))
    (runs / "ledger.jsonl").rename(runs / "old-ledger.jsonl")  # as if the runs had not been made yet
    proc = run("collect", "run", str(tmp_path / "w" / "l.json"), "--out", str(runs))
    assert proc.returncode == 3 and "warm start" in proc.stderr and "SHA-256" in proc.stderr
    assert not (runs / "ledger.jsonl").exists()
