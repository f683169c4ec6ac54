"""The HTML report's sections that come from the evaluation artifact alone.

The words are :mod:`reports.words.evaluation`'s, :mod:`reports.words.provenance`'s and
:mod:`reports.words.reading`'s, the ones the terminal and Markdown reports print, so the page says
exactly what ``reports show`` says; colour only repeats a word. Every string from the artifact
passes through :func:`reports.html.svg.esc`. Refused and unresolvable gates keep their numbers
out of the gate tables and the forest plot of evidence: they appear only in the dashed
"Diagnostics, not evidence" box.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reports.html.axes import block_points, gate_axis, widened_interval
from reports.html.svg import MARGIN_COLOUR, NULL_COLOUR, TEXT_COLOUR, esc, forest_row, strata_plot
from reports.words import decision as dt
from reports.words import evaluation as et
from reports.words import provenance as pt
from reports.words import runs as rt
from reports.words.palette import VERDICT_COLOURS, VERDICT_WORDS
from reports.words.phase_support import phase_support_lines
from reports.words.reading import reading_lines

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

NUM = ' class="num"'
GATE_COLUMNS = (
    "verdict",
    "gate",
    "metric, evidence",
    "contrast",
    "estimate",
    "interval",
    "rule",
    "method, n",
    "p",
    "group",
)


def badge(verdict: str) -> str:
    return f'<span class="badge v-{esc(verdict)}">{esc(VERDICT_WORDS[verdict])}</span>'


def cell(label: str, content: str, cls: str = "", sort: str | None = None) -> str:
    """A ``<td>`` whose label shows before it when the table is stacked on a narrow screen."""
    extra = f' class="{cls}"' if cls else ""
    extra += f' data-sort="{esc(sort)}"' if sort is not None else ""
    return f'<td data-label="{esc(label)}"{extra}>{content}</td>'


def table(
    head: list[str],
    rows: list[str],
    *,
    cls: str = "",
    caption: str = "",
    table_id: str = "",
    num: set[int] | None = None,
) -> str:
    """A table (rows already built) in a scroll region, so it never widens a narrow page."""
    numeric = num or set()
    ths = "".join(f'<th scope="col"{NUM if i in numeric else ""}>{esc(h)}</th>' for i, h in enumerate(head))
    ident = f' id="{table_id}"' if table_id else ""
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    label = esc(caption or (head[0] if head else "table"))
    return (
        f'<div class="scroll" role="region" tabindex="0" aria-label="{label}"><table{ident} class="{cls}">{cap}'
        f"<thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def bullets(lines: list[str], cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f"<ul{klass}>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"


# --- decision --------------------------------------------------------------------------------------


def decision_section(ev: Evaluation) -> str:
    """The decision in words, the evidence classes, scope, notices, amendments and predecessors."""
    word, rest = dt.decision_sentence(ev)
    parts = [
        f'<p id="decision-text" class="decision decision-{esc(ev.decision)}"><span class="word">{esc(word)}'
        f"</span>{esc(rest)}</p>"
    ]
    modeled = dt.modeled_note(ev)
    if modeled:
        parts.append(f'<p class="notice"><strong>{esc(modeled)}</strong></p>')
    classes: dict[str, list[str]] = {}
    for g in et.primary_gates(ev):
        classes.setdefault(et.gate_view(g, ev).evidence, []).append(g.id)
    if classes:
        parts.append("<p>Evidence class of each primary gate, in words:</p>")
        parts.append(
            "<ul>"
            + "".join(
                f"<li><strong>{esc(words)}</strong>: {esc(', '.join(ids))}</li>" for words, ids in classes.items()
            )
            + "</ul>"
        )
    parts.append(f"<p>{esc(dt.scope_text(ev))}</p>")
    for label, text, alarm in pt.provenance_lines(ev, limit=None):
        parts.append(f'<p class="{"alarm" if alarm else "notice"}"><strong>{esc(label)}</strong>: {esc(text)}</p>')
    parts.append('<h3 id="amendments">Amendments</h3>')
    if not ev.amendments:
        parts.append("<p>Amended: never (the plan as first frozen).</p>")
    else:
        items = []
        for a in ev.amendments:
            flag = et.amendment_flag(a)
            flag_html = f'<strong class="bad">{esc(flag)}</strong>' if a.post_data else esc(flag)
            items.append(f"<li>v{a.version} {esc(a.amended_at)}: {flag_html} (&ldquo;{esc(a.reason)}&rdquo;)</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    parts.append('<h3 id="predecessors">Predecessors</h3>')
    rows = et.predecessor_lines(ev)
    if not rows:
        parts.append("<p>Predecessors: none.</p>")
    else:
        items = []
        for (status, line), p in zip(rows, ev.predecessors, strict=True):
            cls = "" if status == "VERIFIED" else ' class="bad"'
            items.append(
                f"<li><strong{cls}>{esc(status)}</strong> {esc(line)}<br>"
                f'<span class="muted">stated sha256</span> <span class="hash">{esc(p.sha256)}</span>'
                + (
                    f'<br><span class="muted">the file now has</span> <span class="hash">{esc(p.actual_sha256)}</span>'
                    if p.actual_sha256
                    else ""
                )
                + "</li>"
            )
        parts.append("<ul>" + "".join(items) + "</ul>")
    return "".join(parts)


# --- gates -----------------------------------------------------------------------------------------


def gate_rows(ev: Evaluation, gates: list[GateResult]) -> list[str]:
    rows = []
    for g in gates:
        v = et.gate_view(g, ev)
        verdict = badge(v.verdict) + (
            ' <span class="muted">(could not have failed)</span>' if v.verdict == "vacuous" else ""
        )
        gate = f'<code>{esc(v.id)}</code> <span class="muted">{esc(v.role)}</span>'
        if v.is_evidence:
            estimate, interval, p = esc(v.estimate), esc(v.interval), esc(v.p or "none")
        else:
            estimate = '<a href="#diagnostics">see Diagnostics, not evidence</a>'
            interval, p = esc(v.meaning), "see Diagnostics"
        cells = [
            cell("verdict", verdict),
            cell("gate", gate),
            cell("metric, evidence", esc(f"{v.metric}, {v.evidence}")),
            cell("contrast", esc(v.contrast)),
            cell("estimate", estimate),
            cell("interval", interval),
            cell("rule", esc(v.rule)),
            cell("method, n", esc(v.test)),
            cell("p", p),
            cell("group", esc(v.group or "-")),
        ]
        rows.append(f'<tr data-gate="{esc(v.id)}" data-verdict="{esc(v.verdict)}">' + "".join(cells) + "</tr>")
    return rows


def gates_table(ev: Evaluation, gates: list[GateResult], table_id: str, caption: str) -> str:
    return table(list(GATE_COLUMNS), gate_rows(ev, gates), cls="stack", caption=caption, table_id=table_id)


def group_tallies(ev: Evaluation) -> str:
    lines = et.group_lines(ev)
    if not lines:
        return ""
    return "<p><strong>Groups</strong>: " + "; ".join(esc(line) for line in lines) + "</p>"


def _swatch(body: str, width: int = 26) -> str:
    return f'<svg width="{width}" height="14" aria-hidden="true" focusable="false">{body}</svg>'


def legend(widened: bool) -> str:
    items = [
        (_swatch(f'<rect x="1" y="3" width="24" height="8" fill="{TEXT_COLOUR}"/>'), "interval (bar)"),
        (_swatch('<path d="M13,1 L19,7 L13,13 L7,7 Z" fill="#000"/>'), "estimate (diamond)"),
        (
            _swatch(
                f'<line x1="13" x2="13" y1="0" y2="14" stroke="{MARGIN_COLOUR}" stroke-width="2" '
                'stroke-dasharray="4 2"/>'
            ),
            "margin: the frozen rule's threshold (dashed)",
        ),
        (
            _swatch(
                f'<line x1="13" x2="13" y1="0" y2="14" stroke="{NULL_COLOUR}" stroke-width="1.5" '
                'stroke-dasharray="2 3"/>'
            ),
            "null: no difference, 0 or 1x (dotted)",
        ),
        (
            _swatch(f'<circle cx="13" cy="7" r="4" fill="#fff" stroke="{TEXT_COLOUR}"/>'),
            "one stratum's paired contrast (circle)",
        ),
        (_swatch(f'<path d="M5,1 L19,7 L5,13 Z" fill="{TEXT_COLOUR}"/>'), "interval end at infinity (arrow)"),
    ]
    if widened:
        items.append(
            (
                _swatch(
                    f'<rect x="1" y="1" width="24" height="12" fill="#f6e7b4" '
                    f'stroke="{VERDICT_COLOURS["unresolvable"]}" stroke-dasharray="3 2"/>'
                ),
                "the interval widened by the meter's bounds (resolution check)",
            )
        )
    return '<ul class="legend">' + "".join(f"<li>{s}{esc(t)}</li>" for s, t in items) + "</ul>"


def _panel_title(ev: Evaluation, g: GateResult, note: str = "") -> str:
    v = et.gate_view(g, ev)
    extra = f" <strong>{esc(note)}</strong>" if note else ""
    return (
        f'<p class="panel-title"><span class="gid">{esc(v.id)}</span> {badge(v.verdict)}{extra} '
        f'<span class="muted">{esc(v.contrast)}; {esc(v.evidence)}</span></p>'
    )


def forest_figure(
    ev: Evaluation,
    gates: list[GateResult],
    prefix: str,
    *,
    diagnostic: bool = False,
    table_name: str = "the gates table above",
) -> str:
    """One panel per gate, each on its own axis; refused and unresolvable gates only in the diagnostic figure."""
    if not gates:
        return ""
    panels = []
    for i, g in enumerate(gates):
        if not diagnostic and g.verdict in ("refused", "unresolvable"):
            meaning = esc(et.VERDICT_MEANINGS[g.verdict])
            panels.append(
                f'<div class="panel">{_panel_title(ev, g)}<p class="muted">{meaning}: its numbers are '
                'diagnostics, not evidence, drawn only under <a href="#diagnostics">Diagnostics</a>.'
                "</p></div>"
            )
            continue
        points = [value for _, value in block_points(g, ev.blocks)]
        svg = forest_row(g, gate_axis(g, points), points, uid=f"{prefix}-{i}", diagnostic=diagnostic)
        note = "DIAGNOSTIC, not evidence" if diagnostic else ""
        panels.append(f'<div class="panel">{_panel_title(ev, g, note)}{svg}</div>')
    what = (
        "Diagnostic forest rows (not evidence): each refused or unresolvable gate on its own axis, in grey"
        if diagnostic
        else "Forest plot: each gate on its own axis (gates compare different metrics)"
    )
    widened = any(widened_interval(g) is not None for g in gates)
    return (
        f'<figure id="{prefix}"><figcaption>{esc(what)}; ratio axes are logarithmic and labelled also as % '
        f"change. Text equivalent: {esc(table_name)} (same numbers).</figcaption>"
        f"{legend(widened)}{''.join(panels)}</figure>"
    )


def strata_details(ev: Evaluation, gates: list[GateResult], prefix: str) -> str:
    """Per gate, a collapsed figure of every block's paired contrast on the gate's axis, and its table."""
    out = []
    for i, g in enumerate(gates):
        labelled = block_points(g, ev.blocks)
        if not labelled:
            continue
        points = [value for _, value in labelled]
        axis = gate_axis(g, points)
        rows = []
        for b in ev.blocks:
            if g.id not in b.contrasts:
                continue
            value = b.contrasts[g.id]
            arms = b.values.get(g.metric, {})
            rows.append(
                "<tr>"
                + cell("block", esc(b.block))
                + cell("contrast", esc(et.with_unit(value, g)), "num", sort=et.fmt_num(value))
                + cell(
                    f"{g.metric} per arm", esc(", ".join(f"{arm} {et.fmt_num(x)}" for arm, x in arms.items()) or "-")
                )
                + "</tr>"
            )
        svg = strata_plot(g, axis, labelled, uid=f"{prefix}-{i}")
        diag = " (diagnostic, not evidence)" if g.verdict in ("refused", "unresolvable") else ""
        listing = table(
            ["block", "contrast", f"{g.metric} per arm"],
            rows,
            cls="sortable",
            num={1},
            caption=f"Paired contrasts of {g.id}",
        )
        replicated = g.analysis_unit == "stratum" and any(b.replicate for b in ev.blocks)
        averaged = (
            (
                " The gate pairs one contrast per stratum, its replicates' contrasts averaged"
                + (" on the log scale" if g.scale == "ratio" else "")
                + "; the points are the blocks (stratum and replicate) before that average."
            )
            if replicated
            else ""
        )
        out.append(
            f"<details><summary>Per-stratum paired contrasts of <code>{esc(g.id)}</code>{esc(diag)}: "
            f"{len(rows)} blocks</summary>"
            f'<p class="muted">Which strata drive the result: each block\'s {esc(et.contrast_text(g))}, '
            f"the gate's interval shaded behind them.{esc(averaged)}</p>{svg}{listing}</details>"
        )
    return "".join(out)


def invalidators_section(ev: Evaluation) -> str:
    rows = et.invalidator_rows(ev)
    if not rows:
        return "<p>None in the plan.</p>"
    body = []
    for r in rows:
        status = f'<strong class="bad">{esc(r["status"])}</strong>' if r["status"] == "FIRED" else esc(r["status"])
        body.append(
            "<tr>"
            + cell("status", status)
            + cell("invalidator", f"<code>{esc(r['id'])}</code>")
            + cell("kind", esc(r["kind"]))
            + cell("observed", esc(r["observed"]), "num")
            + cell("threshold", esc(r["threshold"]), "num")
            + cell("refuses", esc(r["blocks"]))
            + cell("detail", esc(r["detail"]))
            + "</tr>"
        )
    return table(
        ["status", "invalidator", "kind", "observed", "threshold", "refuses", "detail"],
        body,
        cls="stack",
        caption="Invalidators: observed vs threshold",
        table_id="invalidators-table",
        num={3, 4},
    )


def failed_runs_section(ev: Evaluation) -> str:
    """Every failed run: its reason and its stderr's last lines ('' when none failed)."""
    if not ev.failed_runs:
        return ""
    items = []
    for f in ev.failed_runs:
        tail = "".join(f"<br><code>{esc(line)}</code>" for line in f.stderr_tail)
        cls = ' class="muted"' if f.cell_complete else ""
        items.append(f"<li{cls}>{esc(rt.failed_run_head(f))}{tail}</li>")
    return (
        "<p>Each failed run's reason (the ledger keeps the whole error) and the last lines of its "
        f"program's stderr.</p><ul>{''.join(items)}</ul>"
    )


def descriptive_section(ev: Evaluation) -> str:
    """Every metric per arm, descriptive (not a test); '' when the artifact has none."""
    if not ev.descriptive_metrics:
        return ""
    body = []
    for m, arm_rows in rt.descriptive_rows(ev):
        name, use = rt.metric_label(m)
        label = f'<code>{esc(name)}</code> <span class="muted">({esc(use)})</span>'
        for i, row in enumerate(arm_rows):
            cells = [
                cell(h, esc(c), "num" if j > 1 else "")
                for j, (h, c) in enumerate(zip(rt.DESCRIPTIVE_COLUMNS[1:], row, strict=True), start=1)
            ]
            body.append("<tr>" + cell("metric", label if i == 0 else "") + "".join(cells) + "</tr>")
    return (
        table(
            rt.DESCRIPTIVE_COLUMNS,
            body,
            cls="stack",
            caption=rt.DESCRIPTIVE_TITLE,
            table_id="descriptive-table",
            num={2, 3, 4, 5, 6},
        )
        + f'<p class="muted">{esc(rt.descriptive_note(ev))}</p>'
    )


def phase_support_section(ev: Evaluation) -> str:
    """The meter's support per phase (the terminal's "Meter support by phase"), or '' without data."""
    lines = phase_support_lines(ev)
    if not lines:
        return ""
    head = [] if lines[0].startswith("- ") else [lines.pop(0)]
    return "".join(f"<p>{esc(line)}</p>" for line in head) + bullets([line[2:] for line in lines])


def diagnostics_section(ev: Evaluation) -> str:
    gates = et.diagnostic_gates(ev)
    if not gates:
        return ""
    items = []
    for g in gates:
        v = et.gate_view(g, ev)
        facts = [("refused", r) for r in v.refused_by]
        if v.resolution:
            facts.append(("resolution", v.resolution))
        widened = widened_interval(g)
        if widened is not None:
            facts.append(("widened by the meter's bounds", f"[{et.fmt_num(widened[0])}, {et.fmt_num(widened[1])}]"))
        facts += [
            ("arm medians", v.arm_medians),
            ("estimate (diagnostic)", f"{v.estimate}, {v.interval}"),
            ("rule (diagnostic)", f"{v.rule}; {v.test}" + (f"; {v.p}" if v.p else "")),
        ]
        dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(x)}</dd>" for k, x in facts)
        items.append(
            f'<h3>{badge(v.verdict)} <code>{esc(v.id)}</code> <span class="muted">({esc(v.role)}; '
            f'{esc(v.meaning)})</span></h3><dl class="facts">{dl}</dl>'
        )
    return (
        '<section class="diagnostics" id="diagnostics" aria-labelledby="h-diagnostics">'
        '<h2 id="h-diagnostics">Diagnostics, not evidence (refused or unresolvable gates)</h2>'
        "<p>These gates make no claim either way. Their numbers are shown only here, in grey, to help find "
        "what went wrong; they are not evidence.</p>"
        + "".join(items)
        + forest_figure(ev, gates, "forest-diagnostic", diagnostic=True, table_name="the facts listed above")
        + strata_details(ev, gates, "strata-diagnostic")
        + "</section>"
    )


def notes_and_reading(ev: Evaluation) -> list[tuple[str, str, str]]:
    """(anchor, heading, body) of the notes (when any) and the reading guide."""
    out = []
    notes = et.note_lines(ev)
    if notes:
        out.append(("notes", "Notes and estimator warnings", bullets(notes)))
    out.append(
        (
            "reading",
            "How to read the verdicts",
            bullets(reading_lines(ev))
            + '<dl class="facts">'
            + "".join(f"<dt>{badge(k)}</dt><dd>{esc(m)}</dd>" for k, m in et.VERDICT_MEANINGS.items())
            + "</dl>",
        )
    )
    return out
