"""The words and numbers of an evaluation report, as plain data shared by terminal and Markdown.

Nothing here draws: every function turns part of an ``Evaluation`` (``gates.artifact``) into
strings. Words carry every meaning (verdicts, decisions, evidence classes, post-data amendments);
the renderers may add colour, never replace a word with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from estimators.vocabulary import Rule
from gates.numbers import as_float
from prereg.direction import ratio_margin_words
from reports.words import provenance as pt
from reports.words.forest import forest_axis, forest_bar
from reports.words.palette import VERDICT_WORDS
from reports.words.provenance import predecessor_lines  # noqa: F401 - part of this module's vocabulary

if TYPE_CHECKING:  # pydantic is imported by whoever built the Evaluation
    from gates.artifact import AmendmentSummary, Evaluation, GateResult, RunAccounting

VERDICT_MEANINGS = {
    "pass": "the frozen rule holds on the interval",
    "fail": "valid data; the frozen rule does not hold",
    "refused": "no claim either way",
    "unresolvable": "the instrument cannot resolve the margin",
    "vacuous": "passed as written, but could not have failed",
}
EVIDENCE_WORDS = {
    "measured": "measured",
    "modeled": "modeled (simulator)",
    "prior": "prior (assumed)",
    "unmeasured": "unmeasured",
    "unavailable": "unavailable (no sensor)",
}
EVIDENCE_VERDICTS = ("pass", "fail", "vacuous")  # verdicts whose numbers are evidence
EM_DASH = "\u2014"


def fmt_num(value: Any) -> str:
    """A number for people: 4 significant digits, whole numbers up to 1e9, infinities as +-inf."""
    x = as_float(value)
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    if x != 0 and 1e4 <= abs(x) < 1e9:
        return f"{x:.0f}"
    text = f"{x:.4g}"
    return "0" if text == "-0" else text


def fmt_pct(value: float) -> str:
    """A confidence level as a percentage (0.9 -> '90%', 0.975 -> '97.5%'): 4 significant digits, or as many
    as keep a level below 1 from printing as 100% (0.99998 -> '99.998%')."""
    percent, digits = 100 * value, 4
    while f"{percent:.{digits}g}" == "100" and percent < 100 and digits < 12:
        digits += 1
    return f"{percent:.{digits}g}%"


def fmt_p(value: float) -> str:
    """A p-value (tiny ones as '< 0.0001')."""
    return "< 0.0001" if value < 1e-4 else f"{value:.2g}"


def with_unit(value: Any, gate: GateResult) -> str:
    """A value of ``gate``'s contrast with its unit: ratios as '0.91x', differences as '0.004 nats'."""
    text = fmt_num(value)
    x = as_float(value)
    if x is None:
        return text
    if gate.scale == "ratio":
        return text if math.isinf(x) else f"{text}x"
    return f"{text} {gate.unit}".rstrip()


def _thresholds(gate: GateResult) -> list[float]:
    """The rule's threshold(s) on the reported scale (none when the rule does not parse)."""
    try:
        rule = Rule.parse(gate.rule)
    except ValueError:
        return []
    return [t for t in (rule.threshold, rule.low, rule.high) if t is not None]


def bound_num(value: Any, thresholds: list[float]) -> str:
    """``fmt_num``, with more digits where 4 would print a bound equal to a threshold it is not
    equal to (an upper bound of 0.29999999 against 'upper < 0.3' reads 0.3 otherwise)."""
    text = fmt_num(value)
    x = as_float(value)
    if x is None or not math.isfinite(x):
        return text
    for t in thresholds:
        if x != t and text == fmt_num(t):
            for digits in range(5, 18):
                text = f"{x:.{digits}g}"
                if text != f"{t:.{digits}g}":
                    break
    return text


def interval_text(gate: GateResult) -> str:
    """'90% CI [-0.001, 0.009] nats' or '90% CI [0.85x, +infx]' (ratio ends carry the 'x'); an end
    that would print equal to the rule's threshold without being equal gets the digits that differ."""
    if gate.lower is None or gate.upper is None:
        return f"{fmt_pct(gate.confidence)} CI: none"
    return ci_text(gate.confidence, gate.lower, gate.upper, gate.scale, gate.unit, _thresholds(gate))


def ci_text(confidence: float, lower: Any, upper: Any, scale: str, unit: str, marks: list[Any]) -> str:
    """'90% CI [-0.001, 0.009] nats' or '90% CI [0.85x, +infx]': ratio ends carry the 'x' (an infinite one
    none); an end that would print equal to one of ``marks`` without being equal gets the digits that differ."""
    low, high = bound_num(lower, marks), bound_num(upper, marks)
    if scale == "ratio":
        x = "" if math.isinf(as_float(lower) or 0.0) else "x"
        y = "" if math.isinf(as_float(upper) or 0.0) else "x"
        return f"{fmt_pct(confidence)} CI [{low}{x}, {high}{y}]"
    return f"{fmt_pct(confidence)} CI [{low}, {high}] {unit}".rstrip()


def rule_text(gate: GateResult) -> str:
    """The frozen rule with its unit ('upper < 0.02 nats', 'upper < 0.95 (ratio: requires at least 5% lower)')."""
    if gate.scale == "ratio":
        return f"{gate.rule} (ratio: {ratio_margin_words(gate.rule)})"
    return f"{gate.rule} {gate.unit}".rstrip()


def contrast_text(gate: GateResult) -> str:
    """What the gate compares ('adaptive - fixed of final_nll' / 'ratio adaptive / fixed of energy')."""
    prefix = "ratio " if gate.scale == "ratio" else ""
    return f"{prefix}{gate.contrast} of {gate.metric}"


def p_text(gate: GateResult, multiplicity: str) -> str:
    """'p = 0.003; holm-adjusted 0.006', or why there is no p-value."""
    if gate.pvalue is None and gate.verdict == "vacuous":
        return "no p-value (no variability to test)"
    parts = []
    if gate.pvalue is not None:
        p = fmt_p(gate.pvalue)
        parts.append(f"p {p}" if p.startswith("<") else f"p = {p}")
    if gate.pvalue_adjusted is not None and multiplicity != "none":
        parts.append(f"{multiplicity}-adjusted {fmt_p(gate.pvalue_adjusted)}")
    return "; ".join(parts)


UNIT_WORDS = {"stratum": "strata", "replicate": "replicate pairs"}


def method_text(gate: GateResult) -> str:
    """'t, n = 6 strata' plus the attained confidence of exact discrete methods."""
    text = f"{gate.method}, n = {gate.n_pairs} {UNIT_WORDS[gate.analysis_unit]}"
    if gate.attained_confidence is not None:
        text += f", attained {fmt_pct(gate.attained_confidence)}"
    from estimators.feasibility import symmetry_unchecked  # lazy: numpy

    if str(gate.rule).startswith("estimate"):
        text += "; descriptive (no test)"
    elif gate.verdict in EVIDENCE_VERDICTS and symmetry_unchecked(gate.method, gate.n_pairs):
        text += "; symmetry unchecked at this n (see notes)"
    return text


def resolution_text(gate: GateResult) -> str:
    """The measurement-resolution check in words, or '' when none was made."""
    r = gate.resolution
    if r is None:
        return ""
    change = "could change the rule's outcome" if r.could_change else "cannot change the rule's outcome"
    ends = "; ".join(f"[{fmt_num(a)}, {fmt_num(b)}]" for a, b, *_ in r.extremes)
    return (
        f"measurement bounds move interval ends by up to {fmt_num(r.interval_bound)} (analysis scale) "
        f"and {change}" + (f"; extreme intervals {ends}" if ends else "")
    )


def arm_medians_text(gate: GateResult) -> str:
    """'fixed 2.5 nats, adaptive 2.51 nats' (medians over the blocks, metric units)."""
    if not gate.arm_medians:
        return "none recorded"
    return ", ".join(
        f"{arm} {fmt_num(v)}" + ("" if v is None else f" {gate.unit}") for arm, v in gate.arm_medians.items()
    )


def bar_for(gate: GateResult, width: int) -> tuple[str, str, str]:
    """(left axis label, forest bar, right axis label) for one gate."""
    lower, upper, est = as_float(gate.lower), as_float(gate.upper), as_float(gate.estimate)
    log = gate.scale == "ratio"
    marks = list(gate.margin)
    bar = forest_bar(lower, upper, est, marks, gate.null, width, log=log)
    lo, hi = forest_axis(lower, upper, est, marks, gate.null, log=log)
    unit = "x" if log else f" {gate.unit}"
    return fmt_num(lo) + ("x" if log else ""), bar, fmt_num(hi) + unit


@dataclass
class GateView:
    """Everything a renderer prints about one gate, as strings."""

    id: str
    verdict: str
    word: str
    meaning: str
    role: str
    group: str | None
    metric: str
    evidence: str
    contrast: str
    estimate: str
    interval: str
    rule: str
    test: str
    p: str
    refused_by: list[str]
    notes: list[str]
    warnings: list[str]
    arm_medians: str
    resolution: str
    bar: tuple[str, str, str]
    is_evidence: bool = field(default=True)


def gate_view(gate: GateResult, ev: Evaluation, bar_width: int = 40) -> GateView:
    """The strings of one gate."""
    return GateView(
        id=gate.id,
        verdict=gate.verdict,
        word=VERDICT_WORDS[gate.verdict],
        meaning=VERDICT_MEANINGS[gate.verdict],
        role=gate.role,
        group=gate.group,
        metric=gate.metric,
        evidence=pt.evidence_words(gate, EVIDENCE_WORDS),
        contrast=contrast_text(gate),
        estimate=with_unit(gate.estimate, gate) + (" (pseudo-median)" if gate.method == "wilcoxon" else ""),
        interval=interval_text(gate),
        rule=rule_text(gate),
        test=method_text(gate),
        p=p_text(gate, ev.multiplicity),
        refused_by=[r.reason for r in gate.refused_by],
        notes=list(gate.notes) + [n for n in [pt.direction_note(gate)] if n],
        warnings=list(gate.warnings),
        arm_medians=arm_medians_text(gate),
        resolution=resolution_text(gate),
        bar=bar_for(gate, bar_width),
        is_evidence=gate.verdict in EVIDENCE_VERDICTS,
    )


def primary_gates(ev: Evaluation) -> list[GateResult]:
    return [g for g in ev.gates if g.role == "primary"]


def sensitivity_gates(ev: Evaluation) -> list[GateResult]:
    return [g for g in ev.gates if g.role == "sensitivity"]


def diagnostic_gates(ev: Evaluation) -> list[GateResult]:
    """Refused or unresolvable gates (primary first): their numbers are diagnostics, not evidence."""
    return [g for g in primary_gates(ev) + sensitivity_gates(ev) if g.verdict in ("refused", "unresolvable")]


def amendment_flag(a: AmendmentSummary) -> str:
    """Whether data already existed when the plan was amended, in words."""
    if a.post_data:
        return "POST-DATA AMENDMENT: runs already existed"
    if a.runs_checked:
        return "before data (no runs existed)"
    return "not checked against the runs"


def short(sha: str | None) -> str:
    return sha[:12] if sha else "none"


def name_list(names: list[str], limit: int | None) -> str:
    shown = names if limit is None else names[:limit]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more (reports show --json lists all)" if more else "")


RUN_PROBLEMS = ("missing", "failed", "duplicate", "unplanned", "other_plan", "ledger_problems")
RUN_PROBLEM_WORDS = {
    "missing": "missing",
    "failed": "failed",
    "duplicate": "duplicate",
    "unplanned": "unplanned",
    "other_plan": "under another plan",
    "ledger_problems": "ledger problems",
}


def run_lines(runs: RunAccounting, limit: int | None = 10, collapse_other: bool = False) -> list[str]:
    """'24 planned, 23 matched' and one line per kind of problem, naming the runs.

    ``collapse_other``: runs under another plan are counted, not named (the 'Other plan' line says
    what happened and what to do once).
    """
    lines = [f"{runs.planned} planned, {runs.matched} matched"]
    for key in RUN_PROBLEMS:
        names = getattr(runs, key)
        if names and key == "other_plan" and collapse_other:  # said once, in words, by 'Other plan'
            lines.append(f"{RUN_PROBLEM_WORDS[key]} ({len(names)}): see 'Other plan'; --verbose names every run")
        elif names:
            lines.append(f"{RUN_PROBLEM_WORDS[key]} ({len(names)}): {name_list(names, limit)}")
    return lines


def ledger_text(ev: Evaluation) -> str:
    led = ev.ledger
    text = f"{led.path}, sha256 {short(led.sha256)}, {led.records} records"
    if led.torn_tail:
        text += "; TORN TAIL: the last line was incomplete and ignored"
    from gates.integrity import chain_sentence  # lazy: pydantic

    return text + "; " + chain_sentence(led.chain, led.head_sha256)


def plan_text(ev: Evaluation) -> str:
    text = f"sha256 {short(ev.prereg_sha256)}, frozen {ev.frozen_at}"
    if ev.genesis_plan_sha256 != ev.prereg_sha256:
        text += f" (first frozen as {short(ev.genesis_plan_sha256)})"
    return text


def group_lines(ev: Evaluation) -> list[str]:
    """'mechanism 3/3 passed, 1 vacuous' per group (vacuous counts as passed, and is named)."""
    lines = []
    for name, tally in ev.groups.items():
        counts = tally.counts
        passed = counts.get("pass", 0) + counts.get("vacuous", 0)
        extra = [
            f"{counts[v]} {w}"
            for v, w in (
                ("vacuous", "vacuous"),
                ("fail", "failed"),
                ("refused", "refused"),
                ("unresolvable", "unresolvable"),
            )
            if counts.get(v)
        ]
        lines.append(f"{name} {passed}/{tally.total} passed" + "".join(f", {x}" for x in extra))
    return lines


def _observed(value: Any) -> str:
    """An invalidator's observed value or threshold: a number, or words as recorded."""
    if isinstance(value, str) and value not in ("Infinity", "-Infinity"):
        return value
    return fmt_num(value)


def invalidator_rows(ev: Evaluation) -> list[dict[str, str]]:
    """Per invalidator: status word, observed vs threshold, what it blocks, detail."""
    rows = []
    for inv in ev.invalidators:
        rows.append(
            {
                "id": inv.id,
                "kind": inv.kind,
                "status": "FIRED" if inv.fired else "not fired",
                "observed": _observed(inv.observed),
                "threshold": _observed(inv.threshold),
                "blocks": ", ".join(inv.blocks) if inv.blocks else "no gate",
                "detail": inv.detail,
            }
        )
    return rows


def note_lines(ev: Evaluation) -> list[str]:
    """Every gate note and estimator warning, each prefixed by its gate."""
    lines = []
    for g in ev.gates:
        lines += [f"{g.id}: {n}" for n in g.notes + [d for d in [pt.direction_note(g)] if d]]
        lines += [f"{g.id}: estimator warning: {w}" for w in g.warnings]
    return lines


def block_rows(ev: Evaluation) -> list[dict[str, Any]]:
    """Per block: label, each gate's contrast with units, each metric's arm values."""
    gates = {g.id: g for g in ev.gates}
    rows = []
    for b in ev.blocks:
        contrasts = [(gid, with_unit(v, gates[gid]) if gid in gates else fmt_num(v)) for gid, v in b.contrasts.items()]
        values = [
            (metric, ", ".join(f"{arm} {fmt_num(v)}" for arm, v in arms.items())) for metric, arms in b.values.items()
        ]
        rows.append({"block": b.block, "replicate": str(b.replicate), "contrasts": contrasts, "values": values})
    return rows
