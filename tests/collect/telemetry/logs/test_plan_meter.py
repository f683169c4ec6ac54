"""A plan's meter (prereg.schema.Meter) reaches the log converters at import: the counter period it
declares is the one the bounds use and the import says so; a contradicting option is refused."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from collect.importing.logs import LogNote, TelemetryLogs, attach_logs
from collect.telemetry.logs.common import LogError, LogOptions, with_meter
from prereg.plan import load_plan
from tests.conftest import OWN_EXAMPLES as EXAMPLES


def test_with_meter_applies_the_plan_and_refuses_a_contradiction() -> None:
    options = with_meter(LogOptions(), 100.0, "part-time")
    assert options.counter_period_ms == 100.0 and options.power_model == "part-time"
    assert options.period_basis is not None and "meter.counter_period_ms" in options.period_basis
    assert with_meter(LogOptions(counter_period_ms=100.0), 100.0, None).counter_period_ms == 100.0  # agreeing: fine
    with pytest.raises(LogError, match="contradicts the plan"):
        with_meter(LogOptions(counter_period_ms=50.0), 100.0, None)
    assert with_meter(LogOptions(counter_period_ms=50.0), None, None).counter_period_ms == 50.0  # plan silent


def test_the_import_bounds_with_the_plans_period_and_says_so(tmp_path: Path) -> None:
    loaded = load_plan(EXAMPLES / "byo-dcgm.yaml")
    shutil.copy(EXAMPLES / "runs" / "byo-dcgm-logs" / "gpu-0-101-restart.dcgm.txt", tmp_path)
    row = {"run_id": "gpu-0-101-restart", "arm": "restart", "site": 0, "seed": 101, "final_nll": 2.9}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LogNote)
        rows, traces, errors = attach_logs(
            [row], loaded.plan, loaded.plan_sha256, "t.csv", TelemetryLogs(tmp_path, "dcgm", LogOptions())
        )
    assert not errors
    assert traces["gpu-0-101-restart"].signals["energy_counter"].period_ms == 100.0
    notes = [str(w.message) for w in caught if w.category is LogNote]
    assert notes == ["energy_counter: bounds use counter update period 100 ms (the plan (meter.counter_period_ms))"]
    assert rows[0]["energy_counter.counter_period_ms"] == 100.0
    with pytest.raises(LogError, match="contradicts the plan"):
        attach_logs(
            [row],
            loaded.plan,
            loaded.plan_sha256,
            "t.csv",
            TelemetryLogs(tmp_path, "dcgm", LogOptions(counter_period_ms=1000.0)),
        )
