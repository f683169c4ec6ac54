"""Planning an energy gate's meter (gates/meter_plan.py): the per-run bound its margin needs agrees
with the resolution check the gate will run, and the logs that reach it are named."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import estimators as E
from gates.meter_plan import gate_meter_lines
from prereg.plan import load_plan
from prereg_toolkit_cli.prereg import main as prereg_main
from tests.conftest import OWN_EXAMPLES as EXAMPLES


def _dcgm_plan():
    return load_plan(EXAMPLES / "byo-dcgm.yaml").plan


def test_the_needed_bound_is_what_the_resolution_check_then_allows() -> None:
    plan = _dcgm_plan()
    gate = next(g for g in plan.gates if g.id == "energy_saving")
    line = gate_meter_lines(plan, gate)[0]
    n = 8
    k = 1 + stats.t.ppf(0.95, n - 1) / math.sqrt(n - 1)  # t at 90%: the end moves mean(b) + t_q ||b|| / sqrt(n(n-1))
    distance = -math.log(0.95)
    need = distance / (2 * 2 * k)
    assert f"below {100 * need:.2g}%" in line
    # a meter exactly at that share: the gate's own check moves the interval by half the distance (to first order)
    energy = np.full((n, 2), 180_000.0)
    chk_bounds = E.propagate_bounds(energy, [1, -1], need * energy, "ratio")
    shift = E.interval_bound("t", chk_bounds, 0.9)
    assert shift == pytest.approx(distance / 2, rel=0.01)


def test_which_logs_reach_it_at_the_plans_run_length() -> None:
    plan = _dcgm_plan()
    gate = next(g for g in plan.gates if g.id == "energy_saving")
    table = gate_meter_lines(plan, gate)[1]
    assert table.startswith("  runs of 600 s at 300 W:")  # the plan's meter: run_s 600, power_w 300
    verdicts = dict(part.rsplit(" ", 2)[0::2] for part in table.split(": ", 1)[1].split("; "))
    assert verdicts["counter read at the run's ends"] == "yes"
    assert verdicts["nvidia-smi 100 ms, part-time"] == "no"  # only the power range bounds it


def test_a_gate_without_a_signal_gets_no_lines() -> None:
    plan = _dcgm_plan()
    gate = next(g for g in plan.gates if g.id == "learning_noninferior")
    assert gate_meter_lines(plan, gate) == []


def test_prereg_validate_says_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert prereg_main(["validate", str(EXAMPLES / "byo-dcgm.yaml")]) == 0
    out = capsys.readouterr().out
    assert "gate energy_saving: the meter must keep each run's arm-dependent energy_counter bound below" in out
