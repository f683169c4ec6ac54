"""`collect plan`: the plan's runs for work done elsewhere, and `collect import` checking their seeds."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from unittest import mock

import pytest

import collect.importing.importer as importer
from collect.engine.runs import expand_plan, stratum_seed
from collect.importing.planned import plan_csv, planned_runs
from collect.ledger.store import read_ledger, run_id
from prereg.api import load_lock
from tests.conftest import REPO
from tests.helpers import frozen_shared, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

ROOT_EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The simulator plan (its collector checks every run's parameters)."""
    return frozen_shared(
        tmp_path_factory.mktemp("churn"), "churn.yaml", (ROOT_EXAMPLES / "churn-cadence.yaml").read_text()
    )


@pytest.fixture(scope="module")
def cadence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported-runs plan (no experiment) whose factors do not include ``seed``."""
    return frozen_shared(tmp_path_factory.mktemp("cadence"), "cadence-energy.yaml")


def test_the_listing_is_what_collect_run_would_execute(churn: Path) -> None:
    lock = load_lock(churn)
    _, engine_runs = expand_plan(lock.plan, lock.plan_sha256)
    assert planned_runs(lock.plan, lock.plan_sha256) == engine_runs
    rows = list(csv.DictReader(io.StringIO(plan_csv(lock.plan, lock.plan_sha256))))
    assert len(rows) == len(engine_runs) == 3 * 4 * 2 * 3
    for row, planned in zip(rows, engine_runs, strict=True):
        assert row["run_id"] == planned.run_id and row["arm"] == planned.arm
        assert int(row["replicate"]) == planned.replicate and int(row["run_seed"]) == planned.seed
        assert json.loads(row["params"]) == planned.params
        assert {"workers": int(row["workers"]), "seed": int(row["seed"])} == planned.stratum


@pytest.mark.subprocess(quick=True)
def test_collect_plan_lists_ids_and_seeds_of_an_imported_plan(cadence: Path, tmp_path: Path) -> None:
    lock = load_lock(cadence)
    proc = run("collect", "plan", str(cadence))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert list(rows[0]) == ["run_id", "block", "arm", "replicate", "seed", "params"]
    assert len(rows) == 8 * 4
    for row in rows:
        stratum = {"block": int(row["block"])}
        assert row["run_id"] == run_id(lock.plan_sha256, stratum, row["arm"], int(row["replicate"]))
        assert int(row["seed"]) == stratum_seed(stratum, int(row["replicate"]))  # never the arm
        assert json.loads(row["params"]) == lock.plan.arms[row["arm"]]
    out = tmp_path / "plan.json"
    assert run("collect", "plan", str(cadence), "--format", "json", "-o", str(out)).returncode == 0
    listing = json.loads(out.read_text())
    assert listing["prereg_sha256"] == lock.plan_sha256 and listing["seed_column"] == "seed"
    assert [r["seed"] for r in listing["runs"]] == [int(r["seed"]) for r in rows]


def _table(lock_path: Path, folder: Path) -> list[dict[str, str]]:
    """The cadence plan's runs as a table a harness would write: its listing's seeds, and metrics."""
    lock = load_lock(lock_path)
    rows = list(csv.DictReader(io.StringIO(plan_csv(lock.plan, lock.plan_sha256))))
    return [
        {"arm": r["arm"], "block": r["block"], "seed": r["seed"], "final_nll": "2.5", "energy": "5000"} for r in rows
    ]


def _import_both_ways(table: Path, lock_path: Path, runs: Path, path: str) -> tuple[str, object]:
    """Import ``table``: ``path`` ``fast`` (the row path must not be taken), ``rows`` (the fast path
    switched off) or ``any``; ("ok", seeds) or ("refused", message)."""
    lock = load_lock(lock_path)
    patch = {
        "rows": mock.patch.object(importer, "_append_fast", return_value=None),
        "fast": mock.patch.object(importer, "build_records", side_effect=AssertionError("the row path was taken")),
        "any": contextlib.nullcontext(),
    }[path]
    with patch:
        try:
            records = importer.import_table(table, lock.plan, lock.plan_sha256, runs)
        except importer.ImportProblem as err:
            return "refused", str(err)
    return "ok", [r.seed for r in records]


def test_matching_seeds_import_and_take_the_fast_path(cadence: Path, tmp_path: Path) -> None:
    rows = _table(cadence, tmp_path)
    table = write_csv(tmp_path / "runs.csv", rows)
    fast = _import_both_ways(table, cadence, tmp_path / "fast", path="fast")
    slow = _import_both_ways(table, cadence, tmp_path / "slow", path="rows")
    assert fast == slow == ("ok", [int(r["seed"]) for r in rows])  # 63-bit seeds kept exactly
    assert (tmp_path / "fast" / "ledger.jsonl").read_bytes() == (tmp_path / "slow" / "ledger.jsonl").read_bytes()


@pytest.mark.subprocess(quick=True)
def test_a_seed_that_is_not_the_plans_is_refused_naming_the_row(cadence: Path, tmp_path: Path) -> None:
    rows = _table(cadence, tmp_path)
    rows[2]["seed"] = str(int(rows[2]["seed"]) + 1)
    table = write_csv(tmp_path / "runs.csv", rows)
    proc = run("collect", "import", str(table), "--lock", str(cadence), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2
    assert "row 3: seed" in proc.stderr and "is not the plan's seed" in proc.stderr
    assert "collect plan" in proc.stderr and not (tmp_path / "runs" / "ledger.jsonl").exists()
    # the fast path declines and the row path says why: the same refusal either way
    refused = _import_both_ways(table, cadence, tmp_path / "a", path="any")
    assert refused[0] == "refused" and "row 3: seed" in str(refused[1])
    assert refused == _import_both_ways(table, cadence, tmp_path / "b", path="rows")


def test_a_seed_column_that_is_a_stratum_factor_is_not_checked(tmp_path: Path) -> None:
    """In a plan with a factor called seed, the seed column is that factor's level."""
    lock_path = frozen_shared(tmp_path, "equal-work.yaml")
    table = write_csv(tmp_path / "runs.csv", [{"arm": "fixed", "outage_site": 0, "seed": 101}])
    lock = load_lock(lock_path)
    records = importer.import_table(table, lock.plan, lock.plan_sha256, tmp_path / "runs")
    assert records[0].stratum["seed"] == 101 and read_ledger(tmp_path / "runs").records[0].seed == 101
