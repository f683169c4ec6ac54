"""A gate's values, bounds and evidence read from the ledger's columns (``collect.ledger.columns``) by the blocks' rows.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from collect.telemetry.analysis.bounds import AVERAGE_ASSUMED, COUNTER_PHASE_ASSUMED
from estimators.vocabulary import weakest

if TYPE_CHECKING:
    from collect.ledger.columns import LedgerColumns
    from gates.matching import Block
    from prereg.schema import Gate, Plan


def _columns(blocks: list[Block]) -> LedgerColumns | None:
    return blocks[0].ledger if blocks else None


def row_matrix(blocks: list[Block], arms: tuple[str, ...] | list[str]) -> np.ndarray:
    """(blocks x arms) indices of the records in the columns, -1 where the block has no record of the arm
    (made once for a list of blocks and its arms: every gate of a match reads the same list)."""
    columns = _columns(blocks)
    key = ("rows", id(blocks), tuple(arms))
    kept = columns.cache.get(key) if columns is not None else None
    if kept is not None and kept[0] is blocks:
        return np.array(kept[1])
    rows = np.array([[b.rows.get(arm, -1) for arm in arms] for b in blocks], dtype=np.intp)
    rows = rows.reshape(len(blocks), len(arms))
    if columns is not None:
        columns.cache[key] = (blocks, rows)
    return np.array(rows)


def metric_array(columns: LedgerColumns, metric: str) -> np.ndarray:
    """Metric ``metric`` of every record as float64 (NaN where not recorded), made once per columns."""
    key = ("metric", metric)
    if key not in columns.cache:
        columns.cache[key] = np.array(columns.metric_floats(metric), dtype=np.float64)
    found: np.ndarray = columns.cache[key]
    return found


def outcome_matrix(gate: Gate, blocks: list[Block]) -> tuple[np.ndarray, list[str]]:
    """(blocks x contrast arms) values of the gate's metric, and data problems by name."""
    contrast = gate.contrast
    problems: list[str] = []
    columns = _columns(blocks)
    rows = row_matrix(blocks, contrast.arms)
    present = rows >= 0
    if columns is None or not present.any():
        return np.full(rows.shape, np.nan), problems
    values = np.where(present, metric_array(columns, gate.metric)[np.where(present, rows, 0)], np.nan)
    bad = present & ~np.isfinite(values)  # missing (None) or non-finite, where a run exists
    if contrast.scale == "ratio":
        bad |= present & (values <= 0)
    metrics = columns.columns["metrics"]
    for i, j in zip(*np.nonzero(bad), strict=True):  # row by row, arm by arm
        block, arm, row = blocks[i], contrast.arms[j], int(rows[i, j])
        value = values[i, j]
        if metrics[row].get(gate.metric) is None:
            problems.append(
                f"no {gate.metric} recorded for arm {arm} in {block.label} ({columns.columns['run_id'][row]})"
            )
        elif not math.isfinite(value):
            problems.append(f"non-finite {gate.metric} for arm {arm} in {block.label}")
        else:
            problems.append(f"{gate.metric} = {float(value):g} <= 0 for arm {arm} in {block.label}: no ratio")
    return values, problems


class HeldBounds(NamedTuple):
    """What :func:`bounds_matrix` finds of a gate's measurement bounds."""

    bounds: np.ndarray | None  # blocks x arms, metric units; None when the metric has no signal
    lacking: list[str]  # runs without a bound, in block and arm order
    split: int  # runs whose bound was split (its arm-dependent part is below the whole)
    periods: list[float]  # the distinct counter update periods (ms) the runs' bounds were computed with


def bounds_matrix(gate: Gate, plan: Plan, blocks: list[Block]) -> HeldBounds:
    """The part of each of the gate's values' measurement bounds held against its margin (metric
    units): the arm-dependent part where the run's telemetry records one (``TelemetrySummary.
    systematic_bound_of``), else the whole bound; with the runs lacking one, how many were split and
    the counter periods used (:class:`HeldBounds`). Every block holds every arm of the contrast."""
    signal = plan.metrics[gate.metric].signal
    if signal is None:
        return HeldBounds(None, [], 0, [])
    arms = gate.contrast.arms
    bounds = np.zeros((len(blocks), len(arms)))
    columns = _columns(blocks)
    if columns is None:
        return HeldBounds(bounds, [], 0, [])
    key = ("bound", signal, gate.metric)
    if key not in columns.cache:
        found = []
        for telemetry in columns.columns["telemetry"]:
            summary = telemetry.get(signal)
            found.append(
                None
                if summary is None
                else (
                    summary.systematic_bound_of(gate.metric),
                    summary.bound_of(gate.metric),
                    summary.counter_period_ms,
                )
            )
        columns.cache[key] = found
    per_row = columns.cache[key]
    lacking: list[str] = []
    split = 0
    periods: set[float] = set()
    for i, block in enumerate(blocks):
        for j, arm in enumerate(arms):
            row = block.rows[arm]
            held, whole, period = per_row[row] or (None, None, None)
            if period is not None:
                periods.add(period)
            if held is None:
                lacking.append(columns.columns["run_id"][row])
            else:
                bounds[i, j] = held
                split += whole is not None and held < whole
    return HeldBounds(bounds, lacking, split, sorted(periods))


def split_note(signal: str, split: int, runs: int, periods: list[float] | None = None) -> str:
    """What a gate's resolution check held against the margin when runs' bounds were split, with
    the counter periods they used, and what the split assumes (docs/estimators.md, measurement error)."""
    assumed = COUNTER_PHASE_ASSUMED if signal == "energy_counter" else "; ".join(AVERAGE_ASSUMED)
    used = f", with a counter update period of {' or '.join(f'{p:g}' for p in periods)} ms" if periods else ""
    return (
        f"the {signal} bounds held against the margin are the arm-dependent part of {split} of {runs} runs' "
        f"measurement bounds{used}; the rest, reading error independent of the arm, is carried by the paired "
        f"sampling variance (assumed, not checkable from the logs: {assumed})"
    )


def evidence(gate: Gate, plan: Plan, blocks: list[Block]) -> str:
    """The weakest of the plan's declaration, the collector's recorded class and the signal's telemetry."""
    metric = plan.metrics[gate.metric]
    classes: list[str] = [metric.evidence]
    columns = _columns(blocks)
    if columns is None:
        return weakest(classes)
    rows = [row for b in blocks for row in b.rows.values()]  # the blocks' records, in their order
    recorded = columns.columns["evidence"]
    classes += [c for row in rows if recorded[row] and (c := recorded[row].get(gate.metric))]
    if metric.signal:
        signal, telemetry = metric.signal, columns.columns["telemetry"]
        classes += [s.evidence for row in rows if (s := telemetry[row].get(signal))]
    return weakest(dict.fromkeys(classes))  # each class once, in order of first appearance: the same weakest


__all__ = ["HeldBounds", "bounds_matrix", "split_note", "evidence", "metric_array", "outcome_matrix", "row_matrix"]
