"""Matching runs to the plan, invalidators, verdicts and the decision: the evaluation artifact (``gates``).

Public API (``evaluate``, ``read_evaluation``, ``write_evaluation``): ``docs/api.md``. Names load on first
use (:mod:`estimators.lazy`); the verdicts and the decision are computed in :mod:`gates.verdicts`.
"""

from __future__ import annotations

from estimators.lazy import lazy_exports

_LOCATIONS: dict[str, str] = {
    "Evaluation": "artifact",
    "EvaluationError": "artifact",
    "GateResult": "artifact",
    "LedgerTampered": "integrity",
    "evaluate": "api",
    "read_evaluation": "api",
    "write_evaluation": "api",
}


__getattr__, __dir__ = lazy_exports(__name__, _LOCATIONS)


__all__ = sorted(_LOCATIONS)
