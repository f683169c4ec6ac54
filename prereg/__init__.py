"""The plan: schema, strict YAML loading, canonical form and hash, locks and amendments (``prereg``).

Public Python API (what a notebook calls; see ``docs/api.md``)::

    lock = prereg.freeze("study.yaml")            # -> prereg.Lock (study.lock.json beside it)
    lock = prereg.load_lock("study.lock.json")    # verifies; IntegrityError if it does not
    report = prereg.verify("study.lock.json")     # -> VerifyReport (ok, differences, notes)
    lock = prereg.amend("study.yaml", reason="...", runs="runs/")
    loaded = prereg.load_plan("study.yaml")       # validate only

Errors derive from :class:`prereg.ToolkitError` (``InputError`` exit 2, ``IntegrityError`` exit 3).
The package imports lazily (PEP 562): ``import prereg`` loads no pydantic or YAML until a name is used,
so every console script's ``--help`` stays instant.
"""

from __future__ import annotations

from typing import Any

from estimators.lazy import LazyExports
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


_exports = LazyExports(__name__, _LOCATIONS)


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (:mod:`estimators.lazy`)."""
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names()


__all__ = ["__version__", *sorted(_LOCATIONS)]
