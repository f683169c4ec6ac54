"""The tracker example (docs/trackers.md) end to end through the console scripts: one study logged to MLflow
and TensorBoard by a plain PyTorch sweep (examples/trackers/sweep.py), imported from each and from the
equivalent CSV, evaluated, and verified against the MLflow store.

Checked on one run of the page's marked blocks for this module (as tests/test_docs.py checks every page), in
a copy of examples/, so the 16 training runs run once.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from tests.helpers.docs import PageRun, check_page_run, run_page

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "trackers.md"
pytestmark = [pytest.mark.subprocess, pytest.mark.filterwarnings("ignore::DeprecationWarning")]
pytest.importorskip("mlflow")
pytest.importorskip("tensorboard")


@pytest.fixture(scope="module")
def page_run(tmp_path_factory: pytest.TempPathFactory) -> PageRun:
    """docs/trackers.md's marked blocks, run once for this module."""
    return run_page(PAGE, tmp_path_factory.mktemp("trackers"))


def test_the_page_runs_as_written(page_run: PageRun) -> None:
    """docs/trackers.md as tests/test_docs.py checks every page."""
    check_page_run(page_run)


def test_the_sweep_imports_only_torch_and_the_trackers() -> None:
    """The example is a lab's own sweep: it never imports the toolkit."""
    text = (ROOT / "examples" / "trackers" / "sweep.py").read_text(encoding="utf-8")
    for package in ("prereg", "collect", "gates", "estimators", "reports"):
        assert f"import {package}" not in text and f"from {package}" not in text


def gates_of(path: Path) -> tuple[str, list[dict]]:
    ev = json.loads(path.read_text())
    return ev["decision"], ev["gates"]


def test_each_tracker_gives_the_csv_decision_and_numbers(page_run: PageRun) -> None:
    """MLflow (64-bit) gives the CSV's evaluation exactly; TensorBoard (32-bit scalars) the same decision and
    verdicts, its numbers within the rounding of a 32-bit float carried through a paired difference."""
    demo = page_run.folder / "demo"
    decision, csv_gates = gates_of(demo / "trk-csv.json")
    assert decision == "supported"
    assert gates_of(demo / "trk-mlflow.json") == (decision, csv_gates)
    tb_decision, tb_gates = gates_of(demo / "trk-tb.json")
    assert tb_decision == decision
    assert [g["verdict"] for g in tb_gates] == [g["verdict"] for g in csv_gates]
    for tb, csv in zip(tb_gates, csv_gates, strict=True):
        for key in ("estimate", "lower", "upper"):
            if isinstance(csv.get(key), float):
                assert math.isclose(tb[key], csv[key], rel_tol=1e-3, abs_tol=1e-7), (csv["id"], key)


def test_records_keep_their_tracker_provenance(page_run: PageRun) -> None:
    """Every imported record names its tracker run, its times and what was read; TensorBoard's event files are
    hashed as they are on disk."""
    demo = page_run.folder / "demo"
    planned = {r["run_id"] for r in json.loads((demo / "trk-planned.json").read_text())["runs"]}
    for runs, tracker in (("trk-mlflow-runs", "mlflow"), ("trk-tb-runs", "tensorboard")):
        records = read_ledger(demo / runs).records
        assert {r.run_id for r in records} == planned
        for record in records:
            p = record.provenance
            assert p is not None and p.tracker == tracker and len(p.content_sha256) == 64
            assert record.started_at == p.started_at and record.finished_at == p.finished_at
            assert p.started_at is not None and p.finished_at is not None and p.started_at <= p.finished_at
            assert record.source == f"import:{p.uri} run {p.run_id}"
    tb = read_ledger(demo / "trk-tb-runs").records[0].provenance
    assert (
        tb is not None and tb.files and all(name.startswith(tb.run_id + "/events.out.tfevents.") for name in tb.files)
    )
    import hashlib

    for name, digest in tb.files.items():
        assert hashlib.sha256((demo / "trk-tb" / name).read_bytes()).hexdigest() == digest
