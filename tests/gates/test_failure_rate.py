"""The ``failure_rate`` invalidator (gates.failure_rate) on runs made in memory: it holds for counts
plausible under the planned rate, fires for ten times too many and for none, for a run that cannot
show its count or exposure, and for a control stratum that met failures; it pools arms only when no
two runs share a seed; it counts the faults the command collector recorded for a plan with
``experiment.failures`` (drawn by the collector's own Poisson schedule, they hold) and their landed
share."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from collect.collectors.failures import failure_spec, planned_faults
from gates.failure_rate import check_failure_rate
from gates.invalidators import check_invalidators
from prereg.plan import parse_plan
from prereg.schema import Plan
from prereg.schema_invalidators import FailureRate

BLOCKS = 8
PLAUSIBLE = {"a": [9, 11, 10, 8, 12, 10, 9, 11], "b": [10, 12, 7, 9, 11, 10, 13, 8]}  # 80 each; 10 expected per run


def metric_plan(invalidator: str = "count: failures, exposure: run_s, rate: 0.001", extra_factor: str = "") -> Plan:
    text = f"""schema: prereg/v1
study: failure-rate
title: Failure rate case
hypothesis: a is no worse than b.
arms: {{a: {{policy: x}}, b: {{policy: y}}}}
strata:
  factors: {{block: [{", ".join(str(i) for i in range(1, BLOCKS + 1))}]{extra_factor}}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
  failures: {{unit: count, better: lower, evidence: measured}}
  run_s: {{unit: s, better: lower, evidence: measured}}
gates:
  - {{id: loss_ok, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5}}
  - {{id: loss_sens, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5, role: sensitivity}}
decision: {{claim: a is no worse than b., multiplicity: none}}
invalidators:
  - {{id: rate_ok, kind: failure_rate, blocks: [loss_ok], {invalidator}}}
"""
    return parse_plan(text.encode()).plan


def run(run_id: str, arm: str, stratum: dict[str, Any], seed: int | None = None, code: dict | None = None, **metrics):
    return SimpleNamespace(
        run_id=run_id, arm=arm, seed=seed, stratum=stratum, code=code or {}, metric=lambda name: metrics.get(name)
    )


def metric_runs(counts: dict[str, list[int]], shared_seeds: bool = False, run_s: float = 10_000.0) -> list:
    return [
        run(f"{arm}{i}", arm, {"block": i + 1}, seed=i if shared_seeds else None, failures=c, run_s=run_s)
        for arm, arm_counts in counts.items()
        for i, c in enumerate(arm_counts)
    ]


def check(plan: Plan, runs: list) -> Any:
    """The plan's failure_rate check (through check_invalidators where it is the plan's only one)."""
    if len(plan.invalidators) == 1:
        (result,) = check_invalidators(plan, SimpleNamespace(records=lambda: runs))  # type: ignore[arg-type]
        return result
    (inv,) = [i for i in plan.invalidators if isinstance(i, FailureRate)]  # beside the plan's faults_landed
    fired, observed, threshold, detail = check_failure_rate(plan, inv, runs)
    return SimpleNamespace(fired=fired, observed=observed, threshold=threshold, detail=detail)


def test_plausible_counts_hold_with_each_arm_and_the_pool_reported() -> None:
    result = check(metric_plan(), metric_runs(PLAUSIBLE))
    assert not result.fired and result.blocks == ["loss_ok"]
    assert result.threshold == pytest.approx(0.05 / 3)  # Bonferroni over arm a, arm b, pooled
    assert result.observed == pytest.approx(1.0)  # 80 vs 80 expected in each arm: p = 1
    for part in ("arm a: 80 failure(s) vs 80 expected over 8 run(s)", "pooled: 160 failure(s) vs 160 expected"):
        assert part in result.detail
    assert "rate 0.001 per unit of exposure (98.3% exact CI [" in result.detail and "p = 1" in result.detail


@pytest.mark.parametrize(("factor", "side"), [(10, "above"), (0, "below")])
def test_ten_times_too_many_or_none_fires(factor: int, side: str) -> None:
    counts = {"a": [c * factor for c in PLAUSIBLE["a"]], "b": PLAUSIBLE["b"]}
    result = check(metric_plan(), metric_runs(counts))
    assert result.fired and result.observed < 1e-20
    assert result.detail.startswith("implausible under the planned rate: arm a, pooled (p <= 0.0167)")
    assert f"arm a: {80 * factor} failure(s) vs 80 expected" in result.detail


def test_a_run_lacking_its_count_or_exposure_fires_and_says_which() -> None:
    runs = metric_runs(PLAUSIBLE)
    runs[0] = run("a0", "a", {"block": 1}, run_s=10_000.0)  # no failures metric
    runs[1] = run("a1", "a", {"block": 2}, failures=3, run_s=float("nan"))
    runs[2] = run("a2", "a", {"block": 3}, failures=2.5, run_s=10_000.0)
    result = check(metric_plan(), runs)
    assert result.fired
    assert (
        "3 run(s) cannot show their failures: a0 (no failure count failures), a1 (exposure run_s = nan), "
        "a2 (failure count failures = 2.5)" in result.detail
    )


def test_arms_that_share_seeds_are_not_pooled() -> None:
    result = check(metric_plan(), metric_runs(PLAUSIBLE, shared_seeds=True))
    assert not result.fired and result.threshold == pytest.approx(0.05 / 2)
    assert "pooled: not tested (arms share seeds" in result.detail


def test_a_small_excess_in_both_arms_shows_in_the_pool_alone() -> None:
    """1.25x the rate in each arm: neither arm alone is implausible at 0.05 / 3, the pool is."""
    counts = {"a": [c + 3 for c in PLAUSIBLE["a"]], "b": [c + 3 for c in PLAUSIBLE["b"]]}  # 104 vs 80 each
    result = check(metric_plan("count: failures, exposure: run_s, rate: 0.001, level: 0.01"), metric_runs(counts))
    assert result.fired and "implausible under the planned rate: pooled (p <=" in result.detail
    assert result.threshold == pytest.approx(0.01 / 3)


def test_a_factor_rate_and_a_fixed_exposure_with_control_strata() -> None:
    """rate '{mtbf_rate}': the stratum's level; level 0 plans no failure, and a failure there fires."""
    plan = metric_plan("count: failures, exposure: 10000, rate: '{mtbf_rate}'", extra_factor=", mtbf_rate: [0, 0.001]")
    runs = [
        run(f"{arm}{i}-{rate}", arm, {"block": i + 1, "mtbf_rate": rate}, failures=c if rate else 0)
        for arm, counts in PLAUSIBLE.items()
        for i, c in enumerate(counts)
        for rate in (0, 0.001)
    ]
    assert not check(plan, runs).fired
    runs[0] = run("a0-0", "a", {"block": 1, "mtbf_rate": 0}, failures=2)
    result = check(plan, runs)
    assert result.fired and "1 run(s) planned to meet no failure met some: a0-0 (2)" in result.detail


OWN_PLAN = """schema: prereg/v1
study: own-failures
title: Own program under Poisson faults
hypothesis: a is no worse than b.
experiment:
  collector: command
  params: {{argv: [python, train.py], sensor: none}}
  failures: {{unit: s, poisson_rate: 0.05, horizon: 100, max_restarts: 30, when: {{crash: [true]}}}}
arms: {{a: {{policy: x}}, b: {{policy: y}}}}
strata:
  factors: {{crash: [true, false], block: [1, 2, 3, 4, 5, 6, 7, 8]}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
gates:
  - {{id: loss_ok, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5}}
decision: {{claim: a is no worse than b., multiplicity: none}}
invalidators:
  - {{id: rate_ok, kind: failure_rate, blocks: all{extra}}}
"""


def own_runs(plan: Plan, landed: int | None = None, scale: int = 1) -> list:
    """Runs as the command collector records them: the planned faults drawn from the stratum's seed
    (the same in every arm), each landed unless ``landed`` caps how many do per run."""
    runs = []
    failures = plan.experiment.failures  # type: ignore[union-attr]
    for stratum in plan.strata.enumerate():
        seed = 1000 + int(stratum["block"]) * 2 + int(stratum["crash"])
        points = planned_faults(failure_spec(failures, stratum), seed) * scale
        rows = [{"planned": p, "landed": landed is None or k < landed} for k, p in enumerate(points)]
        for arm in plan.arms:
            faults = {"unit": "s", "planned": points, "starts": len(rows) + 1, "record": rows}
            runs.append(run(f"{arm}-{seed}", arm, stratum, seed=seed, code={"faults": faults}))
    return runs


def test_own_program_faults_drawn_at_the_planned_rate_hold() -> None:
    plan = parse_plan(OWN_PLAN.format(extra=", landed_share_min: 0.9").encode()).plan
    result = check(plan, own_runs(plan))
    assert not result.fired, result.detail
    assert "pooled: not tested" in result.detail  # the arms of a stratum share its seed and faults
    assert "landed share of planned faults 1 (at least 0.9 required): a " in result.detail


def test_own_program_faults_that_did_not_land_or_came_ten_times_fire() -> None:
    plan = parse_plan(OWN_PLAN.format(extra=", landed_share_min: 0.9").encode()).plan
    result = check(plan, own_runs(plan, landed=0))
    assert result.fired and "too few planned faults landed" in result.detail
    assert "implausible under the planned rate: arm a, arm b" in result.detail
    assert "landed share of planned faults 0 (at least 0.9 required)" in result.detail
    many = check(plan, own_runs(plan, scale=10))
    assert many.fired and "implausible under the planned rate: arm a, arm b" in many.detail


def test_own_program_run_without_a_fault_record_fires() -> None:
    plan = parse_plan(OWN_PLAN.format(extra="").encode()).plan
    runs = own_runs(plan)
    runs[3] = run("bare", "b", runs[3].stratum, seed=1)
    result = check(plan, runs)
    assert result.fired
    assert "1 run(s) cannot show their failures: bare (no fault record (collected without the plan's failures?))" in (
        result.detail
    )
