"""The shared example plans are copied into the repository unchanged (tests read only the copies)."""

from __future__ import annotations

import hashlib

from tests.conftest import SHARED_EXAMPLES

# SHA-256 of the shared examples folder's *.yaml when they were copied (2026-12-01); refresh both together.
PINNED = {
    "cadence-energy.yaml": "ed7672959c23198ea1e952e0cfcea22b43f6dcdbb152e040e65cf28cdee2c024",
    "equal-work.yaml": "e8be4a1a36409b917d0253e7749c23f62a1d366dd368278061a48ff372497667",
}


def test_shared_example_copies_are_unchanged():
    found = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SHARED_EXAMPLES.glob("*.yaml")}
    assert found == PINNED
