"""The telemetry code that issue 14 replaced, kept verbatim as the baseline of bench_sampler.py and its tests."""

from __future__ import annotations

import numpy as np

from collect.telemetry import analysis
from collect.telemetry.trace import Trace


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
