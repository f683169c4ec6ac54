"""The hook through which a renderer gives ``Evaluation`` its Jupyter HTML (``_repr_html_``).

``gates`` never draws: ``reports`` registers its table when imported (``register_html_view``);
until one is registered, ``Evaluation._repr_html_`` shows a short escaped text summary.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any

#: renders an evaluation as an HTML fragment, every value escaped
HtmlView = Callable[["Any"], str]

_view: HtmlView | None = None


def register_html_view(view: HtmlView) -> None:
    """Make ``view(evaluation) -> html`` what ``Evaluation._repr_html_`` returns (the last one registered wins)."""
    global _view
    _view = view


def evaluation_view() -> HtmlView | None:
    """The registered HTML view, or None when no renderer has registered one."""
    return _view


__all__ = ["HtmlView", "evaluation_view", "register_html_view"]
