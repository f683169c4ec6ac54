"""The ``failure_rate`` invalidator end to end through the console scripts (``prereg freeze``,
``collect import`` of a CSV table, ``gates evaluate``): failure counts plausible under the planned
rate leave the decision to the gates; ten times too many, or none, fire it and refuse the gate it
blocks (exit 3), while the gate it does not block keeps its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.gates import evaluate, freeze, gates_by_id, imported

pytestmark = pytest.mark.subprocess  # every test here launches console scripts

PLAN = b"""schema: prereg/v1
study: failure-rate-e2e
title: Failures at the planned rate
hypothesis: a is no worse than b.
arms: {a: {policy: x}, b: {policy: y}}
strata:
  factors: {block: [1, 2, 3, 4, 5, 6, 7, 8]}
metrics:
  loss: {unit: nats, better: lower, evidence: measured}
  failures: {unit: count, better: lower, evidence: measured}
  run_s: {unit: s, better: lower, evidence: measured}
gates:
  - {id: loss_ok, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5}
  - {id: loss_sens, metric: loss, contrast: a - b, method: t, confidence: 0.9, pass_if: upper < 0.5, role: sensitivity}
decision: {claim: a is no worse than b., multiplicity: none}
invalidators:
  - {id: rate_ok, kind: failure_rate, count: failures, exposure: run_s, rate: 0.001, blocks: [loss_ok]}
"""
# 10 000 s per run at 0.001 failures per second: 10 expected per run, 80 per arm
COUNTS = {"a": [9, 11, 10, 8, 12, 10, 9, 11], "b": [10, 12, 7, 9, 11, 10, 13, 8]}
JITTER = [0.003, -0.002, 0.001, -0.004, 0.002, 0.0, 0.001, -0.001]


def rows(factor: int) -> list[dict]:
    """Arm a's failure counts times ``factor``; arm b's as planned; losses equal up to jitter."""
    return [
        {
            "arm": arm,
            "block": i + 1,
            "loss": round(2.5 + JITTER[i] + (JITTER[7 - i] / 4 if arm == "a" else 0.0), 6),
            "failures": count * (factor if arm == "a" else 1),
            "run_s": 10_000,
        }
        for arm, counts in COUNTS.items()
        for i, count in enumerate(counts)
    ]


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return freeze(tmp_path, PLAN)


@pytest.mark.subprocess(quick=True)
def test_plausible_failures_leave_the_decision_to_the_gates(tmp_path: Path, lock: Path) -> None:
    rc, data = evaluate(lock, imported(tmp_path, lock, rows(1)))
    assert rc == 0 and data["decision"] == "supported"
    (inv,) = data["invalidators"]
    assert inv["kind"] == "failure_rate" and not inv["fired"] and inv["blocks"] == ["loss_ok"]
    assert inv["observed"] == pytest.approx(1.0) and inv["threshold"] == pytest.approx(0.05 / 3)
    assert "arm a: 80 failure(s) vs 80 expected over 8 run(s)" in inv["detail"]


@pytest.mark.parametrize("factor", [10, 0])
def test_ten_times_too_many_or_none_refuse_the_blocked_gate(tmp_path: Path, lock: Path, factor: int) -> None:
    rc, data = evaluate(lock, imported(tmp_path, lock, rows(factor)))
    assert rc == 3 and data["decision"] == "refused"
    (inv,) = data["invalidators"]
    assert inv["fired"] and inv["observed"] < 1e-20
    assert inv["detail"].startswith("implausible under the planned rate: arm a, pooled")
    assert f"arm a: {80 * factor} failure(s) vs 80 expected" in inv["detail"]
    g = gates_by_id(data)
    assert g["loss_ok"]["verdict"] == "refused"
    assert g["loss_ok"]["refused_by"] == [
        {"kind": "invalidator", "id": "rate_ok", "reason": "invalidator rate_ok fired"}
    ]
    assert g["loss_sens"]["verdict"] == "pass"  # not blocked: keeps its verdict


def test_a_run_without_its_count_fires_with_its_name(tmp_path: Path, lock: Path) -> None:
    table = rows(1)
    table[0]["failures"] = ""  # the run's count was not recorded
    rc, data = evaluate(lock, imported(tmp_path, lock, table))
    assert rc == 3
    (inv,) = data["invalidators"]
    assert inv["fired"] and "1 run(s) cannot show their failures: imp-" in inv["detail"]
    assert "(no failure count failures)" in inv["detail"]
