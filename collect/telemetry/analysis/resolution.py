"""What a trace can honestly say: update periods, counter support, energy with bounds.

Pure functions over a :class:`~collect.traces.telemetry.Trace`. Times are host monotonic ns;
energy is in J; power in W.

**When did a counter update?** A value first seen at poll k but not at poll k-1 was produced by an
update inside ``[t_before(k-1), t_after(k)]``: the update *window*. Polling faster narrows the
windows but cannot add updates. Driver timestamps live on another clock, so they are used only
to cross-check the period, never to place windows.

**Wraps and resets.** A decrease of the counter is corrected by adding ``wrap_mj`` when the
modulus is known and the correction makes the series increase; any other decrease is a *reset*:
it is reported, and an interval overlapping a reset window gets the power-range bound.

Energy with bounds from these windows: :mod:`collect.telemetry.analysis.bounds`.
"""

from __future__ import annotations

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


def value_changes(trace: Trace, signal: str, wrap_mj: int | None = None) -> Updates:
    """The update windows of ``signal`` (see the module doc); counters are unwrapped when possible."""
    rows = trace.rows(signal)
    v = rows["value"].astype(np.float64)
    tb, ta = rows["t_before_ns"], rows["t_after_ns"]
    if v.size == 0:
        empty = np.array([], dtype=np.int64)
        return Updates(empty, empty, np.array([]), [], None, None)
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
    return Updates(tb[changed - 1], ta[changed], v[changed], resets, float(v[0]), int(ta[0]))


@dataclass(frozen=True)
class PeriodEstimate:
    """Effective update period of a signal (ms), from value changes and from driver timestamps."""

    signal: str
    effective_period_ms: float | None
    updates: int
    driver_period_ms: float | None
    requested_poll_ms: float
    achieved_poll_ms: float | None
    achieved_poll_p95_ms: float | None


def achieved_poll(trace: Trace) -> tuple[float | None, float | None]:
    """Median and 95th percentile of the gaps between poll starts (ms)."""
    if trace.poll_ns.size < 2:
        return None, None
    gaps = np.diff(trace.poll_ns) / _MS
    return float(np.median(gaps)), float(np.percentile(gaps, 95))


def update_period(trace: Trace, signal: str, wrap_mj: int | None = None) -> PeriodEstimate:
    """Interval between value changes (window midpoints), cross-checked with driver timestamps.

    The span of the changes over the number of update intervals in it (robust to aliasing
    between polls and updates, and to an occasional update that left the value unchanged).
    """
    u = value_changes(trace, signal, wrap_mj)
    mids = (u.lo_ns + u.hi_ns) / 2.0
    med, p95 = achieved_poll(trace)
    period = None
    if mids.size >= 2:
        gaps = np.diff(mids)
        # Polls alias with updates (15 ms polls of a 20 ms sensor see gaps of 15 and 30 ms), so the
        # period is the whole span over the number of update intervals in it. While every update
        # is seen, a gap is at most one period plus one poll interval; a longer gap holds updates
        # that left the value unchanged, and counts as ceil((gap - poll) / mean gap) intervals.
        poll_ns = (med or 0.0) * _MS
        steps = np.maximum(1, np.ceil((gaps - poll_ns) / gaps.mean() - 1e-9))
        period = float((mids[-1] - mids[0]) / steps.sum() / _MS)
    stamps = trace.rows(signal)["driver_ts_us"]
    stamps = np.unique(stamps[np.isfinite(stamps)])
    driver = float(np.median(np.diff(stamps)) / 1e3) if stamps.size >= 3 else None
    return PeriodEstimate(signal, period, int(u.lo_ns.size), driver, trace.requested_poll_ms, med, p95)


def updates_in(trace: Trace, signal: str, a_ns: int, b_ns: int, wrap_mj: int | None = None) -> int:
    """Counter support: updates whose whole window lies inside [a, b]."""
    u = value_changes(trace, signal, wrap_mj)
    return int(np.count_nonzero((u.lo_ns >= a_ns) & (u.hi_ns <= b_ns)))


__all__ = ["PeriodEstimate", "Updates", "achieved_poll", "update_period", "updates_in", "value_changes"]
