"""A lost Ray control plane, without Ray: the watch's probes, and what the engine keeps and says.

The end-to-end cases (a real cluster whose GCS or raylet is killed mid-sweep) are in
``test_ray_control_plane.py``, in the slow tier.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import collect.engine.runner as engine
from collect.engine.ray_control import ControlPlaneLost, ControlWatch, Endpoint
from collect.ledger.chain import verify_chain
from collect.ledger.store import read_ledger
from tests.helpers.collectors import SLOW
from tests.helpers.engine import contents, loaded, plan_text

GCS = "the Ray GCS at 10.0.0.1:6379"


@pytest.fixture(autouse=True)
def slow_collector(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)


def _listening() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


def _endpoint(server: socket.socket, kind: str = "gcs") -> Endpoint:
    host, port = server.getsockname()
    return Endpoint(kind, f"the {kind} at {host}:{port}", host, port)


def test_an_endpoint_is_lost_only_once_it_failed_every_probe_for_the_whole_grace():
    server = _listening()
    part = _endpoint(server)
    watch = ControlWatch([part], watch_s=3600.0, lost_after_s=3600.0)  # probed by hand only
    try:
        assert watch.probe() is None and watch.gcs_answers()
        watch.settle()  # everything answers: returns at once
        server.close()  # the port now refuses connections
        assert watch.probe() is None and part.failing_since is not None  # one failed probe: a blip, not a loss
        assert not watch.gcs_answers()
        watch.check()  # nothing lost yet: no error
        watch.lost_after_s = 0.0
        assert watch.probe() == part.name
        with pytest.raises(ControlPlaneLost) as caught:
            watch.settle()
        assert caught.value.exit_code == 1 and caught.value.lost == part.name
    finally:
        server.close()
        watch.close()


def test_an_endpoint_that_answers_again_starts_its_grace_afresh():
    server = _listening()
    host, port = server.getsockname()
    part = _endpoint(server, "raylet")
    watch = ControlWatch([part], watch_s=3600.0, lost_after_s=3600.0)
    try:
        server.close()
        watch.probe()
        assert part.failing_since is not None
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
        server.listen()
        assert watch.probe() is None and part.failing_since is None
        assert watch.gcs_answers()  # only the GCS decides whether calls that need it may be made
    finally:
        server.close()
        watch.close()


def test_a_lost_control_plane_keeps_every_finished_run_and_names_the_head_the_rest_and_the_resume(
    tmp_path, monkeypatch
):
    plan, sha = loaded(plan_text())
    runs = tmp_path / "runs"

    def lost_after_five(job: Any, todo: list[Any], jobs: int, address: str | None = None) -> Iterator[list[dict]]:
        for record in engine.run_batch(job, todo[:5]):
            yield [record]
        raise ControlPlaneLost(f"{GCS} stopped answering", lost=GCS)

    monkeypatch.setattr(engine, "_ray", lost_after_five)
    with pytest.raises(ControlPlaneLost) as caught:
        engine.run_plan(plan, sha, runs, executor="ray", resume_lock="study.lock.json")
    err = caught.value
    records = read_ledger(runs).records
    chain = verify_chain(read_ledger(runs))
    assert len(records) == 5 and chain.status == "intact" and chain.head == records[-1].record_sha256
    assert err.exit_code == 1 and GCS in err.message
    assert f"ledger head sha256 {chain.head}" in err.message
    assert "5 run(s) of this plan recorded (5 by this sweep)" in err.message
    recorded = {r.run_id for r in records}
    missing = err.details["not_recorded"]
    assert len(missing) == 19 and not recorded & set(missing)
    assert (
        "19 planned run(s) not recorded" in err.message and missing[0] in err.message and "and 14 more" in err.message
    )
    assert f"collect run study.lock.json --out {runs} --resume" in err.message
    assert err.details["ledger_head_sha256"] == chain.head

    monkeypatch.undo()  # the resume: any executor; the local one here
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)
    summary = engine.run_plan(plan, sha, runs)
    assert (summary.skipped, summary.completed, summary.failed) == (5, 19, 0)
    engine.run_plan(plan, sha, tmp_path / "clean")
    assert contents(runs) == contents(tmp_path / "clean")  # each run once, the same records as uninterrupted


def test_without_the_lock_path_the_resume_command_names_a_placeholder(tmp_path, monkeypatch):
    plan, sha = loaded(plan_text())

    def lost_at_once(job: Any, todo: list[Any], jobs: int, address: str | None = None) -> Iterator[list[dict]]:
        raise ControlPlaneLost("lost", lost=GCS)
        yield []  # a generator, as the executor is

    monkeypatch.setattr(engine, "_ray", lost_at_once)
    with pytest.raises(
        ControlPlaneLost,
        match=r"0 run\(s\) of this plan recorded .*\nledger head sha256 None\n24 "
        r"planned run\(s\) not recorded",
    ) as caught:
        engine.run_plan(plan, sha, tmp_path / "runs", executor="ray")
    assert f"collect run LOCK --out {Path(tmp_path / 'runs')} --resume" in caught.value.message


class _FakeStore:
    """Ray's key-value store for one driver's workers: ``live`` beats until a stop is asked, then removes
    its key (as a worker's guard does); ``dead`` stands still (a worker that died with its node)."""

    def __init__(self, folder: str, job: str) -> None:
        self.live, self.dead = f"{folder}/worker/{job}/n1/101", f"{folder}/worker/{job}/n2/102"
        self.data: dict[str, bytes] = {self.live: b"0", self.dead: b"7"}
        self.stop = f"{folder}/stop/{job}"

    def put(self, key: str, value: bytes, overwrite: bool = True, namespace: str | None = None) -> None:
        self.data[key] = value

    def get(self, key: str, namespace: str | None = None) -> bytes | None:
        if key == self.live and self.live in self.data:
            if self.stop in self.data:
                del self.data[self.live]  # the worker saw the stop: its key goes, it exits
                return None
            self.data[key] = str(int(self.data[key]) + 1).encode()  # still beating
        return self.data.get(key)

    def delete(self, key: str, del_by_prefix: bool = False, namespace: str | None = None) -> None:
        for k in [k for k in self.data if (k.startswith(key) if del_by_prefix else k == key)]:
            del self.data[k]

    def list(self, prefix: str, namespace: str | None = None) -> list[bytes]:
        return [k.encode() for k in self.data if k.startswith(prefix)]


class _Clock:
    """A clock whose sleeps only move it on: the test counts the registry's seconds, never waits them."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_after_a_loss_the_driver_stops_its_workers_and_waits_only_for_those_still_beating(monkeypatch):
    from collect.engine import ray_registry

    store, clock = _FakeStore("f00d", "01000000"), _Clock()
    monkeypatch.setattr(ray_registry, "_kv", lambda: (store.put, store.get, store.delete, store.list))
    beat = ray_registry.DriverBeat("f00d", "01000000")
    monkeypatch.setattr(ray_registry, "time", clock)
    try:
        beat.stop_workers(wait_s=60.0)
        assert store.stop in store.data and store.live not in store.data  # asked, and the live one stopped
        assert store.dead in store.data  # the dead one was never going to remove its key ...
        assert clock.now <= 3 * ray_registry.HEARTBEAT_S  # ... and was not waited on past two still beats
    finally:
        beat.close()
    assert not [k for k in store.data if k.startswith("f00d/")]  # the driver's, the stop and the workers' keys
