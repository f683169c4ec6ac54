"""The HTML report's controller-study sections: comparator choice, per-family ledger, ranking, assumptions.

The words are :mod:`reports.words.controller`'s, the ones ``reports show`` and its Markdown print;
every string from the artifact passes through :func:`reports.html.svg.esc`. The ranking table
(``#ranking-table``) keeps the sampling interval and the infrastructure spread in two columns;
an abstaining cell says ABSTAIN in words, in italics inside a dashed badge, on a shaded row.
``controller_sections(ev)`` is empty for an artifact without controller fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prereg.errors import InputError, IntegrityError
from reports.data.commit_select import family_block_runs
from reports.data.commits import load_commit_timeline, timeline_text
from reports.html.evaluation import bullets, cell, table
from reports.html.svg import esc
from reports.words import controller as ct

if TYPE_CHECKING:
    from gates.artifact import Evaluation

NAV = {"comparator": "Comparator", "families": "Families", "ranking": "Ranking", "assumptions": "Assumptions"}


def _lines(lines: list[str]) -> str:
    return "<br>".join(esc(line) for line in lines)


def comparator_section(ev: Evaluation) -> str:
    c = ev.comparator
    if c is None:
        return ""
    cls = "alarm" if c.arm is None else "notice"
    parts = [
        f'<p id="comparator-choice" class="{cls}"><strong>{esc(ct.comparator_chosen(ev))}</strong></p>',
        bullets(ct.comparator_lines(ev)),
    ]
    header, rows = ct.comparator_table(ev)
    if rows:
        body = []
        for r in rows:
            chosen = f"<strong>{esc(r[-1])}</strong>" if r[-1] else ""
            body.append(
                f'<tr data-arm="{esc(r[0])}">'
                + cell(header[0], f"<code>{esc(r[0])}</code>")
                + "".join(cell(h, esc(v), "num") for h, v in zip(header[1:-1], r[1:-1], strict=True))
                + cell(header[-1], chosen)
                + "</tr>"
            )
        parts.append(
            table(
                header,
                body,
                cls="stack",
                caption="Candidates on the calibration strata",
                table_id="comparator-table",
                num=set(range(1, len(header) - 1)),
            )
        )
    return "".join(parts)


def _gate_items(parts: list[tuple[str, str, str]]) -> str:
    items = []
    for gid, word, rest in parts:
        items.append(
            f'<li><code>{esc(gid)}</code> <span class="badge v-{esc(word.lower())}">{esc(word)}</span>{esc(rest)}</li>'
        )
    return '<ul class="tight">' + "".join(items) + "</ul>" if items else "-"


def families_section(ev: Evaluation) -> str:
    rows = ct.family_rows(ev)
    if not rows:
        return ""
    head = [
        "family",
        "decision",
        "gates: verdict, estimate [interval]",
        f"descriptive ({ct.DESCRIPTIVE_NOTE})",
        f"hindsight ({ct.YARDSTICK})",
        "regions",
    ]
    body = []
    for r in rows:
        decision = (
            f'<strong class="word">{esc(r.decision_word)}</strong>: {esc(r.reason)}<br>'
            f'<span class="muted">{r.blocks} blocks</span>'
            + "".join(f'<br><strong class="bad">{esc(x)}</strong>' for x in r.invalidators)
        )
        body.append(
            f'<tr data-family="{esc(r.family)}" data-decision="{esc(r.decision)}">'
            + cell(head[0], f"<code>{esc(r.family)}</code>")
            + cell(head[1], decision)
            + cell(head[2], _gate_items(r.gate_parts))
            + cell(head[3], _lines(r.descriptive) or "none recorded")
            + cell(head[4], f'<span class="muted">{esc(r.hindsight)}</span>')
            + cell(head[5], esc(r.regions))
            + "</tr>"
        )
    return table(
        head,
        body,
        cls="stack",
        caption="Per-family ledger: each held-out family judged alone",
        table_id="families-table",
    )


def ranking_section(ev: Evaluation) -> str:
    rows = ct.ranking_rows(ev)
    if not rows:
        return ""
    head = ["family", "region", "ranking", "sampling interval", "infrastructure spread (separate)", "reason"]
    body = []
    for r in rows:
        word = (
            f'<span class="rank rank-{esc(r.ranking)}">{esc(r.word)}</span>'
            f'<br><span class="muted">{esc(r.meaning)}</span>'
        )
        cls = ' class="abstain"' if r.abstain else ""
        body.append(
            f'<tr data-family="{esc(r.family)}" data-ranking="{esc(r.ranking)}"{cls}>'
            + cell(head[0], f"<code>{esc(r.family)}</code>")
            + cell(head[1], esc(r.region))
            + cell(head[2], word)
            + cell(head[3], esc(r.sampling))
            + cell(head[4], _lines(r.infrastructure))
            + cell(head[5], esc(r.reason))
            + "</tr>"
        )
    return f"<p>{esc(ct.ranking_intro(ev))}</p>" + table(
        head, body, cls="stack", caption="Ranking per family x region", table_id="ranking-table"
    )


def controller_sections(ev: Evaluation) -> list[tuple[str, str, str]]:
    """(anchor, heading, body) of each controller section; empty for other artifacts (``ev`` already cleaned)."""
    if not ct.has_controller(ev):
        return []
    out = []
    for anchor, heading, body in (
        ("comparator", "Comparator choice (calibration runs only)", comparator_section(ev)),
        ("families", "Per-family ledger (each held-out family judged alone)", families_section(ev)),
        ("ranking", "Ranking (challenger vs comparator per family and region)", ranking_section(ev)),
        ("assumptions", "Assumptions, uncertainty and missing evidence", bullets(ct.assumption_lines(ev))),
    ):
        if body and body != "<ul></ul>":
            out.append((anchor, heading, body))
    return out


def commit_timeline_section(ev: Evaluation, folder: Path) -> str:
    """The commit timeline of the first held-out family's first block, challenger and comparator, in
    words (the text equivalent ``reports plot EVALUATION --family F`` prints beside its figure)."""
    family = str(ev.families[0].family)
    hint = f"<p>The figure: <code>reports plot EVALUATION_JSON --family {esc(family)}</code> (any held-out family).</p>"
    try:
        runs_folder, run_ids = family_block_runs(ev, family, runs_folder=folder)
        text = "\n".join(timeline_text(load_commit_timeline(runs_folder, run_ids, asked=run_ids[0])))
    except IntegrityError as err:
        return f'<p class="alarm">NOT SHOWN: {esc(str(err))}</p>' + hint
    except InputError as err:
        return f'<p class="notice">{esc(str(err))}</p>' + hint
    return (
        f"<p>Held-out family <strong>{esc(family)}</strong>: the challenger and the comparator on one modeled "
        "wall-time axis (modes, abstentions, membership, WAN, held-out NLL), from their commit ledgers.</p>"
        f"<pre>{esc(text)}</pre>" + hint
    )
