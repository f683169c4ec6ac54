"""The documentation's Python runs as written: every ```python block of a page, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", ["docs/estimators.md"])
def test_page_runs_as_written(page, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / page)
    assert blocks, f"{page} has no python blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page}[block {i}]", "exec"), namespace)  # noqa: S102 - our own documentation
