"""The words and numbers of the controller study's report, shared by terminal, Markdown and HTML.

Nothing here draws: each function turns part of an ``Evaluation`` (comparator, held-out families,
ranking) into strings. A ranking cell's sampling interval and its infrastructure spread are always
two separate strings. An artifact without these fields gives nothing (``has_controller`` is false).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gates.numbers import as_float
from reports.words.evaluation import EVIDENCE_WORDS, fmt_num, fmt_pct
from reports.words.palette import DECISION_WORDS, RANKING_WORDS, VERDICT_WORDS

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult
    from gates.artifact_families import FamilyGate, FamilyResult, InfrastructureSpread, RankingCell

DESCRIPTIVE_METRICS = ("completion_time", "replayed_tokens", "energy", "wan_bytes")
YARDSTICK = "yardstick, not a gate"
HELD_OUT_SENTENCE = "The held-out strata never entered the choice: the rule read the calibration runs only."
SEPARATE_SENTENCE = (
    "Each cell's sampling interval (over its pairs) and its infrastructure spread (the contrast "
    "fitted at the lowest and highest drawn value) are separate uncertainties, shown apart and "
    "never combined into one number."
)


def has_controller(ev: Evaluation) -> bool:
    """Whether the artifact is a controller study's (a comparator, per-family results or a ranking)."""
    return ev.comparator is not None or bool(ev.families) or bool(ev.ranking)


def _arms(ev: Evaluation) -> tuple[str | None, str | None]:
    """(challenger, comparator arm) as the artifact names them."""
    c = ev.comparator
    return (c.challenger, c.arm) if c is not None else (None, None)


def ranking_meaning(cell: RankingCell, ev: Evaluation) -> str:
    """What a ranking word means in this study ('adaptive is better than local16')."""
    challenger, arm = _arms(ev)
    challenger, arm = challenger or "the challenger", arm or "the comparator"
    return {
        "challenger": f"{challenger} is better than {arm}",
        "comparator": f"{arm} is better than {challenger}",
        "flip": "the order changes across the region",
        "abstain": "no ranking: the evidence cannot order them",
    }[cell.ranking]


# --- the comparator ----------------------------------------------------------------------------------


def comparator_chosen(ev: Evaluation) -> str:
    """The choice in one sentence: the chosen arm, or that none could be chosen and why."""
    c = ev.comparator
    if c is None:
        return "No comparator choice is recorded in this artifact."
    if c.arm is None:
        why = "; ".join(r.reason for r in c.refused_by) or "no reason recorded"
        return f"No comparator could be chosen: {why}. The gates against it make no claim either way."
    return f"Chosen comparator: {c.arm}, the fixed arm the challenger {c.challenger} is judged against."


def comparator_lines(ev: Evaluation) -> list[str]:
    """The rule in words, the tie, the runs and strata used, and the held-out sentence."""
    c = ev.comparator
    if c is None:
        return []
    lines = [f"Rule (frozen before any data): {c.rule}."]
    if c.ties_broken_by:
        lines.append(f"A tie on {c.metric} was broken by {c.ties_broken_by}.")
    elif c.arm is not None:
        best = "lowest" if c.better == "lower" else "highest"
        lines.append(f"No tie: {c.arm} had the {best} {c.statistic} {c.metric} outright.")
    lines.append(
        f"Calibration: {c.runs_used} runs of the candidates on {len(c.calibration_strata)} strata"
        + (f" ({'; '.join(c.calibration_strata)})" if c.calibration_strata else "")
        + "."
    )
    lines.append(HELD_OUT_SENTENCE)
    return lines


def comparator_table(ev: Evaluation) -> tuple[list[str], list[list[str]]]:
    """(header, rows): each candidate's calibration values of the selection and tie-break metrics."""
    c = ev.comparator
    if c is None or not c.values:
        return [], []
    metrics: list[str] = []
    for values in c.values.values():
        metrics += [m for m in values if m not in metrics]
    header = [
        "candidate",
        *(f"{c.statistic} {m}" + (" (selects)" if m == c.metric else " (tie-break)") for m in metrics),
        "chosen",
    ]
    rows = [
        [arm, *(fmt_num(values.get(m)) for m in metrics), "CHOSEN" if arm == c.arm else ""]
        for arm, values in c.values.items()
    ]
    return header, rows


# --- one family --------------------------------------------------------------------------------------


def _pooled(ev: Evaluation, gate_id: str) -> GateResult | None:
    return next((g for g in ev.gates if g.id == gate_id), None)


def _value(x: Any, scale: str, unit: str = "") -> str:
    text = fmt_num(x)
    v = as_float(x)
    if v is None:
        return text
    if scale == "ratio":
        return text if math.isinf(v) else f"{text}x"
    return f"{text} {unit}".rstrip()


def _interval(estimate: Any, lower: Any, upper: Any, scale: str, unit: str = "") -> str:
    if lower is None or upper is None:
        return f"{_value(estimate, scale, unit)} [no interval]"
    ends = (
        f"[{_value(lower, scale)}, {_value(upper, scale)}]"
        if scale == "ratio"
        else f"[{fmt_num(lower)}, {fmt_num(upper)}]"
    )
    return f"{_value(estimate, scale, unit)} {ends}"


def family_gate_parts(fg: FamilyGate, ev: Evaluation) -> tuple[str, str]:
    """(verdict word, the rest): ('FAIL', ' 1.18x [1.07x, 1.3x] (90%, 6 pairs)'); refused: its reasons only."""
    word = VERDICT_WORDS.get(fg.verdict, fg.verdict.upper())
    if fg.verdict == "refused":
        return word, ": " + (
            "; ".join(r.reason for r in fg.refused_by) or "no reason recorded"
        ) + " (no claim either way)"
    if fg.verdict == "unresolvable":
        return word, f": the instrument cannot resolve its margin ({fg.n_pairs} pairs)"
    pooled = _pooled(ev, fg.id)
    scale, unit = (pooled.scale, pooled.unit) if pooled is not None else ("difference", "")
    rest = f" {_interval(fg.estimate, fg.lower, fg.upper, scale, unit)} ({fmt_pct(fg.confidence)}, {fg.n_pairs} pairs)"
    return word, rest + (" (could not have failed)" if fg.verdict == "vacuous" else "")


def family_gate_text(fg: FamilyGate, ev: Evaluation) -> str:
    """'faster_than_comparator FAIL 1.18x [1.07x, 1.3x] (90%, 6 pairs)'."""
    word, rest = family_gate_parts(fg, ev)
    return f"{fg.id} {word}{rest}"


def _units(ev: Evaluation) -> dict[str, str]:
    return {g.metric: g.unit for g in ev.gates}


def descriptive_lines(fam: FamilyResult, ev: Evaluation) -> list[str]:
    """Descriptive medians of a few metrics, challenger vs comparator (a ratio, or a difference at zero)."""
    challenger, arm = _arms(ev)
    units = _units(ev)
    lines = []
    # the controller collectors' usual metrics when the plan has them, else every metric it declares
    shown = [m for m in DESCRIPTIVE_METRICS if m in fam.medians] or list(fam.medians)
    for metric in shown:
        per_arm = fam.medians.get(metric)
        if not per_arm:
            continue
        unit = units.get(metric, "")
        if challenger not in per_arm or arm not in per_arm:
            lines.append(f"{metric}: " + ", ".join(f"{a} {_value(v, 'difference', unit)}" for a, v in per_arm.items()))
            continue
        a, b = as_float(per_arm[challenger]), as_float(per_arm[arm])
        text = f"{metric}: {challenger} {_value(a, 'difference', unit)} vs {arm} {_value(b, 'difference', unit)}"
        if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
            ratio = a > 0 and b > 0
            text += f" (ratio {fmt_num(a / b)}x)" if ratio else f" (difference {_value(a - b, 'difference', unit)})"
        lines.append(text)
    return lines


def hindsight_text(fam: FamilyResult, ev: Evaluation) -> str:
    """The best fixed arm in hindsight on this family, against the comparator and the challenger."""
    h = fam.hindsight
    if h is None:
        return f"no hindsight yardstick recorded ({YARDSTICK})"
    challenger, arm = _arms(ev)
    unit = _units(ev).get(h.metric, "")
    best = h.best_arm or "none"
    parts = [
        f"best fixed arm in hindsight ({YARDSTICK}): {best}"
        + (f" {_value(h.values.get(best), 'difference', unit)}" if h.best_arm else "")
    ]
    for label, name in (("comparator", arm), ("challenger", challenger)):
        if name is not None and name in h.values:
            parts.append(f"{label} {name} {_value(h.values[name], 'difference', unit)}")
    text = f"{h.statistic} {h.metric}: " + "; ".join(parts)
    if h.best_arm and arm and h.best_arm == arm:
        text += " (the comparator is the hindsight best)"
    return text + (f"; {h.note}" if h.note else "")


def region_label(cell: RankingCell) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.region.items()) or "whole family"


def family_cells(fam: FamilyResult, ev: Evaluation) -> list[RankingCell]:
    return [c for c in ev.ranking if str(c.family) == str(fam.family)]


def region_summary(fam: FamilyResult, ev: Evaluation) -> str:
    cells = family_cells(fam, ev)
    if not cells:
        return "no ranking cells"
    return "; ".join(f"{region_label(c)}: {RANKING_WORDS[c.ranking]}" for c in cells)


@dataclass
class FamilyRow:
    """One held-out family's row of the ledger, as strings."""

    family: str
    decision: str
    decision_word: str
    reason: str
    blocks: int
    gates: list[str]
    gate_parts: list[tuple[str, str, str]]  # (gate id, verdict word, the rest), for renderers that style the word
    descriptive: list[str]
    hindsight: str
    regions: str
    invalidators: list[str]


def family_rows(ev: Evaluation) -> list[FamilyRow]:
    rows = []
    for fam in ev.families:
        rows.append(
            FamilyRow(
                family=str(fam.family),
                decision=fam.decision,
                decision_word=DECISION_WORDS[fam.decision],
                reason=fam.decision_reason,
                blocks=fam.blocks,
                gates=[family_gate_text(g, ev) for g in fam.gates],
                gate_parts=[(g.id, *family_gate_parts(g, ev)) for g in fam.gates],
                descriptive=descriptive_lines(fam, ev),
                hindsight=hindsight_text(fam, ev),
                regions=region_summary(fam, ev),
                invalidators=[f"invalidator {i} fired on this family's runs" for i in fam.invalidators_fired],
            )
        )
    return rows


DESCRIPTIVE_NOTE = "medians over the family's held-out runs: descriptive, not tests"


# --- the ranking -------------------------------------------------------------------------------------


def sampling_text(cell: RankingCell, ev: Evaluation) -> str:
    """The paired interval over the cell's pairs: '1.12x [1.06x, 1.18x]; 3 pairs, t, 90%'."""
    unit = _units(ev).get(cell.metric, "")
    if cell.estimate is None:
        numbers = "no interval"
    else:
        numbers = _interval(cell.estimate, cell.lower, cell.upper, cell.scale, unit)
    text = f"{numbers}; {cell.n_pairs} pairs, {cell.method}, {fmt_pct(cell.confidence)}"
    if cell.pvalue is not None:
        text += f", p {cell.pvalue:.3g}"
    if cell.adjusted_confidence is None or cell.pvalue_adjusted is None:
        return text
    return (
        f"{text}; {CONTROL_WORDS.get(cell.error_control or '', 'adjusted')} over {cell.cells_tested} cells: "
        f"{_interval(cell.estimate, cell.adjusted_lower, cell.adjusted_upper, cell.scale, unit)} at "
        f"{fmt_pct(cell.adjusted_confidence)}, adjusted p {cell.pvalue_adjusted:.3g}"
    )


CONTROL_WORDS = {"holm": "Holm", "bonferroni": "Bonferroni band"}


def control_sentence(ev: Evaluation) -> str:
    """How the ranking holds its error over cells, in one sentence ('' for artifacts without the field)."""
    c = ev.ranking[0] if ev.ranking else None
    if c is None or c.error_control is None:
        return ""
    alpha = fmt_pct(1 - c.confidence)
    if c.error_control == "per_cell":
        return (
            f"Each cell is judged alone at {fmt_pct(c.confidence)}: over {c.cells_tested} tested cells the chance "
            f"that some cell is ordered by chance alone exceeds {alpha}."
        )
    how = "Holm's step-down" if c.error_control == "holm" else "a Bonferroni band (every cell at the same level)"
    return (
        f"The chance of ordering any cell where there is no difference is held at {alpha} over the "
        f"{c.cells_tested} tested cells by {how}: each cell is judged at its adjusted level, split over its "
        "claims (the paired order and a flip per region factor); its interval at that level is shown beside "
        "the unadjusted one."
    )


def _log_fit(spread: InfrastructureSpread) -> bool:
    """Whether the line was fitted on log(parameter): as recorded, or (artifacts written before the
    field existed) as gates decides it, on the log of positive draws."""
    if spread.log_scale is not None:
        return spread.log_scale
    return bool(spread.drawn) and all(x > 0 for x in spread.drawn)


def spread_text(spread: InfrastructureSpread, cell: RankingCell, ev: Evaluation) -> str:
    """Where the drawn infrastructure fell and the contrast fitted at the two ends."""
    unit = _units(ev).get(cell.metric, "")
    if spread.drawn:
        drawn = (
            f"{spread.parameter} drawn {fmt_num(min(spread.drawn))} to {fmt_num(max(spread.drawn))} "
            f"({len(spread.drawn)} draws)"
        )
    else:
        drawn = f"{spread.parameter}: no drawn values recorded"
    parts = [drawn]
    for label, end in (("low end", spread.low_end), ("high end", spread.high_end)):
        if end is not None:
            parts.append(
                f"fitted at {label} {fmt_num(end.at)}: "
                + _interval(end.estimate, end.lower, end.upper, cell.scale, unit)
            )
    if spread.low_end is None and spread.high_end is None:
        parts.append("no fitted contrast")
    if spread.note:
        parts.append(spread.note)
    return "; ".join(parts)


def infrastructure_lines(cell: RankingCell, ev: Evaluation) -> list[str]:
    """One line per region factor's spread ('none recorded' when the cell has none)."""
    if not cell.infrastructure:
        return ["none recorded"]
    return [spread_text(s, cell, ev) for s in cell.infrastructure]


@dataclass
class RankingRow:
    """One family x region cell, as strings (sampling and infrastructure kept apart)."""

    family: str
    region: str
    ranking: str
    word: str
    meaning: str
    sampling: str
    infrastructure: list[str]
    reason: str
    abstain: bool


def ranking_rows(ev: Evaluation) -> list[RankingRow]:
    return [
        RankingRow(
            family=str(c.family),
            region=region_label(c),
            ranking=c.ranking,
            word=RANKING_WORDS[c.ranking],
            meaning=ranking_meaning(c, ev),
            sampling=sampling_text(c, ev),
            infrastructure=infrastructure_lines(c, ev),
            reason=c.reason,
            abstain=c.ranking == "abstain",
        )
        for c in ev.ranking
    ]


def ranking_intro(ev: Evaluation) -> str:
    c = ev.ranking[0] if ev.ranking else None
    if c is None:
        return ""
    return (
        f"The order of the challenger and the comparator on {c.metric} ({c.contrast}, {c.scale}) per held-out "
        f"family and uncertainty region. {SEPARATE_SENTENCE}"
        + (f" {control_sentence(ev)}" if control_sentence(ev) else "")
    )


# --- assumptions, uncertainty and missing evidence -----------------------------------------------------


def _counts(values: list[int]) -> str:
    distinct = sorted(set(values))
    return str(distinct[0]) if len(distinct) == 1 else f"{distinct[0]} to {distinct[-1]}"


def assumption_lines(ev: Evaluation) -> list[str]:
    """What the controller conclusions assume, how uncertain they are and what evidence is missing."""
    if not has_controller(ev):
        return []
    lines = []
    c = ev.comparator
    if c is not None:
        if c.arm is None:
            lines.append(
                f"No comparator could be chosen ({'; '.join(r.reason for r in c.refused_by) or 'no reason recorded'}): "
                "every contrast against it is missing evidence."
            )
        else:
            lines.append(
                f"The comparator ({c.arm}) was chosen on {len(c.calibration_strata)} calibration strata "
                f"only ({c.runs_used} runs), by {c.statistic} {c.metric}; the held-out strata never "
                "entered the choice."
            )
    if ev.families:
        pairs = [g.n_pairs for f in ev.families for g in f.gates]
        lines.append(
            f"Each of the {len(ev.families)} held-out families is judged alone on its own pairs: "
            f"{_counts(pairs) if pairs else 0} pairs per gate, so per-family intervals are wider than "
            "the pooled ones."
        )
    if ev.ranking:
        lines.append(f"Each ranking region rests on {_counts([r.n_pairs for r in ev.ranking])} pairs.")
    classes: dict[str, list[str]] = {}
    for g in ev.gates:
        classes.setdefault(EVIDENCE_WORDS.get(g.evidence, g.evidence), []).append(f"{g.id} ({g.metric})")
    if classes:
        lines.append(
            "Evidence class of each gate: " + "; ".join(f"{w}: {', '.join(ids)}" for w, ids in classes.items()) + "."
        )
    metric = ev.ranking[0].metric if ev.ranking else None
    ranked = next((g for g in ev.gates if g.metric == metric), None)
    if ranked is not None and ranked.evidence != "measured":
        lines.append(
            f"The ranking metric {metric} is {EVIDENCE_WORDS.get(ranked.evidence, ranked.evidence)} "
            "evidence: the infrastructure behind every ranking cell is modeled, not measured."
        )
    abstain = [f"{r.family} / {region_label(r)}" for r in ev.ranking if r.ranking == "abstain"]
    if ev.ranking:
        lines.append(
            f"Cells that abstain ({len(abstain)} of {len(ev.ranking)}): " + (", ".join(abstain) or "none") + "."
        )
    flips = [f"{r.family} / {region_label(r)}" for r in ev.ranking if r.ranking == "flip"]
    if flips:
        lines.append("Cells whose order flips across their region: " + ", ".join(flips) + ".")
    refused = [f"{f.family} ({f.decision_reason})" for f in ev.families if f.decision == "refused"]
    if ev.families:
        lines.append("Families refused: " + ("; ".join(refused) if refused else "none") + ".")
    fired = [f"{f.family}: {', '.join(f.invalidators_fired)}" for f in ev.families if f.invalidators_fired]
    if fired:
        lines.append("Invalidators fired per family: " + "; ".join(fired) + ".")
    spreads = [(s, r.n_pairs) for r in ev.ranking for s in r.infrastructure]
    if spreads:
        n = _counts([k for _, k in spreads])
        logs = {_log_fit(s) for s, _ in spreads}
        line = (
            "in log(parameter)" if logs == {True} else "in the parameter (its log where every drawn value is positive)"
        )
        df = _counts([max(k - 2, 0) for _, k in spreads])
        lines.append(
            f"The flip test fits a straight line {line} over each cell's {n} pairs (df n-2 = {df}); "
            "it reads the drawn infrastructure, not a designed sweep, so few draws make its ends uncertain."
        )
    if ev.families:
        lines.append(
            f"The best fixed arm in hindsight is a {YARDSTICK}: it was picked after seeing each family's "
            "runs and decides nothing. The medians per family are descriptive, not tests."
        )
    return lines
