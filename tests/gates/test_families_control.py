"""The ranking's error control end to end (freeze, import, evaluate): the default holds the family-wise
error over the cells, and ``error_control: per_cell`` keeps each cell alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run
from tests.helpers.families import PLAN, evaluate, rows

pytestmark = pytest.mark.subprocess  # its tests run the console scripts

WEAK = {"held_x": 0.985}  # held_x: 1.5% faster, p 0.043 and 0.028 per cell alone; the other families 20% faster


def cells(ev: dict) -> dict[tuple[str, str], dict]:
    return {(c["family"], c["region"]["region"]): c for c in ev["ranking"]}


@pytest.mark.slow  # three console-script runs (about 8 s under load)
def test_holm_by_default_and_per_cell_when_the_plan_asks(tmp_path: Path) -> None:
    (tmp_path / "holm").mkdir()
    holm = cells(evaluate(tmp_path / "holm", rows(ratio=WEAK)))
    per_cell_dir = tmp_path / "per_cell"
    per_cell_dir.mkdir()
    (per_cell_dir / "plan.yaml").write_text(
        PLAN.replace("  tie_break: [nll]\n", "  tie_break: [nll]\n  ranking: {error_control: per_cell}\n")
    )
    assert run("prereg", "freeze", str(per_cell_dir / "plan.yaml")).returncode == 0  # evaluate() keeps this plan
    alone = cells(evaluate(per_cell_dir, rows(ratio=WEAK)))
    for key in (("held_x", "low"), ("held_x", "high")):
        weak, loose = holm[key], alone[key]
        assert loose["ranking"] == "challenger" and loose["pvalue"] < 0.1 and loose["error_control"] == "per_cell"
        assert weak["ranking"] == "abstain" and weak["error_control"] == "holm" and weak["pvalue_adjusted"] > 0.1
        assert weak["pvalue"] == loose["pvalue"] and (weak["lower"], weak["upper"]) == (loose["lower"], loose["upper"])
        assert weak["adjusted_upper"] > 1 > loose["upper"] and "alone: " in weak["reason"]
    strong = [c for k, c in holm.items() if k[0] != "held_x"]
    assert all(c["ranking"] == "challenger" and c["cells_tested"] == 6 and c["claims"] == 2 for c in strong)
    assert all(c["adjusted_upper"] < 1 and c["adjusted_confidence"] >= 1 - 0.1 / 3 / 2 for c in strong)
