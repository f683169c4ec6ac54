"""``collect try``: one cell of a plan (every arm, replicate 0) run into a marked scratch folder that can
never become the study's ledger (``collect.engine.trial``, ``prereg_toolkit_cli.collect_try``; tiny programs in tmp_path)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from collect.collectors.base import ParamError
from collect.collectors.command.collector import CommandCollector
from collect.engine.runs import stratum_seed
from collect.engine.trial import parse_value, try_cell
from collect.ledger.store import read_ledger
from collect.ledger.try_marker import TRY_MARKER, TryFolder, is_try_folder, refuse_try_folder
from prereg.api import freeze
from prereg.errors import InputError
from prereg.plan import load_plan
from prereg_toolkit_cli.collect_try import add_try_parser
from prereg_toolkit_cli.kit import ArgumentParser, run_main
from tests.conftest import REPO
from tests.helpers import run
from tests.helpers.gates import freeze as freeze_cli

PROGRAM = r"""
import json, os, sys
run = json.load(open(os.environ["PREREG_RUN"]))
p = run["params"]
if p.get("mode") == "fail":
    for i in range(8):
        print(f"line {i} of the traceback", file=sys.stderr)
    sys.exit(1)
with open(os.environ["PREREG_METRICS"], "w") as f:
    json.dump({"loss": p["steps"] + run["seed"] % 7, "steps": p["steps"], "seed_seen": run["seed"] % 1000}, f)
"""

PLAN = """schema: prereg/v1
study: try-test
title: Try test
hypothesis: Arm b's loss is no higher.
experiment:
  collector: command
  params:
    argv: [{python}, train.py, --seed, "{{seed}}"]
    steps: 100
    timeout_s: 60
    code: [train.py]
arms:
  a: {{policy: x}}
  b: {{policy: y{b}}}
strata:
  factors: {{block: [1, 2, 3]}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
  steps: {{unit: steps, better: lower, evidence: measured}}
  seed_seen: {{unit: unit, better: lower, evidence: measured}}
gates:
  - {{id: g, metric: loss, contrast: b - a, method: t, confidence: 0.9, pass_if: upper < 0.1}}
decision: {{claim: b is no worse}}
"""


def plan_text(b: str = "") -> str:
    return PLAN.format(python=json.dumps(sys.executable), b=b)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The researcher's folder (the working directory): train.py and plan.yaml; temporary folders (a try's
    default scratch folder) are made under it."""
    (tmp_path / "train.py").write_text(PROGRAM)
    (tmp_path / "plan.yaml").write_text(plan_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def collect_try(*argv: str) -> int:
    """``collect try ARGV`` in this process (the parser ``prereg_toolkit_cli.collect_try.add_try_parser`` builds)."""

    def build() -> ArgumentParser:
        parser = ArgumentParser(prog="collect")
        add_try_parser(parser.add_subparsers())
        return parser

    return run_main("collect", build, ["try", *argv])


def test_one_cell_every_arm_into_a_marked_folder(project):
    result = try_cell("plan.yaml")
    assert result.ok and [a.arm for a in result.arms] == ["a", "b"]
    assert result.stratum == {"block": 1} and result.source == "plan"
    seed = stratum_seed({"block": 1}, 0)  # the seed this cell's runs get in the study
    for arm in result.arms:
        assert arm.metrics == {"loss": 100 + seed % 7, "steps": 100, "seed_seen": seed % 1000}
    assert is_try_folder(result.folder) and result.folder.name.startswith("collect-try-")
    assert result.folder.parent == project  # a fresh temporary folder
    records = read_ledger(result.folder).records
    assert len(records) == 2 and {r.replicate for r in records} == {0}
    plan_sha = load_plan("plan.yaml").plan_sha256
    assert result.plan_sha256 == plan_sha
    assert {r.prereg_sha256 for r in records} == {result.try_sha256} != {plan_sha}  # never the plan's runs
    assert all(r.lock_seal is None for r in records)


def test_a_stratum_and_overrides_for_the_try(project, capsys):
    (project / "plan.yaml").write_text(plan_text(b=", steps: 50"))
    assert collect_try("plan.yaml", "--stratum", "block=3", "--set", "steps=20", "--out", "scratch") == 0
    out = capsys.readouterr().out
    assert "stratum block=3, replicate 0, 2 arm(s)" in out
    assert "set for this try only (over the plan's values): steps=20" in out
    seed = stratum_seed({"block": 3}, 0)
    arms = [line for line in out.splitlines() if line.startswith("arm ")]
    assert [line.split(":")[0] for line in arms] == ["arm a", "arm b"]
    for line in arms:  # arm b's own setting (50) is overridden too
        assert ": ok in " in line and f"loss={20 + seed % 7}," in line and line.endswith("steps=20")
    assert "2 of 2 arm(s) ok" in out and is_try_folder(project / "scratch")


def test_a_failed_arm_says_why_with_the_end_of_its_stderr(project, capsys):
    (project / "plan.yaml").write_text(plan_text(b=", mode: fail"))
    assert collect_try("plan.yaml", "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    a, b = data["arms"]
    assert a["status"] == "complete" and b["status"] == "failed"
    assert "the program exited with status 1" in b["error"]
    assert b["stderr_tail"] == [f"line {i} of the traceback" for i in range(3, 8)]
    assert collect_try("plan.yaml") == 1
    out = capsys.readouterr().out
    assert "arm b: FAILED" in out and "  stderr | line 7 of the traceback" in out and "1 of 2 arm(s) ok" in out


def test_the_scratch_folder_is_new_or_an_earlier_try(project):
    runs = project / "runs"
    runs.mkdir()
    (runs / "ledger.jsonl").write_text("")
    with pytest.raises(InputError, match="exists and is not a 'collect try' folder"):
        try_cell("plan.yaml", out=runs)
    assert sorted(p.name for p in runs.iterdir()) == ["ledger.jsonl"]  # nothing written into it
    first = try_cell("plan.yaml", out=project / "scratch")
    second = try_cell("plan.yaml", out=project / "scratch")  # again into the same try folder: runs again
    records = read_ledger(project / "scratch").records
    assert len(records) == 4 and first.try_sha256 != second.try_sha256
    assert {a.run_id for a in first.arms}.isdisjoint(a.run_id for a in second.arms)


def test_a_lock_is_tried_too(project):
    lock = freeze("plan.yaml")
    result = try_cell(lock.path)
    assert result.ok and result.source == "lock" and result.plan_sha256 == lock.plan_sha256


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--stratum", "blok=1"], "no factor 'blok'; factors: block"),
        (["--stratum", "block=9"], "'9' is not a level of block; levels: 1, 2, 3"),
        (["--set", "block=2"], "is a stratum factor; choose the cell with --stratum block=LEVEL"),
        (["--set", "steps"], "expected KEY=VALUE"),
        (["--set", "timeout_s=10m"], "timeout_s is in seconds: write 600"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(project, capsys, argv, words):
    assert collect_try("plan.yaml", "--out", "scratch", *argv) == 2
    assert words in capsys.readouterr().err
    assert not (project / "scratch").exists()


def test_every_collector_problem_at_once(project, capsys):
    text = plan_text().replace('"{seed}"]', '"{seed}", "{step}"]').replace("timeout_s: 60", "timeout_s: 1h")
    (project / "plan.yaml").write_text(text)
    assert collect_try("plan.yaml") == 2
    err = capsys.readouterr().err
    assert "(2 problem(s); nothing was run)" in err
    assert "unknown placeholder {step} (did you mean {steps}?)" in err and "write 3600" in err


def test_a_sensor_this_machine_cannot_open_refuses_the_try(project, capsys, monkeypatch):
    def no_driver(cls, params):
        raise ParamError("sensor 'nvml': cannot open NVML: NVML library libnvidia-ml.so.1 not found")

    monkeypatch.setattr(CommandCollector, "signals", classmethod(no_driver))
    (project / "plan.yaml").write_text(
        plan_text().replace("    code: [train.py]\n", "    code: [train.py]\n    sensor: nvml\n")
    )
    assert collect_try("plan.yaml", "--out", "scratch") == 2
    assert "the sensor cannot be opened on this machine (nothing was run): sensor 'nvml'" in capsys.readouterr().err
    assert not (project / "scratch").exists()


def test_refuse_try_folder(tmp_path):
    refuse_try_folder(tmp_path, "gates evaluate")  # an ordinary folder: nothing to refuse
    (tmp_path / TRY_MARKER).write_text("{}")
    with pytest.raises(TryFolder, match="refused by gates evaluate: it is a 'collect try' scratch folder") as caught:
        refuse_try_folder(tmp_path, "gates evaluate")
    assert caught.value.exit_code == 3


@pytest.mark.subprocess
def test_the_example_tried_then_refused_as_a_study(tmp_path, capsys, monkeypatch):
    """End to end on examples/byo.yaml: the try's folder is refused by gates evaluate (no decision) and
    collect run --resume appends nothing to it (exit 3 both)."""
    monkeypatch.chdir(REPO)  # the example's workdir is relative to the repository root
    scratch = tmp_path / "scratch"
    assert collect_try("examples/byo.yaml", "--stratum", "fail_site=1", "--out", str(scratch)) == 0
    out = capsys.readouterr().out
    assert "stratum fail_site=1, fail_step=70" in out and "2 of 2 arm(s) ok" in out
    lock = freeze_cli(tmp_path, (REPO / "examples" / "byo.yaml").read_bytes(), "byo.yaml")
    before = (scratch / "ledger.jsonl").read_bytes()
    proc = run("gates", "evaluate", str(lock), str(scratch), cwd=REPO)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "'collect try' scratch folder" in proc.stderr
    proc = run("collect", "run", str(lock), "--out", str(scratch), "--resume", cwd=REPO)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "'collect try' scratch folder" in proc.stderr
    assert (scratch / "ledger.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    "text, value",
    [
        ("20", 20),
        ("-3", -3),
        ("0.5", 0.5),
        ("1e-3", 0.001),
        ("true", True),
        ("null", None),
        ("abc", "abc"),
        ("nan", "nan"),
        ("1_000", "1_000"),
    ],
)
def test_a_set_value_is_a_number_or_a_word_or_text(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)
