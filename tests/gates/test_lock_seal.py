"""The lock's seal in every record: a lock resealed after its runs exist no longer matches them.

Each forgery recomputes every hash exactly as ``prereg/lock.py`` does, so ``prereg verify`` calls
the forged lock intact; only the seal the runs carry (or the published one) exposes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collect.ledger.store import append_records, read_ledger
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

HEX = re.compile(r"seal ([0-9a-f]{64})")


def _canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def forge(lock: Path, edit) -> None:
    """Edit a lock and recompute its entry hashes, their links and ``lock_sha256`` (prereg/lock.py's recipe)."""
    data = json.loads(lock.read_text())
    edit(data)
    previous = None
    for entry in data["amendments"]:
        entry["parent_entry_sha256"] = previous
        entry["entry_sha256"] = hashlib.sha256(
            _canonical({k: v for k, v in entry.items() if k != "entry_sha256"})
        ).hexdigest()
        previous = entry["entry_sha256"]
    data["lock_sha256"] = hashlib.sha256(_canonical({k: v for k, v in data.items() if k != "lock_sha256"})).hexdigest()
    os.chmod(lock, 0o644)
    lock.write_text(json.dumps(data, indent=2, sort_keys=True))


def shifted(text: str, **delta: float) -> str:
    """An ISO-8601 UTC time moved by ``timedelta(**delta)``."""
    moved = datetime.fromisoformat(text.replace("Z", "+00:00")) + timedelta(**delta)
    return moved.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def freeze(folder: Path, text: str | None = None) -> tuple[Path, str]:
    """Freeze the equal-work plan (or ``text``) in ``folder``: (lock, the seal freeze printed)."""
    plan = folder / "equal-work.yaml"
    plan.write_text(text if text is not None else shared_example_path("equal-work.yaml").read_text())
    proc = run("prereg", "freeze", str(plan))
    assert proc.returncode == 0, proc.stderr
    seal = HEX.search(proc.stdout)
    assert seal and "publish it" in proc.stdout
    return folder / "equal-work.lock.json", seal.group(1)


def imported(lock: Path, runs: Path, started_at: str | None = None) -> Path:
    rows = equal_work_rows()
    if started_at is not None:
        rows = [{**r, "started_at": started_at} for r in rows]
    table = write_csv(runs.parent / f"{runs.name}.csv", rows)
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs))
    assert proc.returncode == 0, proc.stderr
    return runs


def evaluate(lock: Path, runs: Path, *extra: str) -> tuple[int, dict]:
    proc = run("gates", "evaluate", str(lock), str(runs), "--json", *extra)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_freeze_prints_the_seal_and_verify_checks_the_published_one(tmp_path):
    lock, seal = freeze(tmp_path)
    assert json.loads(run("prereg", "freeze", str(tmp_path / "equal-work.yaml"), "--json").stdout)["seal"] == seal
    proc = run("prereg", "verify", str(lock), "--published", seal)
    assert proc.returncode == 0 and "matches the published seal" in proc.stdout and seal in proc.stdout
    proc = run("prereg", "verify", str(lock), "--published", "0" * 64)
    assert proc.returncode == 3 and "does not match the published seal" in proc.stderr
    proc = run("prereg", "verify", str(lock), "--published", "not-a-seal")
    assert proc.returncode == 2 and "64 hexadecimal digits" in proc.stderr
    runs = imported(lock, tmp_path / "runs")
    assert {r.lock_seal for r in read_ledger(runs).records} == {seal}
    proc = run("gates", "evaluate", str(lock), str(runs), "--published", seal)
    assert proc.returncode == 0 and "the lock matches the published seal" in proc.stdout
    proc = run("gates", "evaluate", str(lock), str(runs), "--published", "1" * 64)
    assert proc.returncode == 3 and "does not match the published seal" in proc.stderr


def test_a_freeze_moved_earlier_no_longer_matches_its_runs(tmp_path):
    lock, seal = freeze(tmp_path)
    frozen_at = json.loads(lock.read_text())["frozen_at"]
    runs = imported(lock, tmp_path / "runs", started_at=shifted(frozen_at, days=-1))  # data older than the plan
    rc, data = evaluate(lock, runs)
    assert rc == 3 and data["time_order"]["before_freeze"]
    forge(lock, lambda d: d.update(frozen_at=shifted(frozen_at, days=-2)))
    proc = run("prereg", "verify", str(lock))
    assert proc.returncode == 0 and "intact" in proc.stdout  # every hash of the forged lock is consistent
    rc, data = evaluate(lock, runs)
    assert rc == 3 and data["decision"] == "refused"
    assert not data["time_order"]["before_freeze"]  # the forged clock hides the early runs ...
    assert all(g["verdict"] == "pass" for g in data["gates"])  # ... so without the seal: SUPPORTED
    assert len(data["decision_refused_by"]) == 1
    assert data["decision_refused_by"][0]["reason"].startswith(
        "the lock was resealed after these runs were recorded: 12 run(s)"
    )
    assert data["decision_refused_by"][0]["kind"] == "seal"
    # runs imported under the forged lock carry its seal: the published seal is what catches that
    fresh = imported(lock, tmp_path / "fresh", started_at=shifted(frozen_at, days=-1))
    assert evaluate(lock, fresh)[0] == 0
    proc = run("gates", "evaluate", str(lock), str(fresh), "--published", seal)
    assert proc.returncode == 3 and "does not match the published seal" in proc.stderr
    assert run("prereg", "verify", str(lock), "--published", seal).returncode == 3


def _amended_text() -> str:
    return shared_example_path("equal-work.yaml").read_text().replace("pass_if: upper < 0.02", "pass_if: upper < 0.03")


def test_a_post_data_amendment_hidden_after_the_runs_no_longer_matches_them(tmp_path):
    lock, _ = freeze(tmp_path)
    first = imported(lock, tmp_path / "first")
    (tmp_path / "equal-work.yaml").write_text(_amended_text())
    proc = run("prereg", "amend", str(tmp_path / "equal-work.yaml"), "--reason", "looser margin", "--runs", str(first))
    assert proc.returncode == 0 and "POST-DATA" in proc.stdout and HEX.search(proc.stdout)
    runs = imported(lock, tmp_path / "runs")
    rc, data = evaluate(lock, runs)
    assert rc == 0 and data["amendments"][0]["post_data"] is True  # honest: supported, and flagged post-data

    def hide(d: dict) -> None:
        d["amendments"][0].update(post_data=False, runs_checked=False, runs=None)

    forge(lock, hide)
    assert run("prereg", "verify", str(lock)).returncode == 0
    rc, data = evaluate(lock, runs)
    assert rc == 3 and data["amendments"][0]["post_data"] is False
    assert all(g["verdict"] == "pass" for g in data["gates"])  # without the seal: SUPPORTED, no post-data flag
    assert data["decision_refused_by"][0]["reason"].startswith("the lock was resealed after these runs were recorded")


def test_an_amendment_that_hides_earlier_runs_of_its_folder_is_refused(tmp_path):
    lock, _ = freeze(tmp_path)
    frozen_at = json.loads(lock.read_text())["frozen_at"]
    runs = imported(lock, tmp_path / "runs", started_at=frozen_at)  # version 1 runs, right after the freeze
    time.sleep(1.1)  # the amendment is a later second than the runs' start
    (tmp_path / "equal-work.yaml").write_text(_amended_text())
    assert (
        run(
            "prereg", "amend", str(tmp_path / "equal-work.yaml"), "--reason", "looser margin", "--runs", str(runs)
        ).returncode
        == 0
    )
    forge(
        lock,
        lambda d: d["amendments"][0].update(
            post_data=False, runs={"dir": str(runs), "ledger_sha256": None, "ledger_lines": 0}
        ),
    )
    assert run("prereg", "verify", str(lock)).returncode == 0
    imported(lock, runs)  # version 2 runs, recorded under the forged lock: they carry its seal
    rc, data = evaluate(lock, runs)
    assert rc == 3
    hidden = [r for r in data["decision_refused_by"] if r["reason"].startswith("amendment v2")]
    assert len(hidden) == 1 and "records that no data existed when it was made, but 12 run(s)" in hidden[0]["reason"]
    assert "post-data amendment that its entry does not record as one" in hidden[0]["reason"]


def test_records_without_a_seal_are_refused(tmp_path):
    lock, _ = freeze(tmp_path)
    runs = imported(lock, tmp_path / "runs")
    bare = tmp_path / "bare"
    append_records(
        bare,
        [
            r.model_copy(update={"lock_seal": None, "prev_sha256": None, "record_sha256": None})
            for r in read_ledger(runs).records
        ],
    )
    rc, data = evaluate(lock, bare)
    assert rc == 3 and data["decision_refused_by"][0]["reason"].startswith("12 run(s) carry no lock seal")


def test_collect_refuses_to_append_under_a_resealed_lock(tmp_path):
    """After the reseal, an import adds no runs to a folder whose runs carry the real seal (exit 3,
    nothing appended; collect run makes the same check): fresh runs cannot paper over the forgery."""
    lock, _ = freeze(tmp_path)
    frozen_at = json.loads(lock.read_text())["frozen_at"]
    runs = imported(lock, tmp_path / "runs")
    ledger_before = (runs / "ledger.jsonl").read_bytes()
    forge(lock, lambda d: d.update(frozen_at=shifted(frozen_at, days=-2)))
    table = write_csv(tmp_path / "more.csv", [{**r, "replicate": 0} for r in equal_work_rows()])
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs))
    assert proc.returncode == 3 and "carry another seal than this lock's" in proc.stderr
    assert "nothing appended" in proc.stderr
    assert (runs / "ledger.jsonl").read_bytes() == ledger_before
