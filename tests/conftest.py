"""Shared fixtures: the repository root and the shared example plans."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_EXAMPLES = REPO.parent / "shared" / "examples"
OWN_EXAMPLES = REPO / "examples"


def shared_example_path(name: str) -> Path:
    """Path of ``../shared/examples/<name>``; required on CI, skipped elsewhere if absent."""
    path = SHARED_EXAMPLES / name
    if not path.is_file():
        if os.environ.get("CI"):
            raise AssertionError(f"CI must have the shared examples beside the checkout: {path}")
        pytest.skip(f"shared examples not found at {SHARED_EXAMPLES}")
    return path


@pytest.fixture
def equal_work_bytes() -> bytes:
    """The shared equal-work plan, as raw bytes."""
    return shared_example_path("equal-work.yaml").read_bytes()


@pytest.fixture
def cadence_bytes() -> bytes:
    """The shared cadence-energy plan, as raw bytes."""
    return shared_example_path("cadence-energy.yaml").read_bytes()
