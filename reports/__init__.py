"""Rendering plans, evaluations and telemetry for people: rich terminal, Markdown, HTML, plots.

Public Python API (what a notebook calls; see ``docs/api.md``)::

    text = reports.markdown_report(ev, show_blocks=True)   # GitHub-flavoured Markdown
    html = reports.html_report(ev)                          # what ev._repr_html_() shows
    reports.render_evaluation(ev)                               # a rich renderable for a console

The package imports lazily (PEP 562): ``import reports`` loads no rich or matplotlib until used.
Importing it registers the Jupyter table of an ``Evaluation`` (``gates.htmlview``).
"""

from __future__ import annotations

from typing import Any

from estimators.lazy import LazyExports
from gates.htmlview import register_html_view
from reports.html.jupyter import evaluation_html

_LOCATIONS: dict[str, str] = {
    "html_report": "html.jupyter:evaluation_html",
    "markdown_report": "markdown.evaluation:evaluation_markdown",
    "render_evaluation": "terminal.evaluation",
}  # "module:attribute" where the public name differs from the function's (never a submodule's name)

_exports = LazyExports(__name__, _LOCATIONS)
register_html_view(evaluation_html)  # what Evaluation._repr_html_ shows once reports is imported


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (:mod:`estimators.lazy`)."""
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names()


__all__ = sorted(_LOCATIONS)
