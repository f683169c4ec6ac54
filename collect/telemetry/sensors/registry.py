"""Telemetry backends by spec, resolved lazily: ``open_sensor("sim:update_ms=100")``.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collect.plugins import SENSORS, PluginError, is_target
from collect.telemetry.sensors.base import Sensor, SensorError

__all__ = ["SENSORS", "open_sensor", "sensor_class", "split_spec"]

_USAGE = "use 'nvml[:index=N]', 'sim:key=value,...', 'replay:PATH' or an installed sensor plugin"


def split_spec(spec: str) -> tuple[str, str]:
    """``(kind, rest)`` of a sensor spec; a ``package.module:Class`` kind keeps its colon."""
    kind, _, rest = spec.partition(":")
    if "." in kind and rest:
        attr, _, rest = rest.partition(":")
        if is_target(f"{kind}:{attr}"):
            return f"{kind}:{attr}", rest
    return kind, rest


def sensor_class(kind: str) -> type[Sensor]:
    """The backend class registered under ``kind`` (or named ``module:Class``); ``SensorError`` if none is."""
    try:
        cls: type[Sensor] = SENSORS.load(kind)
    except PluginError as err:
        raise SensorError(f"{err}; {_USAGE}") from None
    return cls


def open_sensor(spec: str) -> Sensor:
    """A sensor from a spec string: ``nvml``, ``nvml:index=1``, ``sim:update_ms=100,...``, ``replay:PATH``.

    Raises ``SensorError`` with one clear message when the sensor cannot be opened.
    """
    kind, rest = split_spec(spec)
    if not is_target(kind) and kind not in SENSORS:
        raise SensorError(f"unknown sensor {spec!r}: {_USAGE} (installed: {', '.join(SENSORS)})")
    return sensor_class(kind).from_spec(rest)
