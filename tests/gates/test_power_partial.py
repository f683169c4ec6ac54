"""``prereg power`` plans the gates a pilot can plan and says why not for the rest, from only the
strata that give the gates pairs (no-failure controls and calibration strata left out)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from collect.ledger.records import run_id
from collect.ledger.store import RunRecord, append_records
from estimators import power as P
from gates.power import GateNotPlanned, pilot_contrasts, plan_power
from prereg.plan import load_plan
from reports.terminal.power import render_power

#: per failure stratum, the loss arm a saves (its contrast a - b is minus this); the control strata's is exactly 0
FAILURE_CONTRASTS = [0.30, 0.42, 0.18, 0.36, 0.25, 0.40]
PILOT_SHA = "ab" * 32
PLAN = """schema: prereg/v1
study: power-partial
title: Does arm a lower the loss under failures?
hypothesis: a lowers the loss when sites fail.
arms: {{a: {{policy: x}}, b: {{policy: y}}}}
strata:
  factors: {{rate: [0, 1], block: [{blocks}]}}
  controls: [{{rate: 0}}]
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
  energy: {{unit: J, better: lower, evidence: measured}}
gates:
  - {{id: lower_loss, metric: loss, contrast: "a - b", method: t, confidence: 0.9, pass_if: "upper < 0"}}
{extra}decision: {{claim: a lowers the loss.}}
"""
ENERGY_GATE = (
    '  - {id: energy, metric: energy, contrast: "a / b", method: t, confidence: 0.9, pass_if: "upper < 1.05", '
    "role: sensitivity}\n"
)


def _pilot(tmp_path: Path) -> Path:
    """A pilot folder: 6 failure strata with FAILURE_CONTRASTS and 6 no-failure controls (contrast 0),
    loss only (no energy)."""
    records = []
    for rate in (0, 1):
        for block, contrast in enumerate(FAILURE_CONTRASTS, start=1):
            for arm, loss in (("a", 3.0 - (contrast if rate else 0.0)), ("b", 3.0)):
                stratum = {"rate": rate, "block": block}
                records.append(
                    RunRecord(
                        run_id=run_id(PILOT_SHA, stratum, arm, 0),
                        prereg_sha256=PILOT_SHA,
                        stratum=stratum,
                        arm=arm,
                        replicate=0,
                        status="complete",
                        metrics={"loss": loss},
                    )
                )
    append_records(tmp_path / "pilot", records)
    return tmp_path / "pilot"


def _plan(tmp_path: Path, extra: str = "", blocks: int = 6) -> Path:
    path = tmp_path / "main.yaml"
    path.write_text(PLAN.format(blocks=", ".join(str(b) for b in range(1, blocks + 1)), extra=extra))
    return path


def test_control_strata_give_the_planning_no_pairs(tmp_path):
    pilot = _pilot(tmp_path)
    report = plan_power(_plan(tmp_path), pilot, sims=100)
    (g,) = report.gates
    assert g.pilot_pairs == len(FAILURE_CONTRASTS)  # the 6 controls are not among the pairs
    assert g.sd == pytest.approx(float(np.std(FAILURE_CONTRASTS, ddof=1)))
    assert g.pilot_estimate == pytest.approx(-float(np.mean(FAILURE_CONTRASTS)))
    assert g.delta == pytest.approx(-float(np.mean(FAILURE_CONTRASTS)))  # no difference fails 'upper < 0'
    target = P.Target("upper", high=0.0)
    assert g.blocks_needed == P.blocks_needed(lambda n: P.t_power(n, g.delta, g.sd, target, 0.05), 0.8)
    with_zeros = -np.array(FAILURE_CONTRASTS + [0.0] * 6)  # what counting the controls gave
    counted = P.blocks_needed(
        lambda n: P.t_power(n, float(with_zeros.mean()), float(with_zeros.std(ddof=1)), target, 0.05), 0.8
    )
    assert counted is not None and g.blocks_needed is not None and g.blocks_needed < counted
    assert "6 pilot strata left out: the plan's calibration and no-failure control strata" in " ".join(report.notes)


def test_a_gate_whose_metric_the_pilot_lacks_is_noted_and_the_others_planned(tmp_path):
    pilot = _pilot(tmp_path)
    report = plan_power(_plan(tmp_path, ENERGY_GATE), pilot, sims=100)
    assert [g.gate for g in report.gates] == ["lower_loss"]
    (skipped,) = report.not_planned
    assert skipped["gate"] == "energy" and skipped["role"] == "sensitivity"
    assert "gate 'energy' needs metric 'energy', which no pilot run records" in skipped["reason"]
    assert report.to_json()["not_planned"] == report.not_planned
    console = Console(width=200, file=io.StringIO(), no_color=True)
    console.print(render_power(report))
    text = " ".join(console.file.getvalue().split())
    assert "not planned: gate energy (sensitivity): " in text and "needs metric 'energy'" in text


def test_no_gate_to_plan_is_still_an_error_naming_each_reason(tmp_path):
    pilot = _pilot(tmp_path)
    only_energy = PLAN.replace(
        '  - {{id: lower_loss, metric: loss, contrast: "a - b", method: t, confidence: 0.9, pass_if: "upper < 0"}}\n',
        "",
    )
    assert "lower_loss" not in only_energy
    path = tmp_path / "energy.yaml"
    path.write_text(only_energy.format(blocks="1, 2, 3", extra=ENERGY_GATE.replace(", role: sensitivity", "")))
    with pytest.raises(
        GateNotPlanned, match=r"no tested gate can be planned from this pilot: .*needs metric 'energy'"
    ) as err:
        plan_power(path, pilot, sims=100)
    assert err.value.exit_code == 2


def test_too_few_failure_strata_once_the_controls_are_left_out(tmp_path):
    """Two failure strata and many controls: not enough pairs to plan, whatever the controls add."""
    pilot = _pilot(tmp_path)
    plan = load_plan(_plan(tmp_path)).plan
    from collect.ledger.store import read_ledger

    records = [r for r in read_ledger(pilot).records if r.stratum["rate"] == 0 or r.stratum["block"] <= 2]
    with pytest.raises(GateNotPlanned, match="the pilot gives 2 paired contrast"):
        pilot_contrasts(plan, plan.gates[0], records, "pilot")
