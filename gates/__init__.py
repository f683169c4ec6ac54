"""Matching runs to the plan, invalidators, verdicts, the decision and the ``gates`` CLI.

Public Python API (what a notebook calls; see ``docs/api.md``)::

    ev = gates.evaluate(lock, "runs/")          # -> gates.Evaluation (nothing written unless out=...)
    ev.decision; ev.to_frame()                  # one row per gate; ev renders as HTML in Jupyter
    gates.write_evaluation("evaluation.json", ev)
    ev = gates.read_evaluation("runs/evaluation.json")

The package imports lazily (PEP 562): ``import gates`` loads nothing heavy until a name is used.
``gates.evaluate`` is the function even after the submodule ``gates/evaluate.py`` (the per-gate
verdicts) is imported: the package never stores a submodule under a public API name (import it as
``from gates.evaluate import ...`` or ``importlib.import_module("gates.evaluate")``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_LOCATIONS: dict[str, str] = {
    "Evaluation": "artifact",
    "EvaluationError": "artifact",
    "GateResult": "artifact",
    "LedgerTampered": "integrity",
    "evaluate": "api",
    "read_evaluation": "api",
    "write_evaluation": "api",
}


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use."""
    module = _LOCATIONS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LOCATIONS))


__all__ = sorted(_LOCATIONS)


class _Package(types.ModuleType):
    """This package's module type: a submodule import never hides a public API name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LOCATIONS and isinstance(value, types.ModuleType):
            return  # e.g. gates/evaluate.py: reachable through sys.modules, never as gates.evaluate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
