"""What every power-log converter shares: options, the one error, cells with units, and the trace builder.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from collect.telemetry.logs.checks import check_counter, check_power, check_times
from collect.telemetry.logs.errors import LogError
from collect.telemetry.logs.periods import default_counter_period
from collect.telemetry.logs.reading import MAX_LOG_BYTES, log_lines
from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W
from collect.traces.readings import Kind, SignalInfo
from collect.traces.telemetry import Phase, Trace

LOG_PHASE = "log"
#: cells that say "no value" in the tools' logs (compared stripped and lower-cased)
UNAVAILABLE = {
    "": "error",
    "n/a": "not_supported",
    "[n/a]": "not_supported",
    "[not supported]": "not_supported",
    "not supported": "not_supported",
    "[unknown error]": "error",
    "[no permission]": "no_permission",
    "[insufficient permissions]": "no_permission",
    "nan": "error",
    "-": "error",
    "[gpu is lost]": "error",
    "[requires pending reboot]": "error",
}
#: unit spellings in headers and cells -> (the toolkit's unit, the factor to it)
UNITS = {
    "w": ("W", 1.0),
    "mw": ("W", 1e-3),
    "kw": ("W", 1e3),
    "mj": ("mJ", 1.0),
    "j": ("mJ", 1e3),
    "kj": ("mJ", 1e6),
    "kwh": ("mJ", 3.6e9),
    "wh": ("mJ", 3.6e6),
    "%": ("%", 1.0),
    "mhz": ("MHz", 1.0),
    "c": ("C", 1.0),
    "mib": ("MiB", 1.0),
    "s": ("s", 1.0),
}
#: the longest interval a logger may have been asked for (ms): an hour
MAX_POLL_MS = 3_600_000.0


@dataclass(frozen=True)
class LogOptions:
    """What a log does not say about itself; every field has a documented default.

    * ``gpu``: which device of a multi-GPU log (None: the log must hold exactly one);
    * ``poll_ms``: the interval the logger was asked for (None: the median interval between polls
      stands in; dcgmi's ``-d``, which also places its timestamp-less samples: 1000 ms by default);
    * ``power_window_ms``: the averaging window of a power signal the driver averages
      (nvidia-smi ``power.draw`` and ``power.draw.average``, DCGM ``POWER``: 1000 ms, the 1 s
      average NVML documents for Ampere (except GA100) and newer; give 0 for an older GPU, whose
      reading is instantaneous);
    * ``power_range_w``: the device's physical power bounds (W) for what no reading covers (None:
      the conservative default the analysis uses, 0 to 2000 W); a reading outside them, or an
      energy counter moving faster than they allow, is refused (:mod:`.checks`);
    * ``window``: Zeus only, the one measurement-window name to convert (None: every window;
      overlapping windows then need it);
    * ``max_gap_ms``: Zeus only, the largest gap between two windows read as contiguous (the
      energy of a larger gap is unknown: the counter is taken as reset there);
    * ``counter_period_ms``: the energy counter's longest interval between updates (ms), so that
      each read is known to return the counter as it was at most this long before (None: the
      default of :mod:`collect.telemetry.logs.periods`); ``period_basis`` says where a given value comes
      from (the plan, the command line);
    * ``power_model``: how a driver-averaged power signal (nvidia-smi ``power.draw``, DCGM
      ``POWER``) covers time: ``average`` (a true ``power_window_ms`` average, NVML's
      documentation) or ``part-time`` (each average covers part of its period, Yang et al., SC24:
      energy is then bounded by the power range alone; None: ``average``);
    * ``all_gpus``: sum every GPU of a multi-GPU log into one device (a data-parallel run);
    * ``query_fields``: nvidia-smi only, the ``--query-gpu`` fields of a log written without a
      header line (``--format=csv,noheader``), in order.
    """

    gpu: int | None = None
    poll_ms: float | None = None
    power_window_ms: float = 1000.0
    power_range_w: tuple[float, float] | None = None
    window: str | None = None
    max_gap_ms: float = 1.0
    counter_period_ms: float | None = None
    period_basis: str | None = None
    power_model: Literal["average", "part-time"] | None = None
    all_gpus: bool = False
    query_fields: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """``LogError`` for an option no log could be converted with (a library caller's too)."""
        for name, value, high in (
            ("poll_ms", self.poll_ms, MAX_POLL_MS),
            ("power_window_ms", self.power_window_ms, MAX_POLL_MS),
            ("max_gap_ms", self.max_gap_ms, MAX_POLL_MS),
            ("counter_period_ms", self.counter_period_ms, MAX_POLL_MS),
        ):
            if value is not None and not (
                math.isfinite(value)
                and 0 <= value <= high
                and (value > 0 or name not in ("poll_ms", "counter_period_ms"))
            ):
                least = "above 0" if name in ("poll_ms", "counter_period_ms") else "from 0"
                raise LogError(f"{name} = {value!r} must be a number {least} to {high:g} ms")
        if self.power_model not in (None, "average", "part-time"):
            raise LogError(f"power_model = {self.power_model!r} must be 'average' or 'part-time'")
        if self.power_range_w is not None:
            low, high_w = self.power_range_w
            if not (math.isfinite(low) and math.isfinite(high_w) and 0 <= low < high_w):
                raise LogError(f"power_range_w = {self.power_range_w!r} must be 0 <= MIN < MAX (W)")

    @property
    def power_range(self) -> tuple[float, float]:
        """The power range the readings must lie in and the analysis bounds with (W)."""
        return self.power_range_w if self.power_range_w is not None else DEFAULT_POWER_RANGE_W


@dataclass
class Column:
    """One signal's readings, one per poll: values in the signal's unit (NaN where not ok) and the
    status of each (None: ``ok`` where the value is finite)."""

    info: SignalInfo
    values: np.ndarray
    status: np.ndarray | None = None


def cell_number(
    row: dict[str, str], key: str, source: str, line: int, *, nonnegative: bool = True, missing: str | None = None
) -> float:
    """The cell ``key`` of a log row as a finite float (``>= 0`` unless ``nonnegative`` is off);
    ``LogError`` naming the file and line otherwise (``missing``: what the log should hold)."""
    try:
        value = float(row[key])
    except KeyError:
        raise LogError(f"{source} line {line}: no {key!r}" + (f" ({missing})" if missing else "")) from None
    except ValueError:
        raise LogError(f"{source} line {line}: {key} = {row[key]!r} is not a number") from None
    if not math.isfinite(value) or (nonnegative and value < 0):
        raise LogError(f"{source} line {line}: {key} = {row[key]!r} is not a finite number >= 0")
    return value


def signal(name: str, unit: str, kind: Kind = "gauge", window_ms: float | None = None) -> SignalInfo:
    """A measured signal's description."""
    return SignalInfo(name, unit, kind, "measured", window_ms)


def split_unit(header: str) -> tuple[str, str | None]:
    """``"power.draw [W]"`` -> ``("power.draw", "W")``; ``"energy_consumed (kWh)"`` likewise; no unit: None."""
    text = header.strip()
    for open_, close in (("[", "]"), ("(", ")")):
        if text.endswith(close) and open_ in text:
            name, _, unit = text[:-1].rpartition(open_)
            return name.strip(), unit.strip()
    return text, None


def check_order(t_ns: np.ndarray, where: str, line_of: np.ndarray) -> None:
    """``LogError`` at the first poll earlier than the one before it (a log out of time order, or a
    clock set back while it was written: either way no update window can be placed)."""
    back = np.flatnonzero(np.diff(t_ns) < 0)
    if back.size:
        k = int(back[0]) + 1
        raise LogError(
            f"{where} line {int(line_of[k])}: its time is earlier than the line before it "
            f"(line {int(line_of[k - 1])}); the log is not in time order or the clock was set back"
        )


def with_meter(
    options: LogOptions, counter_period_ms: float | None, power_model: str | None, source: str = "the plan"
) -> LogOptions:
    """``options`` with what ``source`` (the plan's metric ``meter``) declares; ``LogError`` where an
    option given with the log contradicts it (a frozen plan's meter is not changed at import)."""
    for name, declared_value, given in (
        ("counter_period_ms", counter_period_ms, options.counter_period_ms),
        ("power_model", power_model, options.power_model),
    ):
        if declared_value is not None and given is not None and given != declared_value:
            raise LogError(
                f"{name} = {given!r} contradicts {source}, which declares {declared_value!r}; "
                "leave the option out (the frozen plan's meter applies)"
            )
    changes: dict[str, object] = {}
    if counter_period_ms is not None:
        changes.update(counter_period_ms=float(counter_period_ms), period_basis=f"{source} (meter.counter_period_ms)")
    if power_model is not None:
        changes["power_model"] = power_model
    return replace(options, **changes)  # type: ignore[arg-type]


def declared(info: SignalInfo, options: LogOptions) -> SignalInfo:
    """``info`` with what the options (or the defaults) declare: an energy counter's update period
    and its basis (:mod:`collect.telemetry.logs.periods`; no converter reads a GPU's name, so its
    default for an unnamed GPU), a driver-averaged power's model."""
    if info.kind == "counter" and info.unit == "mJ" and info.period_ms is None:
        if options.counter_period_ms is not None:
            period, basis = options.counter_period_ms, options.period_basis or "given"
        else:
            period, basis = default_counter_period(None)
        return replace(info, period_ms=period, period_basis=basis)
    if info.unit == "W" and info.window_ms and info.power_model is None:
        return replace(info, power_model=options.power_model or "average")
    return info


def build_trace(
    t_before_ns: np.ndarray,
    t_after_ns: np.ndarray,
    columns: dict[str, Column],
    tool: str,
    options: LogOptions,
    phases: list[Phase] | None = None,
    *,
    source: str | None = None,
    line_of: np.ndarray | None = None,
) -> Trace:
    """The trace of ``columns`` read at the polls ``[t_before_ns, t_after_ns]`` (one row per poll
    and signal, signal by signal), sensor ``log:<tool>``, evidence ``measured``, the ``log`` phase.
    Each signal carries what :func:`declared` adds.
    Every poll's times and every power and energy reading are checked first
    (:mod:`collect.telemetry.logs.checks`): ``LogError`` naming ``source`` and the poll's line in
    ``line_of`` for one the power range or the clock cannot hold, never a clipped value."""
    n = int(t_before_ns.size)
    if n == 0:
        raise LogError(f"{tool} log: no readings")
    where = source or f"{tool} log"
    check_times(t_before_ns, t_after_ns, where, line_of)
    for name, column in columns.items():
        if column.info.kind == "counter" and column.info.unit == "mJ":
            check_counter(column.values, t_before_ns, t_after_ns, where, line_of, options.power_range)
        elif column.info.unit == "W":
            check_power(column.values, name, where, line_of, options.power_range)
    names = list(columns)
    tb = np.tile(np.asarray(t_before_ns, dtype=np.int64), len(names))
    ta = np.tile(np.asarray(t_after_ns, dtype=np.int64), len(names))
    value = np.concatenate([columns[s].values.astype(np.float64) for s in names])
    status = np.concatenate(
        [
            columns[s].status
            if columns[s].status is not None
            else np.where(np.isfinite(columns[s].values), "ok", "error").astype(object)
            for s in names
        ]
    )
    value[status != "ok"] = np.nan
    signal_col = np.repeat(np.array(names, dtype=object), n)
    polls = np.asarray(t_before_ns, dtype=np.int64)
    requested = options.poll_ms
    if requested is None:
        gaps = np.diff(polls)
        requested = float(np.median(gaps)) / 1e6 if gaps.size and np.median(gaps) > 0 else 1000.0
    marks = [Phase(LOG_PHASE, int(polls[0]), int(max(int(t_after_ns.max()), int(polls[-1]))), 0), *(phases or [])]
    return Trace(
        signal=signal_col,
        t_before_ns=tb,
        t_after_ns=ta,
        value=value,
        status=status,
        driver_ts_us=np.full(tb.size, np.nan),
        signals={s: declared(columns[s].info, options) for s in names},
        requested_poll_ms=float(requested),
        poll_ns=polls,
        phases=marks,
        sensor=f"log:{tool}",
        evidence="measured",
        power_range_w=options.power_range_w,
    )


def choose_device(devices: list[str], options: LogOptions, where: str) -> str:
    """The device of a multi-device log the options name (``gpu``), or its only one."""
    distinct = list(dict.fromkeys(devices))
    if options.gpu is not None:
        wanted = str(options.gpu)
        if wanted not in distinct:
            raise LogError(f"{where}: no GPU {wanted} in the log (it holds {', '.join(distinct)})")
        return wanted
    if len(distinct) != 1:
        raise LogError(f"{where}: the log holds GPUs {', '.join(distinct)}; choose one (--gpu N)")
    return distinct[0]


__all__ = [
    "LOG_PHASE",
    "MAX_LOG_BYTES",
    "MAX_POLL_MS",
    "Column",
    "LogError",
    "LogOptions",
    "build_trace",
    "check_order",
    "choose_device",
    "declared",
    "with_meter",
    "log_lines",
    "signal",
    "split_unit",
]
