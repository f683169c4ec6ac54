"""`collect run --executor ray` on a real Ray cluster of several nodes on this one machine.

One cluster for the module (``collect.engine.local_cluster``): a head and two worker nodes of one
CPU each, the last with a (fake) GPU, every node with its own temporary folder (``TMPDIR``), so a
worker's private folder is never the driver's. Joined by its explicit address, never ``auto``, so
concurrent test runs never share a cluster. Torn down after, checked to leave no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import collect.engine.ray_executor as ray_executor
import collect.engine.runner as engine
from collect.engine.resources import ResourcesMissing
from collect.ledger.store import read_ledger
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers.collectors import WHERE, where_ran
from tests.helpers.engine import collect_cli, contents, loaded, plan_text
from tests.helpers.ray_procs import session_processes, task_workers

pytestmark = [
    pytest.mark.ray_instance,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]
ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    from collect.engine.local_cluster import start_local_cluster

    old = os.environ.pop("RAY_ADDRESS", None)
    local = start_local_cluster(nodes=3, cpus_per_node=1, gpus_on_last=1)
    session = local.cluster.head_node.session_name
    try:
        yield local
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.shutdown()
        if old is not None:
            os.environ["RAY_ADDRESS"] = old
        for _ in range(300):  # a generous wait, only to catch a hang
            if not session_processes(session):
                break
            time.sleep(0.1)
        assert not session_processes(session), "the cluster left processes behind"


@pytest.fixture(autouse=True)
def fake_collectors(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.where", WHERE)


def _where_plan(marks: Path, sleep_ms: float = 0.0, trace_bytes: int = 0, resources: str = "") -> str:
    text = (
        plan_text()
        .replace("collector: test.slow", "collector: test.where")
        .replace(
            "  params: {sleep_ms: 0.0}\n",
            f"  params: {{sleep_ms: {sleep_ms}, marks: '{marks}', trace_bytes: {trace_bytes}}}\n{resources}",
        )
    )
    return text


def _node_folder(cluster, index: int) -> str:
    return str(cluster.root / f"node-{index}")


def _sweep_folders(cluster) -> list[Path]:
    return list(cluster.root.glob("node-*/prereg-sweep-*"))


def test_the_multisite_example_across_three_nodes_records_what_the_local_executor_does(cluster, tmp_path, monkeypatch):
    from tests.conftest import OWN_EXAMPLES

    lock = freeze(OWN_EXAMPLES / "multisite-recovery.yaml", tmp_path / "ms.lock.json")
    monkeypatch.setattr(ray_executor, "CHUNK_BYTES", 700)  # every events trace crosses in several pieces
    from collect.api import run_plan

    summary = run_plan(lock.path, tmp_path / "ray", executor="ray", address=cluster.address)
    assert (summary.completed, summary.failed) == (48, 0)
    assert not ray.is_initialized()  # joined, then disconnected; the cluster keeps running
    run_plan(lock.path, tmp_path / "local")
    ours, local = contents(tmp_path / "ray"), contents(tmp_path / "local")
    assert ours == local and len(ours) == 48 and all(r["trace_sha256"] for r in ours)  # trace hashes included
    assert not _sweep_folders(cluster)  # each run's private folder removed on its node
    assert sorted(p.name for p in (tmp_path / "ray" / "traces").iterdir()) == sorted(
        p.name for p in (tmp_path / "local" / "traces").iterdir()
    )  # no partial file left


def test_a_gpu_run_lands_only_on_the_node_with_a_gpu_and_large_traces_arrive_intact(cluster, tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(ray_executor, "CHUNK_BYTES", 4096)
    gpu = "  resources: {overrides: [{when: {site: 2}, num_gpus: 1}]}\n"
    plan, sha = loaded(_where_plan(marks, trace_bytes=50_000, resources=gpu))
    summary = engine.run_plan(plan, sha, tmp_path / "ray", executor="ray", address=cluster.address)
    assert (summary.completed, summary.failed) == (24, 0)
    ran = where_ran(marks)
    records = {r.run_id: r for r in read_ledger(tmp_path / "ray").records}
    gpu_runs = {rid for rid, r in records.items() if r.stratum["site"] == 2}
    assert len(gpu_runs) == 8 and all(ran[rid] == [_node_folder(cluster, 2)] for rid in gpu_runs)
    monkeypatch.setattr(engine, "check_local", lambda runs: None)  # this machine shows no GPU: not needed here
    engine.run_plan(plan, sha, tmp_path / "local")
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")  # the demand never enters a record
    assert all((tmp_path / "ray" / r.traces[1]).stat().st_size == 50_000 for r in records.values())

    too_much = "  resources: {num_cpus: 1, overrides: [{when: {arm: b}, num_gpus: 2}]}\n"
    plan, sha = loaded(_where_plan(marks, resources=too_much))
    with pytest.raises(ResourcesMissing, match=r"num_gpus 2.*GPU 2 \(the most any node has: 1\)"):
        engine.run_plan(plan, sha, tmp_path / "refused", executor="ray", address=cluster.address)
    assert not (tmp_path / "refused" / "ledger.jsonl").exists()


def test_a_node_removed_mid_sweep_loses_only_its_unfinished_runs(cluster, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    doomed = cluster.add_node(cpus=1)
    folder = _node_folder(cluster, len(cluster.nodes))
    plan, sha = loaded(_where_plan(marks, sleep_ms=300.0))
    removed = threading.Event()

    def remove_when_busy() -> None:
        for _ in range(1200):  # a generous wait, only to catch a hang
            if any(folder in lines for lines in where_ran(marks).values()):
                cluster.remove_node(doomed)  # mid-run: a run takes 300 ms
                removed.set()
                return
            time.sleep(0.05)

    remover = threading.Thread(target=remove_when_busy)
    remover.start()
    try:
        summary = engine.run_plan(plan, sha, tmp_path / "ray", executor="ray", address=cluster.address)
    finally:
        remover.join()
    assert removed.is_set() and (summary.completed, summary.failed) == (24, 0)
    ran = where_ran(marks)
    redone = [rid for rid, lines in ran.items() if lines[0] == folder and len(lines) == 2]
    assert redone and all(ran[rid][1] != folder for rid in redone)  # retried by Ray elsewhere
    assert all(len(lines) <= 2 for lines in ran.values())
    records = read_ledger(tmp_path / "ray").records
    assert sorted(r.run_id for r in records) == sorted(set(ran))  # each run recorded exactly once
    for mark in marks.iterdir():
        mark.unlink()
    engine.run_plan(plan, sha, tmp_path / "local", jobs=2)
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")


def test_a_driver_killed_mid_sweep_leaves_no_task_and_resume_completes(cluster, tmp_path):
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=300.0))
    freeze(plan_file)
    lock, runs = tmp_path / "plan.lock.json", tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = ("run", str(lock), "--out", str(runs), "--executor", "ray", "--address", cluster.address)
    proc = subprocess.Popen(collect_cli(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ledger = runs / "ledger.jsonl"
        for _ in range(1200):  # kill once a few runs are in the ledger
            if proc.poll() is not None or (ledger.exists() and len(ledger.read_bytes().splitlines()) >= 3):
                break
            time.sleep(0.1)
        assert proc.poll() is None and task_workers(), "collect run ended before the kill"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Ray ends a dead driver's task workers. A generous wait, only to catch a hang.
    for _ in range(600):
        if not task_workers():
            break
        time.sleep(0.1)
    assert not task_workers()
    done_before = len(read_ledger(runs).records)
    final = subprocess.run(
        collect_cli(*args, "--resume", "--json"), env=env, capture_output=True, text=True, timeout=300
    )
    assert final.returncode == 0, final.stderr[-3000:]
    summary = json.loads(final.stdout[final.stdout.index("{") :])  # after whatever Ray printed on stdout first
    assert summary["skipped"] == done_before > 0, final.stdout
    clean = tmp_path / "clean"
    subprocess.run(
        collect_cli("run", str(lock), "--out", str(clean), "--jobs", "2"), env=env, check=True, capture_output=True
    )
    resumed = contents(runs)
    assert [r["run_id"] for r in resumed] == sorted({r["run_id"] for r in resumed})  # each exactly once
    assert resumed == contents(clean) and len(resumed) == 24


PROGRAM = """import json, os, sys
from helper import OFFSET
run = json.load(open(os.environ["PREREG_RUN"]))
json.dump({"value": OFFSET + run["params"]["offset"] + (run["seed"] % 1000) / 1000.0},
          open(os.environ["PREREG_METRICS"], "w"))
open(run["params"]["cwd_log"], "a").write(os.getcwd() + "\\n")
"""


def test_a_command_program_runs_on_the_nodes_from_its_code_files_sent_through_ray(cluster, tmp_path, monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "command", "collect.collectors.command.collector:CommandCollector")
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    (project / "helper.py").write_text("OFFSET = 0.5\n")
    text = (
        plan_text()
        .replace("collector: test.slow", "collector: command")
        .replace(
            "  params: {sleep_ms: 0.0}\n",
            f"  params: {{argv: [{json.dumps(sys.executable)}, prog.py], code: [prog.py, helper.py], "
            f"workdir: '{project}', cwd_log: '{tmp_path / 'cwd.log'}'}}\n",
        )
    )
    text = text.replace("site: [0, 1, 2]", "site: [0]").replace("seed: [1, 2, 3, 4]", "seed: [1, 2]")
    plan, sha = loaded(text)
    summary = engine.run_plan(plan, sha, tmp_path / "ray", executor="ray", address=cluster.address)
    assert (summary.completed, summary.failed) == (4, 0), [r.error for r in read_ledger(tmp_path / "ray").records]
    cwds = (tmp_path / "cwd.log").read_text().splitlines()
    assert len(cwds) == 4 and all(c.startswith(str(cluster.root)) for c in cwds)  # a private copy on its node
    engine.run_plan(plan, sha, tmp_path / "local")
    ours = contents(tmp_path / "ray")
    assert ours == contents(tmp_path / "local")  # code identity, metrics and every trace's hash
    assert set(ours[0]["code"]["command"]["files"]) == {"prog.py", "helper.py"}
    assert ours[0]["metrics"]["value"] >= 0.5
