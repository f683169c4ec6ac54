"""The rows of a telemetry trace: ``SignalInfo`` (what a signal is) and ``Reading`` (one value read).

Times are host monotonic ns; values are in their signal's unit (the signal table: ``docs/extending.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from estimators.vocabulary import Evidence

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
