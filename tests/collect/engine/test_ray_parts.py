"""The parts of the Ray executor that need no Ray: run demands and their checks, traces carried as
bytes (the task's pieces -> the driver's receiver), shared inputs checked on arrival, joins refused early."""

# starts no Ray instance: `--executor ray` runs here are refused before ray.init
from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.engine.ray_task import SharedInputMismatch, place_inputs, run_task
from collect.engine.resources import ResourcesMissing, check_cluster, check_local, demand_key, visible_gpus
from collect.engine.runs import Job
from collect.engine.transfer import Leftovers, Receiver
from prereg.plan import PlanError
from tests.conftest import REPO
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


def _worker_side(
    tmp_path: Path, trace_bytes: int, chunk_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list, Path]:
    """Four runs as the Ray task runs each (a private folder under the node's temporary folder), without Ray."""
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
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(node_tmp))
    return [run_task(job, run, {}, {}, chunk_bytes) for run in runs[:4]], node_tmp


def test_traces_cross_as_chunks_and_are_hashed_and_placed_by_the_driver(tmp_path, monkeypatch):
    items, node_tmp = _worker_side(tmp_path, trace_bytes=10_000, chunk_bytes=4096, monkeypatch=monkeypatch)
    assert not list(node_tmp.iterdir())  # each run's private folder removed once its result is made
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


def test_a_torn_or_foreign_trace_is_refused_and_a_broken_result_leaves_nothing(tmp_path, monkeypatch):
    items, _ = _worker_side(tmp_path, trace_bytes=5000, chunk_bytes=1024, monkeypatch=monkeypatch)
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
    receivers[3].take(own[:2])  # a result without its record
    for receiver in receivers:  # what the executor does when a sweep fails
        receiver.abort()
    assert not list((tmp_path / "runs" / "traces" / ".incoming").iterdir())
    assert not list((tmp_path / "runs" / "traces").glob(f"{run}.*"))


def test_shared_inputs_are_checked_against_the_drivers_sha256(tmp_path):
    data = b"warm start bytes"
    good = {"shared/warmstart-x.pt": (hashlib.sha256(data).hexdigest(), data)}
    shipped = place_inputs(good, {"git/k": None}, tmp_path / "a")
    assert (tmp_path / "a" / "shared" / "warmstart-x.pt").read_bytes() == data and shipped.facts == {"git/k": None}
    with pytest.raises(SharedInputMismatch, match="not the driver's"):
        place_inputs({"shared/warmstart-x.pt": (good["shared/warmstart-x.pt"][0], data + b"!")}, {}, tmp_path / "b")
    with pytest.raises(SharedInputMismatch, match="not a relative path"):
        place_inputs({"../x": (hashlib.sha256(data).hexdigest(), data)}, {}, tmp_path / "c")


def test_the_torch_study_names_its_warm_start_as_a_shared_input(tmp_path):
    pytest.importorskip("torch")
    torch_collector = pytest.importorskip("prereg_seed_studies.torch.collector")
    from prereg_seed_studies.torch.warmstart import warm_key

    TorchMultisiteCollector, torch_params = torch_collector.TorchMultisiteCollector, torch_collector.validate

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


def test_the_command_collector_names_its_code_files_as_shared_inputs(tmp_path):
    from collect.collectors.command.collector import CommandCollector, validate

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


def test_what_an_earlier_attempt_left_is_removed_once_from_one_listing(tmp_path, monkeypatch):
    items, _ = _worker_side(tmp_path, trace_bytes=100, chunk_bytes=4096, monkeypatch=monkeypatch)
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


@pytest.mark.subprocess
def test_an_address_nobody_answers_is_refused_naming_it_not_waited_on(tmp_path):
    import socket

    from collect.engine.ray_control import answers

    with socket.socket() as listening:  # a port that answers, then the same port closed
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert answers("127.0.0.1", port, 5.0) is True
    assert answers("127.0.0.1", port, 5.0) is False
    plan = tmp_path / "study.yaml"
    plan.write_text((REPO / "examples" / "multisite-recovery.yaml").read_text(encoding="utf-8"), encoding="utf-8")
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


def test_a_loopback_head_ray_would_look_for_elsewhere_is_refused_before_ray_init(monkeypatch):
    import socket

    ray = pytest.importorskip("ray")
    from collect.engine.ray_executor import _refuse_unreachable

    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    ip = ray.util.get_node_ip_address()
    if ip.startswith("127.") or ip == "::1":
        pytest.skip("this machine has no network address besides the loopback")
    with socket.socket() as head:  # listens on the loopback only, as a head Ray bound to 127.0.0.1
        head.bind(("127.0.0.1", 0))
        head.listen()
        port = head.getsockname()[1]
        with pytest.raises(engine.EngineError, match=f"listens on the loopback only.*{ip}:{port}, where nothing"):
            _refuse_unreachable(f"127.0.0.1:{port}")
        monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray joins it on the loopback then
        _refuse_unreachable(f"127.0.0.1:{port}")
    assert not ray.is_initialized()
