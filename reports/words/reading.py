"""How to read the verdicts: plain-word explanations shared by the terminal and Markdown reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gates.artifact import Evaluation


def reading_lines(ev: Evaluation) -> list[str]:
    """How to read the verdicts, in plain words (the parts that apply to this evaluation)."""
    units = sorted({g.analysis_unit for g in ev.gates})
    lines = [
        "Decision rule: a gate with a tested rule (upper, lower, within) passes exactly when its rule's one-sided "
        "p-value is at most alpha = (1 - confidence) / 2; the interval holds every threshold the test does not reject, so a rule whose threshold "
        "equals an interval end fails ('<=' and '<' are the same test)."
    ]
    if any(str(g.rule).startswith("estimate") for g in ev.gates):
        lines.append(
            "DESCRIPTIVE: a rule on the point estimate ('estimate < X', 'estimate > X') is no test: such a gate is "
            "judged on that one number, has no p-value, never enters the multiplicity family and never decides "
            "the claim (only sensitivity gates may have one)."
        )
    from estimators.feasibility import SKEW_CHECK_MIN_N, symmetry_unchecked  # lazy: numpy

    if any(symmetry_unchecked(g.method, g.n_pairs) for g in ev.gates):
        lines.append(
            "t, sign-flip and the bootstraps target the mean: their coverage rests on near-symmetric contrasts. "
            f"Below {SKEW_CHECK_MIN_N} units the skew check cannot confirm that, and the gate's test column says "
            "'symmetry unchecked'; skewed contrasts then pass too often (docs/estimators.md)."
        )
    if "stratum" in units:
        lines.append(
            "Unit of analysis: one pair per stratum (its replicates' contrasts averaged), so the interval covers "
            "the average effect over conditions like these strata and n counts strata, not runs."
        )
    if "replicate" in units:
        lines.append(
            "Unit of analysis: every replicate pair is an independent block (the plan says so); the interval "
            "assumes the strata do not differ in their effect."
        )
    if any(g.method == "wilcoxon" for g in ev.gates):
        lines.append(
            "A wilcoxon estimate is the Hodges-Lehmann pseudo-median (the centre of symmetry of the contrasts), "
            "not their mean; for skewed contrasts the two differ."
        )
    if any(g.verdict == "vacuous" for g in ev.gates):
        lines.append(
            "VACUOUS: every unit's contrast is exactly the same value and the plan declares the metric "
            "deterministic (fixed by the design), so nothing could vary and the rule could not have failed; there "
            "is no p-value, and in a multiplicity family it counts as p = 1."
        )
    if any(g.method == "betting" for g in ev.gates):
        lines.append(
            "A betting interval (Waudby-Smith and Ramdas 2024) is valid for any distribution inside the metric's "
            "declared range -- skewed, rare-event or discrete -- at the planned n and at every look, so it needs "
            "no symmetry check; it is wider than a t interval on normal data (docs/estimators.md)."
        )
    if any(g.verdict == "unresolvable" for g in ev.gates):
        lines.append(
            "UNRESOLVABLE: moving the measured values anywhere within the meter's stated bounds could change the "
            "rule's outcome, so the instrument cannot tell pass from fail -- or every unit showed one contrast of a "
            "metric not declared deterministic, which bounds nothing a rarer event could do; no claim either way."
        )
    return lines
