"""A hand-entered split of a meter's bound: ``<signal>.systematic_bound`` says which part of each run's
bound may differ by arm; only that part is held against the margin (docs/estimators.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collect.api import import_table
from gates.api import evaluate
from prereg.api import freeze
from tests.conftest import OWN_EXAMPLES as EXAMPLES
from tests.helpers import write_csv

#: the DCGM example's 8 blocks: continue about 9% below restart; bounds 3.3% of each run, as entered by hand
SAVING = [0.905, 0.915, 0.91, 0.9, 0.912, 0.908, 0.903, 0.918]


def _rows(**split: float) -> list[dict]:
    out = []
    for i, (site, seed) in enumerate((s, d) for s in range(4) for d in (101, 102)):
        for arm in ("restart", "continue"):
            energy = 180_000.0 * (SAVING[i] if arm == "continue" else 1.0)
            out.append(
                {
                    "arm": arm,
                    "site": site,
                    "seed": seed,
                    "final_nll": 2.9,
                    "energy": energy,
                    "energy.bound": 0.033 * energy,
                    **{k: v * energy for k, v in split.items()},
                }
            )
    return out


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    plan = tmp_path / "byo-dcgm.yaml"
    plan.write_text((EXAMPLES / "byo-dcgm.yaml").read_text())
    return freeze(plan).path


def _gate(lock: Path, tmp_path: Path, name: str, rows: list[dict]) -> dict:
    runs = tmp_path / name
    import_table(lock, write_csv(tmp_path / f"{name}.csv", rows), runs)
    evaluation = evaluate(lock, runs)
    return next(g.model_dump() for g in evaluation.gates if g.id == "energy_saving")


def test_a_bound_without_a_split_is_held_whole_and_cannot_decide(lock: Path, tmp_path: Path) -> None:
    gate = _gate(lock, tmp_path, "whole", _rows())
    assert gate["verdict"] == "unresolvable"  # 3.3% per run, worst case, twice per pair: past the 5% margin
    assert not any("arm-dependent part" in n for n in gate["notes"])


def test_only_the_arm_dependent_part_is_held_against_the_margin(lock: Path, tmp_path: Path) -> None:
    gate = _gate(lock, tmp_path, "split", _rows(**{"energy_counter.systematic_bound": 0.005}))
    assert gate["verdict"] == "pass"
    assert any("arm-dependent part of 16 of 16 runs' measurement bounds" in n for n in gate["notes"])
    assert gate["resolution"]["interval_bound"] < 0.033  # not the whole bound
