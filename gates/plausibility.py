"""Plausibility of a gate's values: the metric's declared range, and unit mix-ups a contrast would hide.

Checked for every gate on the values of its contrast's arms in the blocks that give it pairs:

* **range** (a refusal): a metric may declare ``range: [min, max]`` (its unit). Any finite value
  outside it refuses the gate, naming up to three of them (``collect import`` already refuses such
  rows; collected runs are recorded as measured and refused here).
* **arm medians more than 50x apart** (a warning; ratio gates, and difference gates on a metric
  whose unit is an amount -- energy, time, bytes, FLOP, tokens, power, steps; ``AMOUNT_UNITS``):
  one arm's median over another's above ``MEDIAN_RATIO_LIMIT`` (or below its inverse) is what a
  unit mix-up gives (one arm in kJ, the other in J: 1000x; minutes and seconds: 60x), not what a
  policy change usually does.
* **values that look like natural logs** (a warning; ratio and difference gates on an amount):
  every value between ``LOG_BAND`` (1 to 100) and the largest at most ``LOG_SPREAD`` (1.5) times
  the smallest. Logs of such amounts (about 6.9 for 1000 J, 57.6 for 1e25 FLOP) look like that even
  when the amounts vary 30-fold, and a ratio of logs understates the ratio of the amounts by a
  factor of about the log itself (log(1050) / log(1000) = 1.007, where 1050 / 1000 = 1.05); a
  difference of logs is a log-ratio read in the wrong unit. Genuine amounts in so narrow a band
  (6.9 J +- 5%) give the same warning: it says what to check.

Warnings do not change the verdict; they appear in the gate's notes and, for a primary gate, in
the decision's reason (``decision_warning``) in every report, as does a primary gate's skew warning
(``estimators.feasibility``); a declared ``range`` turns a mix-up into a refusal.
"""

from __future__ import annotations

import math

import numpy as np

from gates.matching import Block
from prereg.schema import Gate, Plan

MIX_UP = "likely unit mix-up"
SKEW_NOTE = "the block contrasts look skewed"  # estimators.feasibility's skew warning, as it opens
SKEWED = "skewed contrasts (its interval for the mean may under-cover)"
TRANSFORMED = "likely transformed values"
MEDIAN_RATIO_LIMIT = 50.0
LOG_BAND = (1.0, 100.0)
LOG_SPREAD = 1.5
AMOUNT_UNITS = frozenset(u.lower() for u in (
    "J", "kJ", "MJ", "mJ", "Wh", "kWh", "mWh", "s", "ms", "us", "µs", "ns", "min", "h", "seconds",
    "B", "KB", "kB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "bytes", "byte", "FLOP", "FLOPs", "GFLOP", "TFLOP",
    "PFLOP", "tokens", "token", "W", "kW", "mW", "steps",
))


def plausibility(gate: Gate, plan: Plan, blocks: list[Block], values: np.ndarray) -> tuple[list[str], list[str]]:
    """``(refusals, warnings)`` for a gate's ``values`` (blocks x the contrast's arms, NaN: none)."""
    metric = plan.metrics[gate.metric]
    arms = list(gate.contrast.arms)
    refusals = _outside_range(gate, plan, blocks, values)
    warnings: list[str] = []
    amount = metric.unit.lower() in AMOUNT_UNITS
    if gate.contrast.scale != "ratio" and not amount:  # a difference of, say, nats: no unit to mix up
        return refusals, warnings
    finite = values[np.isfinite(values)]
    medians = {a: float(np.median(col[np.isfinite(col) & (col > 0)])) for a, col in zip(arms, values.T, strict=True)
               if np.any(np.isfinite(col) & (col > 0))}
    if len(medians) >= 2:
        high, low = max(medians, key=medians.__getitem__), min(medians, key=medians.__getitem__)
        ratio = medians[high] / medians[low]
        if ratio > MEDIAN_RATIO_LIMIT:
            warnings.append(
                f"{MIX_UP}: the arms' medians of {gate.metric} differ by {ratio:.3g}x ({high} "
                f"{medians[high]:.4g} {metric.unit}, {low} {medians[low]:.4g} {metric.unit}), more than "
                f"{MEDIAN_RATIO_LIMIT:g}x: one arm's values may be in another unit (kJ and J, ms and s); check "
                "each arm's units before reading this contrast")
    if (amount and finite.size and np.all(finite >= LOG_BAND[0])
            and np.all(finite <= LOG_BAND[1]) and float(finite.max()) <= LOG_SPREAD * float(finite.min())):
        lo, hi = float(finite.min()), float(finite.max())
        warnings.append(
            f"{TRANSFORMED}: every {gate.metric} value lies in [{lo:.4g}, {hi:.4g}] {metric.unit}, "
            f"which looks like natural logs of {metric.unit} (exp: {math.exp(lo):.3g} to {math.exp(hi):.3g} "
            f"{metric.unit}); a ratio of logs understates the ratio of the amounts about {lo:.2g}-fold and a "
            "difference of logs is a log-ratio, so this gate would judge the wrong quantity. Check the values are in the declared unit (a 'range' on the "
            "metric makes such values a refusal)")
    return refusals, warnings


def decision_warning(gates: list[tuple[str, str, list[str]]]) -> str:
    """What the decision's reason adds for primary gates carrying a plausibility or skew warning (``gates``:
    ``(id, role, notes)`` of each), e.g. ``"; WARNING: gate energy_saving: likely unit mix-up (its notes say
    why)"``; empty when none does."""
    flagged = [f"gate {gid}: {kind}" for gid, role, notes in gates if role == "primary"
               for kind in (MIX_UP, TRANSFORMED) if any(n.startswith(kind) for n in notes)]
    flagged += [f"gate {gid}: {SKEWED}" for gid, role, notes in gates if role == "primary"
                and any(n.startswith(SKEW_NOTE) for n in notes)]
    return f"; WARNING: {'; '.join(flagged)} (its notes and warnings say why)" if flagged else ""


def _outside_range(gate: Gate, plan: Plan, blocks: list[Block], values: np.ndarray) -> list[str]:
    """One refusal naming the values outside the metric's declared range, or none."""
    metric = plan.metrics[gate.metric]
    if metric.range is None:
        return []
    low, high = metric.range
    outside = [(block.label, arm, float(values[i, j])) for i, block in enumerate(blocks)
               for j, arm in enumerate(gate.contrast.arms)
               if math.isfinite(values[i, j]) and not low <= values[i, j] <= high]
    if not outside:
        return []
    shown = "; ".join(f"{v:g} for arm {arm} in {label}" for label, arm, v in outside[:3])
    more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
    return [f"{len(outside)} {gate.metric} value(s) outside the plan's range [{low:g}, {high:g}] {metric.unit}: "
            f"{shown}{more} (another unit, or transformed values?)"]


__all__ = ["decision_warning", "plausibility"]
