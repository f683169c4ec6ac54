"""The collection engine: expansion, common random numbers, failures, resume, kill -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import collect.engine as engine
from collect.ledger import read_ledger
from prereg.plan import parse_plan
from tests.helpers import run

FAKE = "tests.collect.fake_collectors:SlowCollector"

PLAN = """schema: prereg/v1
study: engine-test
title: Engine test
hypothesis: The offset shows.
experiment:
  collector: test.slow
  params: {{sleep_ms: {sleep}}}
arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0{extra}}}
strata:
  factors:
    site: [0, 1, 2]
    seed: [1, 2, 3, 4]
  replicates: {replicates}
metrics:
  value: {{unit: unit, better: higher, evidence: modeled}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""


def plan_text(sleep: float = 0.0, extra: str = "", replicates: int = 1) -> str:
    return PLAN.format(sleep=sleep, extra=extra, replicates=replicates)


@pytest.fixture(autouse=True)
def fake_collector(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", FAKE)


def loaded(text: str):
    lp = parse_plan(text.encode())
    return lp.plan, lp.plan_sha256


def test_expansion_merges_params_and_seeds_by_stratum():
    plan, sha = loaded(plan_text(sleep=1.5))
    collector, runs = engine.expand_plan(plan, sha)
    assert collector.name == "test.slow" and len(runs) == 3 * 4 * 2
    first_a, first_b = runs[0], runs[1]
    assert (first_a.arm, first_b.arm) == ("a", "b") and first_a.stratum == first_b.stratum
    assert first_a.seed == first_b.seed  # common random numbers: the seed ignores the arm
    assert first_a.params == {"sleep_ms": 1.5, "offset": 0.0, "fail": False, "site": 0}
    assert first_b.params["offset"] == 1.0 and "seed" not in first_a.params  # 'seed' is a blocking factor
    assert len({r.seed for r in runs}) == 12 and len({r.run_id for r in runs}) == 24


def test_expansion_refusals(monkeypatch):
    plan, sha = loaded(plan_text(extra=", warp: 9"))
    with pytest.raises(engine.EngineError, match="does not read parameter"):
        engine.expand_plan(plan, sha)
    plan, sha = loaded(plan_text().replace("value: {unit", "other: {unit").replace("metric: value", "metric: other"))
    with pytest.raises(engine.EngineError, match="does not produce metric"):
        engine.expand_plan(plan, sha)
    plan, sha = loaded(plan_text().replace("collector: test.slow", "collector: sim.nothing"))
    with pytest.raises(engine.EngineError, match="unknown collector"):
        engine.expand_plan(plan, sha)


def test_run_failures_resume(tmp_path):
    plan, sha = loaded(plan_text(extra=", fail: true"))
    summary = engine.run_plan(plan, sha, tmp_path / "runs")
    assert (summary.completed, summary.failed) == (12, 12)
    ledger = read_ledger(tmp_path / "runs")
    failed = [r for r in ledger.records if r.status == "failed"]
    assert len(failed) == 12 and failed[0].error.startswith("RuntimeError: injected failure")
    again = engine.run_plan(plan, sha, tmp_path / "runs")  # the failed ones are retried, the rest skipped
    assert (again.skipped, again.completed, again.failed) == (12, 0, 12)
    ok = [r for r in read_ledger(tmp_path / "runs").records if r.status == "complete"]
    assert len(ok) == 12 and all(r.traces and (tmp_path / "runs" / r.traces[0]).is_file() for r in ok)
    assert ok[0].code["toolkit_version"] and ok[0].env["python"]


def test_process_pool_gives_the_same_ledger_content(tmp_path):
    plan, sha = loaded(plan_text())
    engine.run_plan(plan, sha, tmp_path / "serial")
    engine.run_plan(plan, sha, tmp_path / "pool", jobs=2)
    key = lambda r: (r.run_id, r.status, r.metrics, r.seed)  # noqa: E731
    serial = sorted(key(r) for r in read_ledger(tmp_path / "serial").records)
    pool = sorted(key(r) for r in read_ledger(tmp_path / "pool").records)
    assert serial == pool and len(serial) == 24


def _cli(*args: str) -> list[str]:
    code = (
        "import sys, collect.engine as e; e.COLLECTORS['test.slow'] = %r; "
        "from collect.cli import main; sys.exit(main(sys.argv[1:]))" % FAKE
    )
    return [sys.executable, "-c", code, *args]


def test_kill_9_at_random_moments_then_resume(tmp_path):
    """SIGKILL `collect run` repeatedly mid-flight; every run ends up in the ledger exactly once."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=40.0, replicates=2))
    assert run("prereg", "freeze", str(plan_file)).returncode == 0
    lock = tmp_path / "plan.lock.json"
    runs = tmp_path / "runs"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    kills = 0
    for _ in range(6):
        proc = subprocess.Popen(_cli("run", str(lock), "--out", str(runs), "--jobs", "2"), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 1.2))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(_cli("run", str(lock), "--out", str(runs), "--resume", "--json"), env=env,
                           capture_output=True, text=True, timeout=120)
    assert final.returncode == 0, final.stderr
    assert kills >= 3
    ledger = read_ledger(runs)
    ids = [r.run_id for r in ledger.records if r.status == "complete"]
    assert len(ids) == len(set(ids)) == 48  # every run exactly once
    assert not ledger.torn_tail or ledger.problems  # a torn line is reported, never data
    # the evaluation equals an uninterrupted run's
    clean = tmp_path / "clean"
    subprocess.run(_cli("run", str(lock), "--out", str(clean), "--jobs", "2"), env=env, check=True,
                   capture_output=True)
    a = json.loads(run("gates", "evaluate", str(lock), str(runs), "--json").stdout)
    b = json.loads(run("gates", "evaluate", str(lock), str(clean), "--json").stdout)
    assert a["decision"] == b["decision"] == "supported"
    assert [g["estimate"] for g in a["gates"]] == [g["estimate"] for g in b["gates"]]
    assert [g["upper"] for g in a["gates"]] == [g["upper"] for g in b["gates"]]


def test_collect_run_console_refusals(tmp_path):
    plan_file = tmp_path / "imported.yaml"
    plan_file.write_text(plan_text().replace("experiment:\n  collector: test.slow\n  params: {sleep_ms: 0.0}\n", ""))
    assert run("prereg", "freeze", str(plan_file)).returncode == 0
    proc = run("collect", "run", str(tmp_path / "imported.lock.json"), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and "runs are imported" in proc.stderr
    assert run("collect", "run", str(tmp_path / "imported.lock.json"), "--out", str(tmp_path / "r"), "--jobs", "0").returncode == 2


def test_ray_executor_gives_the_same_ledger(tmp_path, monkeypatch):
    """`--executor ray` on a local Ray instance started here: the same records as the local pool."""
    pytest.importorskip("ray")
    from tests.conftest import OWN_EXAMPLES

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    lock = tmp_path / "ms.lock.json"
    assert run("prereg", "freeze", str(OWN_EXAMPLES / "multisite-recovery.yaml"), "-o", str(lock)).returncode == 0
    local = run("collect", "run", str(lock), "--out", str(tmp_path / "local"), "--jobs", "2")
    distributed = run("collect", "run", str(lock), "--out", str(tmp_path / "ray"), "--executor", "ray", "--jobs", "2")
    assert local.returncode == 0 and distributed.returncode == 0, distributed.stderr
    key = lambda r: (r.run_id, r.status, tuple(sorted(r.metrics.items())), r.seed)  # noqa: E731
    a = sorted(key(r) for r in read_ledger(tmp_path / "local").records)
    b = sorted(key(r) for r in read_ledger(tmp_path / "ray").records)
    assert a == b and len(a) == 48

