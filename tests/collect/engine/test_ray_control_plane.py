"""`collect run --executor ray` whose cluster loses its GCS or the driver's raylet mid-sweep.

Each test starts its own local cluster (``collect.engine.local_cluster``: a head and one worker node of
one CPU each, joined by its explicit address), kills one of the head's processes with SIGKILL once a
few runs are in the ledger, and checks what ``collect run`` does: the toolkit's own message (what was
lost, what the ledger holds, its head, the runs not recorded, the resume command) and exit 1 (Ray,
left alone, ends the driver a minute after losing the GCS with only its own log line), a ledger that
verifies, nothing of the sweep left running, and a ``--resume`` that completes the rest with the
records an uninterrupted run has.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from collect.ledger.chain import verify_chain
from collect.ledger.store import read_ledger
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers import alive
from tests.helpers.engine import collect_cli, contents, plan_text
from tests.helpers.ray_procs import cmdline, descendants, session_processes

pytestmark = [
    pytest.mark.ray_instance,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]
ray = pytest.importorskip("ray")

WAIT_S = 300  # a generous bound on any one step, only to catch a hang


@pytest.fixture
def cluster():
    """A cluster of its own for each test: killing its GCS ends it."""
    from collect.engine.local_cluster import start_local_cluster

    old = os.environ.pop("RAY_ADDRESS", None)
    local = start_local_cluster(nodes=2, cpus_per_node=1)
    session = local.cluster.head_node.session_name
    try:
        yield local
    finally:
        local.shutdown()
        if old is not None:
            os.environ["RAY_ADDRESS"] = old
        for _ in range(WAIT_S * 10):
            if not session_processes(session):
                break
            time.sleep(0.1)
        assert not session_processes(session), "the cluster left processes behind"


def _sweep_workers(cluster) -> set[int]:
    """Pids of the cluster's Ray workers running a sweep's run."""
    nodes = [cluster.cluster.head_node, *cluster.nodes]
    raylets = {p.process.pid for node in nodes for p in node.all_processes.get("raylet", [])}
    return {pid for pid in descendants(raylets) if cmdline(pid).startswith(b"ray::run_task")}


def _gone(pids: set[int]) -> bool:
    """Whether every process of ``pids`` has exited (a generous wait, only to catch a hang)."""
    for _ in range(WAIT_S * 10):
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(
    ("process", "lost"), [("gcs_server", "the Ray GCS at"), ("raylet", "the raylet of this driver's node")]
)
def test_a_lost_control_plane_stops_the_sweep_with_the_ledger_head_and_the_resume_command(
    cluster, tmp_path, process, lost
):
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text(sleep=800.0))  # 24 runs on 2 CPUs: seconds longer than the watch needs
    freeze(plan_file)
    lock, runs = tmp_path / "plan.lock.json", tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    target = cluster.cluster.head_node.all_processes[process][0].process.pid
    proc = subprocess.Popen(
        collect_cli("run", str(lock), "--out", str(runs), "--executor", "ray", "--address", cluster.address),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ledger = runs / "ledger.jsonl"
        for _ in range(WAIT_S * 10):  # kill once some runs are in the ledger
            if proc.poll() is not None or (ledger.exists() and len(ledger.read_bytes().splitlines()) >= 2):
                break
            time.sleep(0.1)
        assert proc.poll() is None, "collect run ended before the kill"
        workers = _sweep_workers(cluster)
        os.kill(target, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    records = read_ledger(runs).records
    chain = verify_chain(read_ledger(runs))
    assert chain.status == "intact" and chain.head == records[-1].record_sha256
    assert proc.returncode == 1, stderr[-3000:]
    assert f"collect: lost the Ray cluster mid-sweep: {lost}" in stderr, stderr[-3000:]
    assert f"{len(records)} run(s) of this plan recorded" in stderr and f"ledger head sha256 {chain.head}" in stderr
    assert f"{24 - len(records)} planned run(s) not recorded" in stderr
    assert f"finish the remaining runs with: collect run {lock} --out {runs} --resume" in stderr
    assert len(records) < 24  # stopped mid-sweep: the rest is the resume's

    final = subprocess.run(
        collect_cli("run", str(lock), "--out", str(runs), "--resume", "--jobs", "2", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert final.returncode == 0, final.stderr[-3000:]
    summary = json.loads(final.stdout)
    assert (summary["skipped"], summary["completed"], summary["failed"]) == (len(records), 24 - len(records), 0)
    clean = tmp_path / "clean"
    subprocess.run(
        collect_cli("run", str(lock), "--out", str(clean), "--jobs", "2"),
        env=env,
        check=True,
        capture_output=True,
        timeout=WAIT_S,
    )
    resumed = contents(runs)
    assert [r["run_id"] for r in resumed] == sorted({r["run_id"] for r in resumed})  # each exactly once
    assert resumed == contents(clean) and len(resumed) == 24  # metrics, seeds, traces' hashes, by run id
    if process == "raylet":  # the GCS answers: Ray ended the job's workers on the other nodes as the driver left
        assert workers and _gone(workers | _sweep_workers(cluster))
    cluster.shutdown()  # without a GCS, Ray's raylets end their workers after its reconnect timeout; here at once
    assert _gone(workers)
