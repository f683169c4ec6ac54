"""Shared fixtures: the repository root and the shared example plans."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Byte-for-byte copies of the shared example plans (the v1 plans the tool must accept as written), kept in
# the repository so a clone anywhere runs every test; tests/test_fixtures.py pins their hashes.
SHARED_EXAMPLES = REPO / "tests" / "fixtures" / "shared_examples"
OWN_EXAMPLES = REPO / "examples"


def shared_example_path(name: str) -> Path:
    """Path of the repository's copy of the shared example plan ``<name>``."""
    path = SHARED_EXAMPLES / name
    assert path.is_file(), f"missing fixture {path}"
    return path


@pytest.fixture
def equal_work_bytes() -> bytes:
    """The shared equal-work plan, as raw bytes."""
    return shared_example_path("equal-work.yaml").read_bytes()


@pytest.fixture
def cadence_bytes() -> bytes:
    """The shared cadence-energy plan, as raw bytes."""
    return shared_example_path("cadence-energy.yaml").read_bytes()
