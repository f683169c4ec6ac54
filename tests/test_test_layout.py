"""The tests' own layout: shared helpers live in conftest.py or tests/helpers, never in a test module."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
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
