"""Energy of an interval with bounds that contain the truth, from a trace's counter or power readings.

Times are ns, energy J, power W; update windows come from :mod:`collect.telemetry.analysis.resolution`.

**Energy of [a, b] from a cumulative counter** (``energy_from_counter``). Let C be the true
cumulative energy, each read value V = floor(C / q) * q (q = quantum, 1 mJ for NVML), and power
bounded by [P_min, P_max]. With i the first update whose window starts at or after a and j the
last whose window ends at or before b:

* lower = (V_j - V_i - q) + P_min * ((lo_i - a) + (b - hi_j))
* upper = (V_j - V_i + q) + P_max * ((hi_i - a) + (b - lo_j))

and with i' the last update whose window ends at or before a, j' the first whose window starts at
or after b: upper <= (V_j' - V_i' + q) - P_min * ((a - hi_i') + (lo_j' - b)). The tightest valid
bounds are kept; with no updates inside, the bounds fall back to [P_min, P_max] * (b - a). The
estimate interpolates C linearly between update-window midpoints and is clipped into the bounds.
A phase shorter than the update period therefore gets a bound about as wide as P_max times its
length, as it should.

**Without a counter** (``energy_from_power``), the estimate integrates the power readings as a
step function and the bounds are [P_min, P_max] * (b - a): a windowed average that updates every
100 ms and averages over 25 ms of it says nothing certain about the other 75 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from collect.telemetry.analysis.resolution import Updates, update_period, updates_in, value_changes
from collect.traces.telemetry import Trace

_MS = 1e6
_S = 1e9


@dataclass(frozen=True)
class EnergyEstimate:
    """Energy of an interval (J) with a lower and upper bound that contain the truth."""

    estimate_j: float
    lower_j: float
    upper_j: float
    updates: int
    method: str  # "counter" | "power" | "power-range"
    notes: tuple[str, ...] = ()

    @property
    def bound_j(self) -> float:
        """Half-width-style bound: the largest distance from the estimate to either bound."""
        return max(self.upper_j - self.estimate_j, self.estimate_j - self.lower_j)


def _range_only(a_ns: int, b_ns: int, p_min: float, p_max: float, note: str) -> EnergyEstimate:
    dt = (b_ns - a_ns) / _S
    return EnergyEstimate((p_min + p_max) / 2 * dt, p_min * dt, p_max * dt, 0, "power-range", (note,))


def energy_from_counter(
    trace: Trace, a_ns: int, b_ns: int, p_min_w: float, p_max_w: float, signal: str = "energy_counter",
    quantum_mj: float = 1.0, wrap_mj: int | None = None, updates: Updates | None = None,
) -> EnergyEstimate:
    """Energy of [a, b] from a cumulative mJ counter with guaranteed bounds (module doc).
    ``updates``: ``value_changes(trace, signal, wrap_mj)`` when the caller already has it."""
    if b_ns < a_ns:
        raise ValueError("interval end before its start")
    u = updates if updates is not None else value_changes(trace, signal, wrap_mj)
    if any(lo <= b_ns and hi >= a_ns for lo, hi in u.resets):
        return _range_only(a_ns, b_ns, p_min_w, p_max_w, "counter reset inside the interval: power-range bound")
    q = quantum_mj / 1000.0
    vals = u.value / 1000.0  # J
    lo, hi = u.lo_ns, u.hi_ns
    dt = (b_ns - a_ns) / _S
    lower, upper = p_min_w * dt, p_max_w * dt
    inner_i = np.flatnonzero(lo >= a_ns)
    inner_j = np.flatnonzero(hi <= b_ns)
    support = int(np.count_nonzero((lo >= a_ns) & (hi <= b_ns)))
    if inner_i.size and inner_j.size and inner_i[0] <= inner_j[-1]:
        i, j = inner_i[0], inner_j[-1]
        lower = max(lower, vals[j] - vals[i] - q + p_min_w * ((lo[i] - a_ns) + (b_ns - hi[j])) / _S)
        upper = min(upper, vals[j] - vals[i] + q + p_max_w * ((hi[i] - a_ns) + (b_ns - lo[j])) / _S)
    # outer pair: the last known value at or before a, the first update at or after b
    before: list[tuple[float, int]] = []
    done = np.flatnonzero(hi <= a_ns)
    if done.size:  # the first of the latest (as ``max`` over the rows picked it)
        last = done[int(np.argmax(hi[done]))]
        before.append((float(vals[last]), int(hi[last])))
    if u.first_hi_ns is not None and u.first_hi_ns <= a_ns and u.first_value is not None:
        before.append((u.first_value / 1000.0, u.first_hi_ns))
    after = np.flatnonzero(lo >= b_ns)
    if before and after.size:
        v_a, h_a = max(before, key=lambda x: x[1])
        k = after[0]
        upper = min(upper, vals[k] - v_a + q - p_min_w * ((a_ns - h_a) + (lo[k] - b_ns)) / _S)
    estimate = _interpolated(u, a_ns, b_ns)
    notes = () if support else ("no counter update inside the interval: bound from the power range",)
    estimate = min(max(estimate if estimate is not None else (lower + upper) / 2, lower), upper)
    return EnergyEstimate(float(estimate), float(lower), float(upper), support, "counter", notes)


def _interpolated(u: Updates, a_ns: int, b_ns: int) -> float | None:
    if u.lo_ns.size < 2:
        return None
    mids = (u.lo_ns + u.hi_ns) / 2.0
    c = np.interp([a_ns, b_ns], mids, u.value / 1000.0)
    slope = (u.value[-1] - u.value[0]) / 1000.0 / ((mids[-1] - mids[0]) / _S)
    # extrapolate linearly outside the observed updates
    ca = c[0] + slope * min(0.0, (a_ns - mids[0]) / _S) + slope * max(0.0, (a_ns - mids[-1]) / _S)
    cb = c[1] + slope * max(0.0, (b_ns - mids[-1]) / _S) + slope * min(0.0, (b_ns - mids[0]) / _S)
    return float(cb - ca)


def energy_from_power(
    trace: Trace, a_ns: int, b_ns: int, p_min_w: float, p_max_w: float, signal: str = "power_average",
    quantum_w: float = 0.001, updates: Updates | None = None,
) -> EnergyEstimate:
    """Energy of [a, b] from power readings: a step-function estimate, bounds from averaging windows.

    A windowed-average gauge (``SignalInfo.window_ms`` = W > 0) that changed value inside the
    update window [lo, hi] reports the mean power over [u - W, u] for some u in [lo, hi], so that
    stretch's energy is known (value x W, to ``quantum_w`` x W). Updates are used when their stretch
    surely lies inside [a, b] (lo - W >= a, hi <= b). A stretch may overlap the earlier ones by at
    most d = max(0, latest earlier hi - (lo - W)); with O = sum(d), the union of the stretches
    holds sum(v W) minus at most P_max O of double-counted energy, and the rest of [a, b] (at
    least T - n W long, at most O longer) is bounded by the power range, so

        lower = sum(v W) + P_min (T - n W) - (P_max - P_min) O
        upper = sum(v W) + P_max (T - n W) + (P_max - P_min) O

    (a stretch that may overlap by more than W / 2 is left out: leaving one out is always valid).
    Where the stretches sit exactly does not matter, only how much time they surely cover. A
    full-period average (W = update period) therefore bounds energy tightly; a 25 ms window that
    updates every 495 ms leaves 95% of the time to the power range, and an instantaneous sample
    (W = 0) or an unknown window bounds nothing beyond the range.
    """
    rows = trace.rows(signal)
    t, p = rows["t_after_ns"], rows["value"]
    dt = (b_ns - a_ns) / _S
    if t.size == 0:
        return _range_only(a_ns, b_ns, p_min_w, p_max_w, f"no {signal} readings")
    grid = np.clip(np.concatenate([[a_ns], t[(t > a_ns) & (t < b_ns)], [b_ns]]), a_ns, b_ns)
    idx = np.clip(np.searchsorted(t, grid[:-1], side="right") - 1, 0, t.size - 1)
    estimate = float(np.sum(p[idx] * np.diff(grid) / _S))
    support = int(np.count_nonzero((t >= a_ns) & (t <= b_ns)))
    info = trace.signals.get(signal)
    window_ns = int(round((info.window_ms or 0.0) * _MS)) if info is not None else 0
    known_j, covered_ns, overlap_ns = 0.0, 0, 0
    if window_ns > 0:
        u = updates if updates is not None else value_changes(trace, signal)
        latest_hi: int | None = None
        for lo, hi, v in zip(u.lo_ns.tolist(), u.hi_ns.tolist(), u.value.tolist(), strict=True):
            if lo - window_ns < a_ns or hi > b_ns:
                continue
            d = 0 if latest_hi is None else max(0, latest_hi - (lo - window_ns))
            if 2 * d > window_ns:
                continue
            known_j += v * window_ns / _S
            covered_ns += window_ns
            overlap_ns += d
            latest_hi = hi if latest_hi is None else max(latest_hi, hi)
    rest_s = dt - covered_ns / _S
    slack_j = quantum_w * covered_ns / _S + (p_max_w - p_min_w) * overlap_ns / _S
    lower = max(p_min_w * dt, known_j - slack_j + p_min_w * rest_s)
    upper = min(p_max_w * dt, known_j + slack_j + p_max_w * rest_s)
    estimate = min(max(estimate, lower), upper)
    share = covered_ns / (b_ns - a_ns) if b_ns > a_ns else 0.0
    note = (f"integrated power: averaging windows cover {100 * share:.3g}% of the interval; the rest is "
            "bounded by the power range")
    return EnergyEstimate(estimate, float(lower), float(upper), support, "power", (note,))


def phase_energy(
    trace: Trace, phase: str, p_min_w: float, p_max_w: float, wrap_mj: int | None = None,
) -> EnergyEstimate:
    """Energy of a marked phase: from the counter when the trace has one, else from power."""
    mark = trace.phase(phase)
    if bool(np.any(trace.signal == "energy_counter")):
        return energy_from_counter(trace, mark.start_ns, mark.end_ns, p_min_w, p_max_w, wrap_mj=wrap_mj)
    power = next((s for s in ("power_average", "power_usage", "power_instant") if np.any(trace.signal == s)), None)
    if power is None:
        return _range_only(mark.start_ns, mark.end_ns, p_min_w, p_max_w, "no energy or power signal")
    return energy_from_power(trace, mark.start_ns, mark.end_ns, p_min_w, p_max_w, power)


def idle_subtracted(energy: EnergyEstimate, idle: EnergyEstimate, idle_s: float, duration_s: float) -> EnergyEstimate:
    """A sensitivity figure: energy above the idle baseline (idle power from an idle window)."""
    p_lo, p_est, p_hi = idle.lower_j / idle_s, idle.estimate_j / idle_s, idle.upper_j / idle_s
    return EnergyEstimate(
        energy.estimate_j - p_est * duration_s, energy.lower_j - p_hi * duration_s,
        energy.upper_j - p_lo * duration_s, energy.updates, energy.method + "-idle",
        ("idle-subtracted: a sensitivity figure, not the measured energy",),
    )


def ledger_summary(
    trace: Trace, signal: str, a_ns: int, b_ns: int, p_min_w: float, p_max_w: float,
    joules_per_unit: float = 1.0, wrap_mj: int | None = None,
) -> dict[str, object]:
    """The run's telemetry summary for the ledger (``collect.ledger.store.TelemetrySummary`` fields).

    ``bound`` is the energy bound of [a, b] in the backed metric's unit (J / ``joules_per_unit``).
    """
    period = update_period(trace, signal, wrap_mj)
    energy = (
        energy_from_counter(trace, a_ns, b_ns, p_min_w, p_max_w, signal, wrap_mj=wrap_mj)
        if trace.signals.get(signal) and trace.signals[signal].kind == "counter"
        else energy_from_power(trace, a_ns, b_ns, p_min_w, p_max_w, signal)
    )
    bound = energy.bound_j / joules_per_unit
    return {
        "updates": updates_in(trace, signal, a_ns, b_ns, wrap_mj),
        "effective_period_ms": period.effective_period_ms,
        "requested_poll_ms": trace.requested_poll_ms,
        "achieved_poll_ms": period.achieved_poll_ms,
        "bound": bound if math.isfinite(bound) else None,
        "evidence": "modeled" if trace.evidence == "modeled" else "measured",
    }


__all__ = ["EnergyEstimate", "energy_from_counter", "energy_from_power", "idle_subtracted", "ledger_summary", "phase_energy"]
