"""Rendering plans, evaluations and telemetry for people: rich terminal, Markdown, HTML, plots.

Public API (``markdown_report``, ``html_report``, ``render_evaluation``): ``docs/api.md``. Names load on
first use (:mod:`estimators.lazy`); importing ``reports`` registers an ``Evaluation``'s Jupyter table.
"""

from __future__ import annotations

from estimators.lazy import lazy_exports
from gates.htmlview import register_html_view

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from gates.artifact import Evaluation

_LOCATIONS: dict[str, str] = {
    "html_report": "html.jupyter:evaluation_html",
    "markdown_report": "markdown.evaluation:evaluation_markdown",
    "render_evaluation": "terminal.evaluation",
}  # "module:attribute" where the public name differs from the function's (never a submodule's name)

__getattr__, __dir__ = lazy_exports(__name__, _LOCATIONS)


def _evaluation_html(evaluation: Evaluation) -> str:
    """What ``Evaluation._repr_html_`` shows once ``reports`` is imported (the page code loads on first use)."""
    from reports.html.jupyter import evaluation_html  # lazy: jinja2

    return evaluation_html(evaluation)


register_html_view(_evaluation_html)


__all__ = sorted(_LOCATIONS)
