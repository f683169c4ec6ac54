"""The power-log options as a command line gives them, checked into a ``LogOptions``.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from collect.telemetry.logs.common import MAX_POLL_MS, LogError, LogOptions

#: a ``LogOptions`` field (``gpus`` stands for ``all_gpus``) -> its command-line option
FLAGS = {
    "gpu": "--gpu",
    "gpus": "--gpus",
    "poll_ms": "--poll-ms",
    "power_window_ms": "--power-window-ms",
    "power_range_w": "--power-range-w",
    "window": "--window",
    "max_gap_ms": "--max-gap-ms",
    "counter_period_ms": "--counter-period-ms",
    "power_model": "--power-model",
    "query_fields": "--query-fields",
}
#: the numbers' allowed ranges (ms)
RANGES = {
    "poll_ms": (0.1, MAX_POLL_MS),
    "power_window_ms": (0.0, 60_000.0),
    "max_gap_ms": (0.0, MAX_POLL_MS),
    "counter_period_ms": (0.1, MAX_POLL_MS),
}
#: where a counter period given on the command line comes from, as the trace records it
COMMAND_LINE_BASIS = "command line (--counter-period-ms)"


def power_range(text: str) -> tuple[float, float]:
    """``"50,700"`` -> ``(50.0, 700.0)`` W; ``LogError`` unless ``0 <= MIN < MAX <= 1e6``."""
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise LogError(f"--power-range-w {text!r} must be MIN,MAX in watts, e.g. 50,700") from None
    if not (0 <= low < high <= 1e6):
        raise LogError(f"--power-range-w {text!r} must be 0 <= MIN < MAX <= 1e6 W")
    return low, high


def query_fields(text: str) -> tuple[str, ...]:
    """``"timestamp, index,power.draw"`` -> its fields, stripped; ``LogError`` for an empty one."""
    fields = tuple(f.strip() for f in text.split(","))
    if not all(fields):
        raise LogError(
            f"--query-fields {text!r} must name nvidia-smi's --query-gpu fields in order, comma-separated "
            "(timestamp,index,power.draw,...)"
        )
    return fields


def given(values: Mapping[str, Any]) -> list[str]:
    """The options of :data:`FLAGS` that ``values`` (field -> value, None: not given) gives."""
    return [FLAGS[k] for k in FLAGS if values.get(k) is not None]


def options_from(values: Mapping[str, Any]) -> LogOptions:
    """The ``LogOptions`` of ``values`` (a field of :data:`FLAGS` -> its value as parsed from the
    command line, None or absent: not given; ``gpus``: ``"all"``); ``LogError`` for a number out of
    its range (:data:`RANGES`), unreadable text, or one GPU and every GPU at once."""
    for name, (low, high) in RANGES.items():
        value = values.get(name)
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            raise LogError(f"{FLAGS[name]} must be a number from {low:g} to {high:g}, not {value:g}")
    if values.get("gpu") is not None and values.get("gpus") is not None:
        raise LogError(f"--gpu {values['gpu']} and --gpus all contradict each other: give one GPU, or sum them all")
    fields: dict[str, Any] = {k: v for k, v in values.items() if k in FLAGS and k != "gpus" and v is not None}
    if "power_range_w" in fields:
        fields["power_range_w"] = power_range(fields["power_range_w"])
    if "query_fields" in fields:
        fields["query_fields"] = query_fields(fields["query_fields"])
    if "counter_period_ms" in fields:
        fields["period_basis"] = COMMAND_LINE_BASIS
    return LogOptions(**fields, all_gpus=values.get("gpus") == "all")


__all__ = ["COMMAND_LINE_BASIS", "FLAGS", "RANGES", "given", "options_from", "power_range", "query_fields"]
