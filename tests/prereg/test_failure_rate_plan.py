"""The ``failure_rate`` invalidator in a plan (prereg.schema_invalidators, prereg.checks): what it
names exists, what it leaves out experiment.failures gives, and a draw max_restarts would cut is
refused; each problem is one message at the field's line."""

from __future__ import annotations

import pytest

from prereg.plan import PlanError, parse_plan
from prereg.schema_invalidators import FailureRate

HEAD = """schema: prereg/v1
study: failure-rate
title: Failure rate case
hypothesis: a is no worse than b.
{experiment}arms: {{a: {{policy: x}}, b: {{policy: y}}}}
strata:
  factors: {{block: [1, 2, 3, 4, 5, 6, 7, 8], speed: [fast, slow], mtbf_rate: [0, 0.001]}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
  failures: {{unit: count, better: lower, evidence: measured}}
  run_s: {{unit: s, better: lower, evidence: measured}}
gates:
  - {{id: loss_ok, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5}}
decision: {{claim: a is no worse than b., multiplicity: none}}
invalidators:
  - {{id: rate_ok, kind: failure_rate, blocks: all, {fields}}}
"""


def _experiment(failures: str) -> str:
    return (
        f"experiment:\n  collector: command\n  params: {{argv: [python, t.py], sensor: none}}\n  failures: {failures}\n"
    )


def problems(fields: str, failures: str | None = None) -> list[str]:
    text = HEAD.format(fields=fields, experiment=_experiment(failures) if failures else "")
    try:
        parse_plan(text.encode())
    except PlanError as err:
        return [p.message for p in err.problems]
    return []


def test_a_metric_plan_and_an_own_program_plan_are_accepted() -> None:
    assert problems("count: failures, exposure: run_s, rate: 1.5e-4") == []
    assert problems("count: failures, exposure: 3600, rate: '{mtbf_rate}', level: 0.01") == []
    assert problems("landed_share_min: 0.95", "{unit: s, poisson_rate: 0.05, horizon: 100, max_restarts: 30}") == []
    text = HEAD.format(
        fields="level: 0.1", experiment=_experiment("{poisson_rate: 0.05, horizon: 100, max_restarts: 30}")
    )
    (inv,) = [i for i in parse_plan(text.encode()).plan.invalidators if isinstance(i, FailureRate)]
    assert (inv.count, inv.exposure, inv.rate, inv.level, inv.landed_share_min) == (None, None, None, 0.1, None)


@pytest.mark.parametrize(
    ("fields", "failures", "expected"),
    [
        ("count: fails, exposure: run_s, rate: 1", None, "unknown metric 'fails'"),
        ("count: failures, exposure: run_time, rate: 1", None, "unknown metric 'run_time'"),
        ("count: failures, rate: 1", None, "give each run's exposure"),
        ("count: failures, exposure: run_s", None, "give the planned rate"),
        ("count: failures, exposure: run_s, rate: 1, landed_share_min: 0.9", None, "drop 'count'"),
        ("count: failures, exposure: run_s, rate: '{mtbf}'", None, "unknown factor 'mtbf'"),
        ("count: failures, exposure: run_s, rate: '{speed}'", None, "levels are not all numbers >= 0"),
        ("rate: 0.1", None, "name the metric that holds each run's failure count"),
        ("exposure: 100", "{at: [5, 9]}", "give the planned rate: experiment.failures plans fixed points"),
        ("rate: 0.1", "{at: [5, 9]}", "experiment.failures has no 'horizon'"),
        ("level: 0.05", "{poisson_rate: 0, horizon: 100}", "poisson_rate is 0: no failure is planned"),
        ("level: 0.05", "{poisson_rate: 0.1, horizon: 100, max_restarts: 10}", "raise max_restarts"),
    ],
)
def test_cross_reference_problems(fields: str, failures: str | None, expected: str) -> None:
    found = problems(fields, failures)
    assert any(expected in message for message in found), found


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("count: failures, exposure: run_s, rate: 0", "rate 0 must be > 0"),
        ("count: failures, exposure: 0.0, rate: 1", "exposure 0 must be > 0"),
        ("count: failures, exposure: run_s, rate: 1, level: 0.7", "less than or equal to 0.5"),
        ("count: failures, exposure: run_s, rate: 1, landed_share_min: 1.5", "less than or equal to 1"),
    ],
)
def test_schema_refuses_impossible_values(fields: str, expected: str) -> None:
    found = problems(fields)
    assert any(expected in message for message in found), found


def test_the_truncation_bound_names_the_mean_and_the_share_cut() -> None:
    (message,) = [m for m in problems("level: 0.05", "{poisson_rate: 0.1, horizon: 100, max_restarts: 10}")]
    assert message.startswith("a run plans 10 faults on average, and experiment.failures.max_restarts = 10 cuts")
    assert "41.70% of runs" in message  # P(Poisson(10) > 10) = 0.4170
