"""The architecture of DESIGN.md, checked on the source: who may import whom, and one exception base.

The import graph is read with ``ast`` from every module of the five packages, imports inside
functions included (marked *lazy*); imports under ``if TYPE_CHECKING:`` are annotations only and
left out. What the graph actually is (at the time of writing):

* eager (module-level) edges between packages run one way only: ``collect -> prereg``,
  ``gates -> collect, prereg``, ``reports -> gates, prereg`` (and ``reports -> collect`` lazily,
  to read a ledger for plots); ``estimators`` imports none of the others, and ``prereg`` and
  ``collect`` import it only lazily;
* the lazy edges against the data flow are all rendering, listed in ``BACKWARD_LAZY``: the CLIs
  of ``prereg`` and ``gates`` print through ``reports``, ``cli.kit`` escapes text with
  ``reports.words.safe_text``, and ``Evaluation._repr_html_`` (``gates.artifact``) asks
  ``reports.html.jupyter`` for its HTML. So the package graph is acyclic at import time and
  has cycles only through those lazy rendering calls;
* only ``*.cli`` modules import ``cli.kit``; no module but a package's own entry point
  imports a ``*.cli`` module, so no CLI imports another and no library imports a CLI.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("prereg", "collect", "estimators", "gates", "reports")
#: the data flow of DESIGN.md: a package may import (eagerly) only packages before it
ORDER = {"prereg": 0, "collect": 1, "gates": 2, "reports": 3}
#: lazy imports against the data flow: (importing module, imported module prefix) -- rendering only
BACKWARD_LAZY = {
    ("cli.prereg", "reports."),
    ("cli.kit", "reports.words.safe_text"),
    ("cli.gates", "reports."),
    ("gates.artifact", "reports.html.jupyter"),
}
#: estimators modules every package may import eagerly (no numpy/scipy: checked below)
LIGHT_ESTIMATORS = {"estimators", "estimators.lazy", "estimators.vocabulary", "estimators.expressions"}
#: exception classes outside the ToolkitError tree, each with its reason
EXCEPTION_EXEMPT: set[str] = set()  # none: estimators' own errors are ValueErrors by design (below)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def toolkit_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[tuple[str, bool]]:
    """``(imported module, lazy)`` for every import in the module (``from x import y``: x, and x.y if a module)."""
    found: set[tuple[str, bool]] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, lazy)
                continue
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.update((alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.add((target, inner))
                found.update((f"{target}.{a.name}", inner) for a in child.names if f"{target}.{a.name}" in modules)
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[tuple[str, bool]]]:
    modules = toolkit_modules()
    assert len(modules) > 80
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _package(module: str) -> str:
    return module.split(".")[0]


def test_no_module_imports_a_cli_but_its_entry_point(graph: dict[str, set[tuple[str, bool]]]) -> None:
    offenders = [(m, t) for m, edges in graph.items() for t, _ in edges
                 if (t.endswith(".cli") or ".cli." in t) and _package(t) in PACKAGES]
    assert offenders == []


def test_only_cli_modules_use_the_cli_plumbing(graph: dict[str, set[tuple[str, bool]]]) -> None:
    offenders = [m for m, edges in graph.items() if any(t == "cli.kit" for t, _ in edges)
                 and not m.endswith(".cli")]
    assert offenders == []


def test_estimators_is_a_leaf(graph: dict[str, set[tuple[str, bool]]]) -> None:
    offenders = [(m, t) for m, edges in graph.items() if _package(m) == "estimators"
                 for t, _ in edges if _package(t) in PACKAGES and _package(t) != "estimators"]
    assert offenders == []
    eager_users = [(m, t) for m, edges in graph.items() if _package(m) in ("prereg", "collect")
                   for t, lazy in edges if _package(t) == "estimators" and not lazy and t not in LIGHT_ESTIMATORS]
    assert eager_users == []  # prereg and collect load numpy/scipy only when they need it
    for light in LIGHT_ESTIMATORS:  # the shared vocabulary and the contrast parser: standard library only
        path = ROOT / (light.replace(".", "/") + ".py")
        tree = ast.parse((path if path.exists() else ROOT / light / "__init__.py").read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
        assert imported <= set(sys.stdlib_module_names) | {"__future__"}, (light, imported)


def test_eager_imports_follow_the_data_flow(graph: dict[str, set[tuple[str, bool]]]) -> None:
    """prereg -> collect -> gates -> reports: module-level imports only point backwards."""
    against = [(m, t) for m, edges in graph.items() for t, lazy in edges
               if not lazy and _package(m) in ORDER and _package(t) in ORDER
               and ORDER[_package(t)] > ORDER[_package(m)]]
    assert against == []


def test_lazy_imports_against_the_flow_are_only_rendering(graph: dict[str, set[tuple[str, bool]]]) -> None:
    against = {(m, t) for m, edges in graph.items() for t, lazy in edges
               if lazy and _package(m) in ORDER and _package(t) in ORDER
               and ORDER[_package(t)] > ORDER[_package(m)]}
    unexpected = {(m, t) for m, t in against if not any(m == a and t.startswith(b) for a, b in BACKWARD_LAZY)}
    assert unexpected == set()
    assert against, "the allowlist describes edges that exist; drop it if they are gone"


def test_package_graph_is_acyclic_at_import_time(graph: dict[str, set[tuple[str, bool]]]) -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for m, targets in graph.items():
        for t, lazy in targets:
            if not lazy and _package(t) in PACKAGES and _package(t) != _package(m):
                edges[_package(m)].add(_package(t))
    assert dict(edges) == {"prereg": {"estimators"}, "collect": {"estimators", "prereg"},
                           "gates": {"collect", "estimators", "prereg"}, "reports": {"estimators", "gates", "prereg"}}
    seen: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle {' -> '.join((*path, node))}"
        if node in seen:
            return
        for nxt in edges.get(node, ()):
            visit(nxt, (*path, node))
        seen.add(node)

    for pkg in PACKAGES:
        visit(pkg, ())


def test_telemetry_base_imports_no_backend(graph: dict[str, set[tuple[str, bool]]]) -> None:
    backends = {"collect.telemetry.sensors.sim", "collect.telemetry.sensors.nvml", "collect.telemetry.sensors.replay"}
    assert not {t for t, _ in graph["collect.telemetry.sensors.base"]} & backends


def _all_modules() -> list[str]:
    names = []
    for pkg in PACKAGES:
        module = importlib.import_module(pkg)
        names.append(pkg)
        names += [info.name for info in pkgutil.walk_packages(module.__path__, f"{pkg}.")]
    return names


def test_every_toolkit_exception_derives_from_toolkit_error() -> None:
    from prereg.errors import ToolkitError

    checked, outside = [], []
    for name in _all_modules():
        if _package(name) == "estimators":  # a pure leaf: raises ValueError like scipy
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as err:  # an optional extra that is not installed here (torch, matplotlib)
            pytest.skip(f"{name} needs an optional extra: {err}")
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name or not issubclass(cls, Exception) or issubclass(cls, Warning):
                continue
            checked.append(f"{name}.{cls_name}")
            if not issubclass(cls, ToolkitError) and f"{name}.{cls_name}" not in EXCEPTION_EXEMPT:
                outside.append(f"{name}.{cls_name}")
    assert outside == []
    assert len(checked) >= 18  # the base, InputError, IntegrityError and every deliberate error
