"""The tests' own layout: shared helpers live in conftest.py or tests/helpers, never in a test module; test
modules mirror the source tree (tests/collect/engine/ holds the tests of collect/engine/), and the few at
the top level are the named cross-cutting ones."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SOURCE_ROOTS = (REPO, REPO / "studies")  # the core's packages, and the seed studies' distribution
# Test modules of no one package: the documentation, the examples, the benchmarks, the whole project's rules.
CROSS_CUTTING = {
    "test_api.py",
    "test_api_docs.py",
    "test_architecture.py",
    "test_bench_energy_logs.py",
    "test_byo_example.py",
    "test_core_alone.py",
    "test_demo.py",
    "test_docs.py",
    "test_energy_examples.py",
    "test_fixtures.py",
    "test_format_owners.py",
    "test_gpu_energy_check.py",
    "test_kill.py",
    "test_lint.py",
    "test_project.py",
    "test_test_layout.py",
    "test_trackers_example.py",
    "test_tutorial_python.py",
    "test_typecheck.py",
}
DOTTED = re.compile(r"""["'](tests(?:\.\w+)+):(\w+)["']""")  # a plugin-style "module:Name" inside tests


def modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)


def imported_names(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_every_module_is_a_test_a_conftest_or_a_helper() -> None:
    stray = [
        str(p.relative_to(TESTS))
        for p in modules()
        if not (p.name.startswith("test_") or p.name in ("conftest.py", "__init__.py"))
        and p.relative_to(TESTS).parts[0] != "helpers"
    ]
    assert not stray, f"helpers belong in tests/helpers/ or a conftest.py: {stray}"


def test_no_module_imports_a_test_module() -> None:
    found = {
        str(p.relative_to(TESTS)): sorted(
            n for n in imported_names(p) if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")
        )
        for p in modules()
    }
    assert not {k: v for k, v in found.items() if v}, "move what they share into tests/helpers/"


def test_dotted_names_in_tests_resolve() -> None:
    """A collector named ``tests.x:Class`` in a test still exists where the name says."""
    seen = 0
    for path in modules():
        for module, name in DOTTED.findall(path.read_text(encoding="utf-8")):
            assert hasattr(importlib.import_module(module), name), f"{path.name}: {module}:{name}"
            seen += 1
    assert seen, "the pattern found no dotted name at all"


def misplaced(tests: Path) -> list[str]:
    """Test modules under ``tests`` whose folder is no package of the source tree, or that sit at the top
    level without being a named cross-cutting test."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.relative_to(tests).parts[:-1]
        if "fixtures" in folder:
            continue
        if not folder:
            if path.name not in CROSS_CUTTING:
                found.append(f"{path.name}: top level, but not a named cross-cutting test")
        elif not any((root.joinpath(*folder) / "__init__.py").is_file() for root in SOURCE_ROOTS):
            found.append(f"{path.relative_to(tests)}: no source package {'/'.join(folder)}")
        elif not (path.parent / "__init__.py").is_file():
            found.append(f"{path.relative_to(tests)}: its folder has no __init__.py")
    return found


def test_test_modules_mirror_the_source_tree() -> None:
    assert not misplaced(TESTS), "move each test beside its source module's folder (tests/<package>/<sub>/)"


def test_the_mirror_rule_finds_a_stray_module(tmp_path: Path) -> None:
    """The rule itself: a folder the source does not have, and an unnamed top-level test, are found."""
    (tmp_path / "telemetry").mkdir()
    (tmp_path / "telemetry" / "__init__.py").write_text("")
    (tmp_path / "telemetry" / "test_a.py").write_text("")
    (tmp_path / "collect" / "engine").mkdir(parents=True)
    for init in (tmp_path / "collect" / "__init__.py", tmp_path / "collect" / "engine" / "__init__.py"):
        init.write_text("")
    (tmp_path / "collect" / "engine" / "test_b.py").write_text("")
    (tmp_path / "test_c.py").write_text("")
    (tmp_path / "test_docs.py").write_text("")
    assert sorted(misplaced(tmp_path)) == [
        "telemetry/test_a.py: no source package telemetry",
        "test_c.py: top level, but not a named cross-cutting test",
    ]


class _Item:
    """What tests/conftest.py's tier hook reads of a collected test."""

    def __init__(self, *marks: pytest.MarkDecorator, nodeid: str = "tests/test_x.py::test_x") -> None:
        self.own = [m.mark for m in marks]
        self.nodeid = nodeid

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next((m for m in self.own if m.name == name), None)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.own.append(marker.mark)


def test_child_process_tests_are_slow_unless_quick() -> None:
    items = [
        _Item(pytest.mark.subprocess),
        _Item(pytest.mark.subprocess(quick=True)),
        _Item(),
        _Item(pytest.mark.slow, pytest.mark.subprocess),
    ]
    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [[m.name for m in item.own if m.name != "xdist_group"] for item in items] == [
        ["subprocess", "slow"],
        ["subprocess"],
        [],
        ["slow", "subprocess"],
    ]


def test_each_module_is_one_xdist_group_and_the_ray_modules_one_together() -> None:
    items = [
        _Item(nodeid="tests/a/test_one.py::test_x[1]"),
        _Item(nodeid="tests/a/test_one.py::TestK::test_y"),
        _Item(nodeid="tests/test_two.py::test_z"),
        _Item(pytest.mark.ray_instance, nodeid="tests/test_ray_a.py::test_r"),
        _Item(pytest.mark.ray_instance, nodeid="tests/b/test_ray_b.py::test_s"),
    ]
    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    groups = [[m.args[0] for m in item.own if m.name == "xdist_group"] for item in items]
    assert groups == [["tests/a/test_one.py"]] * 2 + [["tests/test_two.py"]] + [[conftest.RAY_GROUP]] * 2


def test_the_ray_modules_are_the_ones_that_start_ray() -> None:
    """Every module that names Ray's executor or starts Ray is marked `ray_instance` (the Ray lock of
    tests/conftest.py covers it) or says why it starts none; every marked module names Ray."""
    uses_ray = re.compile(r"ray\.init\(|\"--executor\", \"ray\"|executor=\"ray\"|\"ray\", \"start\"|cluster_utils")
    marked = re.compile(r"pytest\.mark\.ray_instance\b")
    texts = {p.name: p.read_text(encoding="utf-8") for p in modules() if p.name != Path(__file__).name}
    found = sorted(name for name, text in texts.items() if uses_ray.search(text))
    unmarked = [n for n in found if not marked.search(texts[n]) and "# starts no Ray instance: " not in texts[n]]
    assert len(found) >= 5 and not unmarked, unmarked
    assert all(uses_ray.search(texts[n]) for n in texts if marked.search(texts[n]))
