"""The reviewer's report of an evaluation as GitHub-flavoured Markdown (papers, pull requests).

Same content as the terminal report (:mod:`reports.terminal.evaluation`), installed studies' sections
included (:mod:`reports.sections`). User text is escaped so it renders as written: Markdown punctuation
backslash-escaped, ``|`` in a table cell as ``\\|``, a line break inside a cell as ``<br>``; with
``figures`` the report links the SVG forest plot and per-stratum figures after the primary gates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from reports.sections import study_reports
from reports.words import aa as at
from reports.words import decision as dt
from reports.words import evaluation as et
from reports.words import monitoring as mt
from reports.words import provenance as pt
from reports.words import runs as rt
from reports.words.forest import LEGEND
from reports.words.phase_support import phase_support_lines
from reports.words.reading import reading_lines
from reports.words.safe_text import clean_model

if TYPE_CHECKING:
    from gates.artifact import Evaluation

MD_BAR_WIDTH = 44
GATE_COLUMNS = [
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
]
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~])")


def md_escape(text: str) -> str:
    """User text made literal in Markdown (inline and in table cells)."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_code(text: str) -> str:
    """A code span that survives a table cell (a '|' inside is escaped, as GFM requires)."""
    return "`" + str(text).replace("`", "'").replace("|", "\\|") + "`"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GFM table; cells must already be escaped (see ``md_escape``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(c if c else " " for c in row) + " |" for row in rows]
    return lines


def _verdict_md(word: str) -> str:
    return f"**{word}**"


def _gate_rows(ev: Evaluation, views: list[et.GateView]) -> list[list[str]]:
    rows = []
    for v in views:
        if v.is_evidence:
            estimate, interval = md_escape(v.estimate), md_escape(v.interval)
        else:
            estimate, interval = "see Diagnostics, not evidence", md_escape(v.meaning)
        rows.append(
            [
                _verdict_md(v.word),
                md_code(v.id),
                md_escape(f"{v.metric}, {v.evidence}"),
                md_escape(v.contrast),
                estimate,
                interval,
                md_escape(v.rule),
                md_escape(v.test),
                md_escape(v.p or "none") if v.is_evidence else "see Diagnostics",
                md_escape(v.group or "-"),
            ]
        )
    return rows


def _forest_block(views: list[et.GateView]) -> list[str]:
    if not views:
        return []
    width = max(len(v.id) for v in views)
    lines = ["", md_escape(f"Forest bars, each gate on its own axis ({LEGEND}):"), "", "```text"]
    for v in views:
        lo, bar, hi = v.bar
        lines.append(f"{v.id:<{width}}  {v.word:<12} {lo:>9} {bar} {hi}")
    lines.append("```")
    return lines


def _header(ev: Evaluation) -> list[str]:
    lines = [f"# Evaluation: {md_escape(ev.study)}", "", f"**{md_escape(ev.title)}**", ""]
    lines.append(f"- Plan: {md_escape(et.plan_text(ev))}")
    if not ev.amendments:
        lines.append("- Amended: never (the plan as first frozen)")
    for a in ev.amendments:
        flag = et.amendment_flag(a)
        flag = f"**{flag}**" if a.post_data else flag
        lines.append(f'- Amended: v{a.version} {md_escape(a.amended_at)}: {flag} ("{md_escape(a.reason)}")')
    lines.append(f"- Ledger: {md_escape(et.ledger_text(ev))}")
    run_lines = et.run_lines(ev.runs, limit=None)
    lines.append(f"- Runs: {md_escape(run_lines[0])}")
    lines += [f"  - {md_escape(line)}" for line in run_lines[1:]]
    for label, text, alarm in pt.provenance_lines(ev, limit=None):
        lines.append(f"- {label}: " + (f"**{md_escape(text)}**" if alarm else md_escape(text)))
    lines.append(
        f"- Evaluated {md_escape(ev.evaluated_at)} with toolkit {md_escape(ev.toolkit_version)}; "
        f"multiplicity {ev.multiplicity}"
    )
    return lines


def _decision(ev: Evaluation) -> list[str]:
    word, rest = dt.decision_sentence(ev)
    lines = ["", "## Decision", "", f"**{word}**{md_escape(rest)}"]
    modeled = dt.modeled_note(ev)
    if modeled:
        lines += ["", md_escape(modeled)]
    lines += ["", md_escape(dt.scope_text(ev))]
    return lines


def _monitoring(ev: Evaluation) -> list[str]:
    """A monitored plan's looks (``reports.words.monitoring``)."""
    m = ev.monitoring
    if m is None:
        return []
    lines = ["", "## Interim looks", "", f"**{mt.status_word(ev)}**: {md_escape(mt.status_sentence(m))}", ""]
    lines += md_table(mt.LOOK_COLUMNS, [[md_escape(c) for c in row] for row in mt.look_rows(m)])
    lines += [""] + [f"- {md_escape(line)}" for line in mt.gate_lines(m)]
    history = mt.history_lines(m)
    if history:
        lines += ["", "Looks recorded before this one (look ledger):", ""] + [f"- {md_escape(h)}" for h in history]
    return lines


def _invalidators(ev: Evaluation) -> list[str]:
    rows = et.invalidator_rows(ev)
    lines = ["", "## Invalidators", ""]
    if not rows:
        return lines + ["none in the plan"]
    return lines + md_table(
        ["status", "invalidator", "kind", "observed", "threshold", "refuses", "detail"],
        [
            [
                f"**{r['status']}**" if r["status"] == "FIRED" else r["status"],
                md_code(r["id"]),
                md_escape(r["kind"]),
                md_escape(r["observed"]),
                md_escape(r["threshold"]),
                md_escape(r["blocks"]),
                md_escape(r["detail"]),
            ]
            for r in rows
        ],
    )


def _aa_pairs(ev: Evaluation) -> list[str]:
    """The A/A check (``reports.words.aa``): one row per A/A pair and primary metric, then its rule."""
    rows = at.aa_rows(ev)
    if not rows:
        return []
    lines = ["", f"## {at.AA_HEADING}", ""]
    lines += md_table(
        list(at.AA_COLUMNS),
        [[f"**{r.word}**", md_escape(f"{r.pair}; {r.metric}"), md_escape(r.interval), md_escape(r.test)] for r in rows],
    )
    return lines + ["", md_escape(at.aa_rule(ev))]


def _phase_support(ev: Evaluation) -> list[str]:
    lines = phase_support_lines(ev)
    if not lines:
        return []
    return ["", "## Meter support by phase", "", *(md_escape(line) for line in lines)]


def _studies(ev: Evaluation) -> list[str]:
    """The sections of every installed study report that applies (:mod:`reports.sections`)."""
    return [line for report in study_reports(ev) for line in report.markdown(ev)]


def _failed_runs(ev: Evaluation) -> list[str]:
    """Every failed run: its reason, then its stderr's last lines as code."""
    if not ev.failed_runs:
        return []
    lines = ["", f"## {rt.FAILED_TITLE}", ""]
    for f in ev.failed_runs:
        lines.append(f"- {md_escape(rt.failed_run_head(f))}")
        lines += [f"  - stderr: {md_code(line)}" for line in f.stderr_tail]
    return lines


def _descriptive(ev: Evaluation) -> list[str]:
    """Every metric per arm, descriptive (not a test)."""
    if not ev.descriptive_metrics:
        return []
    rows = []
    for m, arm_rows in rt.descriptive_rows(ev):
        name, use = rt.metric_label(m)
        for i, row in enumerate(arm_rows):
            label = f"{md_code(name)} ({md_escape(use)})" if i == 0 else ""
            rows.append([label, *(md_escape(c) for c in row)])
    return (
        ["", f"## {rt.DESCRIPTIVE_TITLE}", ""]
        + md_table(rt.DESCRIPTIVE_COLUMNS, rows)
        + ["", md_escape(rt.descriptive_note(ev))]
    )


def _diagnostics(ev: Evaluation) -> list[str]:
    gates = et.diagnostic_gates(ev)
    if not gates:
        return []
    views = [et.gate_view(g, ev, MD_BAR_WIDTH) for g in gates]
    lines = ["", "## Diagnostics, not evidence (refused or unresolvable gates)", ""]
    lines += md_table(
        [
            "verdict",
            "gate",
            "role",
            "metric, evidence",
            "why",
            "arm medians",
            "estimate (diagnostic)",
            "interval (diagnostic)",
            "test (diagnostic)",
        ],
        [
            [
                _verdict_md(v.word),
                md_code(v.id),
                v.role,
                md_escape(f"{v.metric}, {v.evidence}"),
                md_escape("; ".join(v.refused_by + ([v.resolution] if v.resolution else [])) or v.meaning),
                md_escape(v.arm_medians),
                md_escape(v.estimate),
                md_escape(v.interval),
                md_escape("; ".join(x for x in (v.test, v.p) if x)),
            ]
            for v in views
        ],
    )
    return lines + _forest_block(views)


def _notes(ev: Evaluation) -> list[str]:
    lines = et.note_lines(ev)
    if not lines:
        return []
    return ["", "## Notes and estimator warnings", ""] + [f"- {md_escape(line)}" for line in lines]


def _reading(ev: Evaluation) -> list[str]:
    return ["", "## How to read the verdicts", ""] + [f"- {md_escape(line)}" for line in reading_lines(ev)]


def _predecessors(ev: Evaluation) -> list[str]:
    rows = et.predecessor_lines(ev)
    if not rows:
        return ["", "Predecessors: none"]
    return ["", "## Predecessors", ""] + [f"- **{status}** {md_escape(line)}" for status, line in rows]


def _blocks(ev: Evaluation) -> list[str]:
    rows = et.block_rows(ev)
    lines = ["", "## Blocks (paired rows)", ""]
    if not rows:
        return lines + ["no paired rows recorded"]
    return lines + md_table(
        ["block", "replicate", "contrast per gate", "arms' values"],
        [
            [
                md_escape(r["block"]),
                r["replicate"],
                "<br>".join(f"{md_code(g)}: {md_escape(val)}" for g, val in r["contrasts"]) or "-",
                "<br>".join(f"{md_escape(m)}: {md_escape(vals)}" for m, vals in r["values"]) or "-",
            ]
            for r in rows
        ],
    )


def _figures(figures: Sequence[tuple[str, str]]) -> list[str]:
    """Links to the SVG figures written beside the Markdown (``reports.html.figures``)."""
    if not figures:
        return []
    lines = [
        "",
        "Figures (SVG files beside this report, the same drawings as `reports html`; the tables here give "
        "their numbers):",
        "",
    ]
    return lines + [f"![{md_escape(alt)}]({quote(name)})" for alt, name in figures]


def evaluation_markdown(ev: Evaluation, show_blocks: bool = False, figures: Sequence[tuple[str, str]] = ()) -> str:
    """The whole report as GitHub-flavoured Markdown (ends with a newline); ``figures``: (alt text, file
    name) of figures written beside it, linked after the primary gates."""
    ev = clean_model(ev)  # no control characters from the plan or ledger reach a viewer
    lines = _header(ev) + _decision(ev) + _monitoring(ev) + _failed_runs(ev)
    primary = [et.gate_view(g, ev, MD_BAR_WIDTH) for g in et.primary_gates(ev)]
    lines += ["", f"## Primary gates (decide the claim; multiplicity {ev.multiplicity})", ""]
    lines += md_table(GATE_COLUMNS, _gate_rows(ev, primary)) + _forest_block(primary) + _figures(figures)
    groups = et.group_lines(ev)
    if groups:
        lines += ["", "Groups: " + "; ".join(md_escape(g) for g in groups)]
    lines += _invalidators(ev)
    lines += _aa_pairs(ev)
    lines += _phase_support(ev)
    sensitivity = [et.gate_view(g, ev, MD_BAR_WIDTH) for g in et.sensitivity_gates(ev)]
    if sensitivity:
        lines += ["", "## Sensitivity (reported, never decides)", ""]
        lines += md_table(GATE_COLUMNS, _gate_rows(ev, sensitivity)) + _forest_block(sensitivity)
    lines += _descriptive(ev)
    lines += _studies(ev) + _diagnostics(ev) + _notes(ev) + _reading(ev) + _predecessors(ev)
    if show_blocks:
        lines += _blocks(ev)
    return "\n".join(lines) + "\n"


def is_evaluation_markdown(path: Path) -> bool:
    """Whether ``path`` holds a Markdown report this module wrote (safe to replace with a new one)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return head.startswith("# Evaluation: ") and "\n- Plan: sha256 " in head
