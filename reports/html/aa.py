"""The HTML page's A/A check section (``Evaluation.aa_pairs``): the rows and rule of :mod:`reports.words.aa`,
drawn by ``templates/aa.html``; a verdict's badge wears the colour of the gate verdict it acts like."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from reports.html.render import macro
from reports.words import aa as at

if TYPE_CHECKING:
    from gates.artifact import Evaluation


def aa_section(ev: Evaluation) -> Markup | None:
    """The section's body, or None when the plan declares no A/A pair."""
    rows = at.aa_rows(ev)
    if not rows:
        return None
    view: list[dict[str, Any]] = [{**r._asdict(), "colour": at.AA_AS_VERDICT[r.verdict]} for r in rows]
    return macro("aa.html", "aa_section")(view, at.aa_rule(ev))


__all__ = ["aa_section"]
