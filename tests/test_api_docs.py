"""docs/api.md runs as written: every ```python block, in order, in a temporary folder.

The folder holds what the page says it does: ``study.yaml`` (the shared equal-work example),
``runs.csv`` (its deterministic table of runs, ``tests.helpers.equal_work_rows``) and ``churn.yaml``
(``examples/churn-cadence.yaml``, a simulator plan that runs in seconds).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, write_csv

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"


def python_blocks(text: str) -> list[str]:
    """The bodies of the fenced ```python blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_page_has_a_block_per_package() -> None:
    blocks = python_blocks(DOC.read_text())
    for package in ("prereg", "collect", "gates", "reports"):
        assert any(f"import {package}" in b for b in blocks), package


def test_every_python_block_of_api_md_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copyfile(shared_example_path("equal-work.yaml"), tmp_path / "study.yaml")
    shutil.copyfile(ROOT / "examples" / "churn-cadence.yaml", tmp_path / "churn.yaml")
    write_csv(tmp_path / "runs.csv", equal_work_rows())
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 5
    for number, block in enumerate(blocks, start=1):
        code = compile(block, f"docs/api.md block {number}", "exec")
        exec(code, {"__name__": f"api_md_block_{number}"})  # noqa: S102 - our own documentation
    out = capsys.readouterr().out
    assert "supported" in out and "LockError 2" in out
    assert (tmp_path / "study.lock.json").is_file() and (tmp_path / "runs" / "evaluation.json").is_file()
    assert (tmp_path / "churn-runs" / "ledger.jsonl").is_file()
