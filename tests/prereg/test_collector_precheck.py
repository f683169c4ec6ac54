"""``prereg validate`` and ``prereg freeze`` run the collector's own checks, every problem at once, and
refuse before a lock is written (``collect.engine.precheck``); the plan's own semantic mistakes are listed
together too (``prereg.plan.salvaged_problems``). In-process calls of the console script's ``main``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from collect.collectors.base import ParamError
from collect.collectors.command.collector import CommandCollector
from collect.engine.precheck import plan_problems
from prereg.plan import load_plan
from prereg_toolkit_cli.prereg import main

PLAN = """schema: prereg/v1
study: precheck
title: Planted mistakes
hypothesis: Arm b's loss is no higher.
experiment:
  collector: command
  params:
    argv: [{python}, train.py, --ckpt-every, "{{ckpt_every}}", --seed, "{{seed}}"]
    ckpt_every: 10
    timeout_s: 600
    code: [train.py]
    sensor: {sensor}
arms:
  a: {{policy: x}}
  b: {{policy: y}}
strata:
  factors: {{block: [1, 2, 3, 4, 5, 6]}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
{energy}gates:
  - {{id: g, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}}
decision: {{claim: b is no worse}}
"""

#: each planted mistake: (how the plan text changes, words its message must hold)
MISTAKES = {
    "placeholder typo": (
        ('"{ckpt_every}"', '"{ckpt_evry}"'),
        ["argv[3] = '{ckpt_evry}': unknown placeholder {ckpt_evry}", "did you mean {ckpt_every}?", "known: "],
    ),
    "duration string": (
        ("timeout_s: 600", "timeout_s: 10m"),
        ["parameter timeout_s = '10m' is a duration string", "timeout_s is in seconds: write 600"],
    ),
    "reserved arm setting": (
        ("a: {policy: x}", "a: {policy: x, seed: 3}"),
        ["arm a: parameter 'seed' is the run's own placeholder", "another name"],
    ),
    "evidence above the sensor": (
        ("sensor: none", 'sensor: "sim:power_w=200"'),
        ["metric energy is declared 'measured', but collector command gives 'modeled'", "declare 'evidence: modeled'"],
    ),
    "code glob matching nothing": (
        ("code: [train.py]", 'code: [train.py, "model/*.py"]'),
        [
            "code glob 'model/*.py' matches no file under",
            "relative to workdir",
            "the folder the command is started from",
        ],
    ),
}


def plan_text(sensor: str = "none", energy: bool = True) -> str:
    line = "  energy: {unit: J, better: lower, evidence: measured}\n" if energy else ""
    return PLAN.format(python=json.dumps(sys.executable), sensor=sensor, energy=line)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The researcher's folder (the working directory), holding train.py."""
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def planted(project: Path, *names: str) -> Path:
    text = plan_text()
    for name in names:
        old, new = MISTAKES[name][0]
        assert old in text
        text = text.replace(old, new)
    path = project / "plan.yaml"
    path.write_text(text)
    return path


def test_the_plan_without_mistakes_validates_and_freezes(project, capsys):
    path = planted(project)
    assert main(["validate", str(path)]) == 0
    assert main(["freeze", str(path)]) == 0
    assert (project / "plan.lock.json").is_file()
    assert plan_problems(load_plan(path).plan).errors == []


@pytest.mark.parametrize("name", sorted(MISTAKES))
@pytest.mark.parametrize("command", ["validate", "freeze"])
def test_each_planted_mistake_is_refused_before_the_lock(project, capsys, name, command):
    path = planted(project, name)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "collector command would refuse this plan at collect run (1 problem" in err
    for words in MISTAKES[name][1]:
        assert words in err, err
    assert "Traceback" not in err
    assert not (project / "plan.lock.json").exists()


def test_every_mistake_at_once_each_said_once(project, capsys):
    path = planted(project, *MISTAKES)
    assert main(["freeze", str(path), "--json"]) == 2
    out = capsys.readouterr()
    data = json.loads(out.out)
    messages = [d["message"] for d in data["details"]]
    assert len(messages) == len(MISTAKES), messages  # one line per mistake, though 12 runs share most of them
    for name, (_, words) in MISTAKES.items():
        assert any(all(w in m for w in words) for m in messages), (name, messages)
    assert f"({len(MISTAKES)} problems; nothing was frozen)" in out.err
    assert not (project / "plan.lock.json").exists()


def test_a_mistake_of_some_runs_names_them(project, capsys):
    text = plan_text().replace("    ckpt_every: 10\n", "").replace("b: {policy: y}", "b: {policy: y, ckpt_every: 5}")
    (project / "plan.yaml").write_text(text)
    problems = plan_problems(load_plan(project / "plan.yaml").plan).errors
    assert len(problems) == 1 and problems[0].startswith("arm a: argv[3] = '{ckpt_every}': unknown placeholder")


def _no_driver(cls, params):
    raise ParamError("sensor 'nvml': cannot open NVML: NVML library libnvidia-ml.so.1 not found")


@pytest.mark.parametrize("command", ["validate", "freeze"])
def test_a_sensor_this_machine_cannot_open_is_a_warning(project, capsys, monkeypatch, command):
    """The same plan may be frozen on a laptop and run on a GPU machine: the plan is accepted, with a warning
    that says where it becomes an error (a machine without the driver is simulated)."""
    monkeypatch.setattr(CommandCollector, "signals", classmethod(_no_driver))
    path = project / "plan.yaml"
    path.write_text(plan_text(sensor="nvml"))
    assert main([command, str(path), "--json"]) == 0
    out = capsys.readouterr()
    warning = "sensor 'nvml': cannot open NVML"
    assert f"warning: {path}: experiment: {warning}" in out.err
    assert "collect try refuses the plan and collect run refuses it or records its runs as failed" in out.err
    assert any(warning in w for w in json.loads(out.out)["collector_warnings"])
    assert (project / "plan.lock.json").is_file() == (command == "freeze")


THREE = (
    ("contrast: b - a", "contrast: b - c"),
    ("metric: loss,", "metric: los,"),
    ("pass_if: upper < 0.1", "pass_if: uper << 0.1"),
)


@pytest.mark.parametrize("command", ["validate", "freeze"])
def test_three_semantic_mistakes_in_one_message(project, capsys, command):
    """An unknown arm in a contrast, a gate naming an unknown metric and a bad rule: one message, three lines,
    in the order of the file (the bad rule fails the schema; the rest of the plan is still cross-checked)."""
    gates = (
        "  - {id: g1, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}\n"
        "  - {id: g2, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}\n"
        "  - {id: g3, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}\n"
    )
    text = plan_text().replace(
        "  - {id: g, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}\n", ""
    )
    lines = gates.splitlines(keepends=True)
    for i, (old, new) in enumerate(THREE):
        lines[i] = lines[i].replace(old, new)
    (project / "plan.yaml").write_text(text.replace("gates:\n", "gates:\n" + "".join(lines)))
    assert main([command, "plan.yaml"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("prereg: plan.yaml:") and "gates[0].contrast: unknown arm(s) 'c'" in err[0]
    assert "gates[1].metric: unknown metric 'los'" in err[1]
    assert "gates[2].pass_if: not a rule" in err[2]
    assert len(err) == 3
    assert not (project / "plan.lock.json").exists()


def test_a_part_set_aside_gives_no_echo(project, capsys):
    """A metric that fails the schema is set aside to cross-check the rest; the gate naming it is not reported
    as naming an unknown metric (that problem is the metric's own)."""
    text = plan_text().replace(
        "loss: {unit: nats, better: lower, evidence: measured}",
        "loss: {unit: nats, better: lowest, evidence: measured}",
    )
    (project / "plan.yaml").write_text(text)
    assert main(["validate", "plan.yaml"]) == 2
    err = capsys.readouterr().err
    assert "metrics.loss.better" in err and "unknown metric" not in err and len(err.strip().splitlines()) == 1
