"""Imported measurement bounds are per metric: a signal's one bound never stands for several metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from tests.helpers import frozen_shared, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

PLAN = """\
schema: prereg/v1
study: checkpoint-energy
title: Energy of the whole run and of its checkpoint phase
hypothesis: Continuing saves energy overall and costs no more than 400 J of checkpoint energy either way.
arms:
  fixed: {policy: restart}
  adaptive: {policy: continue}
strata:
  factors:
    site: [0, 1, 2, 3, 4, 5, 6, 7]
metrics:
  energy:            {unit: J, better: lower, evidence: measured, signal: energy_counter}
  energy_checkpoint: {unit: J, better: lower, evidence: measured, signal: energy_counter}
gates:
  - id: energy_saving
    metric: energy
    contrast: adaptive / fixed
    method: t
    confidence: 0.90
    pass_if: upper < 0.95
  - id: checkpoint_equivalent
    metric: energy_checkpoint
    contrast: adaptive - fixed
    method: t
    confidence: 0.90
    pass_if: within [-400, 400]
decision:
  claim: Continuing saves energy and its checkpoint energy is equivalent.
"""

JITTER = [0.011, -0.007, 0.004, -0.012, 0.009, 0.0, -0.003, 0.006]


def rows(**bounds: float) -> list[dict]:
    """Eight strata x two arms; ``bounds``: column -> bound given in every row."""
    out = []
    for site in range(8):
        for arm in ("fixed", "adaptive"):
            adaptive = arm == "adaptive"
            out.append(
                {
                    "arm": arm,
                    "site": site,
                    "energy": 5000.0 * ((0.85 + JITTER[site]) if adaptive else 1 + JITTER[(site + 3) % 8]),
                    "energy_checkpoint": 900.0 + (40.0 * JITTER[site] * 100 if adaptive else 0.0),
                    "energy_counter.updates": 50,
                    **bounds,
                }
            )
    return out


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return frozen_shared(tmp_path, "checkpoint.yaml", PLAN)


def do_import(tmp_path: Path, lock: Path, table_rows: list[dict], name: str = "runs") -> tuple:
    table = write_csv(tmp_path / f"{name}.csv", table_rows)
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / name))
    return proc, tmp_path / name


def verdicts(lock: Path, runs: Path) -> tuple[int, dict[str, dict]]:
    proc = run("gates", "evaluate", str(lock), str(runs), "--json")
    doc = json.loads(proc.stdout)
    return proc.returncode, {g["id"]: g for g in doc["gates"]}


def test_per_metric_bounds_judge_each_gate_by_its_own_bound(tmp_path, lock):
    proc, runs = do_import(tmp_path, lock, rows(**{"energy.bound": 60.0, "energy_checkpoint.bound": 600.0}))
    assert proc.returncode == 0, proc.stderr
    record = read_ledger(runs).records[0]
    summary = record.telemetry["energy_counter"]
    assert summary.bound is None and summary.metric_bounds == {"energy": 60.0, "energy_checkpoint": 600.0}
    code, gates = verdicts(lock, runs)
    assert gates["energy_saving"]["verdict"] == "pass"  # 60 J on ~5000 J cannot move a 0.85 ratio past 0.95
    assert gates["checkpoint_equivalent"]["verdict"] == "unresolvable"  # 600 J reaches past +-400 J
    assert code == 3


def test_small_checkpoint_bound_resolves_both(tmp_path, lock):
    proc, runs = do_import(tmp_path, lock, rows(**{"energy.bound": 60.0, "energy_checkpoint.bound": 1.0}))
    assert proc.returncode == 0, proc.stderr
    code, gates = verdicts(lock, runs)
    assert gates["energy_saving"]["verdict"] == "pass" and gates["checkpoint_equivalent"]["verdict"] == "pass"
    assert code == 0


@pytest.mark.parametrize("value", [60.0, 600.0])
def test_one_signal_bound_for_several_metrics_is_refused(tmp_path, lock, value):
    proc, runs = do_import(tmp_path, lock, rows(**{"energy_counter.bound": value}))
    assert proc.returncode == 2, proc.stderr
    assert "energy_counter.bound" in proc.stderr and "several metrics (energy, energy_checkpoint)" in proc.stderr
    assert "energy.bound, energy_checkpoint.bound" in proc.stderr
    assert not runs.exists()


def test_a_metric_without_its_bound_is_unresolvable_not_given_anothers(tmp_path, lock):
    proc, runs = do_import(tmp_path, lock, rows(**{"energy.bound": 60.0}))
    assert proc.returncode == 0, proc.stderr
    code, gates = verdicts(lock, runs)
    assert gates["energy_saving"]["verdict"] == "pass"
    assert gates["checkpoint_equivalent"]["verdict"] == "unresolvable"
    assert "no measurement bound" in " ".join(gates["checkpoint_equivalent"]["notes"])


@pytest.mark.parametrize(
    "cell, words", [("-1", "finite number >= 0"), ("inf", "finite number >= 0"), ("x", "is not a number")]
)
def test_a_bad_bound_cell_is_named(tmp_path, lock, cell, words):
    table = rows(**{"energy.bound": 60.0, "energy_checkpoint.bound": 600.0})
    table[3]["energy_checkpoint.bound"] = cell
    proc, runs = do_import(tmp_path, lock, table)
    assert proc.returncode == 2 and "row 4" in proc.stderr and words in proc.stderr, proc.stderr
    assert not runs.exists()


def test_single_metric_signal_keeps_its_signal_column(tmp_path):
    """With one metric on the signal, ``<signal>.bound`` is that metric's (and giving both is refused)."""
    single = PLAN.replace(
        "  energy_checkpoint: {unit: J, better: lower, evidence: measured, signal: energy_counter}\n",
        "  energy_checkpoint: {unit: J, better: lower, evidence: measured}\n",
    )
    lock = frozen_shared(tmp_path, "single.yaml", single)
    proc, runs = do_import(tmp_path, lock, rows(**{"energy_counter.bound": 60.0}))
    assert proc.returncode == 0, proc.stderr
    assert read_ledger(runs).records[0].telemetry["energy_counter"].bound == 60.0
    both, _ = do_import(tmp_path, lock, rows(**{"energy_counter.bound": 60.0, "energy.bound": 60.0}), "both")
    assert both.returncode == 2 and "both give energy's bound" in both.stderr
