"""The tutorial's Python section runs as written (in a copy of examples/, from a fresh folder)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tutorial_python() -> str:
    text = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    section = text.split("\n## The same study from Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, "the tutorial's Python section holds one python block"
    return blocks[0]


def test_tutorial_python_section_runs_as_written(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(tutorial_python(), "docs/tutorial.md[## The same study from Python]", "exec"), {})  # noqa: S102 - our docs
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "supported"
    assert "Comparison(estimate=0.87116, confidence_interval=(0.863111, 0.879283)" in out
    assert (tmp_path / "demo" / "runs" / "ledger.jsonl").is_file()
    assert not (tmp_path / "demo" / "runs" / "evaluation.json").exists()  # evaluate wrote nothing
