"""For bench_sampler.py and its tests: the plain telemetry loop the vectorised sampler replaced (kept verbatim as the
baseline) and the synthetic counter trace both measure it on."""

from __future__ import annotations

import numpy as np

from collect.telemetry.analysis import resolution as analysis
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Trace


def old_value_changes(trace: Trace, signal: str, wrap_mj: int | None = None) -> analysis.Updates:
    """The per-row loop that ``analysis.value_changes`` replaced (the baseline)."""
    rows = trace.rows(signal)
    v = rows["value"].astype(np.float64)
    tb, ta = rows["t_before_ns"], rows["t_after_ns"]
    resets: list[tuple[int, int]] = []
    offset = 0.0
    corrected = v.copy()
    for k in range(1, v.size):
        if v[k] < v[k - 1]:
            if wrap_mj and v[k] + wrap_mj >= v[k - 1]:
                offset += wrap_mj
            else:
                resets.append((int(tb[k - 1]), int(ta[k])))
        corrected[k] = v[k] + offset
    v = corrected
    changed = np.flatnonzero(v[1:] != v[:-1]) + 1
    return analysis.Updates(tb[changed - 1], ta[changed], v[changed], resets, float(v[0]), int(ta[0]))


def synthetic_trace(n: int, wrap_mj: int) -> Trace:
    """``n`` polls of a 1 mJ counter updating every 4 polls (1 ms polls), wrapping at ``wrap_mj``."""
    t = np.arange(n, dtype=np.int64) * 1_000_000
    energy = np.floor(np.arange(n) // 4 * 37.5)  # mJ at 150 W per 1 ms poll... steps of 37.5 mJ per update
    value = np.mod(energy, wrap_mj)
    return Trace(
        signal=np.full(n, "energy_counter", dtype=object),
        t_before_ns=t,
        t_after_ns=t + 20_000,
        value=value,
        status=np.full(n, "ok", dtype=object),
        driver_ts_us=np.full(n, np.nan),
        signals={"energy_counter": SignalInfo("energy_counter", "mJ", "counter", "measured")},
        requested_poll_ms=1.0,
        poll_ns=t.copy(),
        sensor="synthetic",
        evidence="measured",
    )
