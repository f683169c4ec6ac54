"""Producing runs: collectors, telemetry sensors and samplers, the run ledger (``collect``).

Public Python API (what a notebook calls; see ``docs/api.md``)::

    summary = collect.run_plan(lock, "runs/", jobs=4)          # lock: a prereg.Lock or a lock path
    records = collect.import_table(lock, "runs.csv", "runs/")
    ledger = collect.read_ledger("runs/")
    with collect.open_sensor("sim:clock=virtual") as sensor: ...
    with collect.measure("nvml") as m: ...                     # m.summary, m.result(), m.trace

The package imports lazily (PEP 562): ``import collect`` loads nothing heavy until a name is used.
"""

from __future__ import annotations

from typing import Any

from estimators.lazy import LazyExports

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


_exports = LazyExports(__name__, _LOCATIONS)


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (:mod:`estimators.lazy`)."""
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names()


__all__ = sorted(_LOCATIONS)
