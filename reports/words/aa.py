"""The A/A check in words (``Evaluation.aa_pairs``, :mod:`gates.aa_pairs`), shared by the terminal,
Markdown and HTML reports: one row per A/A pair and primary metric, and the rule it applies.

An A/A pair runs one configuration under two arm names, so its true difference is 0 (1 for a ratio);
an interval that excludes it refuses the decision (the pipeline manufactures differences).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from reports.words.evaluation import bound_num, ci_text, fmt_p, fmt_pct

if TYPE_CHECKING:
    from gates.artifact import Evaluation
    from gates.artifact_aa import AAPairResult

AA_HEADING: Final = "A/A check (the pipeline's own false alarms)"
AA_WORDS: Final = {"same": "NO DIFFERENCE", "differs": "DIFFERS", "unchecked": "UNCHECKED"}
#: each A/A verdict wears the colour of the gate verdict it acts like (reports.words.palette)
AA_AS_VERDICT: Final = {"same": "pass", "differs": "fail", "unchecked": "refused"}
AA_COLUMNS: Final = ("verdict", "A/A pair", "interval", "test")


class AARow(NamedTuple):
    """One A/A check as the reports print it."""

    verdict: str  # same, differs, unchecked
    word: str  # NO DIFFERENCE, DIFFERS, UNCHECKED
    pair: str  # 'restart_again - restart (restart_again is a control copy of restart)'
    metric: str  # 'final_nll (nats)'
    interval: str  # '-9.5e-05 nats, 90% CI [-0.000426, 0.000235] nats' or why it is unchecked
    test: str  # 't, n = 8 units, contains 0; p = 0.6'


def _ends(r: AAPairResult) -> str:
    """'90% CI [-0.000426, 0.000235] nats' or '90% CI [0.98x, 1.03x]' (an end that would print equal to the
    null without being equal gets the digits that differ)."""
    return ci_text(r.confidence, r.lower, r.upper, r.scale, r.unit, [r.null])


def aa_row(r: AAPairResult) -> AARow:
    """The row of one A/A check."""
    null = "1" if r.scale == "ratio" else "0"
    pair = f"{r.contrast} ({r.control} is a control copy of {r.original})"
    metric = f"{r.metric} ({r.unit})" if r.unit else r.metric
    if r.verdict == "unchecked" or r.lower is None or r.upper is None:
        return AARow(r.verdict, AA_WORDS[r.verdict], pair, metric, f"not computed: {r.reason}", r.method)
    estimate = bound_num(r.estimate, [r.null]) + ("x" if r.scale == "ratio" else f" {r.unit}".rstrip())
    interval = f"{estimate}, {_ends(r)}"
    holds = "excludes" if r.verdict == "differs" else "contains"
    p = f"; two-sided p = {fmt_p(r.pvalue)}" if r.pvalue is not None else ""
    test = f"{r.method}, n = {r.n_pairs} units; {holds} {null}{p}"
    return AARow(r.verdict, AA_WORDS[r.verdict], pair, metric, interval, test)


def aa_rows(ev: Evaluation) -> list[AARow]:
    """Every A/A check of the artifact (empty when the plan declares no A/A pair)."""
    return [aa_row(r) for r in ev.aa_pairs]


def aa_rule(ev: Evaluation) -> str:
    """The rule the A/A check applies and what it guarantees, in one paragraph."""
    if not ev.aa_pairs:
        return ""
    first = ev.aa_pairs[0]
    k = first.checks
    levels = sorted({fmt_pct(r.confidence) for r in ev.aa_pairs})
    gate_levels = sorted({fmt_pct(1 - r.gate_confidence) for r in ev.aa_pairs})
    split = (
        f"; {k} checks, each at {' or '.join(levels)} (Bonferroni: the gates' level split over the {k}), so "
        if k > 1
        else ", so "
    )
    return (
        "Each A/A pair runs one configuration under two arm names: its true difference is 0 (1 for a ratio). "
        "Its paired interval is computed on each primary gate's metric with that gate's scale, method and units"
        f"{split}a pipeline that manufactures no difference is refused at most {' or '.join(gate_levels)} of the "
        "time. An interval that excludes the null refuses the decision (the pipeline itself manufactures "
        "differences); a check that cannot be computed refuses it too."
    )


def aa_summary(ev: Evaluation) -> str:
    """'A/A check: 1 of 1 pair-metric shows no difference' (or what differs / is unchecked), '' without pairs."""
    if not ev.aa_pairs:
        return ""
    n = len(ev.aa_pairs)
    counts = {v: sum(r.verdict == v for r in ev.aa_pairs) for v in AA_WORDS}
    parts = [f"{counts[v]} {AA_WORDS[v].lower()}" for v in ("differs", "unchecked", "same") if counts[v]]
    return f"A/A check: {n} pair-metric check(s): " + ", ".join(parts)


__all__ = [
    "AA_AS_VERDICT",
    "AA_COLUMNS",
    "AA_HEADING",
    "AA_WORDS",
    "AARow",
    "aa_row",
    "aa_rows",
    "aa_rule",
    "aa_summary",
]
