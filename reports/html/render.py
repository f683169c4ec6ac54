"""The HTML report's Jinja2 environment: templates in ``reports/html/templates``, autoescaping on.

Data enter templates as values (escaped there, control characters shown by ``safe_text.clean``);
markup made elsewhere enters only as ``Markup`` rendered by another template. Template sources
are written one element per line: the loader joins the lines (indentation is for the reader).
Figure coordinates: x in percent of the width (``x_at``), y and sizes in pixels.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from reports.words import palette
from reports.words.safe_text import clean

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
COLOURS = {"TEXT": "#1f2328", "AXIS": "#444444", "NULL": "#555555", "MARGIN": "#b35806", "GREY": "#8c8c8c"}
X0, XW = 3.0, 94.0  # the plotting area, in percent of the width


class _JoinedLines(PackageLoader):
    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool] | None]:
        source, path, uptodate = super().get_source(environment, template)
        return re.sub(r"\n[ \t]*", "", source), path, uptodate


def _finalize(value: Any) -> Any:
    return clean(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def x_at(frac: float) -> str:
    """A fraction of the plotting area's width as an x coordinate ('50.000%')."""
    return f"{X0 + XW * frac:.3f}%"


ENV = Environment(
    loader=_JoinedLines("reports", "html/templates"),
    autoescape=True,
    auto_reload=False,
    undefined=StrictUndefined,
    finalize=_finalize,
)
ENV.filters["g"] = lambda v: f"{v:g}"
ENV.globals.update(COLOURS, FONT=FONT, XW=XW, ALARM=palette.ALARM_COLOUR, palette=palette, x_at=x_at)


def macro(template: str, name: str) -> Callable[..., Markup]:
    """The macro ``name`` of ``template``, callable from Python (it returns ``Markup``)."""
    return getattr(ENV.get_template(template).module, name)
