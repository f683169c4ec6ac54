"""What a trace can honestly say: update periods, counter support, energy with bounds.

Pure functions over a :class:`~collect.traces.telemetry.Trace`. Times are host monotonic ns;
energy is in J; power in W.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from collect.traces.telemetry import Trace

_MS = 1e6
_S = 1e9


@dataclass(frozen=True)
class Updates:
    """A counter's or gauge's observed value changes: windows (ns) and values after each change."""

    lo_ns: np.ndarray
    hi_ns: np.ndarray
    value: np.ndarray  # value after the update (wraps corrected)
    resets: list[tuple[int, int]]  # windows (ns) in which the counter reset
    first_value: float | None
    first_hi_ns: int | None  # the first reading: its value was produced at or before this time
    read_before_ns: np.ndarray | None = None  # every read's start and end (ns), in time order
    read_after_ns: np.ndarray | None = None


def value_changes(trace: Trace, signal: str, wrap_mj: int | None = None) -> Updates:
    """The update windows of ``signal`` (see the module doc); counters are unwrapped when possible."""
    rows = trace.rows(signal)
    v = rows["value"].astype(np.float64)
    tb, ta = rows["t_before_ns"], rows["t_after_ns"]
    if v.size == 0:
        empty = np.array([], dtype=np.int64)
        return Updates(empty, empty, np.array([]), [], None, None, empty, empty)
    resets: list[tuple[int, int]] = []
    kind = trace.signals[signal].kind if signal in trace.signals else "gauge"
    if kind == "counter":
        # vectorised (was a per-row loop): whether a decrease is a wrap depends only on the raw
        # values, so the offset is the running count of wraps times the modulus (exact in floats)
        down = np.flatnonzero(v[1:] < v[:-1]) + 1
        if wrap_mj:
            is_wrap = v[down] + wrap_mj >= v[down - 1]
        else:
            is_wrap = np.zeros(down.size, dtype=bool)
        bad = down[~is_wrap]
        resets = [(int(tb[k - 1]), int(ta[k])) for k in bad]
        if is_wrap.any():
            steps = np.zeros(v.size, dtype=np.float64)
            steps[down[is_wrap]] = 1.0
            v = v + np.cumsum(steps) * float(wrap_mj or 0)
    changed = np.flatnonzero(v[1:] != v[:-1]) + 1
    return Updates(tb[changed - 1], ta[changed], v[changed], resets, float(v[0]), int(ta[0]), tb, ta)


@dataclass(frozen=True)
class PeriodEstimate:
    """Effective update period of a signal (ms), from value changes and from driver timestamps.

    ``effective_period_ms`` is never below the true period (module doc); ``period_lower_ms`` is the
    period's lower end if no update went unseen; poll gaps are the trace's (ms).
    """

    signal: str
    effective_period_ms: float | None
    updates: int
    driver_period_ms: float | None
    requested_poll_ms: float
    achieved_poll_ms: float | None
    achieved_poll_p95_ms: float | None
    period_lower_ms: float | None = None
    achieved_poll_worst_ms: float | None = None


#: a stretch of polls the logger must keep its rate over: what the requested rate fits in this span ...
STRETCH_MS = 1000.0
#: ... and at least this many poll intervals
MIN_STRETCH_POLLS = 10
#: refinements of the counted intervals (a few suffice; stopping earlier only leaves P longer)
MAX_REFINEMENTS = 64


def achieved_poll(trace: Trace) -> tuple[float | None, float | None]:
    """Median and 95th percentile of the gaps between poll starts (ms)."""
    if trace.poll_ns.size < 2:
        return None, None
    gaps = np.diff(trace.poll_ns) / _MS
    return float(np.median(gaps)), float(np.percentile(gaps, 95))


def achieved_poll_worst(poll_ns: np.ndarray, requested_poll_ms: float) -> float | None:
    """The mean gap (ms) between poll starts over the worst stretch of k consecutive gaps, k being
    what ``requested_poll_ms`` fits in :data:`STRETCH_MS` (at least :data:`MIN_STRETCH_POLLS`); the
    whole run's mean gap when it has k gaps or fewer. None before two polls."""
    starts = np.asarray(poll_ns, dtype=np.int64)
    if starts.size < 2:
        return None
    k = (
        max(MIN_STRETCH_POLLS, math.ceil(STRETCH_MS / requested_poll_ms))
        if requested_poll_ms > 0
        else MIN_STRETCH_POLLS
    )
    if starts.size - 1 <= k:
        return float((starts[-1] - starts[0]) / (starts.size - 1) / _MS)
    return float(np.max(starts[k:] - starts[:-k]) / k / _MS)


def conservative_period_ns(lo_ns: np.ndarray, hi_ns: np.ndarray) -> tuple[float, float, int] | None:
    """(upper, lower, intervals) of the update period (ns) from the windows of two or more seen
    changes (module doc): ``upper`` >= the true period whatever the polls' lateness, ``lower`` the
    period's lower end if every update was seen, ``intervals`` the update intervals counted."""
    if lo_ns.size < 2:
        return None
    lo = lo_ns.astype(np.float64)
    hi = hi_ns.astype(np.float64)
    span_hi = float(hi[-1] - lo[0])
    span_lo = max(float(lo[-1] - hi[0]), 0.0)
    gap_lo = np.maximum(lo[1:] - hi[:-1], 0.0)  # each gap between changes is at least this long
    counts = np.ones(gap_lo.size)
    for _ in range(MAX_REFINEMENTS):  # counts only grow and stay <= the true ones: each step's P is >= T
        period = span_hi / counts.sum()
        grown = np.maximum(counts, np.maximum(1.0, np.ceil(gap_lo / period - 0.5)))
        if np.array_equal(grown, counts):
            break
        counts = grown
    intervals = int(counts.sum())
    return span_hi / intervals, span_lo / intervals, intervals


def update_period(trace: Trace, signal: str, wrap_mj: int | None = None) -> PeriodEstimate:
    """The conservative update period (see the module doc), cross-checked with driver timestamps.

    Polls alias with updates (15 ms polls of a 20 ms sensor see gaps of 15 and 30 ms), so the
    period is the whole span of the changes over the update intervals in it, never a gap's length.
    """
    u = value_changes(trace, signal, wrap_mj)
    med, p95 = achieved_poll(trace)
    bounds = conservative_period_ns(u.lo_ns, u.hi_ns)
    period = lower = None
    if bounds is not None and bounds[0] > 0:
        period, lower = bounds[0] / _MS, bounds[1] / _MS
    stamps = trace.rows(signal)["driver_ts_us"]
    stamps = np.unique(stamps[np.isfinite(stamps)])
    driver = float(np.median(np.diff(stamps)) / 1e3) if stamps.size >= 3 else None
    return PeriodEstimate(
        signal,
        period,
        int(u.lo_ns.size),
        driver,
        trace.requested_poll_ms,
        med,
        p95,
        period_lower_ms=lower,
        achieved_poll_worst_ms=achieved_poll_worst(trace.poll_ns, trace.requested_poll_ms),
    )


def updates_in(trace: Trace, signal: str, a_ns: int, b_ns: int, wrap_mj: int | None = None) -> int:
    """Counter support: updates whose whole window lies inside [a, b]."""
    u = value_changes(trace, signal, wrap_mj)
    return int(np.count_nonzero((u.lo_ns >= a_ns) & (u.hi_ns <= b_ns)))


__all__ = [
    "PeriodEstimate",
    "Updates",
    "achieved_poll",
    "achieved_poll_worst",
    "conservative_period_ns",
    "update_period",
    "updates_in",
    "value_changes",
]
