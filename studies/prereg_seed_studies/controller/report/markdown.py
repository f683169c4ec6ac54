"""The controller study's sections of ``reports show --markdown``: the words of :mod:`.words`, escaped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prereg_seed_studies.controller.report import words as ct
from reports.markdown.evaluation import md_code, md_escape, md_table

if TYPE_CHECKING:
    from gates.artifact import Evaluation


def markdown_sections(ev: Evaluation) -> list[str]:
    """The controller study's sections as Markdown lines; nothing for other artifacts (``ev`` already cleaned)."""
    if not ct.has_controller(ev):
        return []
    lines: list[str] = []
    if ev.comparator is not None:
        chosen = md_escape(ct.comparator_chosen(ev))
        lines += ["", "## Comparator choice (calibration runs only)", "", f"**{chosen}**", ""] + [
            f"- {md_escape(line)}" for line in ct.comparator_lines(ev)
        ]
        header, rows = ct.comparator_table(ev)
        if rows:
            lines += ["", "Candidates on the calibration strata:", ""]
            lines += md_table(
                [md_escape(h) for h in header],
                [
                    [md_escape(c) if i else md_code(c) for i, c in enumerate(r[:-1])]
                    + [f"**{r[-1]}**" if r[-1] else ""]
                    for r in rows
                ],
            )
    families = ct.family_rows(ev)
    if families:
        lines += ["", "## Per-family ledger (each held-out family judged alone)", ""]
        lines += md_table(
            [
                "family",
                "decision",
                "gates: verdict, estimate [interval]",
                f"descriptive ({md_escape(ct.DESCRIPTIVE_NOTE)})",
                f"hindsight ({ct.YARDSTICK})",
                "regions",
            ],
            [
                [
                    md_code(r.family),
                    f"**{r.decision_word}**: "
                    + md_escape(r.reason)
                    + f"<br>{r.blocks} blocks"
                    + "".join(f"<br>**{md_escape(x)}**" for x in r.invalidators),
                    "<br>".join(
                        f"{md_code(gid)} **{word}**" + (" " if rest.startswith(" ") else "") + md_escape(rest)
                        for gid, word, rest in r.gate_parts
                    )
                    or "-",
                    "<br>".join(md_escape(x) for x in r.descriptive) or "none recorded",
                    md_escape(r.hindsight),
                    md_escape(r.regions),
                ]
                for r in families
            ],
        )
    ranking = ct.ranking_rows(ev)
    if ranking:
        lines += [
            "",
            "## Ranking (challenger vs comparator per family and region)",
            "",
            md_escape(ct.ranking_intro(ev)),
            "",
        ]
        lines += md_table(
            ["family", "region", "ranking", "sampling interval", "infrastructure spread (separate)", "reason"],
            [
                [
                    md_code(r.family),
                    md_escape(r.region),
                    (f"_{r.word}_" if r.abstain else f"**{r.word}**") + f"<br>{md_escape(r.meaning)}",
                    md_escape(r.sampling),
                    "<br>".join(md_escape(x) for x in r.infrastructure),
                    md_escape(r.reason),
                ]
                for r in ranking
            ],
        )
    assumptions = ct.assumption_lines(ev)
    if assumptions:
        lines += ["", "## Assumptions, uncertainty and missing evidence", ""]
        lines += [f"- {md_escape(line)}" for line in assumptions]
    return lines
