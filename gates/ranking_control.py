"""The ranking's error held over all its cells (``comparator.ranking.error_control``).

A cell's claim is that it is ordered: ``challenger``, ``comparator`` or ``flip``. Each tested cell gets one
p-value, Bonferroni over its claims (``claims`` x its smallest claim p-value: the paired test's, and a flip's
per fitted region factor, the larger of its two ends' p-values, an intersection-union test). ``holm``
(Holm 1979) steps down over those cell p-values so that the chance of ordering any cell where the truth
is no difference is at most ``alpha = 1 - confidence``, whatever the dependence between cells;
``bonferroni`` judges every cell at ``alpha / cells`` (its intervals form a simultaneous band);
``per_cell`` judges each cell alone at ``confidence``. Cells that abstain before any test (missing
evidence) make no claim and are not counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from estimators.rules import adjust_p_values
from gates.artifact_families import RankingCell
from gates.ranking import CellEvidence, judge_cell
from prereg.schema import Plan

CONTROL_WORDS = {"holm": "Holm's step-down", "bonferroni": "Bonferroni (a simultaneous band)"}


def step_down_levels(pvalues: list[float], alpha: float) -> tuple[list[float], list[float]]:
    """Holm-adjusted p-values (``estimators.adjust_p_values``) and the error rate each p-value was judged
    at: ``alpha / (m - i)`` for the i-th smallest (i from 0) while the step-down rejects, and the level
    of the first step that does not reject for that p-value and every larger one (never compared, they
    could have been ordered at no more than it). ``p <= level`` exactly when the adjusted ``p <= alpha``."""
    m = len(pvalues)
    if m == 0:
        return [], []
    adjusted = adjust_p_values(np.asarray(pvalues, dtype=np.float64), "holm")
    order = np.argsort(np.asarray(pvalues), kind="stable")
    levels = [0.0] * m
    stop: float | None = None
    for i, j in enumerate(order):
        if stop is None and adjusted[j] > alpha:
            stop = alpha / (m - i)
        levels[j] = stop if stop is not None else alpha / (m - i)
    return [float(a) for a in adjusted], levels


def _note(control: str, m: int, claims: int, level: float, adjusted: float, alpha: float) -> str:
    return (
        f"; {CONTROL_WORDS[control]} over {m} tested cell{'s' if m != 1 else ''} (family-wise error "
        f"{alpha:g}): this cell judged at {level:.3g}, split over its {claims} claim{'s' if claims != 1 else ''}, "
        f"adjusted p = {adjusted:.3g} {'<=' if adjusted <= alpha else '>'} {alpha:g}"
    )


def control_ranking(plan: Plan, prepared: list[RankingCell | CellEvidence]) -> list[RankingCell]:
    """Every cell of the ranking judged at the level the plan's error control gives it, in input order."""
    assert plan.comparator is not None
    rule = plan.comparator.ranking
    control, alpha = rule.error_control, 1.0 - rule.confidence
    tested = [c for c in prepared if isinstance(c, CellEvidence)]
    m = len(tested)
    pcell = [c.cell_pvalue for c in tested]
    if control == "holm":
        adjusted, levels = step_down_levels(pcell, alpha)
    elif control == "bonferroni":
        adjusted, levels = [float(a) for a in adjust_p_values(pcell, "bonferroni")], [alpha / m] * m
    else:
        adjusted, levels = [], []
    judged: dict[int, RankingCell] = {}
    for k, ev in enumerate(tested):
        if control == "per_cell":
            judged[id(ev)] = judge_cell(ev, alpha, control, "", {"cells_tested": m})
            continue
        extra: dict[str, Any] = {"cells_tested": m, "pvalue_adjusted": adjusted[k], "adjusted_level": levels[k]}
        note = _note(control, m, ev.claims, levels[k], adjusted[k], alpha)
        judged[id(ev)] = judge_cell(ev, levels[k] / ev.claims, control, note, extra)
    return [
        judged[id(c)] if isinstance(c, CellEvidence) else c.model_copy(update={"cells_tested": m}) for c in prepared
    ]


__all__ = ["CONTROL_WORDS", "control_ranking", "step_down_levels"]
