"""Lazy package exports (PEP 562): the one loader every package's ``__init__`` uses.

Each public name loads its submodule (and numpy, scipy, pydantic...) on first use, so ``import prereg``
and every ``--help`` stay instant. Standard library only, in the leaf package so any package may use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any


def lazy_exports(package: str, locations: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name loads from ``locations[name]``, a submodule
    (``"api"``: the same name there) or ``"submodule:attribute"`` (exported under another name)."""

    def load(name: str) -> Any:
        where = locations.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(f".{module}", package), attribute or name)
        setattr(sys.modules[package], name, value)  # cached: later uses skip __getattr__
        return value

    def names() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(locations))

    return load, names
