"""One cell of the ranking under uncertainty: the challenger vs the comparator in a family x region.

Checks in order: ``abstain`` (missing evidence), ``flip`` (the ends' fitted contrasts exclude the null
on opposite sides), ``challenger`` / ``comparator`` (the paired interval excludes the null), else
``abstain``. The sampling interval and the infrastructure spread are reported apart, never combined
(:func:`rank_cell`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from estimators import insufficient_blocks, trend_ends
from estimators import interval as paired_interval
from gates.artifact_families import ComparatorChoice, InfrastructureSpread, RankingCell, RegionEnd
from gates.matching import Block, stratum_label
from gates.numbers import encode_number
from prereg.schema import Plan, Scalar


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _side(lower: float, upper: float, null: float) -> int:
    """+1 when the interval lies above the null, -1 below, 0 when it includes it."""
    return 1 if lower > null else -1 if upper < null else 0


def fitted_end(end: Any, log_x: bool) -> RegionEnd:
    """An :class:`estimators.trend.FittedEnd` in the artifact (x back on its own scale)."""
    at = math.exp(end.at) if log_x else end.at
    return RegionEnd(
        at=at, estimate=encode_number(end.estimate), lower=encode_number(end.lower), upper=encode_number(end.upper)
    )


def spread(
    factor: str, parameter: str, x: list[float], ends: Any, log_x: bool, note: str | None
) -> InfrastructureSpread:
    return InfrastructureSpread(
        factor=factor,
        parameter=parameter,
        drawn=x,
        log_scale=log_x,
        low_end=fitted_end(ends.low, log_x) if ends else None,
        high_end=fitted_end(ends.high, log_x) if ends else None,
        note=note,
    )


def _units(plan: Plan, pairs: list[Block], d: np.ndarray) -> tuple[list[list[int]], np.ndarray]:
    """The cell's units of analysis (``strata.analysis_unit``): each pair, or each stratum with its
    replicates' contrasts averaged (log scale for ratios), as the gates do."""
    if (plan.strata.analysis_unit or "stratum") == "replicate":
        groups = [[i] for i in range(len(pairs))]
    else:
        by: dict[str, list[int]] = {}
        for i, b in enumerate(pairs):
            by.setdefault(stratum_label(b.stratum), []).append(i)
        groups = list(by.values())
    return groups, np.array([float(np.mean(d[g])) for g in groups])


def _parameters(plan: Plan, pairs: list[Block], arms: tuple[str, str]) -> tuple[dict[str, list[float]], str | None]:
    """Each region factor's drawn parameter per pair, or why the cell cannot be paired on it."""
    out: dict[str, list[float]] = {}
    for factor, parameter in (plan.strata.region_factors or {}).items():
        xs = [b.records[arms[0]].metric(parameter) for b in pairs]
        other = [b.records[arms[1]].metric(parameter) for b in pairs]
        if any(x is None or not math.isfinite(x) for x in xs + other):
            return out, f"{parameter} is not recorded, or not finite, for every run of the cell"
        bad = next((b.label for b, x, y in zip(pairs, xs, other, strict=True) if x != y), None)
        if bad is not None:
            return out, (
                f"{parameter} differs between {arms[0]} and {arms[1]} in block {bad}: the pair did not meet "
                "the same drawn infrastructure (not common random numbers), so it cannot be compared"
            )
        out[factor] = [float(x) for x in xs if x is not None]
    return out, None


def _spreads(
    plan: Plan, drawn: dict[str, list[float]], groups: list[list[int]], d: np.ndarray, scale: str, confidence: float
) -> tuple[list[InfrastructureSpread], list[tuple[str, Any, bool]]]:
    out, fits = [], []
    for factor, parameter in (plan.strata.region_factors or {}).items():
        x = np.array(drawn[factor], dtype=float)
        log_x = bool(np.all(x > 0))
        fx = np.log(x) if log_x else x
        fx = np.array([float(np.mean(fx[g])) for g in groups])  # a stratum unit: its replicates' mean position
        ends = trend_ends(d, fx, confidence, scale)
        note = None
        if ends is None:
            note = "fewer than 3 units or one drawn value: no trend across the region can be fitted"
        elif ends.low.lower == ends.low.upper and ends.high.lower == ends.high.upper:
            note = (
                "the straight line passes through every unit exactly (no residual spread): its ends carry no "
                "sampling uncertainty, so no flip is inferred from them"
            )
        out.append(spread(factor, parameter, [float(v) for v in x], ends, log_x, note))
        if ends is not None and note is None:
            fits.append((parameter, ends, log_x))
    return out, fits


def rank_cell(
    plan: Plan,
    family: Scalar,
    region: dict[str, Scalar],
    blocks: list[Block],
    choice: ComparatorChoice | None,
    missing: list[str],
    fired: list[str],
) -> RankingCell:
    """The ranking of one family x region, by the first check that applies:

    1. ``abstain`` when no comparator was chosen, a run of the cell is missing, duplicated, unplanned
       or under another plan, an invalidator fired on the family's runs, a value is not finite (or not
       positive for a ratio), a pair's drawn infrastructure differs between its two arms, or the method
       cannot decide with the cell's units (``strata.analysis_unit``);
    2. ``flip`` when, for some region factor, the contrast fitted at the lowest and at the highest drawn
       value of its parameter (least squares, on the log of a positive parameter; t interval of the
       fitted mean, df = n - 2) has intervals that both exclude the null, on opposite sides;
    3. ``challenger`` or ``comparator`` when the cell's paired interval excludes the null (when every
       unit gives the same contrast the reason says the order rests on that one value, and an exact
       straight-line fit infers no flip);
    4. ``abstain`` otherwise: the paired interval cannot order them.
    """
    rule = plan.comparator
    assert rule is not None
    rr = rule.ranking
    metric = rr.metric or rule.metric
    scale = rr.scale
    challenger = rule.challenger
    arm = choice.arm if choice else None
    op = "/" if scale == "ratio" else "-"
    cell = dict(
        family=family,
        region=region,
        metric=metric,
        contrast=f"{challenger} {op} {arm or rule.name}",
        scale=scale,
        method=rr.method,
        confidence=rr.confidence,
        n_pairs=0,
    )

    def abstain(reason: str, **extra: Any) -> RankingCell:
        return RankingCell(ranking="abstain", reason=reason, **{**cell, **extra})

    if arm is None:
        return abstain("no comparator was chosen from the calibration runs, so nothing is ranked")
    if missing:
        return abstain(f"evidence is missing: {'; '.join(missing[:3])}")
    if fired:
        return abstain(f"invalidator(s) {', '.join(fired)} fired on this family's runs")
    pairs = [b for b in blocks if challenger in b.records and arm in b.records]
    values = np.array(
        [
            [
                b.records[a].metric(metric) if b.records[a].metric(metric) is not None else math.nan
                for a in (challenger, arm)
            ]
            for b in pairs
        ],
        dtype=float,
    ).reshape(-1, 2)
    if values.size == 0 or not np.all(np.isfinite(values)) or (scale == "ratio" and np.any(values <= 0)):
        return abstain(
            f"{metric} is missing, not finite{' or not positive' if scale == 'ratio' else ''} in a run of this cell"
        )
    drawn, unpaired = _parameters(plan, pairs, (challenger, arm))
    if unpaired:
        return abstain(unpaired)
    per_pair = np.log(values[:, 0] / values[:, 1]) if scale == "ratio" else values[:, 0] - values[:, 1]
    groups, d = _units(plan, pairs, per_pair)
    n = int(d.size)
    unit = "pairs" if (plan.strata.analysis_unit or "stratum") == "replicate" else "strata (replicates averaged)"
    cell["n_pairs"] = n
    too_few = insufficient_blocks(rr.method, rr.confidence, n, None, f"{unit} in this cell")
    if too_few or n < 2:
        return abstain(too_few or f"only {n} {unit} in this cell")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = paired_interval(rr.method, d, rr.confidence, scale)
    infra, fits = _spreads(plan, drawn, groups, d, scale, rr.confidence)
    constant = bool(np.all(d == d[0]))
    null = 1.0 if scale == "ratio" else 0.0
    sampled = dict(
        estimate=encode_number(res.estimate),
        lower=encode_number(res.lower),
        upper=encode_number(res.upper),
        infrastructure=infra,
    )
    good = -1 if plan.metrics[metric].better == "lower" else 1  # the side on which the challenger is better
    interval = f"{_fmt(res.estimate)} [{_fmt(res.lower)}, {_fmt(res.upper)}]"
    tail = (
        (
            f"; every one of the {n} {unit} gives the same value: no sampling variability (as for a vacuous gate), "
            "so this order rests on that single value, not on an interval"
        )
        if constant
        else ""
    )
    for parameter, ends, log_x in fits:
        lo, hi = _side(ends.low.lower, ends.low.upper, null), _side(ends.high.lower, ends.high.upper, null)
        if lo and hi and lo != hi:
            low_x, high_x = (math.exp(ends.low.at), math.exp(ends.high.at)) if log_x else (ends.low.at, ends.high.at)
            who = {good: challenger, -good: arm}
            return RankingCell(
                ranking="flip",
                reason=(
                    f"the order changes across the region: at {parameter} = {_fmt(low_x)} {who[lo]} is better "
                    f"({_fmt(ends.low.estimate)} [{_fmt(ends.low.lower)}, {_fmt(ends.low.upper)}]), at {_fmt(high_x)} "
                    f"{who[hi]} ({_fmt(ends.high.estimate)} [{_fmt(ends.high.lower)}, {_fmt(ends.high.upper)}]); "
                    f"a straight-line fit over {n} {unit} (df {n - 2}), the cell's own interval is {interval}"
                ),
                **{**cell, **sampled},
            )
    side = _side(res.lower, res.upper, null)
    if side == good:
        return RankingCell(
            ranking="challenger",
            reason=f"{challenger} is better than {arm}: {metric} {cell['contrast']} "
            f"= {interval} excludes {null:g} ({n} {unit}, {rr.method} {rr.confidence:g}){tail}",
            **{**cell, **sampled},
        )
    if side == -good:
        return RankingCell(
            ranking="comparator",
            reason=f"{arm} is better than {challenger}: {metric} "
            f"{cell['contrast']} = {interval} excludes {null:g} ({n} {unit}, {rr.method} "
            f"{rr.confidence:g}){tail}",
            **{**cell, **sampled},
        )
    return RankingCell(
        ranking="abstain",
        reason=f"the paired interval {interval} includes {null:g} ({n} {unit}): it cannot order them",
        **{**cell, **sampled},
    )


__all__ = ["rank_cell"]
