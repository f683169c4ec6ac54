"""Energy of an interval with bounds that contain the truth, from a trace's counter or power readings.

Times are ns, energy J, power W; update windows come from :mod:`collect.telemetry.analysis.resolution`.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from collect.telemetry.analysis.resolution import Updates, update_period, updates_in, value_changes
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Trace

_MS = 1e6
_S = 1e9


@dataclass(frozen=True)
class EnergyEstimate:
    """Energy of an interval (J) with a lower and upper bound that contain the truth.

    ``systematic_j`` is the part of the error whose mean may differ between runs with different
    power at their edges (an arm-dependent error, module doc): at most :attr:`bound_j` (None: the
    whole bound). ``assumed`` names what that split assumes and no log can show.
    """

    estimate_j: float
    lower_j: float
    upper_j: float
    updates: int
    method: str  # "counter" | "power" | "power-range"
    notes: tuple[str, ...] = ()
    systematic_j: float | None = None
    assumed: tuple[str, ...] = ()

    @property
    def bound_j(self) -> float:
        """Half-width-style bound: the largest distance from the estimate to either bound."""
        return max(self.upper_j - self.estimate_j, self.estimate_j - self.lower_j)

    @property
    def systematic_bound_j(self) -> float:
        """The arm-dependent part of the bound (J): ``systematic_j`` capped by :attr:`bound_j`."""
        return self.bound_j if self.systematic_j is None else min(self.systematic_j, self.bound_j)


def _range_only(a_ns: int, b_ns: int, p_min: float, p_max: float, note: str) -> EnergyEstimate:
    dt = (b_ns - a_ns) / _S
    return EnergyEstimate((p_min + p_max) / 2 * dt, p_min * dt, p_max * dt, 0, "power-range", (note,))


#: what the split of a counter's bound assumes (no log shows it)
COUNTER_PHASE_ASSUMED = (
    "the counter's update phase at a run's start and end is uniform and independent of "
    "the arm (runs do not synchronise with the counter)"
)


def _low(x: np.ndarray, p_min: float, p_max: float) -> np.ndarray:
    """The least energy of a stretch of signed length ``x`` s (``C(t) - C(t - x)`` for x >= 0)."""
    with np.errstate(invalid="ignore"):
        return np.where(x >= 0, p_min * x, p_max * x)


def _high(x: np.ndarray, p_min: float, p_max: float) -> np.ndarray:
    """The most energy of a stretch of signed length ``x`` s."""
    with np.errstate(invalid="ignore"):
        return np.where(x >= 0, p_max * x, p_min * x)


#: reads and value changes taken on each side of an interval's two ends: any subset of them gives
#: valid bounds, and those nearest an end decide them (so an interval costs the same however long
#: the trace)
NEAR = 64


@dataclass(frozen=True)
class _Reads:
    """Constraints on one counter series near an interval's ends: when each value was produced
    (``[lo, hi]`` ns) and the value (J); the joins strictly inside the interval (how many, and their
    reads' summed duration in ns); and the reads themselves (start time, value)."""

    lo_ns: np.ndarray
    hi_ns: np.ndarray
    value_j: np.ndarray
    joins: int
    joins_read_ns: float
    read_at_ns: np.ndarray  # the reads near the ends alone, in time order: when each began
    read_value_j: np.ndarray


def _near(sorted_ns: np.ndarray, a_ns: int, b_ns: int) -> np.ndarray:
    """Indices of the :data:`NEAR` entries on each side of ``a`` and of ``b`` in a sorted array."""
    ia, ib = int(np.searchsorted(sorted_ns, a_ns)), int(np.searchsorted(sorted_ns, b_ns))
    n = int(sorted_ns.size)
    return np.unique(
        np.concatenate(
            [np.arange(max(0, ia - NEAR), min(n, ia + NEAR)), np.arange(max(0, ib - NEAR), min(n, ib + NEAR))]
        )
    )


def _reads(trace: Trace, signal: str, u: Updates, a_ns: int, b_ns: int) -> _Reads:
    """The counter's value changes and reads near ``a`` and ``b``, within the series that holds
    [a, b] (between the resets around it), each with the window its value was produced in (module
    doc): a change after the read before it; with a declared update period P, a read no earlier
    than P before it."""
    if u.read_before_ns is not None and u.read_after_ns is not None:
        tb, ta = u.read_before_ns, u.read_after_ns
    else:
        rows = trace.rows(signal)
        tb, ta = rows["t_before_ns"], rows["t_after_ns"]
    # the series: from the last reset before a to the next one (a reset's own change opens its series)
    start = max((hi for _, hi in u.resets if hi < a_ns), default=-math.inf)
    end = min((hi for _, hi in u.resets if hi >= a_ns), default=math.inf)
    next_lo = min((lo for lo, hi in u.resets if hi >= a_ns), default=None)
    changes = _near(u.hi_ns, a_ns, b_ns)
    changes = changes[(u.hi_ns[changes] >= start) & (u.hi_ns[changes] < end)]
    pick = _near(tb, a_ns, b_ns)
    pick = pick[(ta[pick] >= start) & (ta[pick] < end)]
    last = (int(np.searchsorted(tb, next_lo, side="right")) if next_lo is not None else int(tb.size)) - 1
    j0, j1 = int(np.searchsorted(tb, a_ns, side="right")), min(last, int(np.searchsorted(tb, b_ns)))
    info = trace.signals.get(signal)
    joins = max(0, j1 - j0) if info is not None and info.lossy_joins else 0  # but the series' last read
    joins_read_ns = float(np.sum(ta[j0:j1] - tb[j0:j1])) if joins else 0.0
    tb_p, ta_p = tb[pick], ta[pick]
    idx = np.searchsorted(u.hi_ns, ta_p, side="right") - 1  # the last change each read saw
    first = u.first_value if u.first_value is not None else 0.0
    value = np.where(idx >= 0, u.value[np.maximum(idx, 0)] if u.value.size else first, first) / 1000.0
    lo = np.full(pick.size, -np.inf)
    period = info.period_ms if info is not None else None
    if period is not None and pick.size:
        # a value still unchanged more than P after it was first seen contradicts the declared period
        # there (a stalled counter): such a read is placed by the value changes alone
        seen = np.where(idx >= 0, u.hi_ns[np.maximum(idx, 0)] if u.hi_ns.size else ta[0], ta[0])
        lo = np.where((ta_p - seen) <= period * _MS, tb_p - period * _MS, -np.inf)
    return _Reads(
        np.concatenate([u.lo_ns[changes].astype(np.float64), lo]),
        np.concatenate([u.hi_ns[changes].astype(np.float64), ta_p.astype(np.float64)]),
        np.concatenate([u.value[changes] / 1000.0, value]),
        joins,
        joins_read_ns,
        tb_p.astype(np.float64),
        value,
    )


def _edge(reads: _Reads, t_ns: int, p_min: float, p_max: float) -> tuple[float, float]:
    """``(least, most)`` the counter can have held at ``t`` (J, on the reads' scale): every read
    pins it to its value plus the energy between its production time and ``t``."""
    low = reads.value_j + _low((t_ns - reads.hi_ns) / _S, p_min, p_max)
    high = reads.value_j + _high((t_ns - reads.lo_ns) / _S, p_min, p_max)
    return float(np.max(low)), float(np.min(high))


def energy_from_counter(
    trace: Trace,
    a_ns: int,
    b_ns: int,
    p_min_w: float,
    p_max_w: float,
    signal: str = "energy_counter",
    quantum_mj: float = 1.0,
    wrap_mj: int | None = None,
    updates: Updates | None = None,
) -> EnergyEstimate:
    """Energy of [a, b] from a cumulative mJ counter with guaranteed bounds and its arm-dependent
    part (module doc). ``updates``: ``value_changes(trace, signal, wrap_mj)`` when the caller has it."""
    if b_ns < a_ns:
        raise ValueError("interval end before its start")
    u = updates if updates is not None else value_changes(trace, signal, wrap_mj)
    if any(lo <= b_ns and hi >= a_ns for lo, hi in u.resets):
        return _range_only(a_ns, b_ns, p_min_w, p_max_w, "counter reset inside the interval: power-range bound")
    q = quantum_mj / 1000.0
    dt = (b_ns - a_ns) / _S
    support = int(np.count_nonzero((u.lo_ns >= a_ns) & (u.hi_ns <= b_ns)))
    reads = _reads(trace, signal, u, a_ns, b_ns)
    if reads.value_j.size == 0:
        return _range_only(a_ns, b_ns, p_min_w, p_max_w, f"no {signal} readings")
    low_a, high_a = _edge(reads, a_ns, p_min_w, p_max_w)
    low_b, high_b = _edge(reads, b_ns, p_min_w, p_max_w)
    info = trace.signals.get(signal)
    joins_j, joins_systematic_j = _join_slack(info, reads, p_max_w)
    lower = max(p_min_w * dt, low_b - high_a - q)
    upper = min(p_max_w * dt, high_b - low_a + q + joins_j)
    declared = info is not None and info.period_ms is not None
    estimate = _at_reads(reads, a_ns, b_ns) if declared else _interpolated(u, a_ns, b_ns)
    notes = () if support or declared else ("no counter update inside the interval: bound from the power range",)
    estimate = min(max(estimate if estimate is not None else (lower + upper) / 2, lower), upper)
    # the arm-dependent share of each edge's uncertainty (module doc); a bound set by the range is all of it
    edges = (high_a - low_a) + (high_b - low_b)
    ranged = lower == p_min_w * dt or upper == p_max_w * dt
    share = (p_max_w - p_min_w) / (2.0 * p_max_w) if p_max_w > 0 else 1.0
    systematic = None if ranged or not math.isfinite(edges) else share * edges / 2.0 + q + joins_systematic_j
    return EnergyEstimate(
        float(estimate),
        float(lower),
        float(upper),
        support,
        "counter",
        notes,
        systematic,
        () if systematic is None else (COUNTER_PHASE_ASSUMED,),
    )


def _join_slack(info: SignalInfo | None, reads: _Reads, p_max_w: float) -> tuple[float, float]:
    """``(most energy, its arm-dependent part)`` (J) the joins inside the interval of a ``lossy_joins``
    counter may have left out: each join's two reads may straddle one update (at most P at the power
    range); the chance of that is the reads' gap over P, so the expected loss is the energy of the gap
    (at most its length at the power range), the part held against a margin."""
    if info is None or not info.lossy_joins or not reads.joins:
        return 0.0, 0.0
    if info.period_ms is None:  # no period: nothing bounds a join's loss but the power range
        return math.inf, math.inf
    return reads.joins * p_max_w * info.period_ms / 1000.0, reads.joins_read_ns / _S * p_max_w


def _at_reads(reads: _Reads, a_ns: int, b_ns: int) -> float | None:
    """The counter's change over [a, b] interpolated between the first reads of each value at their
    read times (a read lags the counter by the same expected time at both ends, so the lag cancels;
    a read repeating the value before it adds nothing, so a stall is bridged by its slope)."""
    first = np.ones(reads.read_value_j.size, dtype=bool)
    first[1:] = reads.read_value_j[1:] != reads.read_value_j[:-1]
    if np.count_nonzero(first) < 2:
        return None
    c = np.interp([a_ns, b_ns], reads.read_at_ns[first], reads.read_value_j[first])
    return float(c[1] - c[0])


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
    trace: Trace,
    a_ns: int,
    b_ns: int,
    p_min_w: float,
    p_max_w: float,
    signal: str = "power_average",
    quantum_w: float = 0.01,
    updates: Updates | None = None,
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
    window_ns = int(round((info.window_ms or 0.0) * _MS)) if info is not None and info.power_model != "part-time" else 0
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
    note = (
        f"integrated power: averaging windows cover {100 * share:.3g}% of the interval; the rest is "
        "bounded by the power range"
    )
    systematic, assumed = _average_systematic(info, t, a_ns, b_ns, window_ns, p_max_w - p_min_w)
    return EnergyEstimate(estimate, float(lower), float(upper), support, "power", (note,), systematic, assumed)


#: what the split of a true average's bound assumes (no log shows it)
AVERAGE_ASSUMED = (
    "the power signal is the mean over its whole averaging window (NVML's documentation), not a part-time sample",
    "its update and poll phase at a run's start and end is independent of the arm",
)


def _average_systematic(
    info: SignalInfo | None, t: np.ndarray, a_ns: int, b_ns: int, window_ns: int, spread_w: float
) -> tuple[float | None, tuple[str, ...]]:
    """The arm-dependent part of a step-integrated true average (J) and what it assumes (module doc):
    the integral of the readings is the power convolved with the window and shifted by at most two
    poll gaps, so it differs from the energy only near the edges, by at most (W / 2 + 2 g) times the
    power's spread. None (the whole bound) unless the plan or log says the signal is a true average."""
    if info is None or info.power_model != "average" or window_ns <= 0:
        return None, ()
    inside = t[(t >= a_ns - window_ns) & (t <= b_ns)]
    edges = np.concatenate([[a_ns], inside, [b_ns]]) if inside.size else np.array([a_ns, b_ns])
    gap_s = float(np.max(np.diff(edges))) / _S
    return (window_ns / 2 / _S + 2 * gap_s) * spread_w, AVERAGE_ASSUMED


def phase_energy(
    trace: Trace, phase: str, p_min_w: float, p_max_w: float, wrap_mj: int | None = None
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
        energy.estimate_j - p_est * duration_s,
        energy.lower_j - p_hi * duration_s,
        energy.upper_j - p_lo * duration_s,
        energy.updates,
        energy.method + "-idle",
        ("idle-subtracted: a sensitivity figure, not the measured energy",),
    )


def ledger_summary(
    trace: Trace,
    signal: str,
    a_ns: int,
    b_ns: int,
    p_min_w: float,
    p_max_w: float,
    joules_per_unit: float = 1.0,
    wrap_mj: int | None = None,
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
    systematic = energy.systematic_bound_j / joules_per_unit
    info = trace.signals.get(signal)
    return {
        "updates": updates_in(trace, signal, a_ns, b_ns, wrap_mj),
        "systematic_bound": systematic if math.isfinite(systematic) and systematic < bound else None,
        "counter_period_ms": info.period_ms if info is not None else None,
        "effective_period_ms": period.effective_period_ms,
        "requested_poll_ms": trace.requested_poll_ms,
        "achieved_poll_ms": period.achieved_poll_ms,
        "achieved_poll_worst_ms": period.achieved_poll_worst_ms,
        "bound": bound if math.isfinite(bound) else None,
        "evidence": "modeled" if trace.evidence == "modeled" else "measured",
    }


__all__ = [
    "EnergyEstimate",
    "energy_from_counter",
    "energy_from_power",
    "idle_subtracted",
    "ledger_summary",
    "phase_energy",
]
