"""The five packages type-check: mypy (configured in pyproject.toml, installed by the dev extra) runs clean.

CI runs the README's test command, so this test is how mypy runs in CI.
"""

from __future__ import annotations

import pytest

from tests.helpers.prefetch import Prefetcher

pytestmark = pytest.mark.slow  # mypy over the packages: a minute cold


@pytest.mark.prefetch("mypy")
def test_mypy_is_clean(prefetched: Prefetcher):
    """``python -m mypy`` in the repository root with a fresh cache (a job of tests/helpers/prefetch.py,
    begun in the background when the tests are collected)."""
    _, (proc,) = prefetched.result("mypy")
    assert proc.args[1:3] == ["-m", "mypy"]
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
