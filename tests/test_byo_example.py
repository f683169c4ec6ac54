"""The bring-your-own examples (docs/byo.md) run end to end through the console scripts.

* examples/byo.yaml: a plain PyTorch script (examples/byo/train.py) run by the `command` collector;
  every planned run completes and the claim is supported;
* examples/byo-smi.yaml: runs made elsewhere, imported with one nvidia-smi log each; the learning and
  work gates pass, the energy gate is unresolvable (power.draw cannot bound the energy), so refused;
* train.py imports nothing of the toolkit but the phase client, and the committed table and logs are
  what examples/make_smi_logs.py writes.

Each runs in a copy of examples/ under tmp_path, so nothing is written into the checkout.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from collect.plugins import COLLECTORS
from tests.helpers import requires, run

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TRAIN = EXAMPLES / "byo" / "train.py"
COMMAND_CLASS = "collect.collectors.command.collector:CommandCollector"


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy of examples/ in tmp_path (the working folder of the commands, as in docs/byo.md)."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    return tmp_path


def test_train_py_imports_torch_and_the_phase_client_only() -> None:
    """The example is a researcher's own script: torch and the standard library, plus the optional
    phase client collect.marks (standard library only) -- never the toolkit's trainer."""
    toolkit = ("prereg", "collect", "estimators", "gates", "reports", "cli")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(TRAIN.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, "no relative import"
            imported.add(node.module)
    ours = {name for name in imported if name.split(".")[0] in toolkit}
    assert ours == {"collect.marks"}, ours
    third_party = {name.split(".")[0] for name in imported} - set(sys.stdlib_module_names) - set(toolkit)
    assert third_party == {"torch"}, third_party
    assert "torch.save(" in TRAIN.read_text() and "weights_only=True" in TRAIN.read_text()


@requires("torch")
def test_byo_plan_runs_the_script_for_every_planned_run_and_is_supported(examples: Path) -> None:
    plan = examples / "examples" / "byo.yaml"
    text = plan.read_text()
    assert "  collector: command\n" in text  # the documented name
    if "command" not in COLLECTORS:
        # installed metadata older than the `command` entry point (pyproject.toml): name the class
        # directly, as docs/command-collector.md says; a reinstalled toolkit runs the file as written
        plan.write_text(text.replace("  collector: command\n", f"  collector: {COMMAND_CLASS}\n"))
    # `python` in the plan's argv is the interpreter on PATH: this one's, as for a researcher's venv
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = run("prereg", "freeze", "examples/byo.yaml", "-o", "demo/byo.lock.json", cwd=examples, env=env)
    assert proc.returncode == 0, proc.stderr
    proc = run("collect", "run", "demo/byo.lock.json", "--out", "demo/byo-runs", "--jobs", "2", cwd=examples,
               env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "16 runs completed, 0 failed" in proc.stdout
    records = read_ledger(examples / "demo" / "byo-runs").records
    assert len(records) == 16 and all(r.status == "complete" for r in records)
    for r in records:
        restart = r.arm == "restart"
        assert r.metrics["attempted_steps"] == 240 + (r.metrics["lost_steps"] if restart else 0)
        assert r.metrics["lost_steps"] == ((r.stratum["fail_step"] % 40) + 1 if restart else 0)
        assert set(r.code["command"]["files"]) == {"byo/train.py"}
        assert f"traces/{r.run_id}.run/ckpt/last.pt" in r.traces  # the torch.save checkpoint, hashed
        marks = (examples / "demo" / "byo-runs" / "traces" / f"{r.run_id}.run" / "marks.txt").read_text()
        assert {"compute", "checkpoint"} <= {line.split()[1] for line in marks.splitlines()}
        assert ("begin restore" in marks) == ("begin replay" in marks) == restart
    proc = run("gates", "evaluate", "demo/byo.lock.json", "demo/byo-runs", "--json", cwd=examples, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evaluation = json.loads(proc.stdout)
    assert evaluation["decision"] == "supported"
    assert {g["id"]: g["verdict"] for g in evaluation["gates"]} == {
        "learning_noninferior": "pass", "steps_saved": "pass", "learning_noninferior_wilcoxon": "pass"}


def test_byo_smi_imports_each_runs_log_and_refuses_the_unresolvable_energy_claim(examples: Path) -> None:
    proc = run("prereg", "freeze", "examples/byo-smi.yaml", "-o", "demo/byo-smi.lock.json", cwd=examples)
    assert proc.returncode == 0, proc.stderr
    proc = run("collect", "import", "examples/runs/byo-smi.csv", "--lock", "demo/byo-smi.lock.json",
               "--out", "demo/byo-smi-runs", "--telemetry", "examples/runs/byo-smi-logs",
               "--telemetry-format", "nvidia-smi", cwd=examples)
    assert proc.returncode == 0, proc.stderr
    assert "imported 16 runs" in proc.stdout
    records = read_ledger(examples / "demo" / "byo-smi-runs").records
    assert len(records) == 16 and all(r.status == "complete" for r in records)
    for r in records:
        assert f"traces/{r.run_id}.telemetry.meta.json" in r.traces
        assert 1500 < r.metric("energy") < 4000  # J: filled from the log, not the table
        bound = r.telemetry["power_average"].bound_of("energy")
        assert bound is not None and bound > r.metric("energy")  # power.draw cannot bound it tightly
    proc = run("gates", "evaluate", "demo/byo-smi.lock.json", "demo/byo-smi-runs", "--json", cwd=examples)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    evaluation = json.loads(proc.stdout)
    assert evaluation["decision"] == "refused"
    assert {g["id"]: g["verdict"] for g in evaluation["gates"]} == {
        "learning_noninferior": "pass", "work_saved": "pass", "energy_saving": "unresolvable"}


def test_the_committed_smi_runs_are_what_the_generator_writes(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "make_smi_logs.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    committed = EXAMPLES / "runs"
    assert (tmp_path / "byo-smi.csv").read_bytes() == (committed / "byo-smi.csv").read_bytes()
    written = sorted(p.name for p in (tmp_path / "byo-smi-logs").iterdir())
    assert written == sorted(p.name for p in (committed / "byo-smi-logs").iterdir()) and len(written) == 16
    for name in written:
        assert (tmp_path / "byo-smi-logs" / name).read_bytes() == (committed / "byo-smi-logs" / name).read_bytes()
    assert sum((committed / "byo-smi-logs" / n).stat().st_size for n in written) < 200_000
