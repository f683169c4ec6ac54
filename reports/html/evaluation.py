"""The HTML report's sections that come from the evaluation artifact alone (``templates/evaluation.html``).

The words are those ``reports show`` prints (:mod:`reports.words`), so the page says exactly what
the terminal says; colour only repeats a word. Refused and unresolvable gates keep their numbers
out of the gate tables and the forest plot of evidence: they appear only under Diagnostics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from markupsafe import Markup

from reports.data.axes import block_points, gate_axis, widened_interval
from reports.html.render import macro
from reports.html.svg import forest_row, strata_plot
from reports.words import decision as dt
from reports.words import evaluation as et
from reports.words import provenance as pt
from reports.words import runs as rt
from reports.words.phase_support import phase_support_lines
from reports.words.reading import reading_lines

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

TEMPLATE = "evaluation.html"


def decision_section(ev: Evaluation) -> Markup:
    """The decision in words, the evidence classes, scope, notices, amendments and predecessors."""
    classes: dict[str, list[str]] = {}
    for g in et.primary_gates(ev):
        classes.setdefault(et.gate_view(g, ev).evidence, []).append(g.id)
    predecessors = [(s, line, p) for (s, line), p in zip(et.predecessor_lines(ev), ev.predecessors, strict=True)]
    return macro(TEMPLATE, "decision_section")(
        ev,
        *dt.decision_sentence(ev),
        dt.modeled_note(ev),
        classes,
        dt.scope_text(ev),
        pt.provenance_lines(ev, limit=None),
        [(a, et.amendment_flag(a)) for a in ev.amendments],
        predecessors,
    )


def gates_table(ev: Evaluation, gates: list[GateResult], table_id: str, caption: str) -> Markup:
    return macro(TEMPLATE, "gates_table")([et.gate_view(g, ev) for g in gates], table_id, caption)


def group_tallies(ev: Evaluation) -> Markup:
    return macro(TEMPLATE, "group_tallies")(et.group_lines(ev))


def forest_figure(
    ev: Evaluation,
    gates: list[GateResult],
    prefix: str,
    *,
    diagnostic: bool = False,
    table_name: str = "the gates table above",
) -> Markup:
    """One panel per gate, each on its own axis; refused and unresolvable gates only in the diagnostic figure."""
    if not gates:
        return Markup()
    panels: list[tuple[et.GateView, Markup | None, str]] = []
    for i, g in enumerate(gates):
        v = et.gate_view(g, ev)
        if not diagnostic and g.verdict in ("refused", "unresolvable"):
            panels.append((v, None, et.VERDICT_MEANINGS[g.verdict]))
            continue
        points = [value for _, value in block_points(g, ev.blocks)]
        panels.append((v, forest_row(g, gate_axis(g, points), points, uid=f"{prefix}-{i}", diagnostic=diagnostic), ""))
    what = (
        "Diagnostic forest rows (not evidence): each refused or unresolvable gate on its own axis, in grey"
        if diagnostic
        else "Forest plot: each gate on its own axis (gates compare different metrics)"
    )
    widened = any(widened_interval(g) is not None for g in gates)
    note = "DIAGNOSTIC, not evidence" if diagnostic else ""
    return macro(TEMPLATE, "forest_figure")(prefix, what, table_name, widened, panels, note)


def strata_details(ev: Evaluation, gates: list[GateResult], prefix: str) -> Markup:
    """Per gate, a collapsed figure of every block's paired contrast on the gate's axis, and its table."""
    out = []
    for i, g in enumerate(gates):
        labelled = block_points(g, ev.blocks)
        if not labelled:
            continue
        rows = []
        for b in ev.blocks:
            if g.id in b.contrasts:
                value, arms = b.contrasts[g.id], b.values.get(g.metric, {})
                per_arm = ", ".join(f"{arm} {et.fmt_num(x)}" for arm, x in arms.items()) or "-"
                rows.append((b.block, et.with_unit(value, g), et.fmt_num(value), per_arm))
        svg = strata_plot(g, gate_axis(g, [value for _, value in labelled]), labelled, uid=f"{prefix}-{i}")
        diag = " (diagnostic, not evidence)" if g.verdict in ("refused", "unresolvable") else ""
        averaged = ""
        if g.analysis_unit == "stratum" and any(b.replicate for b in ev.blocks):
            averaged = (
                " The gate pairs one contrast per stratum, its replicates' contrasts averaged"
                + (" on the log scale" if g.scale == "ratio" else "")
                + "; the points are the blocks (stratum and replicate) before that average."
            )
        out.append(macro(TEMPLATE, "strata_details")(g, diag, len(rows), et.contrast_text(g), averaged, svg, rows))
    return Markup().join(out)


def invalidators_section(ev: Evaluation) -> Markup:
    return macro(TEMPLATE, "invalidators_section")(et.invalidator_rows(ev))


def failed_runs_section(ev: Evaluation) -> Markup:
    """Every failed run: its reason and its stderr's last lines ('' when none failed)."""
    if not ev.failed_runs:
        return Markup()
    items = [(rt.failed_run_head(f), f.stderr_tail, f.cell_complete) for f in ev.failed_runs]
    return macro(TEMPLATE, "failed_runs_section")(items)


def descriptive_section(ev: Evaluation) -> Markup:
    """Every metric per arm, descriptive (not a test); '' when the artifact has none."""
    if not ev.descriptive_metrics:
        return Markup()
    metrics = [(*rt.metric_label(m), rows) for m, rows in rt.descriptive_rows(ev)]
    return macro(TEMPLATE, "descriptive_section")(
        rt.DESCRIPTIVE_COLUMNS, metrics, rt.DESCRIPTIVE_TITLE, rt.descriptive_note(ev)
    )


def phase_support_section(ev: Evaluation) -> Markup:
    """The meter's support per phase (the terminal's "Meter support by phase"), or '' without data."""
    lines = phase_support_lines(ev)
    if not lines:
        return Markup()
    head = [] if lines[0].startswith("- ") else [lines.pop(0)]
    return macro(TEMPLATE, "phase_support_section")(head, [line[2:] for line in lines])


def diagnostics_section(ev: Evaluation) -> Markup:
    gates = et.diagnostic_gates(ev)
    if not gates:
        return Markup()
    items = []
    for g in gates:
        v = et.gate_view(g, ev)
        facts = [("refused", r) for r in v.refused_by] + ([("resolution", v.resolution)] if v.resolution else [])
        widened = widened_interval(g)
        if widened is not None:
            facts.append(("widened by the meter's bounds", f"[{et.fmt_num(widened[0])}, {et.fmt_num(widened[1])}]"))
        facts += [
            ("arm medians", v.arm_medians),
            ("estimate (diagnostic)", f"{v.estimate}, {v.interval}"),
            ("rule (diagnostic)", f"{v.rule}; {v.test}" + (f"; {v.p}" if v.p else "")),
        ]
        items.append((v, facts))
    figure = forest_figure(ev, gates, "forest-diagnostic", diagnostic=True, table_name="the facts listed above")
    return macro(TEMPLATE, "diagnostics_section")(items, figure, strata_details(ev, gates, "strata-diagnostic"))


def notes_and_reading(ev: Evaluation) -> list[tuple[str, str, Markup]]:
    """(anchor, heading, body) of the notes (when any) and the reading guide."""
    out = []
    notes = et.note_lines(ev)
    if notes:
        out.append(("notes", "Notes and estimator warnings", macro("macros.html", "bullets")(notes)))
    reading = macro(TEMPLATE, "reading")(reading_lines(ev), et.VERDICT_MEANINGS)
    return [*out, ("reading", "How to read the verdicts", reading)]
