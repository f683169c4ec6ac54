"""Matching runs to the plan, invalidators, verdicts and the decision: the evaluation artifact (``gates``).

Public Python API (what a notebook calls; see ``docs/api.md``)::

    ev = gates.evaluate(lock, "runs/")          # -> gates.Evaluation (nothing written unless out=...)
    ev.decision; ev.to_frame()                  # one row per gate; a table in Jupyter once reports is imported
    gates.write_evaluation("evaluation.json", ev)
    ev = gates.read_evaluation("runs/evaluation.json")

The package imports lazily (PEP 562): ``import gates`` loads nothing heavy until a name is used.
The per-gate verdicts and the decision are computed in :mod:`gates.verdicts`.
"""

from __future__ import annotations

from typing import Any

from estimators.lazy import LazyExports

_LOCATIONS: dict[str, str] = {
    "Evaluation": "artifact",
    "EvaluationError": "artifact",
    "GateResult": "artifact",
    "LedgerTampered": "integrity",
    "evaluate": "api",
    "read_evaluation": "api",
    "write_evaluation": "api",
}


_exports = LazyExports(__name__, _LOCATIONS)


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (:mod:`estimators.lazy`)."""
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names()


__all__ = sorted(_LOCATIONS)
