"""The parts of the Ray executor that need no Ray: run demands and their checks, traces carried as
bytes (worker pieces -> driver receiver), shared inputs checked on arrival, the reaper's process match."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.collectors.base import Shipped
from collect.engine import ray_reaper
from collect.engine.ray_worker import Inputs, SharedInputMismatch, place_inputs, run_private
from collect.engine.resources import ResourcesMissing, capacity, check_cluster, check_local, demand_key, visible_gpus
from collect.engine.runs import Job
from collect.engine.transfer import Leftovers, Receiver
from prereg.plan import PlanError
from tests.helpers.collectors import SLOW, WHERE
from tests.helpers.engine import loaded, plan_text

RESOURCES = (
    "  resources:\n    num_cpus: 1\n    custom: {lab: 1}\n    overrides:\n"
    "      - {when: {site: 2}, num_gpus: 1}\n      - {when: {arm: b, site: 2}, num_cpus: 2, custom: {lab: 0}}\n"
)


def _with_resources(text: str, block: str = RESOURCES) -> str:
    params = "  params: {sleep_ms: 0.0}\n"
    assert params in text
    return text.replace(params, params + block)


@pytest.fixture(autouse=True)
def fake_collectors(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "test.slow", SLOW)
    monkeypatch.setitem(engine.COLLECTORS, "test.where", WHERE)


def test_each_run_carries_its_demand_overrides_in_order():
    plan, sha = loaded(_with_resources(plan_text()))
    _, runs = engine.expand_plan(plan, sha)
    by_cell = {(r.stratum["site"], r.arm): r.resources for r in runs if r.stratum["seed"] == 1}
    assert by_cell[(0, "a")] == {"num_cpus": 1.0, "num_gpus": 0.0, "custom": {"lab": 1.0}}
    assert by_cell[(2, "a")] == {"num_cpus": 1.0, "num_gpus": 1.0, "custom": {"lab": 1.0}}
    assert by_cell[(2, "b")] == {"num_cpus": 2.0, "num_gpus": 1.0, "custom": {}}  # lab 0: asks for none
    assert all("num_gpus" not in r.params for r in runs)  # never a run parameter
    plain, sha2 = loaded(plan_text())
    assert {demand_key(r.resources) for r in engine.expand_plan(plain, sha2)[1]} == {(1.0, 0.0, ())}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("  resources: {overrides: [{when: {arm: c}, num_gpus: 1}]}\n", "unknown arm 'c'"),
        ("  resources: {overrides: [{when: {site: 7}, num_gpus: 1}]}\n", "7 is not a level of factor 'site'"),
        ("  resources: {overrides: [{when: {speed: 1}, num_gpus: 1}]}\n", "unknown factor 'speed'"),
        ("  resources: {overrides: [{when: {site: 1}}]}\n", "sets no amount"),
        ("  resources: {num_gpus: -1}\n", "greater than or equal to 0"),
        ("  resources: {gpus: 1}\n", "unknown key 'gpus'"),
    ],
)
def test_bad_resources_are_refused_at_freeze(block, message):
    with pytest.raises(PlanError, match=message):
        loaded(_with_resources(plan_text(), block))


def test_the_local_executor_refuses_what_this_machine_lacks(tmp_path):
    plan, sha = loaded(_with_resources(plan_text()))
    _, runs = engine.expand_plan(plan, sha)
    check_local(runs, cpus=2, gpus=1)  # custom resources are not checked locally
    with pytest.raises(ResourcesMissing, match=r"4 run\(s\) \(arm b.*num_gpus 1; this machine shows 0 GPU"):
        check_local(runs, cpus=2, gpus=0)
    with pytest.raises(ResourcesMissing, match="num_cpus 2; this machine has 1 CPU"):
        check_local(runs, cpus=1, gpus=1)
    if visible_gpus() == 0:  # the library entry point refuses before any run, nothing written
        with pytest.raises(ResourcesMissing):
            engine.run_plan(plan, sha, tmp_path / "runs")
        assert not (tmp_path / "runs").exists()
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}) == 2
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == 0


def test_a_cluster_check_names_what_is_missing():
    plan, sha = loaded(_with_resources(plan_text()))
    _, runs = engine.expand_plan(plan, sha)
    gpu_node = {"CPU": 1.0, "GPU": 1.0, "lab": 1.0}
    big_node = {"CPU": 4.0, "lab": 1.0}
    check_cluster(runs, [{"CPU": 2.0, "GPU": 1.0, "lab": 1.0}])
    with pytest.raises(ResourcesMissing, match=r"GPU 1 \(the most any node has: 0\)"):
        check_cluster(runs, [big_node])
    with pytest.raises(ResourcesMissing, match="no single node has all of it"):
        check_cluster(runs, [gpu_node, big_node])  # num_cpus 2 + num_gpus 1 on one node: none has both
    with pytest.raises(ResourcesMissing, match=r"lab 1 \(the most any node has: 0\)"):
        check_cluster(runs, [{"CPU": 8.0, "GPU": 8.0}])
    assert capacity((1.0, 0.0, ()), [big_node, gpu_node]) == 5
    assert capacity((1.0, 1.0, ()), [big_node, gpu_node]) == 1
    assert capacity((0.0, 0.0, ()), [big_node]) == 4


def _worker_side(tmp_path: Path, trace_bytes: int, chunk_bytes: int) -> tuple[list, Path]:
    """A batch run as a Ray task would run it (private folder, stream items), without Ray."""
    marks = tmp_path / "marks"
    marks.mkdir()
    text = (
        plan_text()
        .replace("collector: test.slow", "collector: test.where")
        .replace("params: {sleep_ms: 0.0}", f"params: {{sleep_ms: 0.0, marks: '{marks}', trace_bytes: {trace_bytes}}}")
    )
    plan, sha = loaded(text)
    _, runs = engine.expand_plan(plan, sha)
    job = Job("test.where", WHERE, sha, "", {"git": None, "python": "", "platform": ""})
    private = tmp_path / "private"
    items = list(run_private(job, runs[:4], private, Shipped(private), chunk_bytes, group_s=0.0))
    return items, private


def test_traces_cross_as_chunks_and_are_hashed_and_placed_by_the_driver(tmp_path):
    items, private = _worker_side(tmp_path, trace_bytes=10_000, chunk_bytes=4096)
    assert not list((private / "traces").iterdir())  # each run's files deleted once sent
    assert max(len(p[3]) for item in items for p in item if p[0] == "data") <= 4096
    runs = tmp_path / "runs"
    receiver = Receiver(runs)
    records = [r for item in items for r in receiver.take(item)]
    receiver.close()
    assert len(records) == 4 and not (runs / "traces" / ".incoming").exists()
    for record in records:
        assert len(record["traces"]) == 2
        for name in record["traces"]:
            data = (runs / name).read_bytes()
            assert record["trace_sha256"][name] == hashlib.sha256(data).hexdigest()
        assert (runs / record["traces"][1]).stat().st_size == 10_000


def test_a_torn_or_foreign_trace_is_refused_and_a_broken_stream_leaves_nothing(tmp_path):
    items, _ = _worker_side(tmp_path, trace_bytes=5000, chunk_bytes=1024)
    pieces = [p for item in items for p in item]
    record = next(p for p in pieces if p[0] == "record")
    run = record[1]["run_id"]
    own = [p for p in pieces if p[0] == "data" and p[1] == run]
    torn = [own[0], ("data", *own[1][1:3], b"X" + own[1][3][1:], own[1][4]), *own[2:]]
    receivers = [Receiver(tmp_path / "runs") for _ in range(4)]
    with pytest.raises(engine.EngineError, match="arrived torn"):
        receivers[0].take([*torn, record])
    with pytest.raises(engine.EngineError, match="not one of this run's"):
        receivers[1].take([("data", run, f"traces/../{run}.x", b"", True)])
    with pytest.raises(engine.EngineError, match="did not arrive whole"):
        receivers[2].take([own[0], record])
    receivers[3].take(own[:2])  # a node died mid-file
    for receiver in receivers:  # what the executor does with the streams of a failed sweep
        receiver.abort()
    assert not list((tmp_path / "runs" / "traces" / ".incoming").iterdir())
    assert not list((tmp_path / "runs" / "traces").glob(f"{run}.*"))


def test_shared_inputs_are_checked_against_the_drivers_sha256(tmp_path):
    data = b"warm start bytes"
    good = Inputs({"shared/warmstart-x.pt": (hashlib.sha256(data).hexdigest(), "ref")}, {"git/k": None})
    shipped = place_inputs(good, tmp_path / "a", lambda ref: data)
    assert (tmp_path / "a" / "shared" / "warmstart-x.pt").read_bytes() == data and shipped.facts == {"git/k": None}
    with pytest.raises(SharedInputMismatch, match="not the driver's"):
        place_inputs(good, tmp_path / "b", lambda ref: data + b"!")
    with pytest.raises(SharedInputMismatch, match="not a relative path"):
        place_inputs(Inputs({"../x": ("0" * 64, "ref")}, {}), tmp_path / "c", lambda ref: data)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_reaper_finds_the_sessions_processes_and_only_them(tmp_path):
    marker = f"session_test_{time.time_ns()}"
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--session-name={marker}"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--session-name=session_other"])
    try:
        assert ray_reaper.session_processes(marker) == [mine.pid]
        assert ray_reaper.sweep(marker) == 1  # by its command line (no noted pids)
        assert mine.wait(timeout=30) == -9 and other.poll() is None
    finally:
        for proc in (mine, other):
            proc.kill()
            proc.wait()


def test_collectors_name_their_shared_inputs(tmp_path):
    from collect.collectors.command.collector import CommandCollector, validate
    from collect.collectors.torchrun.collector import TorchMultisiteCollector
    from collect.collectors.torchrun.collector import validate as torch_params
    from collect.collectors.torchrun.warmstart import warm_key

    p = torch_params(
        {
            "sites": 3,
            "useful_tokens": 6144,
            "micro_batch": 64,
            "train_tokens": 16384,
            "heldout_tokens": 2048,
            "width": 32,
            "warm_start_steps": 3,
            "policy": "restart",
        }
    )
    shared = TorchMultisiteCollector.shared_inputs([p, {**p, "policy": "continue"}], tmp_path / "runs")
    key = warm_key(p)
    assert shared.files == {
        f"shared/warmstart-{key}.pt": tmp_path / "runs" / "shared" / f"warmstart-{key}.pt",
        f"shared/warmstart-{key}.json": tmp_path / "runs" / "shared" / f"warmstart-{key}.json",
    }
    assert TorchMultisiteCollector.shared_inputs([{**p, "warm_start_steps": 0}], tmp_path).files == {}

    (tmp_path / "prog.py").write_text("print(1)\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.py").write_text("X = 1\n")
    params = validate(
        {"argv": ["python", "prog.py"], "code": ["prog.py", "lib/*.py"], "workdir": str(tmp_path), "metrics": ["value"]}
    )
    shared = CommandCollector.shared_inputs([params, params], tmp_path / "runs")
    names = sorted(name.split("/", 2)[2] for name in shared.files)
    assert names == ["lib/util.py", "prog.py"] and len(shared.facts) == 1
    assert all(path.is_file() for path in shared.files.values())


def test_what_an_earlier_attempt_left_is_removed_once_from_one_listing(tmp_path):
    items, _ = _worker_side(tmp_path, trace_bytes=100, chunk_bytes=4096)
    run = next(p for item in items for p in item if p[0] == "record")[1]["run_id"]
    traces = tmp_path / "runs" / "traces"
    (traces / f"{run}.stale").mkdir(parents=True)
    (traces / f"{run}.stale" / "x").write_text("old")
    (traces / f"{run}.old.jsonl").write_text("old")
    (traces / "run-other.old.jsonl").write_text("another run's")
    leftovers = Leftovers(tmp_path / "runs")
    receivers = [Receiver(tmp_path / "runs", leftovers) for _ in range(2)]
    records = [r for i, item in enumerate(items) for r in receivers[i % 2].take(item)]
    assert len(records) == 4
    assert not (traces / f"{run}.stale").exists() and not (traces / f"{run}.old.jsonl").exists()
    assert (traces / "run-other.old.jsonl").read_text() == "another run's"
    assert sorted(p.name for p in traces.glob(f"{run}.*")) == sorted(n.split("/")[1] for n in records[0]["traces"])


def test_an_early_join_is_skipped_without_an_address_that_answers(monkeypatch):
    import socket

    from collect.engine import ray_warm

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    for address in (None, "local", "auto", "ray://127.0.0.1:10001", closed):
        assert ray_warm.start_early(address) is False
        assert ray_warm.adopt(address) is False and ray_warm.early_failure(address) is None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert ray_warm._reachable(f"127.0.0.1:{s.getsockname()[1]}")


def test_an_address_nobody_answers_is_refused_naming_it_not_waited_on(tmp_path):
    import socket

    from collect.engine.ray_warm import answers

    with socket.socket() as listening:  # a port that answers, then the same port closed
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert answers(f"127.0.0.1:{port}", 5.0) is True
    assert answers(f"127.0.0.1:{port}", 5.0) is False
    assert answers("auto", 5.0) is None and answers("ray://head:10001", 5.0) is None
    plan = tmp_path / "study.yaml"
    plan.write_text(
        (Path(__file__).resolve().parents[2] / "examples" / "multisite-recovery.yaml").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "prereg"), "freeze", str(plan)], check=True, capture_output=True, timeout=300)
    lock = tmp_path / "study.lock.json"
    done = subprocess.run(
        [
            str(bin_dir / "collect"),
            "run",
            str(lock),
            "--out",
            str(tmp_path / "runs"),
            "--executor",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert f"could not join the Ray cluster at 127.0.0.1:{port}: nothing accepts a connection" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_warm_pool_gives_each_runner_at_most_depth_batches_and_forgets_a_lost_one():
    from collect.engine.ray_pool import WARM_DEMAND, Pool

    a, b = object(), object()
    pool = Pool(False, {WARM_DEMAND}, depth=2, handles=[a, b])
    taken = [pool.take() for _ in range(4)]
    assert sorted(map(id, taken)) == sorted([id(a), id(a), id(b), id(b)])  # spread: the least loaded first
    assert pool.take() is None and not pool.free  # each has its two batches
    pool.give_back(a)
    assert pool.free and pool.take() is a
    pool.drop(b)
    assert pool.size == 1 and pool.take() is None  # a has two again; b is gone
    pool.give_back(b)  # a batch of the dropped runner ending: ignored
    pool.give_back(a)
    assert pool.take() is a
    pool.drop(a)
    assert pool.size == 0 and pool.take() is None and not pool.free
    assert Pool(False, {WARM_DEMAND}).size == 0  # not on a joined cluster: no runners (and no Ray call)


def test_a_warm_runner_refuses_once_a_module_it_loaded_changed_or_without_the_drivers_paths(tmp_path, monkeypatch):
    import importlib
    import os
    import threading

    from collect.engine import ray_pool
    from collect.engine.ray_worker import Guard

    module = tmp_path / "warm_probe_module.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("warm_probe_module")
    exits: list[float] = []
    monkeypatch.setattr(
        threading, "Timer", lambda delay, *a, **k: type("T", (), {"start": lambda self: exits.append(delay)})()
    )
    runner = ray_pool.WarmRunner(idle_s=1e9)  # its idle watch never fires here
    assert runner.stale() is None
    guard = Guard(None, "folder", "job-1")
    with pytest.raises(ray_pool.StaleRunner, match="started without /nowhere"):
        next(runner.sweep(None, [], None, guard, 1, 0.1, paths=("/nowhere",)))
    assert exits == [0.5]  # it exits once the refusal reached the driver
    module.write_text("VALUE = 22\n")  # another size
    assert runner.stale() == str(module)
    with pytest.raises(ray_pool.StaleRunner, match="warm_probe_module.py changed"):
        next(runner.sweep(None, [], None, guard, 1, 0.1, paths=()))
    module.write_text("VALUE = 1\n")  # the first size again, another modification time: still changed
    os.utime(module, ns=(0, 0))
    assert runner.stale() == str(module)


def test_code_paths_are_the_working_directory_and_the_scripts_folder_when_on_sys_path(tmp_path, monkeypatch):
    import sys

    from collect.engine.ray_pool import code_paths, paths_key

    script = tmp_path / "bin" / "collect"
    script.parent.mkdir()
    script.write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert code_paths() == (str(tmp_path),)  # its folder is not on sys.path (as with python -m)
    monkeypatch.syspath_prepend(str(script.parent))
    assert code_paths() == (str(script.parent), str(tmp_path))
    key = paths_key(code_paths())
    assert len(key) == 8 and key == paths_key((str(script.parent), str(tmp_path))) != paths_key((str(tmp_path),))
