"""Plugins: one loader for collectors, sensors, and a study's report sections and plot views.

Each kind is a :class:`Registry` of one entry-point group (``prereg_toolkit.collectors``,
``prereg_toolkit.sensors``; ``prereg_toolkit.report_sections`` and ``prereg_toolkit.plot_views`` in
:mod:`reports.sections`) plus ``module:Class`` names; what loads must subclass (or implement) the kind's
base. Every failure is one :class:`PluginError` (exit 2). Listing names imports no plugin (docs/extending.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterator, MutableMapping
from functools import cache
from importlib.metadata import entry_points

from prereg.errors import InputError

COLLECTOR_GROUP = "prereg_toolkit.collectors"
SENSOR_GROUP = "prereg_toolkit.sensors"
#: ``package.module:Class`` -- a plugin named directly, without an entry point
_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


class PluginError(InputError, ValueError):
    """A plugin that cannot be found, imported, or is not of its kind's base class (or protocol)."""


def is_target(name: str) -> bool:
    """Whether ``name`` is a direct ``module:Class`` reference (rather than a registered name)."""
    return bool(_TARGET.match(name))


@cache
def _entry_points(group: str) -> dict[str, str]:
    """``name -> "module:attr"`` of every installed entry point in ``group`` (read once per process)."""
    return {ep.name: ep.value.replace(" ", "") for ep in entry_points(group=group)}


class Registry(MutableMapping[str, str]):
    """The plugins of one kind: ``name -> "module:Class"``, from entry points plus in-process additions;
    ``base_path`` names the kind's base class, or its runtime-checkable protocol when ``protocol``.

    Assigning a name (``registry["test.slow"] = "pkg.mod:Cls"``) registers it for this process only
    (tests, notebooks); the installed entry points are read lazily on first use.
    """

    def __init__(self, group: str, base_path: str, kind: str, protocol: bool = False) -> None:
        self.group, self.kind, self._protocol = group, kind, protocol
        self._base_path = base_path  # "module:Class" of the kind's base class (imported on first load)
        self._added: dict[str, str] = {}
        self._removed: set[str] = set()

    def _all(self) -> dict[str, str]:
        found = {k: v for k, v in _entry_points(self.group).items() if k not in self._removed}
        return {**found, **self._added}

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __setitem__(self, name: str, target: str) -> None:
        if not is_target(target):
            raise ValueError(f"{target!r} is not a 'module:Class' reference")
        self._added[name] = target
        self._removed.discard(name)

    def __delitem__(self, name: str) -> None:
        if name not in self._all():
            raise KeyError(name)
        self._added.pop(name, None)
        if name in _entry_points(self.group):
            self._removed.add(name)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._all()))

    def __len__(self) -> int:
        return len(self._all())

    def target(self, name: str) -> str:
        """``module:Class`` for a registered name or a direct reference; ``PluginError`` if neither."""
        if is_target(name):
            return name
        found = self._all().get(name)
        if found is None:
            installed = ", ".join(self) or f"none (no entry points in {self.group}: is the toolkit installed?)"
            raise PluginError(
                f"unknown {self.kind} {name!r}; installed: {installed}; or name a class "
                f"directly as 'module:Class' (entry-point group {self.group})"
            )
        return found

    def check_findable(self, name: str) -> None:
        """Whether ``name`` can be loaded, without importing it: registered, or its module exists."""
        module = self.target(name).partition(":")[0]
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise PluginError(f"{self.kind} {name!r}: module {module!r} is not importable here")

    def load(self, name: str) -> type:
        """The class registered under ``name`` (or named ``module:Class``), checked against the base class."""
        return load_target(self.target(name), self._base_path, f"{self.kind} {name!r}", self._protocol)


def load_target(target: str, base_path: str, what: str, protocol: bool = False) -> type:
    """Import ``module:Class`` and check it subclasses the class at ``base_path`` (implements it, for a
    runtime-checkable ``protocol``); ``PluginError`` otherwise."""
    module, _, attr = target.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except ImportError as err:
        raise PluginError(f"{what} is not available here: {err}") from None
    except AttributeError:
        raise PluginError(f"{what}: module {module!r} has no {attr!r}") from None
    except Exception as err:  # a third-party module that raises while importing
        raise PluginError(f"{what}: importing {module!r} failed: {type(err).__name__}: {err}") from None
    base_module, _, base_attr = base_path.partition(":")
    base = getattr(importlib.import_module(base_module), base_attr)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        relation = "does not implement" if protocol else "is not a subclass of"
        raise PluginError(f"{what}: {target} {relation} {base_module}.{base_attr}")
    return obj


COLLECTORS = Registry(COLLECTOR_GROUP, "collect.collectors.base:Collector", "collector")
SENSORS = Registry(SENSOR_GROUP, "collect.telemetry.sensors.base:Sensor", "sensor")
