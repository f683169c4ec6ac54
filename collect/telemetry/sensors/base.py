"""The sensor interface: one small abstract class whose polls return readings with honest time bounds.

Each reading carries host monotonic ns just before and after the call; a signal the device cannot deliver
reads ``status != "ok"`` and ``value=None``, never a zero. Signals and their units: ``docs/extending.md``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence

from collect.traces.readings import Reading, SignalInfo
from estimators.vocabulary import Evidence
from prereg.errors import InputError

#: physical power bounds (W) assumed when nothing better is known: conservative for any one GPU
DEFAULT_POWER_RANGE_W = (0.0, 2000.0)


class SensorError(InputError):
    """The sensor cannot be opened at all (no driver, no such device, bad spec)."""


class Sensor(abc.ABC):
    """A source of readings. Subclasses: ``nvml`` (real GPUs), ``sim`` (simulated), ``replay``."""

    #: evidence class of everything this sensor reports ("measured" for hardware, "modeled" for sim)
    evidence: Evidence = "measured"

    @abc.abstractmethod
    def signals(self) -> dict[str, SignalInfo]:
        """Every signal this sensor knows, available or not."""

    @property
    @abc.abstractmethod
    def unavailable(self) -> dict[str, str]:
        """Signals the device cannot deliver, with the reason (e.g. ``"NotSupported"``)."""

    @abc.abstractmethod
    def read(self, signals: Sequence[str]) -> list[Reading]:
        """Poll ``signals`` once; unknown names raise ``KeyError``; unavailable ones give a status."""

    @abc.abstractmethod
    def now_ns(self) -> int:
        """The clock readings are stamped with (monotonic ns; virtual for simulated sensors)."""

    def power_range_w(self) -> tuple[float, float]:
        """Physical bounds on the device's power (W) for the partial ends of an energy window.

        Conservative by default: (0, 2000). Backends override it with what they know.
        """
        return DEFAULT_POWER_RANGE_W

    @classmethod
    def from_spec(cls, rest: str) -> Sensor:
        """Open the sensor from the part of its spec after ``kind:`` (see ``collect.telemetry.sensors.registry``)."""
        raise SensorError(f"{cls.__name__} cannot be opened from a spec")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the device (default: nothing to release)."""

    def __enter__(self) -> Sensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MAX_OPTION = 1e9  # numeric sensor options: finite and at most this
MIN_OPTION_MS = 0.1  # a time option (``*_ms``) is 0 or at least this: finer would spin, not measure


def parse_spec_options(text: str, allowed: dict[str, type]) -> dict[str, object]:
    """``"a=1,b=x"`` -> typed options; unknown keys and bad values raise ``SensorError``."""
    options: dict[str, object] = {}
    if not text.strip():
        return options
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise SensorError(f"unknown sensor option {key!r}; known: {', '.join(sorted(allowed))}")
        kind = allowed[key]
        try:
            if kind is bool:
                if value.strip().lower() not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                options[key] = value.strip().lower() in ("true", "1")
            else:
                options[key] = kind(value.strip())
        except ValueError:
            raise SensorError(f"sensor option {key}={value!r} is not a valid {kind.__name__}") from None
        number = options[key]
        if kind in (int, float) and not (math.isfinite(number) and abs(number) <= MAX_OPTION):  # type: ignore[arg-type]
            raise SensorError(f"sensor option {key}={value.strip()} must be a finite number of at most {MAX_OPTION:g}")
        if kind in (int, float) and key.endswith("_ms") and number != 0 and not number >= MIN_OPTION_MS:  # type: ignore[operator]
            raise SensorError(f"sensor option {key}={value.strip()} must be 0 or at least {MIN_OPTION_MS:g} ms")
    return options
