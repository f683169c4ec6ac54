"""The architecture of DESIGN.md, checked on the source: who may import whom, and one exception base.

The import graph is read with ``ast`` from every module of the six packages. Every import counts,
inside a function too (*lazy*); imports under ``if TYPE_CHECKING:`` are annotations only and are
left out. ``from pkg import name``, where ``pkg``'s ``__init__`` exports ``name`` lazily
(:func:`estimators.lazy.lazy_exports`), is an edge to the module the name lives in, and a package's
export table is an edge from the package to each module it names; importing ``a.b.c`` also runs
``a`` and ``a.b``, so it is an edge to those too. On that graph, with no allow-list:

* no module-level import cycle (lazy imports included);
* no upward edge: ``estimators < prereg < collect < gates < reports < prereg_toolkit_cli``, a module imports
  only packages at or below its own, so no library imports a console script;
* an import inside a function is there only to keep a heavy dependency lazy: it loads one of
  :data:`HEAVY` that its module does not already load at import time, and says which in a
  trailing ``# lazy: <dependency>`` comment.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the layers, lowest first: a module may import only packages at or below its own
LAYERS = ("estimators", "prereg", "collect", "gates", "reports", "prereg_toolkit_cli", "prereg_seed_studies")
PACKAGES = LAYERS
#: each package's folder: the seed studies are a distribution of their own, under studies/
SOURCES = {pkg: ROOT / pkg for pkg in PACKAGES} | {"prereg_seed_studies": ROOT / "studies" / "prereg_seed_studies"}
#: third-party packages worth keeping lazy, with why
HEAVY = {
    "jinja2": "the console scripts start without it",
    "numpy": "the console scripts start without it",
    "scipy": "the console scripts start without it",
    "pydantic": "the console scripts start without it",
    "yaml": "the console scripts start without it",
    "rich": "the console scripts start without it",
    "pandas": "an optional extra",
    "pyarrow": "an optional extra",
    "statsmodels": "a test dependency only",
    "matplotlib": "an optional extra",
    "torch": "an optional extra",
    "ray": "an optional extra",
    "mlflow": "an optional extra (collect import mlflow:)",
    "tensorboard": "an optional extra (collect import tensorboard:)",
    "pynvml": "binds the GPU driver",
}
#: estimators modules every package may import eagerly (no numpy/scipy: checked below)
LIGHT_ESTIMATORS = {
    "estimators",
    "estimators.lazy",
    "estimators.vocabulary",
    "estimators.expressions",
    "estimators.spending",
}
#: exception classes outside the ToolkitError tree, each with its reason
EXCEPTION_EXEMPT: set[str] = set()  # none: estimators' own errors are ValueErrors by design (below)
LAZY_COMMENT = re.compile(r"#\s*lazy:\s*(.+)")
#: modules every console script's ``--help`` runs: there an import may wait for the command that needs it
#: though it defers nothing heavy (``# lazy: startup``), so ``--help`` stays within 1.5x of ``python -c pass``
STARTUP_MODULES = ("prereg_toolkit_cli", "reports")  # the scripts and their kit; reports' __init__ (kit's safe_text)


def _startup_module(module: str) -> bool:
    return _package(module) == "prereg_toolkit_cli" or module in STARTUP_MODULES


@dataclass(frozen=True)
class Import:
    """One import statement's edge: the toolkit module it runs (or the third-party package)."""

    target: str  # a toolkit module, or the top-level name of a third-party package
    toolkit: bool
    lazy: bool  # inside a function
    line: int
    text: str  # the statement's source lines


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "studies":  # studies/prereg_seed_studies/... is the package prereg_seed_studies
        parts = parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def toolkit_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted(SOURCES[pkg].rglob("*.py"))}


def _package(module: str) -> str:
    return module.split(".")[0]


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def lazy_exports(package: str) -> dict[str, str]:
    """A package ``__init__``'s ``LazyExports`` table: public name -> the module defining it."""
    path = toolkit_modules().get(package)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "_LOCATIONS" for t in targets):
                table = ast.literal_eval(node.value)
                return {name: f"{package}.{where.partition(':')[0]}" for name, where in table.items()}
    return {}


def _resolve(name: str) -> str:
    """The toolkit module that ``import name`` runs (the longest prefix that is one)."""
    modules = toolkit_modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _targets(node: ast.Import | ast.ImportFrom, package: list[str]) -> Iterator[tuple[str, bool]]:
    """(module or third-party package, is toolkit) for each thing the statement imports."""
    modules = toolkit_modules()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        exports = lazy_exports(source)
        names = [
            f"{source}.{a.name}" if f"{source}.{a.name}" in modules else exports.get(a.name, source) for a in node.names
        ]
    for name in names:
        if _package(name) in PACKAGES:
            yield _resolve(name), True
        else:
            yield _package(name), False


def imports_of(name: str, path: Path) -> list[Import]:
    """Every import of the module but those under ``if TYPE_CHECKING:``."""
    source = path.read_text()
    lines = source.splitlines()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, lazy)
                continue
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import | ast.ImportFrom):
                text = "\n".join(lines[child.lineno - 1 : child.end_lineno])
                for target, toolkit in _targets(child, package):
                    found.append(Import(target, toolkit, inner, child.lineno, text))
            visit(child, inner)

    visit(ast.parse(source, str(path)), False)
    found += [Import(target, True, True, 0, "") for target in sorted(set(lazy_exports(name).values()))]
    return found


@cache
def graph() -> dict[str, list[Import]]:
    modules = toolkit_modules()
    assert len(modules) > 80
    return {name: imports_of(name, path) for name, path in modules.items()}


def edges(module: str, lazy: bool = True) -> set[str]:
    """The toolkit modules ``module`` runs (eagerly only, unless ``lazy``): the imported modules and
    the packages above them, but not ``module`` itself or its own packages (they run first)."""
    own = {module, *_ancestors(module)}
    out: set[str] = set()
    for imp in graph()[module]:
        if imp.toolkit and (lazy or not imp.lazy):
            out |= {m for m in (*_ancestors(imp.target), imp.target) if m not in own}
    return out


@cache
def eager_heavy(module: str) -> frozenset[str]:
    """The :data:`HEAVY` packages that importing ``module`` loads (module-level imports, transitively)."""
    seen, todo, heavy = set(), [module, *_ancestors(module)], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        heavy |= {i.target for i in graph()[current] if not i.lazy and not i.toolkit and i.target in HEAVY}
        todo += edges(current, lazy=False)
    return frozenset(heavy)


def strongly_connected(nodes: list[str], successors: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan): the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(successors.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return found


def test_no_import_cycles() -> None:
    assert strongly_connected(list(graph()), {m: edges(m) for m in graph()}) == []


def test_the_checker_sees_cycles_lazy_edges_and_exported_names(tmp_path: Path) -> None:
    assert strongly_connected(["a", "b", "c"], {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected(["a", "b"], {"a": {"b"}}) == []
    probe = tmp_path / "probe.py"
    probe.write_text("from estimators import clears\n\ndef f():\n    import torch  # lazy: torch\n")
    found = {(i.target, i.toolkit, i.lazy) for i in imports_of("probe", probe)}
    assert found == {("estimators.rules", True, False), ("torch", False, True)}
    assert "gates.htmlview" in edges("reports")  # reports registers the Jupyter view
    assert lazy_exports("gates")["evaluate"] == "gates.api"
    assert "numpy" in eager_heavy("estimators.rules") and not eager_heavy("estimators.vocabulary")


def test_no_upward_imports() -> None:
    """A module imports only packages at or below its own layer; no library imports ``cli``."""
    order = {pkg: i for i, pkg in enumerate(LAYERS)}
    upward = sorted((m, t) for m in graph() for t in edges(m) if order[_package(t)] > order[_package(m)])
    assert upward == []


def test_console_scripts_import_only_the_shared_cli_kit() -> None:
    """No console script imports another; ``prereg_toolkit_cli.kit`` is their shared plumbing, and a script's own
    subcommand may live in a part of its own (``prereg_toolkit_cli.collect_try`` of ``prereg_toolkit_cli.collect``)."""
    offenders = sorted(
        (m, t)
        for m in graph()
        if _package(m) == "prereg_toolkit_cli"
        for t in edges(m)
        if _package(t) == "prereg_toolkit_cli"
        and t not in ("prereg_toolkit_cli", "prereg_toolkit_cli.kit")
        and not t.startswith(m + "_")
    )
    assert offenders == []


def test_console_scripts_load_nothing_heavy_at_import() -> None:
    """``--help`` stays instant: the entry points load :data:`HEAVY` packages only inside functions."""
    loaded = {m: sorted(eager_heavy(m)) for m in graph() if _package(m) == "prereg_toolkit_cli" and eager_heavy(m)}
    assert loaded == {}


def test_imports_inside_functions_keep_a_heavy_dependency_lazy() -> None:
    """An import inside a function loads a :data:`HEAVY` package its module has not loaded yet,
    and says which in a trailing ``# lazy: <package>`` comment; anything else is imported at the top."""
    needless, uncommented = [], []
    for module, imports in graph().items():
        for imp in imports:
            if not imp.lazy or not imp.line:
                continue
            loads = eager_heavy(imp.target) if imp.toolkit else frozenset({imp.target} & set(HEAVY))
            new = loads - eager_heavy(module)
            where = f"{module}:{imp.line} {imp.target}"
            comment = LAZY_COMMENT.search(imp.text)
            if not new:
                startup = comment is not None and comment.group(1).strip() == "startup"
                if not (startup and _startup_module(module)):
                    needless.append(where)
                continue
            if comment is None or not any(dep in comment.group(1) for dep in new):
                uncommented.append(f"{where} (lazy: {', '.join(sorted(new))})")
    assert sorted(set(needless)) == [], "imported inside a function with no heavy dependency to defer"
    assert sorted(set(uncommented)) == [], "a lazy import without '# lazy: <package>' naming what it defers"


def test_libraries_never_import_a_package_face_whole() -> None:
    """``import estimators as est; est.interval(...)`` would hide which module runs: libraries import
    names (``from estimators.dispatch import interval``), so the graph above sees every edge."""
    offenders = []
    for module, path in toolkit_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                offenders += [
                    f"{module}:{node.lineno} import {a.name}"
                    for a in node.names
                    if a.name in PACKAGES and lazy_exports(a.name)
                ]
    assert offenders == []


def test_reports_and_collect_keep_at_most_six_modules_at_their_top() -> None:
    """Rooms with one job: the modules live in subpackages by medium (reports) or lifecycle (collect)."""
    for package in ("reports", "collect"):
        top = sorted(p.name for p in (ROOT / package).glob("*.py"))
        assert len(top) <= 6, (package, top)


def test_every_package_says_its_job_in_its_docstring() -> None:
    """Each package's ``__init__`` opens with its job in one or two lines (no placeholder)."""
    problems = []
    for module, path in toolkit_modules().items():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        opening = doc.split("\n\n")[0].strip().splitlines()
        if not doc.strip() or "TODO" in doc or not 1 <= len(opening) <= 2 or len(" ".join(opening)) < 40:
            problems.append(f"{module}: {doc[:60]!r}")
    assert problems == []


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_uses_another_modules_private_names() -> None:
    """``from x import _y`` and ``x._y`` stay inside ``x``; a package's private submodule (``estimators._draws``)
    may be imported by its own modules only."""
    modules = toolkit_modules()
    offenders = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        bound: dict[str, str] = {}  # local name -> the toolkit module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if _package(a.name) in PACKAGES:
                        bound[a.asname or _package(a.name)] = a.name if a.asname else _package(a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    source = ".".join(
                        package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])
                    )
                else:
                    source = node.module or ""
                if _package(source) not in PACKAGES:
                    continue
                for a in node.names:
                    full = f"{source}.{a.name}"
                    if full in modules:
                        bound[a.asname or a.name] = full
                    if _private(a.name) and not (full in modules and module.startswith(source + ".")):
                        offenders.append(f"{module}:{node.lineno} from {source} import {a.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base, chain = node.value, []
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in bound:
                    owner = ".".join([bound[base.id], *reversed(chain)])
                    if owner != module:
                        offenders.append(f"{module}:{node.lineno} {owner}.{node.attr}")
    assert sorted(set(offenders)) == []


def test_estimators_is_a_leaf() -> None:
    offenders = [
        (m, t) for m in graph() if _package(m) == "estimators" for t in edges(m) if _package(t) != "estimators"
    ]
    assert offenders == []
    eager_users = [
        (m, t)
        for m in graph()
        if _package(m) in ("prereg", "collect")
        for t in edges(m, lazy=False)
        if _package(t) == "estimators" and t not in LIGHT_ESTIMATORS
    ]
    assert eager_users == []  # prereg and collect load numpy/scipy only when they need it
    for light in LIGHT_ESTIMATORS:  # the shared vocabulary and the contrast parser: standard library only
        path = toolkit_modules()[light]
        tree = ast.parse(path.read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {
            n.module.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0
        }
        assert imported <= set(sys.stdlib_module_names) | {"__future__"}, (light, imported)


def test_telemetry_base_imports_no_backend() -> None:
    backends = {"collect.telemetry.sensors.sim", "collect.telemetry.sensors.nvml", "collect.telemetry.sensors.replay"}
    assert not edges("collect.telemetry.sensors.base") & backends


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
        except ModuleNotFoundError as err:  # an optional extra that is not installed here (torch, matplotlib)
            if (err.name or "").split(".")[0] not in HEAVY:
                raise
            pytest.skip(f"{name} needs an optional extra: {err}")
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name or not issubclass(cls, Exception) or issubclass(cls, Warning):
                continue
            checked.append(f"{name}.{cls_name}")
            if not issubclass(cls, ToolkitError) and f"{name}.{cls_name}" not in EXCEPTION_EXEMPT:
                outside.append(f"{name}.{cls_name}")
    assert outside == []
    assert len(checked) >= 18  # the base, InputError, IntegrityError and every deliberate error


def _room(module: str) -> str:
    """A module's room: its subpackage (``collect.ledger``), or itself at its package's top (``collect.api``)."""
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("package", LAYERS)
def test_the_rooms_of_a_package_import_one_way(package: str) -> None:
    """Inside a package its rooms (subpackages, top-level modules) are layers too: no two import each
    other, directly or around a circle (lazy imports included), so a lower room never imports a higher one."""
    rooms: dict[str, set[str]] = {}
    for module in graph():
        if _package(module) != package or module == package:
            continue
        rooms.setdefault(_room(module), set()).update(
            _room(t) for t in edges(module) if _package(t) == package and t != package and _room(t) != _room(module)
        )
    assert strongly_connected(sorted(rooms), rooms) == []
