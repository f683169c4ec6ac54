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

import collect.engine.runner as engine
from collect.ledger.store import read_ledger
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers import alive, children, interruptible_children, run
from tests.helpers.collectors import CRASH_ONCE, SLOW, attempts
from tests.helpers.engine import collect_cli, contents, loaded, plan_text

pytestmark = pytest.mark.ray_instance  # its Ray tests start instances of their own


@pytest.fixture(autouse=True)
def fake_collector(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)


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
    serial = contents(tmp_path / "serial")
    assert serial == contents(tmp_path / "pool") and len(serial) == 24
    assert all(r["trace_sha256"] for r in serial)  # the traces' bytes are compared too


def _ledger_lines(runs: Path) -> int:
    ledger = runs / "ledger.jsonl"
    return ledger.read_bytes().count(b"\n") if ledger.exists() else 0


def _wait_for(condition, hang_guard_s: float = 120.0) -> None:
    """Poll ``condition`` until it holds; the limit only catches a hang."""
    deadline = time.monotonic() + hang_guard_s
    while not condition():
        assert time.monotonic() < deadline, "hang: the condition never held"
        time.sleep(0.02)


@pytest.mark.subprocess
def test_ctrl_c_says_what_was_kept_and_how_to_resume(tmp_path):
    """SIGINT mid-run: exit 130, the count of kept runs and the resume command; the resume finishes."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=500.0))  # 24 runs of 0.5 s: seconds to interrupt on a loaded machine
    freeze(plan_file)  # the library: the CLI refuses a collector only this test process registers
    lock, runs = tmp_path / "plan.lock.json", tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with interruptible_children():
        proc = subprocess.Popen(
            collect_cli("run", str(lock), "--out", str(runs), "--jobs", "2"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    _wait_for(lambda: _ledger_lines(runs) >= 2 or proc.poll() is not None)
    assert proc.poll() is None, "the plan finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.startswith("collect run: verifying")  # said what it does from the start
    assert "24 runs planned, 0 already complete" in err
    kept = sum(1 for r in read_ledger(runs).records if r.status == "complete")
    assert f"{kept} complete run{'s' if kept != 1 else ''} of this plan are kept" in err and kept >= 2
    assert f"collect run {lock} --out {runs} --resume" in err and "Traceback" not in err
    final = subprocess.run(
        collect_cli("run", str(lock), "--out", str(runs), "--resume"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert final.returncode == 0, final.stderr
    assert f"24 runs planned, {kept}" in final.stderr  # the resume starts from what was kept
    ids = [r.run_id for r in read_ledger(runs).records if r.status == "complete"]
    assert len(ids) == len(set(ids)) == 24


@pytest.mark.slow
def test_kill_9_at_random_moments_then_resume(tmp_path):
    """SIGKILL `collect run` repeatedly mid-flight; every run ends up in the ledger exactly once."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=60.0, replicates=2))
    freeze(plan_file)  # the library: the CLI refuses a collector only this test process registers
    lock = tmp_path / "plan.lock.json"
    runs = tmp_path / "runs"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kills = 0
    for _ in range(6):
        before = _ledger_lines(runs)
        proc = subprocess.Popen(
            collect_cli("run", str(lock), "--out", str(runs), "--jobs", "2"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # kill at a random moment after this attempt appended something (not by the clock alone, so a
        # slow start on a busy machine cannot let the whole plan finish or leave nothing to kill)
        _wait_for(lambda: _ledger_lines(runs) > before or proc.poll() is not None)  # noqa: B023 - called within this iteration
        time.sleep(rng.uniform(0.0, 0.1))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(
        collect_cli("run", str(lock), "--out", str(runs), "--resume", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert final.returncode == 0, final.stderr
    assert kills >= 3
    ledger = read_ledger(runs)
    ids = [r.run_id for r in ledger.records if r.status == "complete"]
    assert len(ids) == len(set(ids)) == 48  # every run exactly once
    assert not ledger.torn_tail or ledger.problems  # a torn line is reported, never data
    # the evaluation equals an uninterrupted run's
    clean = tmp_path / "clean"
    subprocess.run(
        collect_cli("run", str(lock), "--out", str(clean), "--jobs", "2"), env=env, check=True, capture_output=True
    )
    a = json.loads(run("gates", "evaluate", str(lock), str(runs), "--json").stdout)
    b = json.loads(run("gates", "evaluate", str(lock), str(clean), "--json").stdout)
    assert a["decision"] == b["decision"] == "supported"
    assert [g["estimate"] for g in a["gates"]] == [g["estimate"] for g in b["gates"]]
    assert [g["upper"] for g in a["gates"]] == [g["upper"] for g in b["gates"]]


@pytest.mark.subprocess(quick=True)
def test_collect_run_console_refusals(tmp_path):
    plan_file = tmp_path / "imported.yaml"
    plan_file.write_text(plan_text().replace("experiment:\n  collector: test.slow\n  params: {sleep_ms: 0.0}\n", ""))
    assert run("prereg", "freeze", str(plan_file)).returncode == 0
    proc = run("collect", "run", str(tmp_path / "imported.lock.json"), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and "runs are imported" in proc.stderr
    assert (
        run(
            "collect", "run", str(tmp_path / "imported.lock.json"), "--out", str(tmp_path / "r"), "--jobs", "0"
        ).returncode
        == 2
    )


@pytest.mark.slow
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
    a, b = contents(tmp_path / "local"), contents(tmp_path / "ray")
    assert a == b and len(a) == 48


@pytest.fixture
def local_ray(monkeypatch):
    """A local 2-CPU Ray instance for one test, shut down after it (run_plan uses it and leaves it up)."""
    ray = pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # never another cluster
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_ray_worker_that_dies_mid_run_is_retried_by_ray_and_only_its_run_redone(tmp_path, monkeypatch, local_ray):
    """Two runs kill their Ray worker mid-run: Ray retries each (its own retries), every other run is run
    once, and the records are those of an in-process run."""
    monkeypatch.setitem(engine.COLLECTORS, "test.crash_once", CRASH_ONCE)
    marks = tmp_path / "marks"
    marks.mkdir()
    text = (
        plan_text()
        .replace("collector: test.slow", "collector: test.crash_once")
        .replace(
            "params: {sleep_ms: 0.0}", f"params: {{sleep_ms: 0.0, marks: '{marks}', crash_site: 1, crash_seed: 2}}"
        )
    )
    plan, sha = loaded(text)
    _, planned = engine.expand_plan(plan, sha)
    crashing = {p.run_id for p in planned if p.stratum == {"site": 1, "seed": 2}}
    assert len(crashing) == 2 and len(planned) == 24

    engine.run_plan(plan, sha, tmp_path / "serial")
    for mark in marks.iterdir():
        mark.unlink()
    (marks / "armed").touch()
    summary = engine.run_plan(plan, sha, tmp_path / "crashed", jobs=2, executor="ray")
    assert (summary.completed, summary.failed) == (24, 0)
    assert attempts(marks) == {p.run_id: 2 if p.run_id in crashing else 1 for p in planned}
    assert local_ray.is_initialized()  # an instance run_plan did not start, it leaves up
    assert contents(tmp_path / "serial") == contents(tmp_path / "crashed")


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


RAY_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # Ray's own agents: they end within about a minute


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ray_kill_9_then_resume_loses_nothing_and_leaves_no_worker(tmp_path, monkeypatch):
    """SIGKILL `collect run --executor ray` mid-flight: Ray ends its own instance (GCS and raylet share the
    driver's fate, the task workers and agents follow); `--resume` on Ray then completes every run exactly
    once, as an uninterrupted run records them."""
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=150.0))
    freeze(plan_file)  # the library: the CLI refuses a collector only this test process registers
    lock, runs = tmp_path / "plan.lock.json", tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(
        collect_cli("run", str(lock), "--out", str(runs), "--executor", "ray", "--jobs", "2"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree: set[int] = set()
    try:
        ledger = runs / "ledger.jsonl"
        for _ in range(1200):  # Ray takes seconds to start; kill once a few runs are in the ledger
            tree |= set(_descendants(proc.pid))
            if proc.poll() is not None or (ledger.exists() and len(ledger.read_bytes().splitlines()) >= 3):
                break
            time.sleep(0.1)
        tree |= set(_descendants(proc.pid))
        workers = [p for p in tree if _cmdline(p).startswith("ray::run_task")]
        assert proc.poll() is None and workers, "collect run ended before the kill"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ours = list(tree)
        for _ in range(3000):  # Ray's agents take about a minute; a generous wait, only to catch a hang
            if not any(alive(p) for p in ours):
                break
            time.sleep(0.1)
        assert not [(p, _cmdline(p)) for p in ours if alive(p)]  # no task worker, raylet, GCS or agent left
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tree:  # only after a failed assertion
            if alive(p) and _cmdline(p).startswith(RAY_AGENTS):
                os.kill(p, signal.SIGKILL)

    done_before = len(read_ledger(runs).records)
    final = subprocess.run(
        collect_cli("run", str(lock), "--out", str(runs), "--executor", "ray", "--jobs", "2", "--resume", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stderr[-3000:]
    assert json.loads(final.stdout)["skipped"] == done_before > 0
    clean = tmp_path / "clean"
    subprocess.run(collect_cli("run", str(lock), "--out", str(clean)), env=env, check=True, capture_output=True)
    resumed = contents(runs)
    assert [r["run_id"] for r in resumed] == sorted({r["run_id"] for r in resumed})  # each exactly once
    assert resumed == contents(clean) and len(resumed) == 24
    assert run("gates", "evaluate", str(lock), str(runs), "--json").returncode != 3  # the chain verifies


def test_a_failed_run_s_reason_is_words_or_the_collector_s_own_exception() -> None:
    """A toolkit refusal is recorded as its message alone (no internal class or source line); an
    exception of the collector's own code keeps its type and line for its author."""
    from collect.collectors.command.outputs import RunFailure
    from collect.engine.runs import failure_reason

    refusal = RunFailure("metrics file metrics.json: metric x = <a 4301-digit integer> is not a number")
    assert failure_reason(refusal) == str(refusal)
    try:
        {}["missing"]
    except KeyError as err:
        reason = failure_reason(err)
    assert reason.startswith("KeyError: 'missing' at test_engine.py:")
