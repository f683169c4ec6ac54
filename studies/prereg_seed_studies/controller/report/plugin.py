"""The controller study's report plugin (group ``prereg_toolkit.report_sections``, name ``controller``).

It applies to an evaluation with a comparator, held-out families or a ranking; its run section (the
commit timeline of one held-out family) replaces the generic recovery timeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prereg_seed_studies.controller.report import words as ct
from prereg_seed_studies.controller.report.html import commit_timeline_section, controller_sections
from prereg_seed_studies.controller.report.markdown import markdown_sections
from prereg_seed_studies.controller.report.terminal import terminal_sections

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from markupsafe import Markup

    from gates.artifact import Evaluation

NAV_WORDS = {
    "comparator": "Comparator",
    "families": "Families",
    "ranking": "Ranking",
    "assumptions": "Assumptions",
    "commits": "Commit timeline",
}


class ControllerReport:
    """Comparator choice, per-family ledger, ranking and assumptions; the commit timeline per run."""

    def applies(self, ev: Evaluation) -> bool:
        return ct.has_controller(ev)

    def terminal(self, ev: Evaluation) -> list[Any]:
        return terminal_sections(ev)

    def markdown(self, ev: Evaluation) -> list[str]:
        return markdown_sections(ev)

    def html_sections(self, ev: Evaluation) -> list[tuple[str, str, Markup]]:
        return controller_sections(ev)

    def html_run_sections(self, ev: Evaluation, runs_folder: Path) -> list[tuple[str, str, Markup]]:
        if ev.comparator is None or not ev.families:  # controller runs keep commit ledgers, not event traces
            return []
        return [("commits", "Commit timeline of one held-out family", commit_timeline_section(ev, runs_folder))]

    def nav_words(self) -> Mapping[str, str]:
        return NAV_WORDS
