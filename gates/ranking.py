"""One cell of the ranking under uncertainty: the challenger vs the comparator in a family x region.

The order of the checks (see :mod:`gates.families` for the whole):

1. ``abstain`` when no comparator was chosen, a run of the cell is missing or duplicated, an
   invalidator fired on the family's runs, a value is not finite (or not positive for a ratio),
   or the method cannot decide with the cell's pairs;
2. ``flip`` when, for some region factor, the contrast fitted at the lowest and at the highest
   drawn value of its parameter (least squares on the log of a positive parameter; t interval of
   the fitted mean, df = n - 2) has intervals that both exclude the null, on opposite sides;
3. ``adaptive`` (the challenger is better) or ``comparator`` when the cell's paired interval
   (the ranking's method and confidence) excludes the null;
4. ``abstain`` otherwise: the paired interval cannot order them.

The sampling interval (``estimate``/``lower``/``upper``) and the infrastructure spread (the drawn
parameter values and the fitted ends) are reported side by side, never combined.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gates.artifact import encode_number
from gates.artifact_families import ComparatorChoice, InfrastructureSpread, RankingCell, RegionEnd
from gates.matching import Block
from prereg.schema import Plan, Scalar


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _side(lower: float, upper: float, null: float) -> int:
    """+1 when the interval lies above the null, -1 below, 0 when it includes it."""
    return 1 if lower > null else -1 if upper < null else 0


def fitted_end(end: Any, log_x: bool) -> RegionEnd:
    """An :class:`estimators.trend.FittedEnd` in the artifact (x back on its own scale)."""
    at = math.exp(end.at) if log_x else end.at
    return RegionEnd(at=at, estimate=encode_number(end.estimate), lower=encode_number(end.lower),
                     upper=encode_number(end.upper))


def spread(factor: str, parameter: str, x: list[float], ends: Any, log_x: bool, note: str | None) -> InfrastructureSpread:
    return InfrastructureSpread(factor=factor, parameter=parameter, drawn=x,
                                low_end=fitted_end(ends.low, log_x) if ends else None,
                                high_end=fitted_end(ends.high, log_x) if ends else None, note=note)


def _spreads(plan: Plan, blocks: list[Block], arms: tuple[str, str], d: np.ndarray, scale: str,
             confidence: float) -> tuple[list[InfrastructureSpread], list[tuple[str, Any, bool]]]:
    import estimators as est

    out, fits = [], []
    for factor, parameter in (plan.strata.region_factors or {}).items():
        xs = [b.records[arms[0]].metric(parameter) for b in blocks]
        other = [b.records[arms[1]].metric(parameter) for b in blocks]
        note = None
        if any(x is None or not math.isfinite(x) for x in xs):
            out.append(InfrastructureSpread(factor=factor, parameter=parameter, drawn=[],
                                            note=f"{parameter} is not recorded for every run of the cell"))
            continue
        if xs != other:
            note = f"{parameter} differs between the two arms' runs of a block: not common random numbers"
        x = np.array(xs, dtype=float)
        log_x = bool(np.all(x > 0))
        ends = est.trend_ends(d, np.log(x) if log_x else x, confidence, scale)
        if ends is None and note is None:
            note = "fewer than 3 pairs or one drawn value: no trend across the region can be fitted"
        out.append(spread(factor, parameter, [float(v) for v in x], ends, log_x, note))
        if ends is not None:
            fits.append((parameter, ends, log_x))
    return out, fits


def rank_cell(plan: Plan, family: Scalar, region: dict[str, Scalar], blocks: list[Block],
              choice: ComparatorChoice | None, missing: list[str], fired: list[str]) -> RankingCell:
    """The ranking of one family x region (module doc)."""
    import estimators as est

    rule = plan.comparator
    assert rule is not None
    rr = rule.ranking
    metric = rr.metric or rule.metric
    scale = rr.scale
    challenger = rule.challenger
    arm = choice.arm if choice else None
    op = "/" if scale == "ratio" else "-"
    cell = dict(family=family, region=region, metric=metric, contrast=f"{challenger} {op} {arm or rule.name}",
                scale=scale, method=rr.method, confidence=rr.confidence, n_pairs=0)

    def abstain(reason: str, **extra: Any) -> RankingCell:
        return RankingCell(ranking="abstain", reason=reason, **{**cell, **extra})

    if arm is None:
        return abstain("no comparator was chosen from the calibration runs, so nothing is ranked")
    if missing:
        return abstain(f"evidence is missing: {'; '.join(missing[:3])}")
    if fired:
        return abstain(f"invalidator(s) {', '.join(fired)} fired on this family's runs")
    pairs = [b for b in blocks if challenger in b.records and arm in b.records]
    values = np.array([[b.records[a].metric(metric) if b.records[a].metric(metric) is not None else math.nan
                        for a in (challenger, arm)] for b in pairs], dtype=float).reshape(-1, 2)
    if values.size == 0 or not np.all(np.isfinite(values)) or (scale == "ratio" and np.any(values <= 0)):
        return abstain(f"{metric} is missing, not finite{' or not positive' if scale == 'ratio' else ''} in a run "
                       "of this cell")
    d = np.log(values[:, 0] / values[:, 1]) if scale == "ratio" else values[:, 0] - values[:, 1]
    n = int(d.size)
    cell["n_pairs"] = n
    too_few = est.insufficient_blocks(rr.method, rr.confidence, n, None, "pairs in this cell")
    if too_few or n < 2:
        return abstain(too_few or f"only {n} pair(s) in this cell")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = est.interval(rr.method, d, rr.confidence, scale)
    infra, fits = _spreads(plan, pairs, (challenger, arm), d, scale, rr.confidence)
    null = 1.0 if scale == "ratio" else 0.0
    sampled = dict(estimate=encode_number(res.estimate), lower=encode_number(res.lower),
                   upper=encode_number(res.upper), infrastructure=infra)
    good = -1 if plan.metrics[metric].better == "lower" else 1  # the side on which the challenger is better
    interval = f"{_fmt(res.estimate)} [{_fmt(res.lower)}, {_fmt(res.upper)}]"
    for parameter, ends, log_x in fits:
        lo, hi = _side(ends.low.lower, ends.low.upper, null), _side(ends.high.lower, ends.high.upper, null)
        if lo and hi and lo != hi:
            low_x, high_x = (math.exp(ends.low.at), math.exp(ends.high.at)) if log_x else (ends.low.at, ends.high.at)
            who = {good: challenger, -good: arm}
            return RankingCell(ranking="flip", reason=(
                f"the order changes across the region: at {parameter} = {_fmt(low_x)} {who[lo]} is better "
                f"({_fmt(ends.low.estimate)} [{_fmt(ends.low.lower)}, {_fmt(ends.low.upper)}]), at {_fmt(high_x)} "
                f"{who[hi]} ({_fmt(ends.high.estimate)} [{_fmt(ends.high.lower)}, {_fmt(ends.high.upper)}]); "
                f"a straight-line fit over {n} pairs (df {n - 2}), the cell's own interval is {interval}"),
                **{**cell, **sampled})
    side = _side(res.lower, res.upper, null)
    if side == good:
        return RankingCell(ranking="adaptive", reason=f"{challenger} is better than {arm}: {metric} {cell['contrast']} "
                           f"= {interval} excludes {null:g} ({n} pairs, {rr.method} {rr.confidence:g})",
                           **{**cell, **sampled})
    if side == -good:
        return RankingCell(ranking="comparator", reason=f"{arm} is better than {challenger}: {metric} "
                           f"{cell['contrast']} = {interval} excludes {null:g} ({n} pairs, {rr.method} "
                           f"{rr.confidence:g})", **{**cell, **sampled})
    return RankingCell(ranking="abstain", reason=f"the paired interval {interval} includes {null:g} ({n} pairs): it "
                       "cannot order them", **{**cell, **sampled})


__all__ = ["rank_cell"]
