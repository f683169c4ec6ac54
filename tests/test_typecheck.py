"""The five packages type-check: mypy (configured in pyproject.toml, installed by the dev extra) runs clean.

CI runs the README's test command, so this test is how mypy runs in CI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # mypy over the packages: a minute cold


def test_mypy_is_clean(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
