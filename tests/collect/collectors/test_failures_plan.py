"""experiment.failures: the schema, the per-stratum spec, the drawn schedule (common to every arm)."""

from __future__ import annotations

import math
import statistics

import pytest
from pydantic import ValidationError

from collect.collectors.failures import failure_spec, planned_faults
from prereg.schema_failures import Failures, failure_problems


def test_exactly_one_schedule_and_a_horizon_where_needed() -> None:
    with pytest.raises(ValidationError, match="exactly one schedule"):
        Failures.model_validate({"at": [3], "poisson_rate": 0.1, "horizon": 10})
    with pytest.raises(ValidationError, match="exactly one schedule"):
        Failures.model_validate({})
    with pytest.raises(ValidationError, match="needs 'horizon'"):
        Failures.model_validate({"poisson_rate": 0.1})
    with pytest.raises(ValidationError):
        Failures.model_validate({"at": [3], "action": "kill_everything"})
    assert Failures.model_validate({"at": [3, "{step}"]}).factor_refs() == {"at[1]": "step"}


def test_cross_references_are_checked_against_the_factors() -> None:
    f = Failures.model_validate(
        {"poisson_rate": "{rate}", "horizon": 100, "when": {"kind": ["crash"]}, "fractions": None}
    )
    assert failure_problems(f, {"rate": [0.1, 0.2], "kind": ["crash", "none"]}) == []
    problems = [msg for _, msg in failure_problems(f, {"rat": [0.1], "kind": ["none"]})]
    assert any("names factor 'rate'" in m for m in problems)
    assert any("not levels of 'kind'" in m for m in problems)
    text = Failures.model_validate({"poisson_rate": "{rate}", "horizon": 10})
    assert "not all numbers" in failure_problems(text, {"rate": ["fast"]})[0][1]
    bad = Failures.model_validate({"fractions": [0.5, 1.5], "horizon": 10})
    assert "must be in (0, 1)" in failure_problems(bad, {})[0][1]


def test_control_strata_meet_no_fault_and_factor_values_are_resolved() -> None:
    f = Failures.model_validate({"at": ["{step}"], "when": {"outage": [True]}})
    assert failure_spec(f, {"outage": False, "step": 7}) is None
    spec = failure_spec(f, {"outage": True, "step": 7})
    assert spec is not None and spec["at"] == [7]
    assert planned_faults(spec, seed=1) == [7.0]
    assert planned_faults(None, seed=1) == []


def test_schedules_in_steps_and_seconds() -> None:
    steps = failure_spec(Failures.model_validate({"fractions": [0.25, 0.5], "horizon": 10}), {})
    assert planned_faults(steps, 3) == [3.0, 5.0]  # 2.5 -> step 3 (whole steps, at least 1)
    secs = failure_spec(Failures.model_validate({"unit": "s", "at": [2.5, 0.5]}), {})
    assert planned_faults(secs, 3) == [0.5, 2.5]
    capped = failure_spec(Failures.model_validate({"at": [1, 2, 3], "max_restarts": 2}), {})
    assert planned_faults(capped, 3) == [1.0, 2.0]
    none = failure_spec(Failures.model_validate({"poisson_rate": 0, "horizon": 100}), {})
    assert planned_faults(none, 3) == []


def test_poisson_draw_depends_on_the_seed_alone_and_has_the_planned_rate() -> None:
    spec = failure_spec(
        Failures.model_validate({"poisson_rate": 0.02, "horizon": 200, "unit": "s", "max_restarts": 1000}), {}
    )
    assert planned_faults(spec, 11) == planned_faults(dict(spec), 11)  # every arm of the stratum: the same
    assert planned_faults(spec, 11) != planned_faults(spec, 12)
    counts = [len(planned_faults(spec, seed)) for seed in range(2000)]
    # Poisson(4): the mean of 2000 draws lies within 5 standard errors of 4 (sd 2 / sqrt(2000))
    assert abs(statistics.fmean(counts) - 4.0) < 5 * 2 / math.sqrt(2000)
    assert abs(statistics.pvariance(counts) - 4.0) < 0.6  # Poisson: variance = mean
    for seed in range(50):
        points = planned_faults(spec, seed)
        assert points == sorted(points) and all(0 < p < 200 for p in points)
