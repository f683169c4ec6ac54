"""The reviewer's report of an evaluation (``evaluation.json``) for ``reports show``: rich renderables, 80 columns.

Words and numbers from :mod:`reports.words.evaluation`, forest bars from :mod:`reports.words.forest`,
a study's own sections from its plugin (:mod:`reports.sections`). User text is always wrapped in
``Text``, never parsed as markup; words carry every meaning and colour only repeats them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from reports.sections import study_reports
from reports.words import aa as at
from reports.words import decision as dt
from reports.words import evaluation as et
from reports.words import monitoring as mt
from reports.words import provenance as pt
from reports.words import runs as rt
from reports.words.forest import LEGEND
from reports.words.palette import DECISION_STYLES, VERDICT_STYLES
from reports.words.phase_support import phase_support_lines
from reports.words.reading import reading_lines
from reports.words.safe_text import clean_model

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

__all__ = ["render_evaluation", "BAR_WIDTH"]

BAR_WIDTH = 44


def _heading(text: str) -> Any:
    return Text(f"\n{text}", style="bold underline")


def _fields(rows: list[tuple[Any, Any]]) -> Any:
    """Label / value rows with hanging indentation (values wrap under themselves)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for label, value in rows:
        grid.add_row(Text(label) if isinstance(label, str) else label, value)
    return grid


def _header(ev: Evaluation, verbose: bool = False) -> list[Any]:
    rows: list[tuple[str, Any]] = [("Plan", Text(et.plan_text(ev)))]
    if not ev.amendments:
        rows.append(("Amended", Text("never (the plan as first frozen)")))
    for a in ev.amendments:
        line = Text(f"v{a.version} {a.amended_at}: ")
        line.append(et.amendment_flag(a), style="bold red" if a.post_data else ("yellow" if not a.runs_checked else ""))
        line.append(f' ("{a.reason}")')
        rows.append(("Amended", line))
    rows.append(("Ledger", Text(et.ledger_text(ev), style="bold red" if ev.ledger.torn_tail else "")))
    run_lines = et.run_lines(
        ev.runs, limit=None if verbose else 10, collapse_other=bool(ev.other_plan_note) and not verbose
    )
    runs = Text(run_lines[0])
    for run_line in run_lines[1:]:
        runs.append("\n")
        runs.append(run_line, style="yellow")
    rows.append(("Runs", runs))
    for label, text, alarm in pt.provenance_lines(ev, limit=None if verbose else 5):
        rows.append((label, Text(text, style="bold red" if alarm else "")))
    rows.append(("Evaluated", Text(f"{ev.evaluated_at} with toolkit {ev.toolkit_version}")))
    return [Text(f"{ev.study}: {ev.title}", style="bold"), _fields(rows)]


def _decision(ev: Evaluation) -> list[Any]:
    word, rest = dt.decision_sentence(ev)
    sentence = Text()
    sentence.append(word, style=DECISION_STYLES[ev.decision])
    sentence.append(rest)
    parts: list[Any] = [_heading("Decision"), sentence]
    modeled = dt.modeled_note(ev)
    if modeled:
        parts.append(Text(modeled, style="yellow"))
    parts.append(Text(dt.scope_text(ev)))
    return parts


def _monitoring(ev: Evaluation) -> list[Any]:
    """A monitored plan's looks: the status, each look's boundary and spent alpha, the looks recorded."""
    m = ev.monitoring
    if m is None:
        return []
    word = mt.status_word(ev) or ""
    line = Text()
    line.append(word, style="bold magenta" if m.status == "interim_reading" else "bold")
    line.append(": " + mt.status_sentence(m))
    table = Table(*mt.LOOK_COLUMNS, title="Planned looks (one-sided levels)", title_justify="left", expand=True)
    for row in mt.look_rows(m):
        table.add_row(*(Text(c) for c in row))
    parts: list[Any] = [_heading("Interim looks"), line, table, _bullets(mt.gate_lines(m))]
    history = mt.history_lines(m)
    if history:
        parts += [Text("Looks recorded before this one (look ledger):"), _bullets(history)]
    return parts


def _verdict_cell(v: et.GateView) -> Any:
    cell = Text(v.word, style=VERDICT_STYLES[v.verdict])
    if v.verdict == "vacuous":
        cell.append("\n(could not\nhave failed)")
    return cell


def gate_table(title: str, views: list[et.GateView]) -> Any:
    table = Table(title=title, title_justify="left", show_lines=True, expand=False)
    table.add_column("verdict", no_wrap=True)
    table.add_column("gate / metric", max_width=22, overflow="fold")
    table.add_column("estimate and interval", ratio=1)
    table.add_column("rule and test", ratio=1)
    for v in views:
        gate = Text(v.id, style="bold")
        gate.append(f"\n{v.metric}, {v.evidence}")
        if v.group:
            gate.append(f"\ngroup {v.group}")
        if v.is_evidence:
            numbers = Text(f"{v.estimate}\n{v.interval}")
        else:
            numbers = Text(f"{v.meaning}: see Diagnostics, not evidence")
        test = Text(f"{v.rule}\n{v.test}")
        if v.p and v.is_evidence:  # a refused gate's p-value is a diagnostic, shown there
            test.append(f"\n{v.p}")
        table.add_row(_verdict_cell(v), gate, numbers, test)
    return table


def forest_section(views: list[et.GateView]) -> Any:
    text = Text()
    text.append(f"Forest bars, each gate on its own axis ({LEGEND}):", style="dim")
    for v in views:
        lo, bar, hi = v.bar
        text.append(f"\n{v.id}  ({v.word}, {v.contrast})\n")
        text.append(f"  {lo:>9} ")
        text.append(bar)
        text.append(f" {hi}")
    return text


def _groups(ev: Evaluation) -> list[Any]:
    lines = et.group_lines(ev)
    if not lines:
        return []
    return [Text("Groups: " + "; ".join(lines))]


def _invalidators(ev: Evaluation) -> list[Any]:
    rows = et.invalidator_rows(ev)
    if not rows:
        return [_heading("Invalidators"), Text("none in the plan")]
    table = Table(title="Invalidators", title_justify="left", show_lines=True)
    table.add_column("invalidator", max_width=22, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("observed vs threshold", max_width=16)
    table.add_column("detail / refuses", ratio=1)
    for r in rows:
        status = Text(r["status"], style="bold red" if r["status"] == "FIRED" else "green")
        table.add_row(
            Text(f"{r['id']}\n{r['kind']}"),
            status,
            Text(f"{r['observed']}\nvs {r['threshold']}"),
            Text(f"{r['detail']}\nrefuses: {r['blocks']}"),
        )
    return [Text(""), table]


def _aa_pairs(ev: Evaluation) -> list[Any]:
    """The A/A check (``reports.words.aa``): one row per A/A pair and primary metric, then its rule."""
    rows = at.aa_rows(ev)
    if not rows:
        return []
    table = Table(title=at.AA_HEADING, title_justify="left", show_lines=True)
    table.add_column(at.AA_COLUMNS[0], no_wrap=True)
    for column in at.AA_COLUMNS[1:]:
        table.add_column(column, ratio=1)
    for r in rows:
        table.add_row(
            Text(r.word, style=VERDICT_STYLES[at.AA_AS_VERDICT[r.verdict]]),
            Text(f"{r.pair}\n{r.metric}"),
            Text(r.interval),
            Text(r.test),
        )
    return [Text(""), table, Text(at.aa_rule(ev), style="dim")]


def _failed_runs(ev: Evaluation, verbose: bool) -> list[Any]:
    """Each failed run with its reason and stderr's last lines (the first ten; ``verbose``: all)."""
    if not ev.failed_runs:
        return []
    runs, more = rt.failed_runs_shown(ev, None if verbose else rt.SHOWN_FAILED)
    rows: list[tuple[Any, Any]] = []
    for f in runs:
        line = Text(rt.failed_run_head(f), style="dim" if f.cell_complete else "yellow")
        for tail in f.stderr_tail:
            line.append(f"\n  stderr: {tail}", style="dim")
        rows.append(("-", line))
    return [_heading(rt.FAILED_TITLE), _fields(rows)] + ([Text(more)] if more else [])


def descriptive_section(ev: Evaluation) -> list[Any]:
    """Every metric per arm, descriptive (not a test)."""
    if not ev.descriptive_metrics:
        return []
    table = Table(title=rt.DESCRIPTIVE_TITLE, title_justify="left", show_lines=False, expand=False)
    table.add_column(rt.DESCRIPTIVE_COLUMNS[0], overflow="fold", max_width=22)
    table.add_column(rt.DESCRIPTIVE_COLUMNS[1], overflow="fold", max_width=12)
    for name in rt.DESCRIPTIVE_COLUMNS[2:]:
        table.add_column(name, justify="right", overflow="fold")
    for m, rows in rt.descriptive_rows(ev):
        name, use = rt.metric_label(m)
        for i, row in enumerate(rows):
            label = Text(name, style="bold") if i == 0 else Text("")
            if i == 0:
                label.append(f"\n{use}", style="dim")
            table.add_row(label, *(Text(c) for c in row), end_section=i == len(rows) - 1)
    return [Text(""), table, Text(rt.descriptive_note(ev), style="dim")]


def _phase_support(ev: Evaluation) -> list[Any]:
    lines = phase_support_lines(ev)
    if not lines:
        return []
    return [_heading("Meter support by phase (updates inside each phase)"), *(Text(line) for line in lines)]


def diagnostics_section(ev: Evaluation, gates: list[GateResult]) -> list[Any]:
    if not gates:
        return []
    parts: list[Any] = [_heading("Diagnostics, not evidence (refused or unresolvable gates)")]
    for g in gates:
        v = et.gate_view(g, ev, BAR_WIDTH)
        title = Text()
        title.append(v.word, style=VERDICT_STYLES[v.verdict])
        title.append(f" {v.id} ({v.role}; {v.meaning})")
        rows: list[tuple[str, Any]] = [("refused:", Text(reason)) for reason in v.refused_by]
        if v.resolution:
            rows.append(("resolution:", Text(v.resolution)))
        rows += [
            ("arm medians:", Text(v.arm_medians)),
            ("estimate:", Text(f"{v.estimate}, {v.interval} ({v.contrast}; {v.evidence})")),
            ("rule:", Text(f"{v.rule}; {v.test}" + (f"; {v.p}" if v.p else ""))),
        ]
        lo, bar, hi = v.bar
        parts += [title, Padding(_fields(rows), (0, 0, 0, 2)), Text(f"  {lo:>9} {bar} {hi}")]
    return parts


def _notes(ev: Evaluation) -> list[Any]:
    lines = et.note_lines(ev)
    if not lines:
        return []
    return [_heading("Notes and estimator warnings"), _bullets(lines)]


def _reading(ev: Evaluation) -> list[Any]:
    return [_heading("How to read the verdicts"), _bullets(reading_lines(ev))]


def _bullets(lines: list[str]) -> Any:
    return _fields([("-", Text(line)) for line in lines])


def _predecessors(ev: Evaluation) -> list[Any]:
    rows = et.predecessor_lines(ev)
    if not rows:
        return [Text("\nPredecessors: none")]
    return [
        _heading("Predecessors"),
        _fields(
            [(Text(status, style="green" if status == "VERIFIED" else "bold red"), Text(line)) for status, line in rows]
        ),
    ]


def _blocks(ev: Evaluation) -> list[Any]:
    rows = et.block_rows(ev)
    if not rows:
        return [_heading("Blocks"), Text("no paired rows recorded")]
    table = Table(title="Blocks (paired rows)", title_justify="left", show_lines=True)
    table.add_column("block", max_width=24, overflow="fold")
    table.add_column("contrast per gate", ratio=1)
    table.add_column("arms' values", ratio=1)
    for r in rows:
        table.add_row(
            Text(f"{r['block']}\nreplicate {r['replicate']}"),
            Text("\n".join(f"{gid}: {val}" for gid, val in r["contrasts"]) or "-"),
            Text("\n".join(f"{metric}: {vals}" for metric, vals in r["values"]) or "-"),
        )
    return [Text(""), table]


def render_evaluation(ev: Evaluation, show_blocks: bool = False, verbose: bool = False) -> Any:
    """Rich renderables (a ``Group``) of the whole report; fits 80 columns (``verbose``: name every run)."""
    ev = clean_model(ev)  # no control characters from the plan or ledger reach the terminal

    parts: list[Any] = _header(ev, verbose) + _decision(ev) + _monitoring(ev) + _failed_runs(ev, verbose)
    primary = [et.gate_view(g, ev, BAR_WIDTH) for g in et.primary_gates(ev)]
    title = f"Primary gates (decide the claim; multiplicity {ev.multiplicity})"
    parts += [Text(""), gate_table(title, primary), forest_section(primary)]
    parts += _groups(ev)
    parts += _invalidators(ev)
    parts += _aa_pairs(ev)
    parts += _phase_support(ev)
    sensitivity = [et.gate_view(g, ev, BAR_WIDTH) for g in et.sensitivity_gates(ev)]
    if sensitivity:
        parts += [
            Text(""),
            gate_table("Sensitivity (reported, never decides)", sensitivity),
            forest_section(sensitivity),
        ]
    parts += descriptive_section(ev)

    parts += [part for report in study_reports(ev) for part in report.terminal(ev)]  # installed studies' own
    parts += diagnostics_section(ev, et.diagnostic_gates(ev))
    parts += _notes(ev)
    parts += _reading(ev)
    parts += _predecessors(ev)
    if show_blocks:
        parts += _blocks(ev)
    return Group(*parts)
