"""Values that look like natural logs carry a warning on a ratio gate whatever the metric's unit;
plain positive metrics of a generic unit (times of 100-200 s, token counts, percentages) do not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from gates.plausibility import TRANSFORMED, decision_warning, plausibility
from prereg.plan import parse_plan
from tests.helpers import frozen_shared, run, write_csv

PLAN = """\
schema: prereg/v1
study: logged-values
title: Does arm a use no more than 2% more than arm b?
hypothesis: Arm a's amount is within 2% of arm b's.
arms:
  a: {{policy: a}}
  b: {{policy: b}}
strata:
  factors:
    site: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
metrics:
  amount: {{unit: {unit}, better: lower, evidence: measured}}
gates:
  - id: noninferior
    metric: amount
    contrast: {contrast}
    method: t
    confidence: 0.90
    pass_if: {rule}
decision:
  claim: Arm a uses at most 2% more than arm b.
"""
JITTER = [0.012, -0.008, 0.004, -0.011, 0.007, 0.0, -0.003, 0.009, -0.006, 0.002]


def plan_text(unit: str, contrast: str = "a / b", rule: str = "upper < 1.02") -> str:
    return PLAN.format(unit=unit, contrast=contrast, rule=rule)


def amounts(level: float = 1000.0, spread: float = 1.0, a_factor: float = 1.05, logs: bool = False) -> np.ndarray:
    """10 blocks x arms (a, b): arm b about ``level`` (times ``spread`` ** (site / 9) across sites), arm a
    ``a_factor`` times it; ``logs``: natural logs of those amounts."""
    rows = []
    for site in range(10):
        b = level * spread ** (site / 9) * (1 + JITTER[site])
        a = b * a_factor * (1 + JITTER[(site + 4) % 10] / 2)
        rows.append((a, b))
    values = np.array(rows)
    return np.log(values) if logs else values


def warnings_for(unit: str, values: np.ndarray, contrast: str = "a / b", rule: str = "upper < 1.02") -> list[str]:
    plan = parse_plan(plan_text(unit, contrast, rule).encode()).plan
    refusals, warnings = plausibility(plan.gates[0], plan, [], values)
    assert refusals == []
    return warnings


@pytest.mark.parametrize("unit", ["units", "score", "examples", "count"])
@pytest.mark.parametrize(("level", "spread"), [(1000.0, 1.0), (5e3, 30.0), (1e9, 3.0), (1e22, 10.0), (150.0, 2.0)])
def test_logs_of_amounts_under_a_generic_unit_warn_a_ratio_gate(unit, level, spread):
    warnings = warnings_for(unit, amounts(level, spread, logs=True))
    assert len(warnings) == 1 and warnings[0].startswith(TRANSFORMED), warnings
    assert "a ratio of logs is not the ratio of the amounts" in warnings[0]
    assert decision_warning([("noninferior", "primary", warnings)]) == ""  # it stays with its gate


@pytest.mark.parametrize(
    ("unit", "values"),
    [
        ("units", amounts(150.0, 200.0 / 150.0)),  # completion times of 100-200 s
        ("units", amounts(100.0, 2.0)),
        ("score", amounts(12.0, 2.5)),  # 12-30: spread 2.5x
        ("count", amounts(1e6, 3.0)),  # token counts
        ("units", amounts(5000.0, 30.0)),  # energies in J
        ("percent", amounts(60.0, 1.5, a_factor=1.0)),  # 60-90 %: logs of amounts 1e13-fold apart, not logs
        ("nats", amounts(2.3, 1.1, a_factor=1.01)),  # a loss declared in nats: logs by declaration
    ],
)
def test_plain_positive_metrics_of_a_generic_unit_get_no_log_warning(unit, values):
    assert not any(w.startswith(TRANSFORMED) for w in warnings_for(unit, values))


def test_a_difference_gate_of_a_generic_unit_is_not_checked_for_logs():
    """A difference of logs is a log ratio, a usual analysis: only an amount unit (J) warns it."""
    logs = amounts(logs=True)
    assert warnings_for("units", logs, "a - b", "upper < 0.02") == []
    assert warnings_for("J", logs, "a - b", "upper < 0.02")[0].startswith(TRANSFORMED)


@pytest.mark.subprocess
def test_the_warning_reaches_the_gate_not_the_decision_line_of_an_evaluation(tmp_path: Path):
    """End to end: the ratio of logs (about 1.007) hides a 5% excess and passes, with the warning in the
    gate's notes; the decision line carries no guess read from the values alone."""
    lock = frozen_shared(tmp_path, "plan.yaml", plan_text("units"))
    values = amounts(logs=True)
    rows = [
        {"arm": arm, "site": site, "amount": float(values[site, j])} for site in range(10) for j, arm in enumerate("ab")
    ]
    table = write_csv(tmp_path / "runs.csv", rows)
    assert run("collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / "runs")).returncode == 0
    proc = run("gates", "evaluate", str(lock), str(tmp_path / "runs"), "--json")
    ev = json.loads(proc.stdout)
    assert ev["gates"][0]["verdict"] == "pass" and proc.returncode == 0
    assert "likely transformed values" not in ev["decision_reason"]
    note = next(n for n in ev["gates"][0]["notes"] if n.startswith(TRANSFORMED))
    assert f"(of {math.exp(values.min()):.3g} to {math.exp(values.max()):.3g}, within 1000-fold" in note
