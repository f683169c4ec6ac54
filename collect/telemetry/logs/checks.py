"""What a power log can say and be believed: refusals, never clipping.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

import numpy as np

from collect.telemetry.logs.errors import LogError

LATEST_S = 7_258_118_400  #: 2200-01-01T00:00:00Z in Unix seconds: no log is written later
LATEST_NS = LATEST_S * 1_000_000_000
QUANTUM_MJ = 1.0  #: an energy counter's step (NVML: 1 mJ)
_REL = 1e-9  # float rounding of counters converted from J or kWh


def _at(line_of: np.ndarray | None, k: int) -> str:
    return f"line {int(line_of[k])}" if line_of is not None else f"reading {k + 1}"


def epoch_ns(seconds: float, where: str, line: int, what: str) -> int:
    """``seconds`` since the Unix epoch as ns; ``LogError`` naming the line unless it is a finite
    time from 1970 to 2200 (module doc)."""
    if not (math.isfinite(seconds) and 0 <= seconds <= LATEST_S):
        raise LogError(f"{where} line {line}: {what} {seconds!r} s is not a time from 1970 to 2200 (Unix seconds)")
    return round(seconds * 1_000_000_000)


def duration_ns(seconds: float, where: str, line: int, what: str) -> int:
    """A duration in seconds as ns; ``LogError`` naming the line unless finite, ``>= 0`` and shorter
    than the 230 years a log's times may span."""
    if not (math.isfinite(seconds) and 0 <= seconds <= LATEST_S):
        raise LogError(f"{where} line {line}: {what} {seconds!r} s is not a duration from 0 to {LATEST_S} s")
    return round(seconds * 1_000_000_000)


def check_epoch_ms(ms: np.ndarray, where: str, line_of: np.ndarray | None) -> None:
    """``LogError`` at the first time (int64 ms since the epoch; NaT is the smallest int64) outside
    1970 .. 2200."""
    bad = np.flatnonzero((ms < 0) | (ms > LATEST_S * 1000))
    if bad.size:
        k = int(bad[0])
        raise LogError(
            f"{where} {_at(line_of, k)}: the time is not from 1970 to 2200 "
            "(a corrupted timestamp, or one past what the toolkit's ns clock holds)"
        )


def check_times(t_before_ns: np.ndarray, t_after_ns: np.ndarray, where: str, line_of: np.ndarray | None) -> None:
    """``LogError`` at the first poll whose times lie outside 1970 .. 2200 or end before they start."""
    bad = np.flatnonzero((t_before_ns < 0) | (t_after_ns > LATEST_NS) | (t_after_ns < t_before_ns))
    if bad.size:
        raise LogError(f"{where} {_at(line_of, int(bad[0]))}: the time is not from 1970 to 2200")


def check_power(
    values: np.ndarray, name: str, where: str, line_of: np.ndarray | None, power_range_w: tuple[float, float]
) -> None:
    """``LogError`` at the first power reading (W; NaN: not a reading) outside the device's range."""
    p_min, p_max = power_range_w
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero((values < p_min) | (values > p_max))
    if not bad.size:
        return
    k = int(bad[0])
    value = float(values[k])
    why = (
        "is negative: no power reading can be"
        if value < 0
        else f"is outside the device's power range {p_min:g} to {p_max:g} W (a wrong unit in the header, a corrupted "
        "line, or a range to state with --power-range-w MIN,MAX)"
    )
    raise LogError(f"{where} {_at(line_of, k)}: {name} = {value:g} W {why}; refused, never clipped")


def check_counter(
    values: np.ndarray,
    t_before_ns: np.ndarray,
    t_after_ns: np.ndarray,
    where: str,
    line_of: np.ndarray | None,
    power_range_w: tuple[float, float],
) -> None:
    """``LogError`` at the first energy-counter reading (mJ; NaN: not a reading) that is negative or
    that moved more (or less) than the power range allows since an earlier update (module doc)."""
    ok = np.flatnonzero(np.isfinite(values))
    v = values[ok]
    negative = np.flatnonzero(v < 0)
    if negative.size:
        k = int(ok[negative[0]])
        raise LogError(
            f"{where} {_at(line_of, k)}: the energy counter reads {float(values[k]):g} mJ: negative; "
            "a cumulative counter never is"
        )
    if v.size < 2:
        return
    changed = np.flatnonzero(v[1:] != v[:-1]) + 1  # updates, placed as the analysis places them
    rows = ok[changed]
    lo = t_before_ns[ok[changed - 1]].astype(np.int64)
    hi = t_after_ns[rows].astype(np.int64)
    if not rows.size:
        return
    origin = int(lo[0])
    lo_s, hi_s, vu = (lo - origin) / 1e9, (hi - origin) / 1e9, v[changed]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(vu) < 0) + 1, [vu.size]])  # a decrease: a reset
    p_min, p_max = power_range_w
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        if b - a < 2:
            continue
        seg_v, seg_lo, seg_hi = vu[a:b], lo_s[a:b], hi_s[a:b]
        slack = QUANTUM_MJ + _REL * np.abs(seg_v)
        earliest = np.minimum.accumulate(seg_v - p_max * 1000 * seg_lo)[:-1]  # the loosest earlier update
        excess = (seg_v[1:] - p_max * 1000 * seg_hi[1:]) - earliest - slack[1:]
        latest = np.maximum.accumulate(seg_v - p_min * 1000 * seg_hi)[:-1]
        short = latest - (seg_v[1:] - p_min * 1000 * seg_lo[1:]) - slack[1:]
        for gap, word in ((excess, "more"), (short, "less")):
            bad = np.flatnonzero(gap > 0)
            if bad.size:
                j = int(bad[0]) + 1
                i = int(
                    np.argmin(seg_v[:j] - p_max * 1000 * seg_lo[:j])
                    if word == "more"
                    else np.argmax(seg_v[:j] - p_min * 1000 * seg_hi[:j])
                )
                seconds = float(seg_hi[j] - seg_lo[i]) if word == "more" else float(seg_lo[j] - seg_hi[i])
                power = p_max if word == "more" else p_min
                raise LogError(
                    f"{where} {_at(line_of, int(rows[a + j]))}: the energy counter rose by "
                    f"{float(seg_v[j] - seg_v[i]):g} mJ since {_at(line_of, int(rows[a + i]))}, {word} than "
                    f"{power:g} W (the power range's {'maximum' if word == 'more' else 'minimum'}) gives in the "
                    f"{seconds:g} s between them: a corrupted reading, a counter in another unit, or a wrong poll "
                    "interval or power range (--poll-ms, --power-range-w)"
                )


__all__ = [
    "LATEST_NS",
    "LATEST_S",
    "QUANTUM_MJ",
    "check_counter",
    "check_epoch_ms",
    "check_power",
    "check_times",
    "duration_ns",
    "epoch_ns",
]
