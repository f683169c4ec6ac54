"""Warm start: one shared trained state, made once, hashed in every record, bitwise the same start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import requires, run

pytestmark = requires("torch")

PLAN = """schema: prereg/v1
study: warm-small
title: Warm-started runs
hypothesis: Continuing keeps learning.
experiment:
  collector: torch.multisite
  params:
    sites: 3
    useful_tokens: 6144
    micro_batch: 64
    train_tokens: 16384
    heldout_tokens: 2048
    width: 32
    checkpoint_every_steps: 8
    outage_count: 1
    outage_horizon_ticks: 20
    outage_duration_ticks: 5
    outage_duration_dist: fixed
    idle_baseline_ms: 0
    warm_start_steps: {steps}
arms:
  restart: {{policy: restart}}
  continue: {{policy: continue}}
strata:
  factors:
    outage_site: [0, 1]
    seed: [5, 6]
metrics:
  final_nll: {{unit: nats, better: lower, evidence: measured}}
gates:
  - {{id: nll_close, metric: final_nll, contrast: continue - restart, method: t, confidence: 0.90, pass_if: upper < 0.5}}
decision:
  claim: Continuing keeps learning.
  require: all
  multiplicity: none
"""


def _collect(tmp: Path, steps: int) -> tuple[Path, list[dict], object]:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "plan.yaml").write_text(PLAN.format(steps=steps))
    assert run("prereg", "freeze", str(tmp / "plan.yaml"), "-o", str(tmp / "l.json")).returncode == 0
    proc = run("collect", "run", str(tmp / "l.json"), "--out", str(tmp / "runs"), "--jobs", "2")
    records = (
        [json.loads(x) for x in (tmp / "runs" / "ledger.jsonl").read_text().splitlines()]
        if proc.returncode == 0
        else []
    )
    return tmp / "runs", records, proc


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> tuple[Path, list[dict], object]:
    """A study of 8 warm-started runs (30 warm-start steps), collected once for this module; a test
    that changes it works on a copy."""
    return _collect(tmp_path_factory.mktemp("warm"), 30)


@pytest.mark.slow
def test_every_run_starts_from_the_same_warm_state(warm, tmp_path):
    runs, records, proc = warm
    assert proc.returncode == 0, proc.stderr
    assert len(records) == 8 and all(r["status"] == "complete" for r in records)
    warm = {json.dumps(r["code"]["warm_start"], sort_keys=True) for r in records}
    assert len(warm) == 1  # one warm start, the same identity in every record
    identity = records[0]["code"]["warm_start"]
    assert {r["code"]["initial_state_sha256"] for r in records} == {identity["state_sha256"]}
    made = sorted((runs / "shared").iterdir())
    assert [p.suffix for p in made] == [".json", ".pt"]
    import hashlib

    assert hashlib.sha256((runs / identity["file"]).read_bytes()).hexdigest() == identity["file_sha256"]
    # trained, not fresh: a warm start learns before the study, so its runs begin below a fresh run's NLL
    cold_runs, cold, proc = _collect(tmp_path / "cold", 0)
    assert proc.returncode == 0, proc.stderr
    assert len({r["code"]["initial_state_sha256"] for r in cold}) == 4  # one fresh init per stratum, shared by its arms
    assert all(r["code"]["warm_start"] is None for r in cold)
    warm_initial = {r["metrics"]["initial_nll"] for r in records}
    assert len(warm_initial) > 0 and max(warm_initial) < min(r["metrics"]["initial_nll"] for r in cold)


@pytest.mark.slow
def test_a_changed_warm_start_is_refused_before_any_run(warm, tmp_path):
    made, records, proc = warm
    assert proc.returncode == 0, proc.stderr
    runs = Path(shutil.copytree(made, tmp_path / "runs"))  # the module's warm runs, changed here only
    pt = next((runs / "shared").glob("*.pt"))
    pt.write_bytes(pt.read_bytes()[:-1] + bytes([pt.read_bytes()[-1] ^ 1]))
    (runs / "ledger.jsonl").rename(runs / "old-ledger.jsonl")  # as if the runs had not been made yet
    proc = run("collect", "run", str(made.parent / "l.json"), "--out", str(runs))
    assert proc.returncode == 3 and "warm start" in proc.stderr and "SHA-256" in proc.stderr
    assert not (runs / "ledger.jsonl").exists()


def _small_params(seed: int = 0) -> dict:
    from prereg_seed_studies.torch.collector import validate

    return validate(
        {
            "sites": 3,
            "useful_tokens": 6144,
            "micro_batch": 64,
            "train_tokens": 16384,
            "heldout_tokens": 2048,
            "width": 32,
            "warm_start_steps": 3,
            "warm_start_seed": seed,
            "policy": "restart",
        }
    )


def _forge(runs: Path, p: dict, tmp: Path) -> None:
    """Put another state (a different seed's warm start) in p's place, with a sidecar matching it."""
    from prereg_seed_studies.torch.warmstart import make_warm_start, warm_path

    other = make_warm_start(tmp / "other", {**p, "warm_start_seed": p["warm_start_seed"] + 1})
    path = warm_path(runs, p)
    path.write_bytes((tmp / "other" / other["file"]).read_bytes())
    forged = {**other, "file": f"shared/{path.name}", "key": json.loads(path.with_suffix(".json").read_text())["key"]}
    path.with_suffix(".json").write_text(json.dumps(forged, sort_keys=True, indent=1))


@pytest.mark.slow
def test_a_forged_warm_start_with_a_matching_sidecar_is_never_used(tmp_path):
    from collect.ledger.store import RunRecord, append_records
    from prereg.errors import IntegrityError
    from prereg_seed_studies.torch.warmstart import check_warm_start, make_warm_start, warm_path

    p = _small_params()
    runs = tmp_path / "runs"
    genuine = make_warm_start(runs, p)
    assert make_warm_start(runs, p) == genuine  # reused: it is the state these parameters make
    # killed before any run was recorded: a swapped state is caught by making the state again
    _forge(runs, p, tmp_path)
    assert check_warm_start(warm_path(runs, p))["state_sha256"] != genuine["state_sha256"]  # the sidecar agrees
    with pytest.raises(IntegrityError, match="not the one this plan's parameters make"):
        make_warm_start(runs, p)
    # runs recorded: the ledger's records (chained, single writer) hold the state they started from
    (runs / "shared").rename(tmp_path / "forged-shared")
    genuine = make_warm_start(runs, p)
    append_records(
        runs,
        [
            RunRecord(
                run_id="r1",
                prereg_sha256="c" * 64,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                code={"warm_start": genuine},
            )
        ],
    )
    assert make_warm_start(runs, p) == genuine
    _forge(runs, p, tmp_path)
    with pytest.raises(IntegrityError, match="not the state the runs in the ledger started from"):
        make_warm_start(runs, p)


def test_a_shared_folder_that_is_a_symbolic_link_is_never_followed(tmp_path):
    from prereg.errors import IntegrityError
    from prereg_seed_studies.torch.warmstart import make_warm_start

    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "shared").symlink_to(outside)
    with pytest.raises(IntegrityError, match="symbolic link"):
        make_warm_start(tmp_path / "runs", _small_params())
    assert not list(outside.iterdir())
