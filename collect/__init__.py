"""Producing runs: collectors, telemetry sensors and samplers, the run ledger (``collect``).

Public API (``run_plan``, ``import_table``, ``read_ledger``, ``measure``, ``open_sensor``...): ``docs/api.md``.
Names load on first use (:mod:`estimators.lazy`).
"""

from __future__ import annotations

from estimators.lazy import lazy_exports

_LOCATIONS: dict[str, str] = {
    "COLLECTORS": "plugins",
    "EngineError": "engine.runs",
    "ImportProblem": "importing.importer",
    "Ledger": "ledger.store",
    "MeasureError": "measurement",
    "Measured": "measurement",
    "Measurement": "measurement",
    "RunRecord": "ledger.store",
    "RunSummary": "engine.runner",
    "SENSORS": "plugins",
    "import_table": "api",
    "ledger_head": "api",
    "measure": "measurement",
    "open_sensor": "telemetry.sensors.registry",
    "plan_listing": "api",
    "planned_runs": "api",
    "read_ledger": "api",
    "run_plan": "api",
}


__getattr__, __dir__ = lazy_exports(__name__, _LOCATIONS)


__all__ = sorted(_LOCATIONS)
