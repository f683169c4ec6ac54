"""Genuine times of tens of seconds (and amounts spread far apart) are never read as natural logs;
logs of times, energies and FLOP still are; the "transformed values" guess stays with its gate, never
in the decision line."""

from __future__ import annotations

import numpy as np
import pytest

from gates.plausibility import MIX_UP, TRANSFORMED, decision_warning, plausibility
from prereg.plan import parse_plan

PLAN = """schema: prereg/v1
study: times
title: Does arm a take no longer than arm b?
hypothesis: Arm a takes at most 5% longer.
arms: {{a: {{policy: a}}, b: {{policy: b}}}}
strata:
  factors: {{site: [0, 1, 2, 3, 4, 5]}}
metrics:
  amount: {{unit: {unit}, better: lower, evidence: measured}}
gates:
  - {{id: g, metric: amount, contrast: "{contrast}", method: t, confidence: 0.9, pass_if: "{rule}"}}
decision: {{claim: a takes at most 5% longer.}}
"""
RULES = {"a / b": "upper < 1.05", "a - b": "upper < 2"}


def warnings_for(unit: str, values: np.ndarray, contrast: str = "a / b") -> list[str]:
    plan = parse_plan(PLAN.format(unit=unit, contrast=contrast, rule=RULES[contrast]).encode()).plan
    refusals, warnings = plausibility(plan.gates[0], plan, [], values)
    assert refusals == []
    return warnings


def table(low: float, high: float, a_factor: float = 1.03) -> np.ndarray:
    """6 blocks x arms (a, b): arm b spread evenly over [low, high], arm a ``a_factor`` times it."""
    b = np.linspace(low, high, 6)
    return np.column_stack([b * a_factor, b])


@pytest.mark.parametrize("contrast", ["a / b", "a - b"])
@pytest.mark.parametrize("unit", ["s", "seconds", "ms", "min"])
@pytest.mark.parametrize(("low", "high"), [(60.0, 78.0), (10.0, 12.0), (25.0, 27.0), (90.0, 95.0)])
def test_times_of_tens_of_their_unit_carry_no_log_warning(unit, contrast, low, high):
    """60-80 s (the times a short real study records) and narrow bands of tens, in any time unit."""
    assert not any(w.startswith(TRANSFORMED) for w in warnings_for(unit, table(low, high), contrast))


@pytest.mark.parametrize("unit", ["J", "tokens", "FLOP", "W"])
def test_amounts_spread_too_far_apart_to_be_logs_carry_no_log_warning(unit):
    """60-80 J: as logs, amounts e**60 to e**80 (5e8-fold apart): no metric of one study varies so."""
    assert not any(w.startswith(TRANSFORMED) for w in warnings_for(unit, table(60.0, 78.0)))


@pytest.mark.parametrize(
    ("unit", "level"), [("s", 150.0), ("s", 3600.0), ("ms", 150.0), ("J", 5000.0), ("FLOP", 1e25), ("tokens", 1e9)]
)
@pytest.mark.parametrize("contrast", ["a / b", "a - b"])
def test_logs_of_times_energies_and_flop_still_warn(unit, level, contrast):
    logs = np.log(table(level, level * 1.6, a_factor=1.05))
    warnings = warnings_for(unit, logs, contrast)
    assert len(warnings) == 1 and warnings[0].startswith(TRANSFORMED), warnings
    assert f"looks like natural logs of {unit}" in warnings[0]


def test_the_log_guess_stays_out_of_the_decision_line_and_a_mix_up_does_not():
    logged = warnings_for("s", np.log(table(150.0, 240.0)))
    assert decision_warning([("g", "primary", logged)]) == ""
    mixed = warnings_for("s", np.column_stack([np.linspace(60, 80, 6) / 60, np.linspace(60, 80, 6)]))
    assert mixed[0].startswith(MIX_UP)
    assert (
        decision_warning([("g", "primary", mixed)]) == f"; WARNING: gate g: {MIX_UP} (its notes and warnings say why)"
    )
