"""Telemetry backends by name, resolved lazily: ``open_sensor("sim:update_ms=100")``.

Rules: a backend is registered here as ``"module:Class"`` (like ``collect.engine.runner.COLLECTORS``) and
is imported only when a spec names it, so :mod:`collect.telemetry.sensors.base` (the interface) imports no
backend and no backend import can form a cycle. Every backend class has a ``from_spec(rest)``
classmethod taking the part of the spec after the first ``:`` and raising ``SensorError`` with one
clear message. Sensors are context managers: ``with open_sensor(spec) as sensor:`` releases the
device (e.g. NVML) even when the block raises.
"""

from __future__ import annotations

import importlib

from collect.telemetry.sensors.base import Sensor, SensorError

#: spec prefix -> "module:Class" of the backend (imported on first use)
SENSORS: dict[str, str] = {
    "nvml": "collect.telemetry.sensors.nvml:NvmlSensor",
    "replay": "collect.telemetry.sensors.replay:ReplaySensor",
    "sim": "collect.telemetry.sensors.sim:SimSensor",
}


def sensor_class(kind: str) -> type[Sensor]:
    """The backend class registered under ``kind``; ``SensorError`` if none is."""
    target = SENSORS.get(kind)
    if target is None:
        raise SensorError(f"unknown sensor {kind!r}: use 'nvml[:index=N]', 'sim:key=value,...' or 'replay:PATH'")
    module, _, attr = target.partition(":")
    cls: type[Sensor] = getattr(importlib.import_module(module), attr)
    return cls


def open_sensor(spec: str) -> Sensor:
    """A sensor from a spec string: ``nvml``, ``nvml:index=1``, ``sim:update_ms=100,...``, ``replay:PATH``.

    Raises ``SensorError`` with one clear message when the sensor cannot be opened.
    """
    kind, _, rest = spec.partition(":")
    if kind not in SENSORS:
        raise SensorError(f"unknown sensor {spec!r}: use 'nvml[:index=N]', 'sim:key=value,...' or 'replay:PATH'")
    return sensor_class(kind).from_spec(rest)
