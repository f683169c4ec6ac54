"""The sensor interface: one small abstract class, readings with honest time bounds.

A *signal* is one quantity a sensor can read (``energy_counter``, ``power_instant``...). A poll
reads some signals once and returns one ``Reading`` per value obtained (a buffered signal such as
NVML's power samples may return several per poll, each with its own driver timestamp).

Every reading carries the host's monotonic time just before and just after the call
(``t_before_ns``, ``t_after_ns``, from ``time.monotonic_ns`` or the sensor's virtual clock): the
value was produced somewhere in that window, not "at" a single instant. A signal the device cannot
deliver (NotSupported, NoPermission, no driver) yields ``status != "ok"`` and ``value=None``, and
the sensor reports it in ``unavailable`` with the reason -- never a zero.

Signal names used across the toolkit (units fixed per name):

==================  ======  =========  =================================================
signal              unit    kind       meaning
==================  ======  =========  =================================================
energy_counter      mJ      counter    cumulative energy since driver load (monotone,
                                       may wrap or reset)
power_instant       W       gauge      instantaneous power (NVML field POWER_INSTANT)
power_average       W       gauge      power averaged by the driver over its window
power_usage         W       gauge      ``nvmlDeviceGetPowerUsage`` (averaged on recent parts)
power_samples       W       gauge      buffered driver samples (``nvmlDeviceGetSamples``)
utilization_gpu     %       gauge      GPU utilisation
temperature_gpu     C       gauge      GPU temperature
clock_sm            MHz     gauge      SM clock
clock_mem           MHz     gauge      memory clock
pstate              -       gauge      performance state (0 = P0)
clock_event_reasons -       gauge      bit mask of clock-event (throttle) reasons
==================  ======  =========  =================================================
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from estimators.vocabulary import Evidence
from prereg.errors import InputError

Status = Literal["ok", "not_supported", "no_permission", "error"]
Kind = Literal["counter", "gauge"]


@dataclass(frozen=True)
class SignalInfo:
    """What a signal is: its unit, whether it is a cumulative counter or a gauge, and its evidence."""

    name: str
    unit: str
    kind: Kind
    evidence: Evidence  # measured, modeled or unavailable
    #: a gauge's averaging window (ms) when the device documents it: each new value is the mean
    #: power over the ``window_ms`` before its update (None: unknown, 0: an instantaneous sample)
    window_ms: float | None = None
    #: a counter's longest interval between updates (ms) when it is declared: a read returns the
    #: counter as it was at some time in the ``period_ms`` before the read (None: undeclared, only
    #: value changes between reads place its updates)
    period_ms: float | None = None
    #: where ``period_ms`` comes from, in words (the plan, the command line, a cited default)
    period_basis: str | None = None
    #: a power gauge's averaging model: "average" (each value is the mean over ``window_ms``, NVML's
    #: documentation) or "part-time" (the average covers part of each period: only the power range
    #: bounds energy); None: not a power gauge or not stated
    power_model: str | None = None
    #: a counter chained from measurement windows whose ends and starts are separate reads (Zeus):
    #: an update between a window's end read and the next one's start read is in neither window
    lossy_joins: bool = False


@dataclass(frozen=True)
class Reading:
    """One value read from a sensor.

    ``t_before_ns``/``t_after_ns``: host monotonic ns just before / after the call (the value was
    produced inside that window). ``driver_ts_us``: the driver's own timestamp in microseconds when
    it gives one (NVML field values and samples do), else None. ``value`` is in ``unit`` and is
    None unless ``status == "ok"``.
    """

    signal: str
    t_before_ns: int
    t_after_ns: int
    value: float | None
    unit: str
    status: Status = "ok"
    driver_ts_us: int | None = None
    detail: str | None = None


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
