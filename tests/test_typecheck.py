"""The five packages type-check: mypy (configured in pyproject.toml, installed by the dev extra) runs clean.

CI runs the README's test command, so this test is how mypy runs in CI.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.subprocess  # mypy over the packages: a minute cold
HANG_S = 1800  # only to catch a hang


def test_mypy_is_clean(tmp_path):
    """``python -m mypy`` in the repository root with a fresh cache."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
