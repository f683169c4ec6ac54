"""Lazy package exports (PEP 562), the one loader every package's ``__init__`` uses.

A package maps each public name to the submodule defining it; the submodule (and whatever it
imports: numpy, scipy, pydantic) loads on first use of the name, so ``import prereg`` and every
``--help`` stay instant. Standard library only; lives in the leaf package so every package may
import it without an import circle.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


class LazyExports:
    """``package``'s public names, each loaded on first use from ``locations[name]``: a submodule
    (``"api"``: the same name there) or ``"submodule:attribute"`` (exported under another name)."""

    def __init__(self, package: str, locations: dict[str, str]) -> None:
        self.package, self.locations = package, locations

    def load(self, name: str) -> Any:
        """The value of ``name`` (cached in the package's namespace); ``AttributeError`` if unknown."""
        where = self.locations.get(name)
        if where is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(f".{module}", self.package), attribute or name)
        setattr(sys.modules[self.package], name, value)
        return value

    def names(self) -> list[str]:
        """What ``dir(package)`` lists: what is loaded and what can be."""
        return sorted(set(vars(sys.modules[self.package])) | set(self.locations))
