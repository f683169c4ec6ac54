"""One cell of the ranking under uncertainty: the challenger vs the comparator in a family x region.

Checks in order: ``abstain`` (missing evidence), ``flip`` (the ends' fitted contrasts exclude the null
on opposite sides), ``challenger`` / ``comparator`` (the paired interval excludes the null), else
``abstain``. :func:`prepare_cell` gathers a cell's evidence and tests; :func:`judge_cell` orders it at
the level :mod:`gates.ranking_control` gives it (the error held over all the ranking's cells). The
sampling interval and the infrastructure spread are reported apart, never combined.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from estimators import IntervalResult, insufficient_blocks, trend_ends
from estimators import interval as paired_interval
from estimators.trend_pvalues import flip_pvalue, trend_end_pvalues
from gates.artifact_families import ComparatorChoice, InfrastructureSpread, RankingCell, RegionEnd
from gates.matching import Block, stratum_label
from gates.numbers import encode_number
from prereg.schema import Plan, Scalar


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _pct(level: float) -> str:
    """A two-sided level in percent, to four significant digits ('99.58%')."""
    return f"{100 * level:.4g}%"


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


@dataclass(frozen=True)
class Fit:
    """One region factor's straight-line fit in a cell: the units' positions (log of a positive
    parameter), whether its ends carry sampling uncertainty, and the flip claim's p-value."""

    parameter: str
    x: NDArray[np.float64]
    log_x: bool
    usable: bool
    flip_pvalue: float


def _spreads(
    plan: Plan, drawn: dict[str, list[float]], groups: list[list[int]], d: np.ndarray, scale: str, confidence: float
) -> tuple[list[InfrastructureSpread], list[Fit]]:
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
        if ends is not None:  # a claim of the cell, usable or not (its count never depends on the outcome)
            usable = note is None
            fits.append(Fit(parameter, fx, log_x, usable, flip_pvalue(trend_end_pvalues(d, fx)) if usable else 1.0))
    return out, fits


@dataclass(frozen=True)
class CellEvidence:
    """A testable cell: its units' contrasts ``d`` (analysis scale), fits, the paired interval at the
    plan's confidence and its two-sided p-value (None for constant contrasts), and the words of its verdicts."""

    cell: dict[str, Any]
    d: NDArray[np.float64]
    fits: list[Fit]
    infrastructure: list[InfrastructureSpread]
    result: IntervalResult
    unit: str
    good: int
    arms: tuple[str, str]

    @property
    def claims(self) -> int:
        """The ordering claims the cell can make: its paired order and a flip per fitted factor."""
        return 1 + len(self.fits)

    @property
    def null(self) -> float:
        return 1.0 if self.cell["scale"] == "ratio" else 0.0

    @property
    def constant(self) -> bool:
        return bool(np.all(self.d == self.d[0]))

    @property
    def pvalue(self) -> float:
        """The paired test's p-value; a constant sample orders at any level unless it sits on the null."""
        p = self.result.pvalue
        if p is None:
            return 0.0 if _side(self.result.lower, self.result.upper, self.null) else 1.0
        return float(p)

    @property
    def cell_pvalue(self) -> float:
        """Bonferroni over the cell's claims: ``min(1, claims x the smallest claim p-value)``."""
        return min(1.0, self.claims * min([self.pvalue, *(f.flip_pvalue for f in self.fits)]))


def prepare_cell(
    plan: Plan,
    family: Scalar,
    region: dict[str, Scalar],
    blocks: list[Block],
    choice: ComparatorChoice | None,
    missing: list[str],
    fired: list[str],
) -> RankingCell | CellEvidence:
    """A cell's evidence, or the cell abstaining before any test: no comparator was chosen, a run of the
    cell is missing, duplicated, unplanned or under another plan, an invalidator fired on the family's
    runs, a value is not finite (or not positive for a ratio), a pair's drawn infrastructure differs
    between its two arms, or the method cannot decide with the cell's units (``strata.analysis_unit``)."""
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
        error_control=rr.error_control,
    )

    def abstain(reason: str) -> RankingCell:
        return RankingCell(ranking="abstain", reason=reason, **cell)

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
    res = _interval(rr.method, d, rr.confidence, scale)
    infra, fits = _spreads(plan, drawn, groups, d, scale, rr.confidence)
    good = -1 if plan.metrics[metric].better == "lower" else 1  # the side on which the challenger is better
    return CellEvidence(cell, d, fits, infra, res, unit, good, (challenger, arm))


def _interval(method: str, d: NDArray[np.float64], confidence: float, scale: str) -> IntervalResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return paired_interval(method, d, confidence, scale)


def _ival(estimate: float, lower: float, upper: float) -> str:
    return f"{_fmt(estimate)} [{_fmt(lower)}, {_fmt(upper)}]"


def judge_cell(ev: CellEvidence, alpha_claim: float, control: str, note: str, extra: dict[str, Any]) -> RankingCell:
    """The cell's ranking with each of its claims tested at ``alpha_claim`` (two-sided), by the first that holds:

    1. ``flip`` when, for some region factor, the contrast fitted at the lowest and at the highest drawn
       value of its parameter (least squares, on the log of a positive parameter; t interval of the
       fitted mean, df = n - 2) has intervals at ``1 - alpha_claim`` that both exclude the null, on
       opposite sides (and, under an error control over cells, its p-value is at most ``alpha_claim``);
    2. ``challenger`` or ``comparator`` when the cell's paired interval at ``1 - alpha_claim`` excludes
       the null (and its p-value is at most ``alpha_claim``). When every unit gives the same contrast the
       reason says the order rests on that one value, and an exact straight-line fit infers no flip;
    3. ``abstain`` otherwise. ``note`` (how the level was set) ends every reason; ``extra`` are the
       artifact's adjustment fields.
    """
    cell, d, scale, method = ev.cell, ev.d, ev.cell["scale"], ev.cell["method"]
    n, unit, null, (challenger, arm) = int(d.size), ev.unit, ev.null, ev.arms
    controlled = control != "per_cell"
    res0 = ev.result
    level = 1.0 - alpha_claim if controlled else res0.confidence
    res = _interval(method, d, level, scale) if controlled and level != res0.confidence else res0
    sampled = dict(
        estimate=encode_number(res0.estimate),
        lower=encode_number(res0.lower),
        upper=encode_number(res0.upper),
        infrastructure=ev.infrastructure,
        pvalue=res0.pvalue,
        flip_pvalue=min((f.flip_pvalue for f in ev.fits), default=None),
        claims=ev.claims,
        **extra,
    )
    if controlled:
        sampled.update(
            adjusted_confidence=level, adjusted_lower=encode_number(res.lower), adjusted_upper=encode_number(res.upper)
        )
    fields = {**cell, **sampled}
    interval = _ival(res.estimate, res.lower, res.upper)
    p_text = f"p = {res0.pvalue:.3g}" if res0.pvalue is not None else "no p-value (constant)"
    alone = f"{_ival(res0.estimate, res0.lower, res0.upper)} at {_pct(res0.confidence)}, {p_text}"
    at = f"{n} {unit}, {method} at {_pct(level)}; alone: {alone}" if controlled else f"{n} {unit}, {method} {level:g}"
    tail = (
        (
            f"; every one of the {n} {unit} gives the same value: no sampling variability (as for a vacuous gate), "
            "so this order rests on that single value, not on an interval"
        )
        if ev.constant
        else ""
    )
    slack = alpha_claim * (1 + 1e-9)  # the test's p-value against its level, to rounding
    for fit in ev.fits:
        if not fit.usable or (controlled and fit.flip_pvalue > slack):
            continue
        ends = trend_ends(d, fit.x, level, scale)
        assert ends is not None  # a fit is kept only where trend_ends gave ends
        lo, hi = _side(ends.low.lower, ends.low.upper, null), _side(ends.high.lower, ends.high.upper, null)
        if lo and hi and lo != hi:
            low_x, high_x = (
                (math.exp(ends.low.at), math.exp(ends.high.at)) if fit.log_x else (ends.low.at, ends.high.at)
            )
            who = {ev.good: challenger, -ev.good: arm}
            return RankingCell(
                ranking="flip",
                reason=(
                    f"the order changes across the region: at {fit.parameter} = {_fmt(low_x)} {who[lo]} is better "
                    f"({_ival(ends.low.estimate, ends.low.lower, ends.low.upper)}), at {_fmt(high_x)} "
                    f"{who[hi]} ({_ival(ends.high.estimate, ends.high.lower, ends.high.upper)}); "
                    f"a straight-line fit over {n} {unit} (df {n - 2}"
                    + (f", ends at {_pct(level)}, flip p = {fit.flip_pvalue:.3g}" if controlled else "")
                    + f"), the cell's own interval is {interval}{note}"
                ),
                **fields,
            )
    side = _side(res.lower, res.upper, null)
    if controlled and ev.pvalue > slack:
        side = 0
    if side:
        better, worse = (challenger, arm) if side == ev.good else (arm, challenger)
        return RankingCell(
            ranking="challenger" if side == ev.good else "comparator",
            reason=f"{better} is better than {worse}: {cell['metric']} {cell['contrast']} "
            f"= {interval} excludes {null:g} ({at}){tail}{note}",
            **fields,
        )
    return RankingCell(
        ranking="abstain",
        reason=f"the paired interval {interval} includes {null:g} ({at}): it cannot order them{note}",
        **fields,
    )


__all__ = ["CellEvidence", "Fit", "judge_cell", "prepare_cell"]
