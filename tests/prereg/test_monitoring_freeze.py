"""Freezing a monitored plan never fails inside the toolkit: a look whose spent alpha is too small for
any interval (O'Brien-Fleming at a small first look) is refused by number, and every valid
``monitoring:`` section either freezes or is refused (exit 2), never an internal error (exit 4)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimators.look_levels import gate_levels
from prereg.monitoring import look_levels
from prereg.plan import PlanError, parse_plan
from tests.helpers import run
from tests.helpers.looks import SIM_HEAD

PLAN = (
    SIM_HEAD
    + """strata:
  factors:
    seed: {seeds}
metrics:
  completion_time: {{unit: s, better: lower, evidence: modeled, range: [0, 1000]}}
gates:
  - {{id: sooner, metric: completion_time, contrast: continue - restart, method: {method}, confidence: {confidence},
      pass_if: "upper < 0"}}
decision: {{claim: continuing is sooner}}
monitoring:
  looks: {looks}
  spending: {spending}
  futility: {futility}
{reason}"""
)

#: the plan states why its first look is small (mean-targeting methods are refused a first look under 15
#: units without one), so what is tested here is the spending alone
REASON = '  first_look_reason: "pilot-calibrated"\n'


def plan_text(
    looks: list[int], confidence: float, method: str = "t", spending: str = "obrien_fleming", futility: str = "none"
) -> str:
    """A single-gate plan with ``looks[-1]`` pairing strata (one per seed) and the given monitoring."""
    return PLAN.format(
        seeds=list(range(looks[-1])),
        method=method,
        confidence=confidence,
        looks=looks,
        spending=spending,
        futility=futility,
        reason=REASON,
    )


# -- the two plans of the report: O'Brien-Fleming spends 6.9e-19 and 7e-27 at their first looks ---------

SMALL_FIRST_LOOKS = [([3, 30], 0.99, 6.892e-19), ([2, 60], 0.90, 6.959e-27)]


@pytest.mark.parametrize(("looks", "confidence", "spent"), SMALL_FIRST_LOOKS)
def test_a_first_look_spending_too_little_for_any_interval_has_no_confidence(looks, confidence, spent):
    levels = gate_levels("t", confidence, looks, "obrien_fleming")
    assert levels[0].nominal_alpha == pytest.approx(spent, rel=0.01)  # the spending's own level, kept
    assert levels[0].confidence is None  # 1 - 2 * spent is 1 in double precision: cannot pass there
    assert 0 < levels[1].confidence < 1
    plan = parse_plan(plan_text([15, looks[1]], confidence).encode()).plan  # a later first look freezes
    for level in look_levels(plan, plan.gates[0]):
        assert level.z_bound is None or math.isfinite(level.z_bound)


def test_look_confidence_is_none_exactly_where_one_minus_twice_the_level_is_one():
    from estimators.look_levels import look_confidence

    assert look_confidence(0.0) is None and look_confidence(1e-18) is None and look_confidence(2.0**-55) is None
    assert look_confidence(2.0**-53) == 1 - 2.0**-52 and look_confidence(0.025) == 0.95
    assert look_confidence(1e-15) is not None and (1 - look_confidence(1e-15)) / 2 == pytest.approx(1e-15, rel=1e-1)


@pytest.mark.subprocess
@pytest.mark.parametrize(("looks", "confidence", "spent"), SMALL_FIRST_LOOKS)
def test_freeze_refuses_such_a_look_by_number_with_one_message(tmp_path, looks, confidence, spent):
    path = tmp_path / "plan.yaml"
    path.write_text(plan_text(looks, confidence))
    proc = run("prereg", "freeze", str(path))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in proc.stderr, proc.stderr
    assert "monitoring.looks[0]: gate 'sooner' could never pass at look 1" in lines[0]
    assert f"nominal one-sided level {spent:.4g}" in lines[0]
    assert "too little for any interval" in lines[0] and "move the look later" in lines[0]
    assert not path.with_name("plan.lock.json").exists()


# -- every valid monitoring section: freezes or is refused, never anything else ------------------------------


@st.composite
def monitoring_plans(draw: st.DrawFn) -> tuple[list[int], float, str, str, str]:
    count = draw(st.integers(2, 5))
    last = draw(st.integers(count * 2, 60))
    first = draw(st.integers(1, max(1, last // 2)))  # a first look from 1 block to half the plan
    middle = sorted(draw(st.sets(st.integers(first + 1, last - 1), min_size=count - 2, max_size=count - 2)))
    looks = [first, *middle, last]
    confidence = draw(st.floats(0.8, 0.995))
    rho = draw(st.sampled_from([0.05, 0.5, 1, 2, 3, 10, 100]))
    spending = draw(st.sampled_from(["obrien_fleming", "pocock", f"power:{rho}"]))
    method = draw(st.sampled_from(["t", "signflip", "wilcoxon", "bootstrap", "bca", "betting"]))
    futility = draw(st.sampled_from(["none", "nonbinding"]))
    return looks, confidence, method, spending, futility


@pytest.mark.slow  # a t design simulates its sequential t levels (about 0.4 s each)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monitoring_plans())
def test_any_valid_monitoring_plan_freezes_or_is_refused_by_the_toolkit(drawn):
    looks, confidence, method, spending, futility = drawn
    text = plan_text(looks, round(confidence, 4), method, spending, futility)
    try:
        plan = parse_plan(text.encode()).plan
    except PlanError:  # the toolkit's refusal (exit 2), with its line-numbered problems
        return
    for level in look_levels(plan, plan.gates[0]):
        assert 0 <= level.nominal_alpha < 0.5
        assert level.confidence is None or 0 < level.confidence < 1
        assert level.z_bound is None or math.isfinite(level.z_bound)
