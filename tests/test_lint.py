"""The code is ruff-clean: pyflakes, isort, pyupgrade and bugbear (configured in pyproject.toml, installed by
the dev extra). CI runs the README's test command, so this test is how ruff runs in CI, as mypy does in
tests/test_typecheck.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = (
    "prereg",
    "collect",
    "estimators",
    "gates",
    "reports",
    "prereg_toolkit_cli",
    "studies",
    "tests",
    "benchmarks",
    "conftest.py",
)


@pytest.mark.subprocess(quick=True)  # under a second
def test_ruff_is_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


@pytest.mark.subprocess(quick=True)  # under a second
def test_ruff_format_is_applied():
    """Every file is as `ruff format` writes it (pyproject.toml's [tool.ruff.format]): `ruff format .` fixes it."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--no-cache", "--check", *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
