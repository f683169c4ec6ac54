"""The ``command`` collector: a plan runs a program of the researcher's, with its metrics, marks,
code identity, failures, telemetry and process hygiene (tiny Python programs written to tmp_path)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.collectors.command.outputs import RunFailure, parse_mark, phases_of, read_marks
from collect.collectors.command.params import format_argv
from collect.collectors.command.telemetry import sensor_for_env
from collect.ledger.store import read_ledger
from collect.traces.telemetry import read_trace
from prereg.api import freeze
from tests.conftest import REPO
from tests.helpers import alive, interruptible_children, run
from tests.helpers.engine import contents, loaded

TARGET = "collect.collectors.command.collector:CommandCollector"
COLLECT = str(Path(sys.executable).parent / "collect")  # the console script

PROGRAM = r"""
import json, math, os, subprocess, sys, time
from collect.marks import phase

run = json.load(open(os.environ["PREREG_RUN"]))
p = run["params"]
mode = p.get("mode", "ok")
print("run", run["run_id"], "arm", run["arm"], "argv", sys.argv[1:])
with phase("compute"):
    value = p["offset"] + ((run["seed"] % 1000) / 1000.0)
    time.sleep(p.get("work_s", 0.0))
with phase("checkpoint"):
    with open(os.path.join(os.environ["PREREG_RUN_DIR"], "ckpt.txt"), "w") as f:
        f.write(f"{value}\n")
    time.sleep(p.get("work_s", 0.0))
metrics = {"value": value}
if mode == "exit1":
    print("boom: the loss diverged", file=sys.stderr)
    sys.exit(1)
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(os.path.join(os.environ["PREREG_RUN_DIR"], "grandchild.pid"), "w").write(str(child.pid))
    time.sleep(600)
if mode == "unknown":
    metrics["bogus"] = 1.0
if mode == "nan":
    metrics["value"] = math.nan
if mode == "malformed":
    open(os.environ["PREREG_METRICS"], "w").write('{"value": 1.0,')
    sys.exit(0)
if mode != "nometrics":
    with open(os.environ["PREREG_METRICS"], "w") as f:
        json.dump(metrics, f)
"""

PLAN = """schema: prereg/v1
study: command-test
title: Command test
hypothesis: Arm b's value is higher.
experiment:
  collector: {collector}
  params:
    argv: [{python}, prog.py, --arm, "{{arm}}", --seed, "{{seed}}", --site, "{{site}}", "{{{{literal}}}}"]
    timeout_s: {timeout}
    code: [prog.py, "lib/**/*.py"]
{extra}arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0}}
strata:
  factors:
{factors}  replicates: 1
metrics:
  value: {{unit: unit, better: higher, evidence: measured, deterministic: true}}
{metrics}gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""


def plan_text(
    collector: str = "command",
    timeout: float = 30,
    extra: str = "",
    factors: str = "    site: [0, 1]\n",
    metrics: str = "",
) -> str:
    return PLAN.format(
        collector=collector,
        python=json.dumps(sys.executable),
        timeout=timeout,
        extra=extra,
        factors=factors,
        metrics=metrics,
    )


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "command", TARGET)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A researcher's project folder (the working directory): prog.py and lib/util.py."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "lib" / "deep").mkdir(parents=True)
    (tmp_path / "lib" / "deep" / "util.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def records_by(runs: Path) -> dict[tuple[str, str], object]:
    return {(str(r.stratum), r.arm): r for r in read_ledger(runs).records}


def test_a_plan_runs_the_program_with_its_metrics_traces_and_code_identity(project):
    plan, sha = loaded(plan_text())
    summary = engine.run_plan(plan, sha, project / "runs")
    assert (summary.completed, summary.failed) == (4, 0)
    records = read_ledger(project / "runs").records
    for r in records:
        offset = 1.0 if r.arm == "b" else 0.0
        assert r.metrics["value"] == pytest.approx(offset + (r.seed % 1000) / 1000.0)
        assert r.evidence == {"value": "measured"} and r.code["collector"] == "command"
        folder = f"traces/{r.run_id}.run"
        assert sorted(r.traces) == sorted(
            [
                *(
                    f"{folder}/{n}"
                    for n in ("ckpt.txt", "marks.txt", "metrics.json", "run.json", "stderr.txt", "stdout.txt")
                ),
                f"traces/{r.run_id}.events.jsonl",
            ]
        )  # its story
        assert set(r.trace_sha256) == set(r.traces)  # every file of the run's folder hashed in the record
        stdout = (project / "runs" / folder / "stdout.txt").read_text()
        site = r.stratum["site"]
        assert (
            f"arm {r.arm} argv ['--arm', '{r.arm}', '--seed', '{r.seed}', '--site', '{site}', '{{literal}}']" in stdout
        )
        run_json = json.loads((project / "runs" / folder / "run.json").read_text())
        assert run_json == {
            "run_id": r.run_id,
            "prereg_sha256": sha,
            "stratum": r.stratum,
            "arm": r.arm,
            "replicate": 0,
            "seed": r.seed,
            "params": {"offset": offset, "site": site},
        }
        marks = read_marks(project / "runs" / folder / "marks.txt")
        assert [p.name for p in phases_of(marks)] == ["compute", "checkpoint"]
        ident = r.code["command"]
        assert set(ident["files"]) == {"prog.py", "lib/deep/util.py"}
        assert ident["files"]["prog.py"] == __import__("hashlib").sha256(PROGRAM.encode()).hexdigest()
        assert ident["python"]["version"] == sys.version.split()[0]
        assert "numpy" in ident["packages"] and "torch" in ident["packages"]
        assert r.code["argv"][-1] == "{{literal}}"
    a = [r for r in records if r.arm == "a"]
    b = [r for r in records if r.arm == "b"]
    assert {r.seed for r in a} == {r.seed for r in b}  # common random numbers across arms


def test_collect_plan_lists_a_command_plan_as_collect_run_would_execute_it(project):
    from collect.engine.runs import expand_plan
    from collect.importing.planned import planned_runs

    plan, sha = loaded(plan_text())  # the program's own parameters (offset, site) are not the collector's
    _, engine_runs = expand_plan(plan, sha)
    assert planned_runs(plan, sha) == engine_runs


@pytest.mark.slow  # six failing programs, one hanging to its timeout (generous: a loaded machine starts the rest in it)
def test_failures_are_recorded_with_their_reason_and_the_other_runs_go_on(project):
    modes = "[ok, exit1, hang, unknown, nan, nometrics, malformed]"
    plan, sha = loaded(plan_text(timeout=8, factors=f"    site: [0]\n    mode: {modes}\n"))
    summary = engine.run_plan(plan, sha, project / "runs", jobs=2)
    assert (summary.completed, summary.failed) == (4, 10)  # an undeclared metric is kept, never a failure
    errors = {}
    for r in read_ledger(project / "runs").records:
        mode = r.stratum["mode"]
        if mode in ("ok", "unknown"):
            assert r.status == "complete" and r.metrics["value"] >= 0
            assert r.code.get("undeclared_metrics") == ({"bogus": 1.0} if mode == "unknown" else None)
            continue
        assert r.status == "failed" and r.metrics == {} and not r.traces
        errors[mode] = r.error
    assert "exited with status 1" in errors["exit1"] and "boom: the loss diverged" in errors["exit1"]
    assert "timed out after 8 s" in errors["hang"] and "process group was killed" in errors["hang"]
    assert "non-finite value" in errors["nan"]
    assert "wrote no metrics file" in errors["nometrics"]
    assert "is not valid JSON" in errors["malformed"]
    for pid_file in (project / "runs" / "traces").glob("*.run/grandchild.pid"):
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 30
        while alive(pid):  # killed with its process group at the timeout
            assert time.monotonic() < deadline, f"grandchild {pid} outlived its run"
            time.sleep(0.05)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (('"{arm}"', '"{nope}"'), "unknown placeholder {nope}"),
        (('"{arm}"', '"{arm:>3}"'), "must be a plain {name}"),
        (('"{arm}"', '"{arm"'), "literal brace"),
        (('"{arm}"', '"{}"'), "must be a plain {name}"),
        (("lib/**/*.py", "nothing/*.py"), "matches no file"),
        (("lib/**/*.py", "../*.py"), "stay inside it"),
        (("timeout_s: 30", "timeout_s: 0"), "timeout_s = 0.0 must be in"),
        (("argv: [", "argv: []\n    old: ["), "argv = [] must be a non-empty list"),
    ],
)
def test_bad_params_refuse_the_plan_before_anything_runs(project, change, words):
    plan, sha = loaded(plan_text().replace(*change))
    with pytest.raises(engine.EngineError, match=__import__("re").escape(words)):
        engine.expand_plan(plan, sha)
    assert not (project / "runs").exists()


def test_refused_names_and_sensors(project):
    for extra, words in [
        ("    metrics: [value]\n", "'metrics' is set from the plan's metrics section"),
        ("    run_id: 3\n", "the run's own placeholder"),
        ("    sensor: bogus\n", "unknown sensor 'bogus'"),
        ("    sensor: 'sim:signals=power_average'\n", "energy_signal = energy_counter is not offered"),
    ]:
        plan, sha = loaded(plan_text(extra=extra))
        with pytest.raises(engine.EngineError, match=__import__("re").escape(words)):
            engine.expand_plan(plan, sha)
    net = "  energy_net: {unit: J, better: lower, evidence: modeled}\n"
    plan, sha = loaded(plan_text(extra="    sensor: 'sim:clock=virtual'\n", metrics=net))
    with pytest.raises(engine.EngineError, match="need an idle baseline"):
        engine.expand_plan(plan, sha)
    energy = "  energy: {unit: J, better: lower, evidence: measured, signal: energy_counter}\n"
    plan, sha = loaded(plan_text(extra="    sensor: 'sim:clock=virtual'\n", metrics=energy))
    with pytest.raises(engine.EngineError, match="declared 'measured'.*gives 'modeled'"):
        engine.expand_plan(plan, sha)


@pytest.mark.slow  # a plan of programs under a sensor: ~3 s on the virtual clock, more on the real one
@pytest.mark.parametrize("clock", ["virtual", "real"])
def test_telemetry_is_sampled_outside_the_program_and_marks_become_phases(project, clock):
    energy = (
        "  energy: {unit: J, better: lower, evidence: modeled, signal: energy_counter}\n"
        "  energy_checkpoint: {unit: J, better: lower, evidence: modeled}\n"
        "  idle_power: {unit: W, better: lower, evidence: modeled}\n"
    )
    sensor = f"sim:clock={clock},update_ms=10,counter_update_ms=10,window_ms=5,noise_w=0"
    extra = f"    sensor: '{sensor}'\n    poll_ms: 5\n    idle_baseline_ms: 300\n    work_s: 0.3\n"
    plan, sha = loaded(plan_text(extra=extra, metrics=energy))
    summary = engine.run_plan(plan, sha, project / "runs")
    assert (summary.completed, summary.failed) == (4, 0), [r.error for r in read_ledger(project / "runs").records]
    for r in read_ledger(project / "runs").records:
        assert r.evidence == {
            "value": "measured",
            "energy": "modeled",
            "energy_checkpoint": "modeled",
            "idle_power": "modeled",
        }
        summary_ = r.telemetry["energy_counter"]
        assert summary_.evidence == "modeled" and "energy_checkpoint" in (summary_.metric_bounds or {})
        trace = read_trace(project / "runs" / "traces" / f"{r.run_id}.telemetry")
        names = [(p.name, p.depth) for p in trace.phases]
        assert names == [("idle", 0), ("program", 0), ("compute", 1), ("checkpoint", 1)], names
        compute, checkpoint = trace.phases[2], trace.phases[3]
        program = trace.phases[1]
        assert program.start_ns <= compute.start_ns < compute.end_ns <= checkpoint.start_ns < checkpoint.end_ns
        assert checkpoint.end_ns <= program.end_ns
        seconds = (checkpoint.end_ns - checkpoint.start_ns) / 1e9  # the program slept 0.3 s inside it
        assert seconds >= 0.3 - 1e-6  # (a loaded machine only adds)
        # the load follows the marks: checkpoint_w (150 W) while the phase is open. On the virtual
        # clock the timeline is replayed exactly; on the real one the load changes when the marks are
        # read (every tick), so the phase's mean power lies between checkpoint_w and the compute level
        energy, e_bound = r.metrics["energy_checkpoint"], summary_.metric_bounds["energy_checkpoint"]
        if clock == "virtual":
            assert abs(energy - 150 * seconds) <= e_bound + 1e-9
        else:
            assert 150 * seconds - e_bound - 1e-9 <= energy <= 300 * seconds + e_bound + 1e-9
        bound = summary_.metric_bounds["idle_power"]  # the idle window's power (60 W) lies within its bound
        assert abs(r.metrics["idle_power"] - 60) <= bound + 1e-9
        assert bound <= _counter_bound_limit_w(trace, "idle"), bound
        assert f"traces/{r.run_id}.telemetry.meta.json" in r.traces


def _counter_bound_limit_w(trace, phase: str) -> float:
    """The counter method's guarantee for ``phase``'s mean power, from the measured update times (no
    fixed figure a loaded machine could exceed): each edge lies within the longest measured span S
    from the poll before one update to the poll seeing the next: 1 mJ + p_max * S per edge, over the window."""
    from collect.telemetry.analysis.resolution import value_changes

    u = value_changes(trace, "energy_counter")
    assert u.lo_ns.size >= 2, "the counter never updated twice"
    span_s = float(max((u.hi_ns[1:] - u.lo_ns[:-1]).max(), u.hi_ns[0] - trace.t_before_ns[0])) / 1e9
    ((a_ns, b_ns),) = [(p.start_ns, p.end_ns) for p in trace.phases if p.name == phase]
    p_max_w = trace.power_range_w[1]
    return 2 * (1e-3 + p_max_w * span_s) / ((b_ns - a_ns) / 1e9)


def test_marks_parsing_and_the_client(tmp_path, monkeypatch):
    assert parse_mark("# a comment", 1) is None and parse_mark("   ", 2) is None
    m = parse_mark("begin eval 10 12", 3)
    assert m is not None and (m.kind, m.name, m.before_ns, m.after_ns) == ("begin", "eval", 10, 12)
    assert parse_mark("end eval 20", 4).after_ns == 20  # type: ignore[union-attr]
    for bad, words in [
        ("start eval 1 2", "is not 'begin|end"),
        ("begin e/v 1 2", "phase name"),
        ("begin eval x", "integer nanoseconds"),
        ("begin eval 5 4", "T_AFTER_NS must be"),
    ]:
        with pytest.raises(RunFailure, match=words):
            parse_mark(bad, 1)
    nested = [parse_mark(t, i) for i, t in enumerate(["begin a 1 2", "begin b 3 4", "end b 5 6", "end a 7 8"])]
    assert [(p.name, p.start_ns, p.end_ns, p.depth) for p in phases_of(nested)] == [("a", 2, 7, 0), ("b", 4, 5, 1)]
    with pytest.raises(RunFailure, match="'end a' but the open phase is 'b'"):
        phases_of([parse_mark("begin a 1 1", 1), parse_mark("begin b 2 2", 2), parse_mark("end a 3 3", 3)])
    with pytest.raises(RunFailure, match="never ended"):
        phases_of([parse_mark("begin a 1 1", 1)])
    with pytest.raises(RunFailure, match="goes backwards"):
        phases_of([parse_mark("begin a 5 5", 1), parse_mark("end a 3 3", 2)])

    from collect import marks

    monkeypatch.delenv("PREREG_MARKS", raising=False)
    with marks.phase("eval"):  # no file, no warning: a no-op outside collect run
        pass
    path = tmp_path / "marks.txt"
    monkeypatch.setenv("PREREG_MARKS", str(path))
    t0 = time.monotonic_ns()
    with marks.phase("eval"), marks.phase("inner"):
        pass
    written = read_marks(path)
    assert [(m.kind, m.name) for m in written] == [
        ("begin", "eval"),
        ("begin", "inner"),
        ("end", "inner"),
        ("end", "eval"),
    ]
    assert all(t0 <= m.before_ns <= m.after_ns <= time.monotonic_ns() for m in written)
    with pytest.raises(ValueError, match="phase name"):
        marks.mark("begin", "no spaces allowed")


def test_placeholders_render_and_nvml_follows_cuda_visible_devices():
    assert format_argv(["{a}", "x{b}y", "{{c}}", "{d}"], {"a": "s", "b": 0.5, "d": True}) == [
        "s",
        "x0.5y",
        "{c}",
        "true",
    ]
    assert sensor_for_env("nvml", {"CUDA_VISIBLE_DEVICES": "3"}) == (
        "nvml:index=3",
        {"cuda_visible_devices": "3", "nvml_index": 3, "cuda_device_order": None},
    )
    assert sensor_for_env("nvml:index=1", {"CUDA_VISIBLE_DEVICES": "3"}) == ("nvml:index=1", {})
    assert sensor_for_env("nvml", {}) == ("nvml", {})
    for visible in ("0,1", "GPU-1234", ""):
        with pytest.raises(RunFailure, match="name the GPU to read"):
            sensor_for_env("nvml", {"CUDA_VISIBLE_DEVICES": visible})


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _poll(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


SLEEPER = r"""
import json, os, subprocess, sys, time
run = json.load(open(os.environ["PREREG_RUN"]))
if run["params"]["site"] == 1 and os.path.exists(os.environ["ARM_FILE"]):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["ARM_FILE"] + ".pgid", "w") as f:
        f.write(f"{os.getpgid(0)} {os.getpid()} {child.pid}")
    time.sleep(600)
json.dump({"value": run["params"]["offset"] + run["seed"] % 7}, open(os.environ["PREREG_METRICS"], "w"))
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_killing_collect_run_leaves_no_process_and_resume_gives_the_same_records(project, sig):
    """SIGKILL and SIGTERM end collect run at once (the supervisor's parent-death signal ends the
    program's group); SIGINT is a KeyboardInterrupt (the wait's cleanup ends it)."""
    (project / "prog.py").write_text(SLEEPER)
    plan_file = project / "plan.yaml"
    plan_file.write_text(plan_text(collector=TARGET))
    freeze(plan_file)
    lock = project / "plan.lock.json"
    armed = project / "armed"
    env = {**os.environ, "PYTHONPATH": str(REPO), "ARM_FILE": str(armed)}
    clean = subprocess.run(
        [COLLECT, "run", str(lock), "--out", "clean"], env=env, capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stderr
    armed.write_text("1")
    with interruptible_children():
        proc = subprocess.Popen(
            [COLLECT, "run", str(lock), "--out", "runs"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    pgid_file = Path(str(armed) + ".pgid")
    _poll(lambda: pgid_file.exists() and len(pgid_file.read_text().split()) == 3 or proc.poll() is not None)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    pgid, program, grandchild = (int(x) for x in pgid_file.read_text().split())
    assert pgid == program and alive(grandchild)  # the program leads its own group; its child is in it
    proc.send_signal(sig)
    assert proc.wait(60) == (130 if sig == signal.SIGINT else -sig)
    _poll(lambda: not _group_alive(pgid) and not alive(program) and not alive(grandchild))
    armed.unlink()
    again = subprocess.run(
        [COLLECT, "run", str(lock), "--out", "runs", "--resume"], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert contents(project / "runs") == contents(project / "clean")
    assert len(contents(project / "runs")) == 4


@pytest.mark.slow
def test_freeze_collect_run_and_gates_evaluate_through_the_console_scripts(project):
    plan_file = project / "study.yaml"
    plan_file.write_text(plan_text(collector=TARGET, factors="    site: [0, 1, 2, 3]\n"))
    assert run("prereg", "freeze", str(plan_file)).returncode == 0
    lock = project / "study.lock.json"
    proc = run("collect", "run", str(lock), "--out", "runs", "--jobs", "2", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "8 runs completed, 0 failed" in proc.stdout
    proc = run("gates", "evaluate", str(lock), "runs", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["decision"] == "supported"
    # a failing run: exit 1 from collect run, its reason in the ledger
    (project / "prog.py").write_text("import sys; sys.exit(3)\n")
    bad_plan = project / "bad.yaml"
    bad_plan.write_text(plan_text(collector=TARGET).replace("study: command-test", "study: command-bad"))
    assert run("prereg", "freeze", str(bad_plan)).returncode == 0
    proc = run("collect", "run", str(project / "bad.lock.json"), "--out", "bad-runs", timeout=300)
    assert proc.returncode == 1 and "0 runs completed, 4 failed" in proc.stdout, proc.stdout + proc.stderr
    assert all("exited with status 3" in (r.error or "") for r in read_ledger(project / "bad-runs").records)
