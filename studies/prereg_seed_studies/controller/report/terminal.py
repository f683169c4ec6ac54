"""The controller study's sections of ``reports show`` (rich renderables; the words are :mod:`.words`'s).

User text is always wrapped in ``Text``, never parsed as markup; the ranking word carries its meaning
and colour only repeats it (an abstention is also dimmed and italic, so it stands apart without colour).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from prereg_seed_studies.controller.report import words as ct
from reports.words.palette import DECISION_STYLES, RANKING_STYLES, VERDICT_WORD_STYLES

if TYPE_CHECKING:
    from gates.artifact import Evaluation


def _heading(text: str) -> Any:
    return Text(f"\n{text}", style="bold underline")


def _bullets(lines: list[str]) -> Any:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for line in lines:
        grid.add_row(Text("-"), Text(line))
    return grid


def comparator_section(ev: Evaluation) -> list[Any]:
    if ev.comparator is None:
        return []
    refused = ev.comparator.arm is None
    parts: list[Any] = [
        _heading("Comparator choice (calibration runs only)"),
        Text(ct.comparator_chosen(ev), style="bold magenta" if refused else "bold"),
    ]
    parts += [Text(line) for line in ct.comparator_lines(ev)]
    header, rows = ct.comparator_table(ev)
    if rows:
        table = Table(title="Candidates on the calibration strata", title_justify="left")
        for i, h in enumerate(header):
            table.add_column(h, justify="right" if 0 < i < len(header) - 1 else "left")
        for row in rows:
            table.add_row(*(Text(c, style="bold" if row[-1] else "") for c in row))
        parts.append(table)
    return parts


def families_section(ev: Evaluation) -> list[Any]:
    rows = ct.family_rows(ev)
    if not rows:
        return []
    table = Table(title="Per-family ledger (each held-out family judged alone)", title_justify="left", show_lines=True)
    table.add_column("family, decision", max_width=22, overflow="fold")
    table.add_column("gates: verdict, estimate [interval]", ratio=1)
    table.add_column("descriptive medians; hindsight; regions", ratio=1)
    for r in rows:
        head = Text(r.family, style="bold")
        head.append("\n")
        head.append(r.decision_word, style=DECISION_STYLES[r.decision])
        head.append(f"\n{r.reason}\n{r.blocks} blocks")
        for line in r.invalidators:
            head.append(f"\n{line}", style="bold red")
        gates = Text()
        for i, (gid, word, rest) in enumerate(r.gate_parts):
            gates.append(("\n" if i else "") + f"{gid} ")
            gates.append(word, style=VERDICT_WORD_STYLES.get(word, ""))
            gates.append(rest)
        other = Text(
            f"{ct.DESCRIPTIVE_NOTE}:\n" + "\n".join(r.descriptive)
            if r.descriptive
            else "no descriptive medians recorded",
            style="",
        )
        other.append(f"\n{r.hindsight}", style="dim")
        other.append(f"\nregions: {r.regions}")
        table.add_row(head, gates, other)
    return [Text(""), table]


def ranking_section(ev: Evaluation) -> list[Any]:
    rows = ct.ranking_rows(ev)
    if not rows:
        return []
    table = Table(title="Ranking per family x region", title_justify="left", show_lines=True)
    table.add_column("family / region: ranking, reason", ratio=3, overflow="fold")
    table.add_column("sampling interval", ratio=2, overflow="fold")
    table.add_column("infrastructure spread (separate)", ratio=3, overflow="fold")
    for r in rows:
        first = Text(f"{r.family}\n{r.region}\n", style="dim" if r.abstain else "")
        first.append(r.word, style=RANKING_STYLES[r.ranking])
        first.append(f"\n{r.reason}", style="italic" if r.abstain else "")
        table.add_row(first, Text(r.sampling), Text("\n".join(r.infrastructure)))
    return [_heading("Ranking (challenger vs comparator per family and region)"), Text(ct.ranking_intro(ev)), table]


def assumptions_section(ev: Evaluation) -> list[Any]:
    lines = ct.assumption_lines(ev)
    if not lines:
        return []
    return [_heading("Assumptions, uncertainty and missing evidence"), _bullets(lines)]


def terminal_sections(ev: Evaluation) -> list[Any]:
    """Every controller section (empty for an artifact without controller fields); ``ev`` already cleaned."""
    if not ct.has_controller(ev):
        return []
    return comparator_section(ev) + families_section(ev) + ranking_section(ev) + assumptions_section(ev)
