"""The pure analysis of ``benchmarks/gpu_energy_check.py``: readings in, periods and windows out.

Every function takes a signal's polls as arrays -- ``t_before_ns``, ``t_after_ns`` (host monotonic
ns around each call) and ``value`` -- and uses the toolkit's own analysis where it fits
(:func:`collect.telemetry.analysis.resolution.value_changes` and ``update_period``), so what it
reports about a real GPU is what the toolkit would conclude from the same readings.

* :func:`counter_period`: how often the energy counter updates. Each update lies in the window
  between the poll that last saw the old value and the poll that first saw the new one; the interval
  between two updates is therefore at most ``hi[k] - lo[k-1]`` (the *outer* bound). Their median is
  the conservative figure: a loaded host can only widen the windows, so it can make the period look
  longer, never shorter.
* :func:`fit_window`: the averaging window of a power reading, from a square-wave load whose edges
  are known (Yang, Adamek, Armour, SC24: "Part-time Power Measurements"). Each reported value is
  modelled as ``a + b * duty`` where ``duty`` is the share of ``[m - delay - W, m - delay]`` the load
  was high (``m``: the middle of the value's update window); the (W, delay) pair with the least
  squared error is the window. With the reading's update period ``T``, ``min(1, W / T)`` is the
  share of time the readings cover (the rest is never averaged: part-time sampling).
* :func:`mean_ratio`: the time-averaged reported power over a segment against the counter's mean
  power there -- the model-free sign of part-time sampling (a sampled mean off the counter's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from collect.telemetry.analysis.resolution import update_period, value_changes
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Trace

_MS = 1e6
#: candidate averaging windows (ms) and delays (ms) of :func:`fit_window`
WINDOWS_MS = (
    1,
    2,
    5,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
    75,
    100,
    125,
    150,
    200,
    250,
    300,
    400,
    500,
    600,
    750,
    1000,
    1250,
    1500,
    2000,
)
DELAYS_MS = tuple(float(d) for d in np.arange(0.0, 200.01, 2.5))


def one_signal_trace(
    name: str,
    unit: str,
    kind: str,
    t_before_ns: np.ndarray,
    t_after_ns: np.ndarray,
    value: np.ndarray,
    driver_ts_us: np.ndarray | None = None,
) -> Trace:
    """A trace holding one signal's ok readings (each read its own poll), for the toolkit's analysis."""
    n = len(value)
    return Trace(
        signal=np.full(n, name, dtype=object),
        t_before_ns=np.asarray(t_before_ns, dtype=np.int64),
        t_after_ns=np.asarray(t_after_ns, dtype=np.int64),
        value=np.asarray(value, dtype=np.float64),
        status=np.full(n, "ok", dtype=object),
        driver_ts_us=np.full(n, np.nan) if driver_ts_us is None else np.asarray(driver_ts_us, dtype=np.float64),
        signals={name: SignalInfo(name, unit, kind, "measured")},  # type: ignore[arg-type]
        requested_poll_ms=0.0,
        poll_ns=np.asarray(t_before_ns, dtype=np.int64),
    )


def _ms(x: float | np.floating | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 3)


def counter_period(t_before_ns: np.ndarray, t_after_ns: np.ndarray, value_mj: np.ndarray) -> dict[str, float | None]:
    """The energy counter's update period from its polls (ms): the toolkit's estimate
    (``toolkit_period_ms``), the median gap between update-window midpoints, the conservative
    median of the outer bounds (``conservative_period_ms``), the longest outer bound, the median
    inner bound, the number of updates and the achieved poll interval (median, ms)."""
    trace = one_signal_trace("energy_counter", "mJ", "counter", t_before_ns, t_after_ns, value_mj)
    est = update_period(trace, "energy_counter")
    u = value_changes(trace, "energy_counter")
    out: dict[str, float | None] = {
        "updates": float(u.lo_ns.size),
        "toolkit_period_ms": _ms(est.effective_period_ms),
        "achieved_poll_ms": _ms(float(np.median(np.diff(t_before_ns))) / _MS if len(t_before_ns) > 1 else None),
        "median_gap_ms": None,
        "conservative_period_ms": None,
        "longest_interval_ms": None,
        "inner_period_ms": None,
    }
    if u.lo_ns.size >= 3:
        mids = (u.lo_ns + u.hi_ns) / 2.0
        outer = (u.hi_ns[1:] - u.lo_ns[:-1]) / _MS
        inner = (u.lo_ns[1:] - u.hi_ns[:-1]) / _MS
        out.update(
            median_gap_ms=_ms(np.median(np.diff(mids)) / _MS),
            conservative_period_ms=_ms(np.median(outer)),
            longest_interval_ms=_ms(outer.max()),
            inner_period_ms=_ms(np.median(inner)),
        )
    return out


def high_time_ns(on_ns: np.ndarray, off_ns: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
    """Total time (ns) the load was high before each ``t_ns``; ``on_ns``/``off_ns`` sorted, disjoint."""
    on, off = np.asarray(on_ns, dtype=np.float64), np.asarray(off_ns, dtype=np.float64)
    done = np.concatenate([[0.0], np.cumsum(off - on)])
    t = np.asarray(t_ns, dtype=np.float64)
    k = np.searchsorted(on, t, side="right")  # intervals that started before t
    last = np.maximum(k - 1, 0)
    partial = np.where(k > 0, np.clip(t - on[last], 0.0, off[last] - on[last]), 0.0)
    return done[last] + partial if on.size else np.zeros_like(t)


def duty(on_ns: np.ndarray, off_ns: np.ndarray, end_ns: np.ndarray, window_ns: float) -> np.ndarray:
    """Share of each ``[end - window, end]`` during which the load was high."""
    end = np.asarray(end_ns, dtype=np.float64)
    return (high_time_ns(on_ns, off_ns, end) - high_time_ns(on_ns, off_ns, end - window_ns)) / window_ns


@dataclass(frozen=True)
class WindowFit:
    """The best boxcar model of a power reading under the square wave (ms, W)."""

    window_ms: float | None
    delay_ms: float | None
    low_w: float | None  # a: the reading when the load was never high in the window
    swing_w: float | None  # b: high minus low
    r2: float | None
    updates: int


def fit_window(
    update_mid_ns: np.ndarray,
    value_w: np.ndarray,
    on_ns: np.ndarray,
    off_ns: np.ndarray,
    windows_ms: Sequence[float] = WINDOWS_MS,
    delays_ms: Sequence[float] = DELAYS_MS,
) -> WindowFit:
    """The (window, delay) whose boxcar average of the load's duty best explains each new value
    (least squares of ``value = a + b * duty`` with ``b > 0``; see the module doc)."""
    y = np.asarray(value_w, dtype=np.float64)
    m = np.asarray(update_mid_ns, dtype=np.float64)
    if y.size < 8 or np.ptp(y) == 0:
        return WindowFit(None, None, None, None, None, int(y.size))
    tss = float(np.sum((y - y.mean()) ** 2))
    best: tuple[float, float, float, float, float] | None = None  # rss, W, d, a, b
    for w in windows_ms:
        for d in delays_ms:
            x = duty(on_ns, off_ns, m - d * _MS, w * _MS)
            vx = float(np.var(x))
            if vx < 1e-9:
                rss, a, b = tss, float(y.mean()), 0.0
            else:
                b = float(np.mean((x - x.mean()) * (y - y.mean())) / vx)
                a = float(y.mean() - b * x.mean())
                rss = float(np.sum((y - a - b * x) ** 2)) if b > 0 else tss
            if best is None or rss < best[0] - 1e-9 * tss:
                best = (rss, float(w), float(d), a, b)
    assert best is not None
    rss, w, d, a, b = best
    r2 = 1.0 - rss / tss if tss > 0 else None
    if b <= 0:
        return WindowFit(None, None, a, None, r2, int(y.size))
    return WindowFit(w, d, a, b, r2, int(y.size))


def update_mids(
    t_before_ns: np.ndarray, t_after_ns: np.ndarray, value: np.ndarray, name: str = "power"
) -> tuple[np.ndarray, np.ndarray]:
    """(midpoints of the update windows in ns, the value after each update) of a gauge's polls."""
    trace = one_signal_trace(name, "W", "gauge", t_before_ns, t_after_ns, value)
    u = value_changes(trace, name)
    return (u.lo_ns + u.hi_ns) / 2.0, u.value


def gauge_period_ms(
    t_before_ns: np.ndarray, t_after_ns: np.ndarray, value: np.ndarray, driver_ts_us: np.ndarray | None = None
) -> tuple[float | None, float | None]:
    """(update period from value changes, from driver timestamps) of a gauge, ms (toolkit's analysis)."""
    trace = one_signal_trace("power", "W", "gauge", t_before_ns, t_after_ns, value, driver_ts_us)
    est = update_period(trace, "power")
    return _ms(est.effective_period_ms), _ms(est.driver_period_ms)


def counter_mean_power_w(
    t_before_ns: np.ndarray, t_after_ns: np.ndarray, value_mj: np.ndarray, start_ns: float, end_ns: float
) -> float | None:
    """Mean power (W) between the first and last counter updates whose windows lie in [start, end]."""
    trace = one_signal_trace("energy_counter", "mJ", "counter", t_before_ns, t_after_ns, value_mj)
    u = value_changes(trace, "energy_counter")
    inside = np.flatnonzero((u.lo_ns >= start_ns) & (u.hi_ns <= end_ns))
    if inside.size < 2:
        return None
    i, j = inside[0], inside[-1]
    dt_s = ((u.lo_ns[j] + u.hi_ns[j]) - (u.lo_ns[i] + u.hi_ns[i])) / 2.0 / 1e9
    return float((u.value[j] - u.value[i]) / 1000.0 / dt_s) if dt_s > 0 else None


def mean_ratio(
    t_ns: np.ndarray, value_w: np.ndarray, start_ns: float, end_ns: float, counter_w: float | None
) -> float | None:
    """Mean of a power reading's polls inside [start, end] (polls evenly spread in time: its time
    average) over the counter's mean power there."""
    inside = (t_ns >= start_ns) & (t_ns <= end_ns)
    if counter_w is None or counter_w <= 0 or inside.sum() < 2:
        return None
    return round(float(np.mean(value_w[inside]) / counter_w), 4)


def coverage(window_ms: float | None, period_ms: float | None) -> float | None:
    """Share of each update period inside an averaging window: ``min(1, W / T)``."""
    if window_ms is None or period_ms is None or period_ms <= 0:
        return None
    return round(min(1.0, window_ms / period_ms), 3)


def fit_dict(fit: WindowFit) -> dict[str, float | int | None]:
    """The fit as JSON-ready numbers."""
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(fit).items()}


__all__ = [
    "DELAYS_MS",
    "WINDOWS_MS",
    "WindowFit",
    "counter_mean_power_w",
    "counter_period",
    "coverage",
    "duty",
    "fit_dict",
    "fit_window",
    "gauge_period_ms",
    "high_time_ns",
    "mean_ratio",
    "one_signal_trace",
    "update_mids",
]
