"""The bring-your-own examples (docs/byo.md) run end to end through the console scripts.

* examples/byo.yaml: a plain PyTorch script (examples/byo/train.py) run by the `command` collector;
  every planned run completes and the claim is supported;
* examples/byo-smi.yaml: runs made elsewhere, imported with one nvidia-smi log each; the learning and
  work gates pass, the energy gate is unresolvable (power.draw cannot bound the energy), so refused;
* examples/byo-dcgm.yaml: 600 s runs made elsewhere with one DCGM log each (dcgmi dmon -e 155,156);
  each run's energy is its counter's difference, bounded at the ends, and the 5% energy margin is
  decided (supported);
* examples/byo-faults.yaml: a plain PyTorch script with no failure logic (examples/byo/resumable.py),
  killed by the plan's faults and restarted: both arms of each stratum meet the same faults, each
  lands, the work adds up, and the reports draw each run's faults and restarts;
* train.py and resumable.py import nothing of the toolkit but its client, and the committed tables and logs are
  what examples/make_smi_logs.py and examples/make_dcgm_logs.py write.

All are checked on one run of docs/byo.md's marked blocks for this module (checked as tests/test_docs.py
checks every page), in a copy of examples/, so nothing is written into the checkout and the 16 training
runs run once: each test first checks that the page's block holds exactly the commands it checks.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from collect.plugins import COLLECTORS
from gates.api import read_evaluation
from tests.helpers import requires
from tests.helpers.docs import Block, PageRun, check_page_run, run_page

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TRAIN = EXAMPLES / "byo" / "train.py"
RESUMABLE = EXAMPLES / "byo" / "resumable.py"
BYO = ROOT / "docs" / "byo.md"
COMMAND_CLASS = "collect.collectors.command.collector:CommandCollector"


@pytest.mark.parametrize("script", [TRAIN, RESUMABLE], ids=["train", "resumable"])
def test_the_scripts_import_torch_and_the_client_only(script: Path) -> None:
    """The examples are a researcher's own scripts: torch and the standard library, plus the optional
    client collect.marks (standard library only) -- never the toolkit's trainer; resumable.py holds no
    failure logic (no signal, no kill: the plan's faults come from outside)."""
    toolkit = ("prereg", "collect", "estimators", "gates", "reports", "prereg_toolkit_cli")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, "no relative import"
            imported.add(node.module)
    ours = {name for name in imported if name.split(".")[0] in toolkit}
    assert ours == {"collect.marks"}, ours
    third_party = {name.split(".")[0] for name in imported} - set(sys.stdlib_module_names) - set(toolkit)
    assert third_party == {"torch"}, third_party
    assert "torch.save(" in script.read_text() and "weights_only=True" in script.read_text()
    if script == RESUMABLE:
        assert not {"signal", "subprocess"} & imported and "os.kill" not in script.read_text()


@pytest.fixture(scope="module")
def byo_run(tmp_path_factory: pytest.TempPathFactory) -> PageRun:
    """docs/byo.md's marked blocks, run once for this module: the example's commands, as documented, in a
    copy of examples/."""
    return run_page(BYO, tmp_path_factory.mktemp("byo"))


@pytest.mark.subprocess
def test_the_page_runs_as_written(byo_run: PageRun) -> None:
    """docs/byo.md as tests/test_docs.py checks every page: each runnable block exits 0 with no traceback,
    each output block shows only lines the block before printed."""
    check_page_run(byo_run)


def byo_page(ran: PageRun) -> PageRun:
    """The page's run, after checking that every block that ran exited 0."""
    failed = [b for b in ran.blocks if b.proc is not None and b.proc.returncode != 0]
    assert not failed, f"docs/byo.md block {failed[0].number} exited {failed[0].proc.returncode}:\n" + (
        failed[0].proc.stdout[-3000:] + failed[0].proc.stderr[-3000:]
    )
    return ran


def ran_clean(block: Block) -> str:
    """The block's stdout, after checking it exited 0 and printed no traceback."""
    assert block.proc is not None and block.proc.returncode == 0, block.number
    assert "Traceback" not in block.proc.stdout + block.proc.stderr, block.proc.stderr
    return block.proc.stdout


def evaluation_of(runs: Path) -> dict:
    """The evaluation.json that `gates evaluate` wrote into ``runs``, read by its format's owner, as
    `gates evaluate --json` prints it."""
    return read_evaluation(runs / "evaluation.json").model_dump(mode="json", by_alias=True)


@pytest.mark.subprocess
@requires("torch")
def test_byo_plan_runs_the_script_for_every_planned_run_and_is_supported(byo_run: PageRun) -> None:
    """The byo.yaml commands of docs/byo.md, exactly as written there and run once by its runnable block
    (test_the_page_runs_as_written checks the same run's exit codes and shown output): every planned run ran the
    script to completion, left its checkpoint and marks, and the claim is supported."""
    assert "  collector: command\n" in (EXAMPLES / "byo.yaml").read_text()  # the documented name
    assert "command" in COLLECTORS and COLLECTORS.get("command") == COMMAND_CLASS, (
        "the installed metadata lacks the `command` entry point of pyproject.toml: reinstall the toolkit"
    )
    ran = byo_page(byo_run)
    block = ran.runnable("prereg freeze examples/byo.yaml -o demo/byo.lock.json")
    assert block.commands.splitlines() == [
        "prereg freeze examples/byo.yaml -o demo/byo.lock.json",
        "collect run demo/byo.lock.json --out demo/byo-runs --jobs 2",
        "gates evaluate demo/byo.lock.json demo/byo-runs",
    ]
    stdout = ran_clean(block)
    assert "16 runs completed, 0 failed" in stdout
    runs = ran.folder / "demo" / "byo-runs"
    records = read_ledger(runs).records
    assert len(records) == 16 and all(r.status == "complete" for r in records)
    for r in records:
        restart = r.arm == "restart"
        assert r.metrics["attempted_steps"] == 240 + (r.metrics["lost_steps"] if restart else 0)
        assert r.metrics["lost_steps"] == ((r.stratum["fail_step"] % 40) + 1 if restart else 0)
        assert set(r.code["command"]["files"]) == {"byo/train.py"}
        assert f"traces/{r.run_id}.run/ckpt/last.pt" in r.traces  # the torch.save checkpoint, hashed
        marks = (runs / "traces" / f"{r.run_id}.run" / "marks.txt").read_text()
        assert {"compute", "checkpoint"} <= {line.split()[1] for line in marks.splitlines()}
        assert ("begin restore" in marks) == ("begin replay" in marks) == restart
    evaluation = evaluation_of(runs)  # `gates evaluate` exited 0 (the block ran under set -e)
    assert evaluation["decision"] == "supported"
    assert {g["id"]: g["verdict"] for g in evaluation["gates"]} == {
        "learning_noninferior": "pass",
        "steps_saved": "pass",
        "learning_noninferior_wilcoxon": "pass",
    }


@pytest.mark.subprocess
def test_byo_smi_imports_each_runs_log_and_refuses_the_unresolvable_energy_claim(byo_run: PageRun) -> None:
    """The byo-smi.yaml commands of docs/byo.md, as written there and run once by its runnable block."""
    ran = byo_page(byo_run)
    block = ran.runnable("prereg freeze examples/byo-smi.yaml -o demo/byo-smi.lock.json")
    assert block.commands.splitlines() == [
        "prereg freeze examples/byo-smi.yaml -o demo/byo-smi.lock.json",
        "collect import examples/runs/byo-smi.csv --lock demo/byo-smi.lock.json --out demo/byo-smi-runs "
        "--telemetry examples/runs/byo-smi-logs --telemetry-format nvidia-smi",
        'gates evaluate demo/byo-smi.lock.json demo/byo-smi-runs || echo "exit $?"',
    ]
    stdout = ran_clean(block)
    assert "imported 16 runs" in stdout
    runs = ran.folder / "demo" / "byo-smi-runs"
    records = read_ledger(runs).records
    assert len(records) == 16 and all(r.status == "complete" for r in records)
    for r in records:
        assert f"traces/{r.run_id}.telemetry.meta.json" in r.traces
        assert 1500 < r.metric("energy") < 4000  # J: filled from the log, not the table
        bound = r.telemetry["power_average"].bound_of("energy")
        assert bound is not None and bound > r.metric("energy")  # power.draw cannot bound it tightly
    assert stdout.splitlines()[-1] == "exit 3"  # `gates evaluate` exited 3: refused
    evaluation = evaluation_of(runs)
    assert evaluation["decision"] == "refused"
    assert {g["id"]: g["verdict"] for g in evaluation["gates"]} == {
        "learning_noninferior": "pass",
        "work_saved": "pass",
        "energy_saving": "unresolvable",
    }


def _committed_runs_are_generated(script: str, stem: str, tmp_path: Path) -> list[str]:
    """Run the example's generator into ``tmp_path`` and check the committed table and logs are its
    output, byte for byte; the logs' names."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    committed = EXAMPLES / "runs"
    assert (tmp_path / f"{stem}.csv").read_bytes() == (committed / f"{stem}.csv").read_bytes()
    written = sorted(p.name for p in (tmp_path / f"{stem}-logs").iterdir())
    assert written == sorted(p.name for p in (committed / f"{stem}-logs").iterdir()) and len(written) == 16
    for name in written:
        assert (tmp_path / f"{stem}-logs" / name).read_bytes() == (committed / f"{stem}-logs" / name).read_bytes()
    return written


@pytest.mark.subprocess
def test_the_committed_smi_runs_are_what_the_generator_writes(tmp_path: Path) -> None:
    written = _committed_runs_are_generated("make_smi_logs.py", "byo-smi", tmp_path)
    assert sum((EXAMPLES / "runs" / "byo-smi-logs" / n).stat().st_size for n in written) < 200_000


@pytest.mark.subprocess
def test_byo_dcgm_counter_logs_decide_a_five_percent_margin(byo_run: PageRun) -> None:
    """The byo-dcgm.yaml commands of docs/byo.md, as written there and run once by its runnable block."""
    ran = byo_page(byo_run)
    block = ran.runnable("prereg freeze examples/byo-dcgm.yaml -o demo/byo-dcgm.lock.json")
    assert block.commands.splitlines() == [
        "prereg freeze examples/byo-dcgm.yaml -o demo/byo-dcgm.lock.json",
        "collect import examples/runs/byo-dcgm.csv --lock demo/byo-dcgm.lock.json --out demo/byo-dcgm-runs "
        "--telemetry examples/runs/byo-dcgm-logs --telemetry-format dcgm",
        "gates evaluate demo/byo-dcgm.lock.json demo/byo-dcgm-runs",
    ]
    stdout = ran_clean(block)
    assert "imported 16 runs" in stdout
    runs = ran.folder / "demo" / "byo-dcgm-runs"
    records = read_ledger(runs).records
    assert len(records) == 16
    for r in records:
        log = (EXAMPLES / "runs" / "byo-dcgm-logs" / f"{r.run_id}.dcgm.txt").read_text()
        totec = [int(line.split()[-1]) for line in log.splitlines() if line.startswith("GPU")]
        assert r.metric("energy") == pytest.approx((totec[-1] - totec[0]) / 1000.0)  # the counter's own difference
        summary = r.telemetry["energy_counter"]
        whole, part = summary.bound_of("energy"), summary.systematic_bound_of("energy")
        assert whole is not None and part is not None and part < whole < 0.05 * r.metric("energy")
        assert summary.counter_period_ms == 100.0  # the plan's meter
    evaluation = evaluation_of(runs)
    assert evaluation["decision"] == "supported"
    assert {g["id"]: g["verdict"] for g in evaluation["gates"]} == {
        "learning_noninferior": "pass",
        "energy_saving": "pass",
    }


@pytest.mark.subprocess
def test_the_committed_dcgm_runs_are_what_the_generator_writes(tmp_path: Path) -> None:
    written = _committed_runs_are_generated("make_dcgm_logs.py", "byo-dcgm", tmp_path)
    assert sum((EXAMPLES / "runs" / "byo-dcgm-logs" / n).stat().st_size for n in written) < 500_000


@pytest.mark.subprocess
@requires("torch")
def test_byo_faults_plan_injects_the_same_faults_in_every_arm_and_each_lands(byo_run: PageRun) -> None:
    """The byo-faults.yaml commands of docs/byo.md, as written there and run once by its runnable blocks:
    every run was killed once at its stratum's step and restarted; both arms of each stratum met the same
    planned fault at the same reported step; attempted = retained + lost, replayed = lost; the event trace
    holds each start, fault and restart, and the HTML report and plot draw them."""
    ran = byo_page(byo_run)
    tried = ran_clean(ran.runnable("prereg validate examples/byo-faults.yaml"))
    assert "2 of 2 arm(s) ok" in tried and "faults_landed=1" in tried
    block = ran.runnable("prereg freeze examples/byo-faults.yaml -o demo/byo-faults.lock.json")
    assert block.commands.splitlines() == [
        "prereg freeze examples/byo-faults.yaml -o demo/byo-faults.lock.json",
        "collect run demo/byo-faults.lock.json --out demo/byo-faults-runs --jobs 2",
        "gates evaluate demo/byo-faults.lock.json demo/byo-faults-runs",
    ]
    assert "12 runs completed, 0 failed" in ran_clean(block)
    runs = ran.folder / "demo" / "byo-faults-runs"
    records = read_ledger(runs).records
    assert len(records) == 12 and all(r.status == "complete" for r in records)
    by_stratum: dict[int, list] = {}
    for r in records:
        crash, faults = r.stratum["crash_step"], r.code["faults"]
        by_stratum.setdefault(crash, []).append(faults["planned"])
        assert faults["planned"] == [crash] and faults["starts"] == 2
        (fault,) = faults["record"]
        assert fault["landed"] and fault["step"] == crash and fault["restart"] == 1, fault
        every = 10 if r.arm == "frequent" else 50
        assert r.metrics["lost_steps"] == crash % every == r.metrics["replayed_steps"]
        assert r.metrics["attempted_steps"] == 200 + r.metrics["lost_steps"]  # retained (200) + lost
        events = (runs / "traces" / f"{r.run_id}.events.jsonl").read_text()
        assert events.count('"kind":"failure"') == 1 and events.count('"kind":"restart"') == 1
        assert events.count('"kind":"attempt"') == 2
    assert all(len(plans) == 2 and plans[0] == plans[1] for plans in by_stratum.values())
    evaluation = evaluation_of(runs)
    assert evaluation["decision"] == "supported"
    assert {i["id"]: i["fired"] for i in evaluation["invalidators"]}["faults_landed"] is False
    shown = ran_clean(ran.runnable("reports html demo/byo-faults-runs -o demo/byo-faults.html"))
    assert "207 reports in 2 attempts" in shown and "fault at step 37" in shown
    page = (ran.folder / "demo" / "byo-faults.html").read_text()
    assert page.count("fault at step") >= 12 and "restart 1" in page  # every block's runs drawn
