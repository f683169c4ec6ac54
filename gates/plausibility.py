"""Plausibility of a gate's values: the metric's declared range, and unit mix-ups a contrast would hide.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

import numpy as np

from gates.caveats import RARE_NOTE, SKEW_NOTE
from gates.matching import Block
from prereg.schema import Gate, Plan

MIX_UP = "likely unit mix-up"
SKEWED = "skewed contrasts (its interval for the mean may under-cover)"
TRANSFORMED = "likely transformed values"
RARE = "rare-event contrasts (the mean rests on a few units; rarer events unseen)"
SYMMETRY_NOTE = "coverage rests on near-symmetric contrasts"  # estimators.feasibility.symmetry_note, as it opens
UNCHECKED = "symmetry unchecked (fewer units than the skew check needs)"
MEDIAN_RATIO_LIMIT = 50.0
LOG_BAND = (1.0, 100.0)  # no log of an amount lies outside it (kept for callers: log_ceiling decides)
LOG_SPREAD = 1.5
GENERIC_LOG_MAX = 60.0
TIME_LOG_MAX = 10.0  # a time of ten or more of its unit is read as a time
LOG_AMOUNT_FOLD = 1000.0
#: units that declare values already on a log scale (not checked for "looks like logs")
LOG_UNITS = frozenset(("nat", "nats", "bit", "bits", "db", "dbm", "log", "ln", "log10", "log2"))
AMOUNT_UNITS = frozenset(
    u.lower()
    for u in (
        "J",
        "kJ",
        "MJ",
        "mJ",
        "Wh",
        "kWh",
        "mWh",
        "s",
        "ms",
        "us",
        "µs",
        "ns",
        "min",
        "h",
        "seconds",
        "B",
        "KB",
        "kB",
        "KiB",
        "MB",
        "MiB",
        "GB",
        "GiB",
        "TB",
        "bytes",
        "byte",
        "FLOP",
        "FLOPs",
        "GFLOP",
        "TFLOP",
        "PFLOP",
        "tokens",
        "token",
        "W",
        "kW",
        "mW",
        "steps",
    )
)
TIME_UNITS = frozenset(u.lower() for u in ("s", "ms", "us", "µs", "ns", "min", "h", "seconds"))


def log_ceiling(unit: str) -> float:
    """The largest value of ``unit`` (lower case) read as a natural log: ``TIME_LOG_MAX`` for a time,
    else ``GENERIC_LOG_MAX`` (module doc)."""
    return TIME_LOG_MAX if unit in TIME_UNITS else GENERIC_LOG_MAX


def plausibility(gate: Gate, plan: Plan, blocks: list[Block], values: np.ndarray) -> tuple[list[str], list[str]]:
    """``(refusals, warnings)`` for a gate's ``values`` (blocks x the contrast's arms, NaN: none)."""
    metric = plan.metrics[gate.metric]
    arms = list(gate.contrast.arms)
    refusals = _outside_range(gate, plan, blocks, values)
    warnings: list[str] = []
    unit = metric.unit.lower()
    amount = unit in AMOUNT_UNITS
    if gate.contrast.scale != "ratio" and not amount:  # a difference of, say, nats: no unit to mix up
        return refusals, warnings
    finite = values[np.isfinite(values)]
    medians = {
        a: float(np.median(col[np.isfinite(col) & (col > 0)]))
        for a, col in zip(arms, values.T, strict=True)
        if np.any(np.isfinite(col) & (col > 0))
    }
    if len(medians) >= 2:
        high, low = max(medians, key=medians.__getitem__), min(medians, key=medians.__getitem__)
        ratio = medians[high] / medians[low]
        if ratio > MEDIAN_RATIO_LIMIT:
            warnings.append(
                f"{MIX_UP}: the arms' medians of {gate.metric} differ by {ratio:.3g}x ({high} "
                f"{medians[high]:.4g} {metric.unit}, {low} {medians[low]:.4g} {metric.unit}), more than "
                f"{MEDIAN_RATIO_LIMIT:g}x: one arm's values may be in another unit (kJ and J, ms and s); check "
                "each arm's units before reading this contrast"
            )
    if amount and logged_evidence(finite, log_ceiling(unit)):
        lo, hi = float(finite.min()), float(finite.max())
        warnings.append(
            f"{TRANSFORMED}: every {gate.metric} value lies in [{lo:.4g}, {hi:.4g}] {metric.unit}, "
            f"which looks like natural logs of {metric.unit} (exp: {math.exp(lo):.3g} to {math.exp(hi):.3g} "
            f"{metric.unit}); a ratio of logs understates the ratio of the amounts about {lo:.2g}-fold and a "
            "difference of logs is a log-ratio, so this gate would judge the wrong quantity. Check the values are in the declared unit (a 'range' on the "
            "metric makes such values a refusal)"
        )
    elif not amount and unit not in LOG_UNITS and logged_evidence(finite):  # a ratio gate (returned above if not)
        lo, hi = float(finite.min()), float(finite.max())
        warnings.append(
            f"{TRANSFORMED}: every {gate.metric} value lies in [{lo:.4g}, {hi:.4g}] {metric.unit}, where natural "
            f"logs of amounts lie (of {math.exp(lo):.3g} to {math.exp(hi):.3g}, within {LOG_AMOUNT_FOLD:g}-fold of "
            f"each other); a ratio of logs is not the ratio of the amounts (it understates it about {lo:.2g}-fold), "
            "so this ratio gate would judge the wrong quantity. Check the values are not logs; if they are, record "
            "the amounts or contrast the logs as a difference (a log ratio); a 'range' on the metric makes such "
            "values a refusal"
        )
    return refusals, warnings


def logged_evidence(values: np.ndarray, ceiling: float = GENERIC_LOG_MAX) -> bool:
    """Whether finite ``values`` look like natural logs of amounts (module doc): all in [1, ``ceiling``]
    (:func:`log_ceiling` of an amount's unit; ``GENERIC_LOG_MAX`` for a unit that names none), the
    largest at most ``LOG_SPREAD`` times the smallest and at most ``ln(LOG_AMOUNT_FOLD)`` above it."""
    if values.size == 0:
        return False
    lo, hi = float(values.min()), float(values.max())
    return LOG_BAND[0] <= lo and hi <= ceiling and hi <= LOG_SPREAD * lo and hi - lo <= math.log(LOG_AMOUNT_FOLD)


def decision_warning(gates: list[tuple[str, str, list[str]]], passed: set[str] | None = None) -> str:
    """What the decision's reason adds for primary gates carrying a unit mix-up, skew or rare-event warning
    (``gates``: ``(id, role, notes)`` of each), e.g. ``"; WARNING: gate energy_saving: likely unit mix-up (its
    notes say why)"``, and for the ``passed`` ones (ids) whose symmetry their n cannot check; empty when none.
    "Likely transformed values" stays in its gate's notes (module doc)."""
    flagged = [
        f"gate {gid}: {MIX_UP}"
        for gid, role, notes in gates
        if role == "primary" and any(n.startswith(MIX_UP) for n in notes)
    ]
    for note, words in ((SKEW_NOTE, SKEWED), (RARE_NOTE, RARE)):
        flagged += [
            f"gate {gid}: {words}"
            for gid, role, notes in gates
            if role == "primary" and any(n.startswith(note) for n in notes)
        ]
    flagged += [
        f"gate {gid}: {UNCHECKED}"
        for gid, role, notes in gates
        if role == "primary" and gid in (passed or set()) and any(n.startswith(SYMMETRY_NOTE) for n in notes)
    ]
    return f"; WARNING: {'; '.join(flagged)} (its notes and warnings say why)" if flagged else ""


def _outside_range(gate: Gate, plan: Plan, blocks: list[Block], values: np.ndarray) -> list[str]:
    """One refusal naming the values outside the metric's declared range, or none."""
    metric = plan.metrics[gate.metric]
    if metric.range is None:
        return []
    low, high = metric.range
    outside = [
        (block.label, arm, float(values[i, j]))
        for i, block in enumerate(blocks)
        for j, arm in enumerate(gate.contrast.arms)
        if math.isfinite(values[i, j]) and not low <= values[i, j] <= high
    ]
    if not outside:
        return []
    shown = "; ".join(f"{v:g} for arm {arm} in {label}" for label, arm, v in outside[:3])
    more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
    return [
        f"{len(outside)} {gate.metric} value(s) outside the plan's range [{low:g}, {high:g}] {metric.unit}: "
        f"{shown}{more} (another unit, or transformed values?)"
    ]


__all__ = ["decision_warning", "logged_evidence", "plausibility"]
