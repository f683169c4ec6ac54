"""The ranking's error held over its cells (gates.ranking_control): Holm's step-down against statsmodels,
the level each cell is judged at, per-cell reasons kept, and 'per_cell' as each cell alone.

Cells are built in memory (real ``Block`` objects, runs that answer ``metric``) on the synthetic controller
plan of tests/helpers/families.py, so every contrast is set by the test.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scipy import stats

from gates.artifact_families import RankingCell
from gates.matching import Block
from gates.numbers import as_float
from gates.ranking import CellEvidence, prepare_cell
from gates.ranking_control import control_ranking, step_down_levels
from prereg.plan import parse_plan
from prereg.schema import Plan
from tests.helpers.families import PLAN


class _Run:
    def __init__(self, **values: float) -> None:
        self.values = values

    def metric(self, name: str) -> float | None:
        return self.values.get(name)


def plan_with(control: str | None) -> Plan:
    text = (
        PLAN
        if control is None
        else PLAN.replace("  tie_break: [nll]\n", f"  tie_break: [nll]\n  ranking: {{error_control: {control}}}\n")
    )
    return parse_plan(text.encode()).plan


def cell(plan: Plan, ratios: list[float], bandwidths: list[float], family: str = "held_x") -> Any:
    """One prepared cell: the challenger 'ctl' at ``ratios`` x the comparator 'fast' (10 s) per pair."""
    blocks = [
        Block(
            stratum={"family": family, "region": "low"},
            replicate=i,
            calibration=False,
            records={"fast": _Run(time=10.0, bandwidth=bw), "ctl": _Run(time=10.0 * r, bandwidth=bw)},  # type: ignore[dict-item]
        )
        for i, (r, bw) in enumerate(zip(ratios, bandwidths, strict=True))
    ]
    return prepare_cell(plan, family, {"region": "low"}, blocks, SimpleNamespace(arm="fast"), [], [])  # type: ignore[arg-type]


BW = [1.0, 2.0, 4.0, 3.0]


def num(x: Any) -> float:
    """A stored number (or p-value) that must be there, as a float."""
    v = as_float(x)
    assert v is not None
    return v


@pytest.mark.slow  # a reference library (statsmodels, slow to call): the slow tier
def test_holm_adjusted_p_values_equal_statsmodels_and_levels_decide_alike() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 12):
        for _ in range(3):
            p = list(rng.uniform(0, 0.05, m) ** rng.uniform(0.5, 2))
            adjusted, levels = step_down_levels(p, 0.1)
            reject, ref, _, _ = multipletests(p, alpha=0.1, method="holm")
            assert adjusted == pytest.approx(list(ref), rel=1e-12)
            assert [q <= lv for q, lv in zip(p, levels, strict=True)] == list(reject)
            assert all(lv in {0.1 / (m - i) for i in range(m)} for lv in levels)


def test_per_cell_orders_as_each_cell_alone_at_the_plans_confidence() -> None:
    plan = plan_with("per_cell")
    ratios = [0.95, 0.99, 0.97, 0.98]  # alone: the t interval at 90% excludes 1, p well above alpha / cells
    d = np.log(ratios)
    ev = cell(plan, ratios, BW)
    assert isinstance(ev, CellEvidence) and ev.claims == 2
    (got,) = control_ranking(plan, [ev])
    ref = stats.ttest_1samp(d, 0.0)
    lo, hi = stats.t.interval(0.9, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert got.ranking == "challenger" and got.error_control == "per_cell"
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert (got.lower, got.upper) == pytest.approx((math.exp(lo), math.exp(hi)), rel=1e-9)
    assert got.pvalue_adjusted is None and got.adjusted_confidence is None


def test_holm_orders_a_cell_only_at_its_adjusted_level_and_keeps_the_unadjusted_reason() -> None:
    plan = plan_with(None)  # the default: holm
    assert plan.comparator is not None and plan.comparator.ranking.error_control == "holm"
    strong = [0.80, 0.801, 0.799, 0.8005]  # every unit near 0.8: ordered at any level a handful of cells use
    weak = [0.95, 0.99, 0.97, 0.98]  # ordered alone (p about 0.03), not after adjustment over 3 cells
    cells = [
        cell(plan, strong, BW, "held_x"),
        cell(plan, weak, BW, "held_y"),
        cell(plan, [1.0, 0.99, 1.02, 1.01], BW, "held_z"),
    ]
    ranked = control_ranking(plan, cells)
    assert [c.ranking for c in ranked] == ["challenger", "abstain", "abstain"]
    first, second, _ = ranked
    assert first.cells_tested == 3 and num(first.adjusted_level) == pytest.approx(0.1 / 3)
    assert num(first.adjusted_confidence) == pytest.approx(1 - 0.1 / 3 / 2)  # split over its 2 claims
    assert num(first.adjusted_upper) < 1 and num(first.adjusted_lower) < num(
        first.lower
    )  # the wider interval still excludes 1
    # the weak cell: Holm's second step (0.1 / 2), split over its 2 claims; its adjusted p is above 0.1
    assert num(second.adjusted_level) == pytest.approx(0.1 / 2) and num(second.pvalue_adjusted) > 0.1
    assert num(second.upper) < 1 and num(second.adjusted_upper) > 1  # alone it would be ordered; adjusted it is not
    assert "alone: " in second.reason and "Holm's step-down over 3 tested cells" in second.reason
    cell_p = min(1.0, 2 * min(num(second.pvalue), num(second.flip_pvalue)))
    assert num(second.pvalue_adjusted) == pytest.approx(max(num(first.pvalue_adjusted), 2 * cell_p))


def test_bonferroni_judges_every_cell_at_alpha_over_cells() -> None:
    plan = plan_with("bonferroni")
    cells = [cell(plan, [0.80, 0.801, 0.799, 0.8005], BW, f) for f in ("held_x", "held_y", "held_z")]
    ranked = control_ranking(plan, cells)
    assert all(c.ranking == "challenger" and c.adjusted_level == pytest.approx(0.1 / 3) for c in ranked)
    assert "Bonferroni" in ranked[0].reason


def test_a_flip_is_a_claim_judged_at_the_adjusted_level() -> None:
    plan = plan_with(None)
    # the challenger 30% faster at 1 Mbit/s and 30% slower at 4, tightly along a line in log(bandwidth)
    bw = [1.0, 1.5, 2.0, 3.0, 4.0]
    x = (np.log(bw) - 0.0) / math.log(4.0)
    ratios = list(0.7 * (1.3 / 0.7) ** x * np.array([1.0, 1.002, 0.999, 1.001, 1.0]))
    (flip,) = control_ranking(plan, [cell(plan, ratios, bw)])
    assert flip.ranking == "flip" and num(flip.flip_pvalue) is not None and num(flip.flip_pvalue) <= 0.1 / 2
    assert "flip p =" in flip.reason
    # the same cell among many weak ones: its flip p-value still clears Holm's first step
    many = [cell(plan, ratios, bw)] + [cell(plan, [1.0, 0.99, 1.02, 1.01], BW, "held_y") for _ in range(11)]
    assert control_ranking(plan, many)[0].ranking == ("flip" if num(flip.flip_pvalue) <= 0.1 / 24 else "abstain")


def test_cells_without_a_test_are_not_counted_and_old_artifacts_load() -> None:
    plan = plan_with(None)
    missing = prepare_cell(plan, "held_x", {"region": "low"}, [], None, [], [])
    assert isinstance(missing, RankingCell) and missing.ranking == "abstain"
    ranked = control_ranking(plan, [missing, cell(plan, [0.80, 0.801, 0.799], BW[:3])])
    assert ranked[0].cells_tested == 1 and ranked[1].cells_tested == 1
    old = {k: v for k, v in ranked[1].model_dump().items() if k in RankingCell.model_fields and k not in NEW_FIELDS}
    assert RankingCell.model_validate(old).error_control is None


NEW_FIELDS = {
    "error_control",
    "pvalue",
    "flip_pvalue",
    "claims",
    "cells_tested",
    "pvalue_adjusted",
    "adjusted_level",
    "adjusted_confidence",
    "adjusted_lower",
    "adjusted_upper",
}
