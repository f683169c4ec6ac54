"""``prereg power``: blocks per gate from a pilot runs folder, its errors (exit 2), and the looks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from estimators import power as P
from gates.power import gate_power, pilot_contrasts, plan_power
from prereg.plan import load_plan
from tests.helpers import run
from tests.helpers.gates import frozen, gate_line, imported, plan_text, rows_for

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

GATES = "\n".join(
    [
        gate_line("g1", "t", "upper < 0.5"),
        gate_line("g2", "wilcoxon", "upper < 0.5"),
        gate_line("g3", "t", "within [-0.8, 0.8]"),
    ]
)
PILOT = [0.31, -0.52, 0.12, 0.9, -0.2, -0.75, 0.44, 0.05, -0.1, 0.6]


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the pilot's runs folder, the plan being designed: the same gates over 16 blocks)."""
    tmp = tmp_path_factory.mktemp("power")
    lock = frozen(tmp, plan_text(len(PILOT), GATES))
    runs = imported(tmp, lock, rows_for(PILOT))
    plan = tmp / "main.yaml"
    plan.write_bytes(plan_text(16, GATES))
    return runs, plan


@pytest.mark.slow
def test_power_from_a_pilot(pilot: tuple[Path, Path]) -> None:
    runs, plan = pilot
    report = plan_power(plan, runs, target_power=0.8, sims=200, seed=1)
    by_id = {g.gate: g for g in report.gates}
    g1 = by_id["g1"]
    assert g1.pilot_pairs == len(PILOT) and g1.sd == pytest.approx(float(np.std(PILOT, ddof=1)))
    target = P.Target("upper", high=0.5)
    assert g1.blocks_needed == P.blocks_needed(lambda n: P.t_power(n, 0.0, g1.sd, target, 0.05), 0.8)
    assert g1.blocks_needed_ucl is not None and g1.blocks_needed is not None
    assert g1.blocks_needed_ucl > g1.blocks_needed  # planning at the SD's upper limit asks for more
    assert g1.power_planned == pytest.approx(P.t_power(16, 0.0, g1.sd, target, 0.05))
    assert by_id["g2"].simulated_power_planned is not None  # the Wilcoxon gate's own power, simulated
    assert "SD of the paired differences" in report.sd_convention
    assert any("no monitoring" in n for n in report.notes)


@pytest.mark.slow
def test_power_cli_table_and_json(pilot: tuple[Path, Path]) -> None:
    runs, plan = pilot
    proc = run("prereg", "power", str(plan), "--pilot", str(runs), "--sims", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "gates/power/v1" and {g["gate"] for g in data["gates"]} == {"g1", "g2", "g3"}
    proc = run("prereg", "power", str(plan), "--pilot", str(runs), "--sims", "200", env={"COLUMNS": "200"})
    assert proc.returncode == 0 and "SD of the paired differences" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("folder", "no such pilot runs folder"),
        ("metric", "needs metric 'energy'"),
        ("pairs", "planning needs at least 3"),
        ("assume", "expected GATE=NUMBER"),
    ],
)
def test_power_cli_errors(pilot: tuple[Path, Path], tmp_path: Path, change: str, words: str) -> None:
    runs, plan = pilot
    args = [str(plan), "--pilot", str(runs)]
    if change == "folder":
        args = [str(plan), "--pilot", str(tmp_path / "nowhere")]
    elif change == "metric":
        text = plan_text(16, gate_line("g1", "t", "upper < 0.5")).replace(b"metric: loss", b"metric: energy")
        text = text.replace(b"metrics:\n", b"metrics:\n  energy: {unit: J, better: lower, evidence: measured}\n")
        (tmp_path / "m.yaml").write_bytes(text)
        args = [str(tmp_path / "m.yaml"), "--pilot", str(runs)]
    elif change == "pairs":
        small = tmp_path / "small"
        small.mkdir()
        lock = frozen(small, plan_text(2, gate_line("g1", "t", "upper < 0.5")))
        args = [str(plan), "--pilot", str(imported(small, lock, rows_for([0.1, 0.2])))]
    else:
        args += ["--assume", "g1"]
    proc = run("prereg", "power", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words in proc.stderr


class _WithLooks:
    """A plan with a ``monitoring`` section (what the plan schema gives when the plan declares one)."""

    def __init__(self, plan: Any, looks: list[int], spending: str) -> None:
        self._plan = plan
        self.monitoring = type("M", (), {"looks": looks, "spending": spending, "futility": "none"})()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plan, name)


@pytest.mark.slow
def test_power_with_planned_looks(pilot: tuple[Path, Path]) -> None:
    runs, plan_path = pilot
    from collect.ledger.store import read_ledger

    plan = load_plan(plan_path).plan
    gate = plan.gates[0]
    d = pilot_contrasts(plan, gate, read_ledger(runs).records, "pilot")
    looked = gate_power(_WithLooks(plan, [8, 12, 16], "obrien_fleming"), gate, d, 16, 0.8, {}, 200, 1)  # type: ignore[arg-type]
    seq = looked.sequential
    assert seq is not None and seq["looks"] == [8, 12, 16] and seq["basis"] == "boundary"
    assert looked.power_planned is not None
    assert seq["power"] <= looked.power_planned + 4 * seq["se"]  # looks cost a little power
    assert 8 <= seq["expected_blocks"] <= 16 and seq["expected_blocks_saved"] >= 0


def test_a_pilot_cell_recorded_complete_twice_is_refused_by_the_one_duplicate_rule(pilot: tuple[Path, Path]) -> None:
    from collect.ledger.cells import DuplicateCell
    from collect.ledger.store import read_ledger

    runs, plan_path = pilot
    plan = load_plan(plan_path).plan
    records = read_ledger(runs).records
    assert pilot_contrasts(plan, plan.gates[0], records, "pilot").size == len(PILOT)
    repeat = records[0].model_copy(update={"run_id": "run-repeat", "metrics": {"loss": 99.0}})
    with pytest.raises(DuplicateCell, match="recorded complete twice"):
        pilot_contrasts(plan, plan.gates[0], [*records, repeat], "pilot")
