"""The gate figures as standalone SVG files beside ``reports show --markdown FILE``.

``forest`` and ``strata`` stack every gate's drawing of the HTML page (:mod:`reports.html.svg`) at a
fixed width, each titled in words; the Markdown's tables are their text equivalent. Written
atomically, and only over earlier figures of this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prereg.fileio import check_output, write_output
from reports.data.axes import block_points, gate_axis
from reports.words import evaluation as et
from reports.words.palette import DECISION_WORDS

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

WIDTH = 820
MARKER = "<!-- prereg-toolkit reports figure -->"  # written by templates/figures.html
KINDS = ("forest", "strata")


def _document(ev: Evaluation, title: str, rows: Sequence[tuple[GateResult, str]]) -> str:
    """An SVG document: a heading line, then per gate its title line and its drawing."""
    placed, y = [], 62.0
    for g, drawing in rows:
        v = et.gate_view(g, ev)
        diagnostic = " (DIAGNOSTIC, not evidence)" if not v.is_evidence else ""
        role = "" if g.role == "primary" else " [sensitivity: never decides]"
        placed.append((v, diagnostic, role, y, drawing))
        y += float(drawing.split('height="', 1)[1].split('"', 1)[0]) + 34
    from reports.html.render import macro  # lazy: jinja2 (the CLI's --help imports this module)

    document = macro("figures.html", "document")
    return str(document(WIDTH, y, ev.study, DECISION_WORDS[ev.decision], title, placed))


def _ordered(ev: Evaluation) -> list[GateResult]:
    return et.primary_gates(ev) + et.sensitivity_gates(ev)


def forest_svg(ev: Evaluation) -> str:
    from reports.html.svg import forest_row  # lazy: jinja2

    rows = []
    for i, g in enumerate(_ordered(ev)):
        points = [value for _, value in block_points(g, ev.blocks)]
        diagnostic = g.verdict in ("refused", "unresolvable")
        rows.append(
            (g, forest_row(g, gate_axis(g, points), points, uid=f"f{i}", diagnostic=diagnostic, width=str(WIDTH)))
        )
    return _document(ev, "each gate's interval on its own axis (circles: each stratum's paired contrast)", rows)


def strata_svg(ev: Evaluation) -> str:
    from reports.html.svg import strata_plot  # lazy: jinja2

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
