"""Plugins (collect.plugins): collectors, sensors, report sections and plot views; entry points or
``module:Class``, one loader and one error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collect.collectors.base import Collector
from collect.engine.runs import EngineError, load_collector
from collect.plugins import COLLECTORS, SENSORS, PluginError, Registry, is_target, load_target
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor, split_spec
from reports.sections import PLOT_VIEWS, REPORT_SECTIONS

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "tests" / "fixtures" / "plugin_dist"
BIN = Path(sys.executable).parent


def test_the_builtins_and_the_seed_studies_are_entry_points() -> None:
    assert "command" in COLLECTORS and {"nvml", "replay", "sim"} <= set(SENSORS)
    assert COLLECTORS.load("command").__name__ == "CommandCollector"
    # the seed studies (installed beside the core, README) register like any third party
    assert {"sim.churn", "sim.multisite", "sim.controller", "torch.multisite", "torch.controller"} <= set(COLLECTORS)
    assert "controller" in REPORT_SECTIONS and "commits" in PLOT_VIEWS
    assert REPORT_SECTIONS.load("controller").__name__ == "ControllerReport"


def test_a_class_named_directly_loads_like_an_entry_point() -> None:
    direct = load_collector("collect.collectors.command.collector:CommandCollector")
    assert direct is load_collector("command")
    assert is_target("a.b:C") and not is_target("sim.churn") and not is_target("a.b:C:d")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mylab.train_gpt", "unknown collector 'mylab.train_gpt'; installed: command, sim.churn"),
        ("collect.no_such_module:X", "is not available here"),
        ("collect.collectors.base:NoSuchClass", "has no 'NoSuchClass'"),
        ("collect.collectors.base:check_params", "is not a subclass of collect.collectors.base.Collector"),
        ("collect.telemetry.sensors.sim:SimSensor", "is not a subclass of collect.collectors.base.Collector"),
    ],
)
def test_a_bad_collector_name_is_one_clear_error(name: str, words: str) -> None:
    with pytest.raises(EngineError) as err:
        load_collector(name)
    assert words in str(err.value)
    assert err.value.exit_code == 2


def test_a_registry_takes_process_local_additions_and_forgets_them() -> None:
    registry = Registry("prereg_toolkit.collectors", "collect.collectors.base:Collector", "collector")
    registry["test.cmd"] = "collect.collectors.command.collector:CommandCollector"
    assert registry.load("test.cmd").name == "command"
    del registry["test.cmd"]
    del registry["command"]
    assert "test.cmd" not in registry and "command" not in registry
    with pytest.raises(PluginError, match="unknown collector 'command'"):
        registry.load("command")
    with pytest.raises(ValueError, match="not a 'module:Class'"):
        registry["x"] = "no colon"
    assert issubclass(COLLECTORS.load("command"), Collector)  # the shared registry is untouched


def test_a_protocol_kind_checks_the_methods_not_the_base_class() -> None:
    """Report sections and plot views implement a protocol (reports.sections); the same loader checks them."""
    with pytest.raises(PluginError, match=r"report section 'x': collect\.plugins:Registry does not implement"):
        load_target("collect.plugins:Registry", "reports.sections:StudyReport", "report section 'x'", protocol=True)
    registry = Registry("prereg_toolkit.report_sections", "reports.sections:StudyReport", "report section", True)
    registry["toy"] = "tests.reports.test_sections:ToyReport"
    assert registry.load("toy").__name__ == "ToyReport" and "toy" not in REPORT_SECTIONS


def test_sensor_specs_keep_working_and_take_classes_named_directly() -> None:
    assert split_spec("nvml:index=1") == ("nvml", "index=1")
    assert split_spec("replay:/tmp/a:b.csv") == ("replay", "/tmp/a:b.csv")
    assert split_spec("collect.telemetry.sensors.sim:SimSensor:clock=virtual") == (
        "collect.telemetry.sensors.sim:SimSensor",
        "clock=virtual",
    )
    with (
        open_sensor("collect.telemetry.sensors.sim:SimSensor:clock=virtual") as direct,
        open_sensor("sim:clock=virtual") as named,
    ):
        assert type(direct) is type(named)
    with pytest.raises(SensorError, match="unknown sensor 'dcgm'"):
        open_sensor("dcgm")
    with pytest.raises(SensorError, match="is not a subclass of collect.telemetry.sensors.base.Sensor"):
        open_sensor("collect.collectors.command.collector:CommandCollector:x")


def _cli(name: str, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.subprocess
def test_a_separately_installed_distribution_registers_a_collector_that_runs_a_plan(tmp_path: Path) -> None:
    """tests/fixtures/plugin_dist is built and installed into its own folder (not this venv, no network);
    prereg freeze, collect run and gates evaluate find its collector through its entry point."""
    site = tmp_path / "site"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(DIST),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr
    assert list(site.glob("toy_collector-0.1.0.dist-info/entry_points.txt"))
    plan, lock, runs = DIST / "plan.yaml", tmp_path / "toy.lock.json", tmp_path / "runs"
    without = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    refused = _cli("prereg", "freeze", str(plan), "-o", str(lock), env=without, cwd=tmp_path)
    assert refused.returncode == 2 and "unknown collector 'toy.latency'" in refused.stderr
    assert not lock.exists()
    env = {**without, "PYTHONPATH": str(site)}
    for args in (
        ("prereg", "freeze", str(plan), "-o", str(lock)),
        ("collect", "run", str(lock), "--out", str(runs), "--jobs", "2"),
        ("gates", "evaluate", str(lock), str(runs), "--json"),
    ):
        done = _cli(*args, env=env, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    records = [json.loads(line) for line in (runs / "ledger.jsonl").read_text().splitlines()]
    assert len(records) == 16 and {r["code"]["collector"] for r in records} == {"toy.latency"}
    assert all(r["status"] == "complete" for r in records)
    evaluation = json.loads(done.stdout)
    assert evaluation["decision"] == "supported"
    assert [(g["id"], g["verdict"]) for g in evaluation["gates"]] == [("faster", "pass")]
