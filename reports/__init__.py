"""Rendering plans, evaluations and telemetry for people: rich terminal, Markdown, HTML, plots.

Public Python API (what a notebook calls; see ``docs/api.md``)::

    text = reports.markdown_report(ev, show_blocks=True)   # GitHub-flavoured Markdown
    html = reports.html_report(ev)                          # what ev._repr_html_() shows
    reports.render_evaluation(ev)                               # a rich renderable for a console

The package imports lazily (PEP 562): ``import reports`` loads no rich or matplotlib until used.
"""

from __future__ import annotations

import importlib
from typing import Any

_LOCATIONS: dict[str, str] = {
    "html_report": "evaluation_html",
    "markdown_report": "evaluation_markdown",
    "render_evaluation": "evaluation_view",
}
#: public names that differ from the function's name in its module (never a submodule's name)
_NAMES = {"html_report": "evaluation_html", "markdown_report": "evaluation_markdown"}


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use."""
    module = _LOCATIONS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), _NAMES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LOCATIONS))


__all__ = sorted(_LOCATIONS)
