"""A lost Ray control plane, without Ray: the watch's probes, and what the engine keeps and says.

The end-to-end cases (a real cluster whose GCS or raylet is killed mid-sweep) are in
``test_ray_control_plane.py``, in the slow tier.
"""

# starts no Ray instance: the sweep's Ray part is replaced by a generator; probes hit plain sockets
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
        assert watch.probe() is None
        server.close()  # the port now refuses connections
        assert watch.probe() is None and part.failing_since is not None  # one failed probe: a blip, not a loss
        watch.check()  # nothing lost yet: no error
        watch.lost_after_s = 0.0
        assert watch.probe() == part.name
        with pytest.raises(ControlPlaneLost) as caught:
            watch.check()
        assert caught.value.exit_code == 1 and caught.value.lost == part.name
    finally:
        server.close()
        watch.close()


def test_answering_is_a_fresh_probe_of_every_endpoint():
    """The sweep asks Ray for its nodes (a GCS-bound call) only while every endpoint answers now."""
    server, other = _listening(), _listening()
    watch = ControlWatch([_endpoint(server), _endpoint(other, "raylet")], watch_s=3600.0, lost_after_s=3600.0)
    try:
        assert watch.answering()
        other.close()  # one endpoint gone: no GCS-bound call, though nothing is declared lost yet
        assert not watch.answering() and watch.lost is None
    finally:
        server.close()
        other.close()
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
