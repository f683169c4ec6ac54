"""The plan: schema, strict YAML loading, canonical form and hash, locks and amendments (``prereg``).

Public API (``freeze``, ``load_lock``, ``verify``, ``amend``, ``load_plan``): ``docs/api.md``. Names load
on first use (:mod:`estimators.lazy`), so ``import prereg`` loads no pydantic or YAML.
"""

from __future__ import annotations

from estimators.lazy import lazy_exports
from prereg._version import __version__

_LOCATIONS: dict[str, str] = {
    "InputError": "errors",
    "IntegrityError": "errors",
    "Lock": "api",
    "LockError": "lock",
    "LoadedPlan": "plan",
    "PlanError": "plan",
    "ToolkitError": "errors",
    "VerifyReport": "lock",
    "amend": "api",
    "freeze": "api",
    "load_lock": "api",
    "load_plan": "plan",
    "parse_plan": "plan",
    "verify": "api",
}


__getattr__, __dir__ = lazy_exports(__name__, _LOCATIONS)


__all__ = ["__version__", *sorted(_LOCATIONS)]
