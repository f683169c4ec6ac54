"""The HTML report's gate figures as standalone SVG files, for ``reports show --markdown FILE``.

``forest`` stacks every gate's forest row (each on its own axis; refused and unresolvable gates
in grey, titled DIAGNOSTIC) and ``strata`` every gate's per-stratum paired contrasts: the same
drawings as the HTML page (:mod:`reports.html.svg`), at a fixed width, each row titled in words
(gate, verdict, contrast, evidence) since no page surrounds them. The Markdown links them beside
itself; its tables are their text equivalent. Files are written atomically and only over earlier
figures of this module (``prereg.fileio.check_output``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prereg.fileio import check_output, write_output
from reports.html.axes import block_points, gate_axis
from reports.html.svg import FONT, TEXT_COLOUR, esc, forest_row, strata_plot
from reports.words import evaluation as et
from reports.words.palette import DECISION_WORDS

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

WIDTH = 820
MARKER = "<!-- prereg-toolkit reports figure -->"
KINDS = ("forest", "strata")


def _title_line(ev: Evaluation, g: GateResult, y: float) -> str:
    v = et.gate_view(g, ev)
    diagnostic = " (DIAGNOSTIC, not evidence)" if not v.is_evidence else ""
    role = "" if g.role == "primary" else " [sensitivity: never decides]"
    return (
        f'<text x="0" y="{y:g}" font-size="13" fill="{TEXT_COLOUR}"><tspan font-weight="bold">{esc(v.id)} '
        f"{esc(v.word)}{esc(diagnostic)}</tspan>{esc(role)}  {esc(v.contrast)}; {esc(v.evidence)}</text>"
    )


def _document(ev: Evaluation, title: str, rows: list[tuple[GateResult, str]]) -> str:
    """An SVG document: a heading line, then per gate its title line and its drawing."""
    parts, y = [], 62.0
    for g, drawing in rows:
        parts.append(_title_line(ev, g, y))
        height = float(drawing.split('height="', 1)[1].split('"', 1)[0])
        parts.append(f'<g transform="translate(0 {y + 8:g})">{drawing}</g>')
        y += height + 34
    word = DECISION_WORDS[ev.decision]
    head = (
        f'<text x="0" y="18" font-size="15" font-weight="bold" fill="{TEXT_COLOUR}">{esc(ev.study)}: '
        f'decision {esc(word)}</text><text x="0" y="38" font-size="12" fill="{TEXT_COLOUR}">{esc(title)}</text>'
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + MARKER + "\n"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y:g}" viewBox="0 0 {WIDTH} {y:g}" '
        f'font-family="{esc(FONT)}" role="img"><title>{esc(ev.study)}: {esc(title)}</title>'
        f'<rect width="100%" height="100%" fill="#ffffff"/>{head}' + "".join(parts) + "</svg>\n"
    )


def _ordered(ev: Evaluation) -> list[GateResult]:
    return et.primary_gates(ev) + et.sensitivity_gates(ev)


def forest_svg(ev: Evaluation) -> str:
    rows = []
    for i, g in enumerate(_ordered(ev)):
        points = [value for _, value in block_points(g, ev.blocks)]
        diagnostic = g.verdict in ("refused", "unresolvable")
        rows.append(
            (g, forest_row(g, gate_axis(g, points), points, uid=f"f{i}", diagnostic=diagnostic, width=str(WIDTH)))
        )
    return _document(ev, "each gate's interval on its own axis (circles: each stratum's paired contrast)", rows)


def strata_svg(ev: Evaluation) -> str:
    rows = []
    for i, g in enumerate(_ordered(ev)):
        labelled = block_points(g, ev.blocks)
        if labelled:
            axis = gate_axis(g, [value for _, value in labelled])
            rows.append((g, strata_plot(g, axis, labelled, uid=f"s{i}", width=str(WIDTH))))
    return _document(ev, "each block's paired contrast per gate, the interval shaded", rows)


def is_figure(path: Path) -> bool:
    """Whether ``path`` holds a figure this module wrote (safe to replace)."""
    try:
        with open(path, "rb") as fh:
            return MARKER.encode() in fh.read(256)
    except OSError:
        return False


def figure_paths(markdown: Path) -> dict[str, Path]:
    """Where the figures of ``report.md`` go: ``report.forest.svg`` and ``report.strata.svg`` beside it."""
    return {kind: markdown.with_name(f"{markdown.stem}.{kind}.svg") for kind in KINDS}


def check_figure_outputs(markdown: Path, force: bool = False) -> None:
    """Refuse (before anything is written) figure paths the toolkit must not write over."""
    for path in figure_paths(markdown).values():
        check_output(path, force, is_figure)


def write_figures(ev: Evaluation, markdown: Path, force: bool = False) -> list[tuple[str, str]]:
    """Write the figures beside ``markdown`` (``ev`` already cleaned) under the output rule
    (``prereg.fileio.write_output``); (alt text, file name) for the links."""
    paths = figure_paths(markdown)
    drawings = {"forest": forest_svg(ev), "strata": strata_svg(ev)}
    alts = {
        "forest": "Forest plot: each gate's interval, estimate, margin and null on its own axis, with each "
        "stratum's paired contrast",
        "strata": "Per-stratum paired contrasts of each gate on its axis, the gate's interval shaded",
    }
    out = []
    for kind in KINDS:
        write_output(paths[kind], drawings[kind].encode("utf-8"), force, is_figure)
        out.append((alts[kind], paths[kind].name))
    return out
