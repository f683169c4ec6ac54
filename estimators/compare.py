"""One call from a table of runs to a paired interval, the rule's p-value and a verdict.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._common import ConfidenceInterval, IntervalResult, to_analysis
from .betting import contrast_bounds
from .contrast import paired_contrast
from .dispatch import check_method, interval
from .expressions import parse_contrast
from .feasibility import contrast_warnings, insufficient_blocks
from .rules import decide_rule
from .tinterval import t_moments
from .unseen import constant_verdict, judged_bounds
from .vocabulary import Rule, Verdict


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`, in scipy.stats' result style.

    ``estimate`` and the interval are on the reported scale (a ratio for ratio contrasts; the mean
    contrast, or the pseudo-median for ``wilcoxon``). ``pvalue`` is the *rule's* one-sided p-value
    (None without a rule, for an ``estimate`` rule, or for constant contrasts); ``statistic`` is
    the t statistic of that test for ``method="t"`` (the binding side for ``within``), else None.
    """

    estimate: float
    confidence: float
    method: str
    scale: str
    n: int
    rule: Rule | None
    pvalue: float | None
    statistic: float | None
    verdict: Verdict | None
    alpha: float
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    blocks: tuple[Any, ...] = field(default=(), repr=False)
    result: IntervalResult | None = field(default=None, repr=False, compare=False)

    def confidence_interval(self) -> ConfidenceInterval:
        """``(low, high)`` on the reported scale, at ``confidence`` (two-sided)."""
        assert self.result is not None
        return self.result.confidence_interval()

    @property
    def contrasts(self) -> NDArray[np.float64]:
        """The block contrasts on the analysis scale (log ratios for ratio contrasts), block order."""
        assert self.result is not None and self.result.contrasts is not None
        return self.result.contrasts

    def __repr__(self) -> str:
        low, high = self.confidence_interval()
        p = "None" if self.pvalue is None else f"{self.pvalue:.4g}"
        rule = "None" if self.rule is None else repr(str(self.rule))
        return (
            f"Comparison(estimate={self.estimate:.6g}, confidence_interval=({low:.6g}, {high:.6g}), "
            f"confidence={self.confidence:g}, method={self.method!r}, n={self.n}, rule={rule}, "
            f"pvalue={p}, verdict={self.verdict!r})"
        )


def compare(
    data: Any,
    *,
    metric: str,
    arm: str,
    block: str | Sequence[str],
    contrast: str,
    rule: str | Rule | None = None,
    method: str = "t",
    confidence: float = 0.90,
    resamples: int = 9999,
    seed: int = 0,
    metric_range: tuple[float, float] | None = None,
    deterministic: bool = False,
    horizon: int | None = None,
) -> Comparison:
    """Paired interval, rule p-value and verdict for ``contrast`` of ``metric`` (module doc).

    ``metric_range`` (the metric's ``(min, max)``, its unit) bounds the contrasts: ``method="betting"``
    needs it, and with any other method a constant sample is judged on what it cannot rule out.
    ``deterministic``: the metric's value is fixed by the design, so a constant sample is ``vacuous``.
    ``horizon``: the planned number of blocks a betting interval is tuned to (default: the table's)."""
    check_method(method)
    parsed = parse_contrast(contrast)
    the_rule = Rule.parse(rule) if rule is not None else None
    keys, outcomes = _outcomes(data, metric, arm, block, parsed.arms, parsed.scale)
    coefficients = [parsed.coefficients[a] for a in parsed.arms]
    d = paired_contrast(outcomes, coefficients, parsed.scale)
    if d.size < 2:
        raise ValueError(f"a paired interval needs 2 or more blocks; the table has {d.size}")
    bounds = None
    if metric_range is not None:
        bounds = judged_bounds(
            method,
            contrast_bounds((float(metric_range[0]), float(metric_range[1])), coefficients, parsed.scale),
            deterministic,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compare built the log ratios itself; caveats come back below
        if the_rule is None:
            res = interval(
                method, d, confidence, parsed.scale, resamples=resamples, seed=seed, bounds=bounds, horizon=horizon
            )
            pvalue, holds, constant, unseen = None, None, res.degenerate, False
        else:
            dec = decide_rule(
                the_rule, d, confidence, method, parsed.scale, resamples, seed, bounds=bounds, horizon=horizon
            )
            res, pvalue, holds, constant, unseen = dec.result, dec.pvalue, dec.holds, dec.constant, dec.unseen
    reason = insufficient_blocks(method, res.confidence, int(d.size), resamples, "blocks")
    verdict: Verdict | None = None
    if the_rule is not None:
        verdict = "refused" if reason else "pass" if holds else "fail"
        if constant and not reason:
            verdict = constant_verdict(bool(holds), unseen, deterministic)
            reason = (
                None
                if verdict != "unresolvable"
                else (
                    f"every one of the {d.size} blocks shows the same contrast: {d.size} identical values cannot show a "
                    f"difference that occurs in fewer than about 1 in {d.size} blocks; pass deterministic=True if the "
                    "metric's value is fixed by the design, or metric_range=(min, max) to judge the largest mean the "
                    "sample cannot rule out"
                )
            )
    statistic = _t_statistic(the_rule, d, parsed.scale) if method == "t" and pvalue is not None else None
    return Comparison(
        estimate=res.estimate,
        confidence=res.confidence,
        method=method,
        scale=parsed.scale,
        n=int(d.size),
        rule=the_rule,
        pvalue=pvalue,
        statistic=statistic,
        verdict=verdict,
        alpha=(1 - res.confidence) / 2,
        reason=reason,
        warnings=res.warnings + contrast_warnings(d, method, parsed.scale),
        blocks=tuple(keys),
        result=res,
    )


def _t_statistic(rule: Rule | None, d: NDArray[np.float64], scale: str) -> float | None:
    """``(mean - mu) / se`` at the rule's threshold (analysis scale); for ``within`` the binding side."""
    if rule is None or not rule.tested:
        return None
    mean, se, _ = t_moments(d)
    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        t_low = (mean - to_analysis(rule.low, scale)) / se  # tests theta > low
        t_high = (mean - to_analysis(rule.high, scale)) / se  # tests theta < high
        return t_low if t_low < -t_high else t_high  # the side with the larger p-value
    assert rule.threshold is not None
    return (mean - to_analysis(rule.threshold, scale)) / se


def _column(data: Any, name: str) -> list[Any]:
    """Column ``name`` of a DataFrame or mapping as a list (a clear KeyError naming the columns)."""
    try:
        col = data[name]
    except (KeyError, IndexError, TypeError):
        known = list(data.keys()) if isinstance(data, Mapping) or hasattr(data, "keys") else []
        raise KeyError(f"no column {name!r} in the data; columns are {[str(k) for k in known]}") from None
    values = col.tolist() if hasattr(col, "tolist") else list(col)
    return values


def _outcomes(
    data: Any, metric: str, arm: str, block: str | Sequence[str], arms: list[str], scale: str
) -> tuple[list[Any], NDArray[np.float64]]:
    """Block keys (first-appearance order) and the (blocks x arms) matrix of raw metric values."""
    block_cols = [block] if isinstance(block, str) else list(block)
    if not block_cols:
        raise ValueError("block names at least one column")
    values, arm_values = _column(data, metric), _column(data, arm)
    block_values = [_column(data, c) for c in block_cols]
    if not all(len(c) == len(values) for c in (arm_values, *block_values)):
        raise ValueError("the columns have different lengths")
    cells: dict[Any, dict[str, float]] = {}
    for row, (value, arm_value) in enumerate(zip(values, arm_values, strict=True)):
        key = tuple(c[row] for c in block_values)
        key = key[0] if len(key) == 1 else key
        name = str(arm_value)
        if name not in arms:
            continue  # an arm this contrast does not use
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"row {row}: {metric} = {value!r} is not a number")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"row {row}: {metric} = {value} is not finite (block {key!r}, arm {name})")
        if scale == "ratio" and value <= 0:
            raise ValueError(
                f"row {row}: {metric} = {value:g} (block {key!r}, arm {name}); a ratio contrast takes the raw "
                "positive values and logs them itself -- were these values already log-transformed or differenced?"
            )
        cell = cells.setdefault(key, {})
        if name in cell:
            raise ValueError(
                f"block {key!r} has two rows for arm {name}: give one row per block and arm (average replicates "
                "first, or add the replicate column to block=)"
            )
        cell[name] = value
    missing = [(k, a) for k, cell in cells.items() for a in arms if a not in cell]
    if missing:
        shown = ", ".join(f"{k!r} lacks {a}" for k, a in missing[:5])
        raise ValueError(
            f"every block needs a row for every arm of the contrast: {shown}"
            + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
        )
    if not cells:
        raise ValueError(f"no rows for the contrast's arms {arms} in column {arm!r}")
    keys = list(cells)
    return keys, np.array([[cells[k][a] for a in arms] for k in keys], dtype=np.float64)


__all__ = ["Comparison", "compare"]
