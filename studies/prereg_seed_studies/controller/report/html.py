"""The controller study's HTML sections, rendered by ``templates/sections.html.j2`` (autoescape on).

The words are :mod:`.words`'s, the ones ``reports show`` and its Markdown print. The ranking table
keeps the sampling interval and the infrastructure spread in two columns; an abstaining row is shaded.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from prereg.errors import InputError, IntegrityError
from prereg_seed_studies.controller.report import words as ct
from prereg_seed_studies.controller.report.commit_select import family_block_runs
from prereg_seed_studies.controller.report.commit_timeline import load_commit_timeline, timeline_text
from reports.words.safe_text import clean

if TYPE_CHECKING:
    from gates.artifact import Evaluation

Section = tuple[str, str, Markup]
FAMILY_HEAD = ("family", "decision", "gates: verdict, estimate [interval]")
RANKING_HEAD = ["family", "region", "ranking", "sampling interval", "infrastructure spread (separate)", "reason"]


@cache
def _macros() -> Any:
    import jinja2  # lazy: jinja2 (only an HTML report needs it)

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("prereg_seed_studies.controller.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("sections.html.j2").module


def controller_sections(ev: Evaluation) -> list[Section]:
    """(anchor, heading, body) of each controller section; empty for other artifacts (``ev`` already cleaned)."""
    if not ct.has_controller(ev):
        return []
    m, out = _macros(), []
    c = ev.comparator
    if c is not None:
        header, rows = ct.comparator_table(ev)
        body = m.comparator(ct.comparator_chosen(ev), c.arm is None, ct.comparator_lines(ev), header, rows)
        out.append(("comparator", "Comparator choice (calibration runs only)", body))
    families = ct.family_rows(ev)
    if families:
        head = [*FAMILY_HEAD, f"descriptive ({ct.DESCRIPTIVE_NOTE})", f"hindsight ({ct.YARDSTICK})", "regions"]
        out.append(("families", "Per-family ledger (each held-out family judged alone)", m.families(head, families)))
    ranking = ct.ranking_rows(ev)
    if ranking:
        body = m.ranking(ct.ranking_intro(ev), RANKING_HEAD, ranking)
        out.append(("ranking", "Ranking (challenger vs comparator per family and region)", body))
    assumptions = ct.assumption_lines(ev)
    if assumptions:
        out.append(("assumptions", "Assumptions, uncertainty and missing evidence", m.bullets(assumptions)))
    return [(anchor, heading, Markup(body)) for anchor, heading, body in out]


def commit_timeline_section(ev: Evaluation, folder: Path) -> Markup:
    """The commit timeline of the first held-out family's first block, challenger and comparator, in
    words (the text equivalent ``reports plot EVALUATION --family F`` prints beside its figure)."""
    family = str(ev.families[0].family)
    text, problem, refused = "", None, False
    try:
        runs_folder, run_ids = family_block_runs(ev, family, runs_folder=folder)
        text = clean("\n".join(timeline_text(load_commit_timeline(runs_folder, run_ids, asked=run_ids[0]))))
    except IntegrityError as err:
        problem, refused = clean(str(err)), True
    except InputError as err:
        problem = clean(str(err))
    return Markup(_macros().commit_timeline(clean(family), text, problem, refused))
