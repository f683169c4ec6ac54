"""`collect import`: a table made elsewhere becomes a ledger under a lock, wholly or not at all."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from tests.helpers import equal_work_rows, frozen_shared, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return frozen_shared(tmp_path)


def do_import(table: Path, lock: Path, runs: Path, *extra: str):
    return run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs), *extra)


@pytest.mark.subprocess(quick=True)
def test_csv_import(tmp_path, lock):
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    proc = do_import(table, lock, tmp_path / "runs", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["imported"] == 12
    ledger = read_ledger(tmp_path / "runs")
    assert len(ledger.records) == 12 and ledger.problems == []
    first = ledger.records[0]
    assert first.stratum == {"outage_site": 0, "seed": 101} and first.arm == "fixed" and first.replicate == 0
    assert first.prereg_sha256 == json.loads(lock.read_text())["plan_sha256"]
    assert first.telemetry["energy_counter"].updates == 50
    assert first.telemetry["energy_counter"].evidence == "measured"  # from the metric it backs
    assert first.source == "import:runs.csv row 1"


def test_jsonl_and_gzip_csv(tmp_path, lock):
    rows = equal_work_rows()
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows[:6]) + "\n")
    assert do_import(jsonl, lock, tmp_path / "runs").returncode == 0
    csv_path = write_csv(tmp_path / "rest.csv", rows[6:])
    gz = tmp_path / "rest.csv.gz"
    gz.write_bytes(gzip.compress(csv_path.read_bytes()))
    assert do_import(gz, lock, tmp_path / "runs").returncode == 0
    assert len(read_ledger(tmp_path / "runs").records) == 12


def test_parquet(tmp_path, lock):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "runs.parquet"
    pd.DataFrame(equal_work_rows()).to_parquet(path)
    assert do_import(path, lock, tmp_path / "runs").returncode == 0
    assert len(read_ledger(tmp_path / "runs").records) == 12


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda rows: rows[3].update(arm="adaptve"), "row 4: arm 'adaptve' is not an arm"),
        (lambda rows: rows[0].update(outage_site=7), "row 1: outage_site = '7' is not a level"),
        (lambda rows: rows[5].update(final_nll="abc"), "row 6: final_nll: 'abc' is not a number"),
        (lambda rows: rows[1].update(replicate=1), "row 2: replicate 1 is outside"),
        (lambda rows: [r.update(mystery=1) for r in rows], "column 'mystery' is not a column of this plan"),
        (
            lambda rows: [r.update({"power.updates": 1}) for r in rows],
            "column 'power.updates' is not a column of this plan",
        ),
        (lambda rows: rows[2].update(status="crashed"), "row 3: status 'crashed'"),
        (lambda rows: rows.append(dict(rows[0])), "row 13: arm fixed in stratum"),
        (lambda rows: rows[4].update({"energy_counter.updates": "2.5"}), "row 5: energy_counter.updates"),
    ],
)
def test_rows_that_do_not_fit_import_nothing(tmp_path, lock, mutate, words):
    rows = equal_work_rows()
    for r in rows:
        r.setdefault("replicate", 0)
    mutate(rows)
    for r in rows:  # keep the header uniform
        for key in set().union(*rows):
            r.setdefault(key, "")
    proc = do_import(write_csv(tmp_path / "runs.csv", rows), lock, tmp_path / "runs")
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()


def test_reimport_of_a_changed_table_is_refused_and_ledger_untouched(tmp_path, lock):
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    assert do_import(table, lock, tmp_path / "runs").returncode == 0
    before = (tmp_path / "runs" / "ledger.jsonl").read_bytes()
    changed = write_csv(tmp_path / "runs.csv", equal_work_rows(nll_shift=0.5))
    proc = do_import(changed, lock, tmp_path / "runs")
    assert proc.returncode == 2 and "already in the ledger" in proc.stderr
    assert (tmp_path / "runs" / "ledger.jsonl").read_bytes() == before


def test_identical_reimport_is_a_no_op_and_an_interrupted_import_can_be_finished(tmp_path, lock):
    """Resumable import: rows already in the ledger identically are skipped, the rest appended."""
    rows = equal_work_rows()
    table = write_csv(tmp_path / "runs.csv", rows)
    assert do_import(table, lock, tmp_path / "runs").returncode == 0
    ledger = tmp_path / "runs" / "ledger.jsonl"
    full = ledger.read_bytes()
    lines = full.splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines[:5]) + lines[5][:40])  # an import killed mid-write
    proc = do_import(table, lock, tmp_path / "runs")
    assert proc.returncode == 0 and "5 rows already in the ledger" in proc.stdout, proc.stderr
    again = do_import(table, lock, tmp_path / "runs")
    assert again.returncode == 0 and "imported 0 runs" in again.stdout
    from collect.ledger.store import read_ledger, verify_chain

    result = read_ledger(tmp_path / "runs")
    assert len({r.run_id for r in result.records}) == len(result.records) == len(rows)
    assert verify_chain(result).status == "intact"


def test_non_finite_and_missing_values_are_kept(tmp_path, lock):
    rows = equal_work_rows()
    rows[0]["final_nll"] = "nan"
    rows[1]["energy"] = ""
    assert do_import(write_csv(tmp_path / "runs.csv", rows), lock, tmp_path / "runs").returncode == 0
    records = read_ledger(tmp_path / "runs").records
    assert (
        records[0].metrics["final_nll"] == "NaN"
        and "energy" not in records[1].metrics
        or records[1].metrics["energy"] is None
    )


def test_bad_inputs(tmp_path, lock):
    assert do_import(tmp_path / "none.csv", lock, tmp_path / "runs").returncode == 2
    (tmp_path / "t.xlsx").write_text("x")
    assert "unknown table format" in do_import(tmp_path / "t.xlsx", lock, tmp_path / "runs").stderr
    (tmp_path / "empty.csv").write_text("arm,outage_site,seed\n")
    assert "no rows" in do_import(tmp_path / "empty.csv", lock, tmp_path / "runs").stderr
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x01garbage")
    assert do_import(tmp_path / "bin.csv", lock, tmp_path / "runs").returncode == 2
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    assert do_import(tmp_path / "bad.jsonl", lock, tmp_path / "runs").returncode == 2


def test_broken_lock_refuses_with_exit_3(tmp_path, lock):
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    data = json.loads(lock.read_text())
    data["plan"]["gates"][0]["pass_if"] = "upper < 0.5"
    broken = tmp_path / "broken.lock.json"
    broken.write_text(json.dumps(data))
    proc = do_import(table, broken, tmp_path / "runs")
    assert proc.returncode == 3 and not (tmp_path / "runs").exists()
    shutil.copy(lock, tmp_path / "copy.lock.json")
    assert do_import(table, tmp_path / "copy.lock.json", tmp_path / "runs").returncode == 0
