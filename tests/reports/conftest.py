"""Fixtures shared by the report tests: one real torch.multisite runs folder for the whole session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run

SMALL_TORCH_PLAN = Path(__file__).resolve().parent / "fixtures" / "equal-work-torch-small.yaml"
PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}


@pytest.fixture(scope="session")
def small_torch_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(lock, runs folder) of ``prereg freeze`` + ``collect run --jobs 1`` of the small copy of the torch
    demo plan (fixtures/equal-work-torch-small.yaml: 4 runs with traces, a timeline and telemetry), made
    once per session for test_telemetry_plot.py and test_html_browser.py. Read-only: a test that
    evaluates, reports into or tampers with it works on a copy."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("small-torch")
    lock = root / "small.lock.json"
    for args in (
        ("prereg", "freeze", str(SMALL_TORCH_PLAN), "-o", str(lock)),
        ("collect", "run", str(lock), "--out", str(root / "runs"), "--jobs", "1"),
    ):
        proc = run(*args, env=PLAIN)
        assert proc.returncode == 0, proc.stderr
    return lock, root / "runs"
