"""A tracker import as a whole (collect.importing.trackers.importing): appended atomically through the table
import's row path, idempotent, refusing a run changed since, warning for runs before the freeze; and
changed_runs, what `gates verify --source` reports. The tracker is stood in for by its reader's output."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collect.api import import_tracker
from collect.importing.planned import planned_runs, planned_tags
from collect.importing.time_order import EarlyRunsWarning
from collect.importing.trackers import importing
from collect.importing.trackers.base import Source, TrackerProblem, TrackerRun
from collect.ledger.store import read_ledger
from prereg.api import freeze, load_lock

ROOT = Path(__file__).resolve().parents[4]
SOURCE = "mlflow:sqlite:///m.db"


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return freeze(ROOT / "examples" / "trackers.yaml", tmp_path / "trk.lock.json").path


def tracker_runs(lock: Path, start: datetime) -> list[TrackerRun]:
    verified = load_lock(lock)
    out = []
    for i, planned in enumerate(planned_runs(verified.plan, verified.plan_sha256)):
        steps = 240.0 + i % 3 + (11.0 if planned.arm == "restart" else 0.0)
        out.append(
            TrackerRun(
                tracker="mlflow",
                uri=SOURCE,
                run_id=f"t{i}",
                name=f"n{i}",
                tags=planned_tags(verified.plan, planned),
                values={"final_nll": 0.75 + 0.001 * i, "attempted_steps": steps, "lost_steps": 11.0},
                started_at=start + timedelta(seconds=i),
                finished_at=start + timedelta(seconds=i + 1),
            )
        )
    return out


@pytest.fixture
def tracker(monkeypatch: pytest.MonkeyPatch):
    """The runs the stand-in tracker holds: set ``held[:]``."""
    held: list[TrackerRun] = []
    monkeypatch.setattr(importing, "read_source", lambda source, wanted, options: list(held))
    return held


def test_an_import_appends_every_run_once_and_again_nothing(lock, tmp_path, tracker):
    tracker[:] = tracker_runs(lock, datetime.now(UTC) + timedelta(seconds=1))
    runs = tmp_path / "runs"
    done = import_tracker(lock, SOURCE, runs)
    assert done.read == 16 and len(done.records) == 16 and done.unmatched == []
    head = read_ledger(runs).hashes[-1]
    skipped: list[str] = []
    again = import_tracker(lock, SOURCE, runs, skipped)
    assert again.records == [] and len(skipped) == 16 and read_ledger(runs).hashes[-1] == head


def test_a_run_changed_in_the_tracker_since_is_refused_as_a_second_record(lock, tmp_path, tracker):
    tracker[:] = tracker_runs(lock, datetime.now(UTC) + timedelta(seconds=1))
    runs = tmp_path / "runs"
    import_tracker(lock, SOURCE, runs)
    before = (runs / "ledger.jsonl").read_bytes()
    tracker[2].values["final_nll"] += 0.5
    with pytest.raises(TrackerProblem) as err:
        import_tracker(lock, SOURCE, runs)
    assert "mlflow run t2 ('n2')" in str(err.value) and "nothing imported" in str(err.value)
    assert (runs / "ledger.jsonl").read_bytes() == before


def test_what_does_not_fit_leaves_no_runs_folder(lock, tmp_path, tracker):
    tracker[:] = tracker_runs(lock, datetime.now(UTC) + timedelta(seconds=1))
    tracker[0].values["final_nll"] = float("inf")
    runs = tmp_path / "runs"
    with pytest.raises(TrackerProblem, match="mlflow run t0 \\('n0'\\): metric final_nll is inf"):
        import_tracker(lock, SOURCE, runs)
    assert not runs.exists()


def test_runs_started_before_the_freeze_warn_as_a_tables_do(lock, tmp_path, tracker):
    tracker[:] = tracker_runs(lock, datetime.now(UTC) - timedelta(days=30))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_tracker(lock, SOURCE, tmp_path / "runs")
    early = [w for w in caught if issubclass(w.category, EarlyRunsWarning)]
    assert len(early) == 1 and "16 of the 16 rows imported started before the plan was frozen" in str(early[0].message)


def test_changed_runs_names_each_changed_or_vanished_run(lock, tmp_path, tracker):
    held = tracker_runs(lock, datetime.now(UTC) + timedelta(seconds=1))
    held[0].files = {"a/metrics/loss": "0" * 64}
    tracker[:] = held
    runs = tmp_path / "runs"
    import_tracker(lock, SOURCE, runs)
    verified = load_lock(lock)
    records = read_ledger(runs).records
    source = Source("mlflow", "sqlite:///m.db")
    assert importing.changed_runs(records, source, verified.plan, importing.ReadOptions()) == []
    by_tracker = {r.provenance.run_id: r.run_id for r in records if r.provenance}
    held[0].files = {"a/metrics/loss": "1" * 64}
    held[1].tags["note"] = "added later"
    del held[2]
    tracker[:] = held
    found = importing.changed_runs(records, source, verified.plan, importing.ReadOptions())
    assert found == [
        f"{by_tracker['t0']}: mlflow run t0 ('n0'): a/metrics/loss changed after the import (SHA-256 differs "
        "from the one recorded)",
        f"{by_tracker['t1']}: mlflow run t1 ('n1'): its data changed after the import (tags, params, values, "
        "times or status: SHA-256 differs from the one recorded)",
        f"{by_tracker['t2']}: mlflow run t2 is no longer in {SOURCE}",
    ]
    with pytest.raises(TrackerProblem, match="no record of this runs folder was imported from it"):
        importing.changed_runs(records, Source("tensorboard", "tb"), verified.plan, importing.ReadOptions())
