"""Regressions from the outside review of the controller-study evaluation (each a reproduced case)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run
from tests.helpers.families import PLAN, evaluate, rows

#: the plan with its time declared fixed by the design, so that an exact fit may be vacuous
DETERMINISTIC_TIME = PLAN.replace(
    "  time: {unit: s, better: lower, evidence: measured}",
    "  time: {unit: s, better: lower, evidence: measured, deterministic: true}",
)


def _validate(tmp_path: Path, text: str) -> str:
    plan = tmp_path / "case.yaml"
    plan.write_text(text)
    proc = run("prereg", "validate", str(plan))
    assert proc.returncode == 2, proc.stdout
    return proc.stderr


@pytest.mark.subprocess
def test_a_controls_check_whose_blocks_lie_elsewhere_keeps_its_whole_match_result(tmp_path: Path) -> None:
    text = PLAN.replace("  analysis_unit: replicate", "  analysis_unit: replicate\n  pair_controls: true").replace(
        "invalidators:\n",
        "invalidators:\n  - {id: same_bw, kind: controls_identical, metric: bandwidth, "
        "where: {family: cal_a}, blocks: all}\n",
    )
    (tmp_path / "plan.yaml").write_text(text)
    assert run("prereg", "freeze", str(tmp_path / "plan.yaml")).returncode == 0
    ev = evaluate(tmp_path, rows())
    assert not next(c for c in ev["invalidators"] if c["id"] == "same_bw")["fired"]
    assert ev["comparator"]["arm"] == "fast" and ev["decision"] == "supported"
    assert all(f["decision"] == "supported" and f["invalidators_fired"] == [] for f in ev["families"])


@pytest.mark.subprocess
def test_multiplicity_is_part_of_the_freeze_time_power_check(tmp_path: Path) -> None:
    text = PLAN.replace(
        "method: t, confidence: 0.9, pass_if: upper < 1.0", "method: signflip, confidence: 0.9, pass_if: upper < 1.0"
    ).replace(
        "method: t, confidence: 0.9, pass_if: upper < 0.1", "method: signflip, confidence: 0.9, pass_if: upper < 0.1"
    )
    # 6 pairs a family: 2^-6 = 0.0156 clears alpha 0.05 on its own, but not 0.05 / 4 under Holm
    text = text.replace("decision:\n  claim:", "decision:\n  multiplicity: holm\n  claim:")
    text = text.replace(
        "gates:\n",
        "gates:\n  - {id: extra1, metric: time, contrast: ctl / comparator, method: "
        "signflip, confidence: 0.9, pass_if: upper < 1.1}\n  - {id: extra2, metric: nll, contrast: "
        "ctl - comparator, method: signflip, confidence: 0.9, pass_if: upper < 0.2}\n",
    )
    err = _validate(tmp_path, text)
    assert "under holm over 4 primary gates" in err and "could never be supported" in err


@pytest.mark.subprocess
def test_a_contrast_that_degenerates_once_the_comparator_is_chosen_is_refused_at_freeze(tmp_path: Path) -> None:
    text = PLAN.replace(
        "gates:\n",
        "gates:\n  - {id: odd, metric: time, contrast: comparator / fast, method: t, "
        "confidence: 0.9, pass_if: upper < 2.0, role: sensitivity}\n",
    )
    assert "with the comparator chosen as 'fast'" in _validate(tmp_path, text)


@pytest.mark.subprocess
def test_the_ranking_follows_the_unit_of_analysis(tmp_path: Path) -> None:
    # stratum units: one stratum per family x region cell, which no interval can order: refused up front
    err = _validate(tmp_path, PLAN.replace("  analysis_unit: replicate\n", ""))
    assert "the ranking could never order a cell" in err


@pytest.mark.subprocess
def test_constant_contrasts_and_exact_fits_are_flagged_not_ranked_as_evidence(tmp_path: Path) -> None:
    table = rows()
    for r in table:
        if r["family"] == "held_x" and r["arm"] == "ctl":
            fast = next(
                x for x in table if x["arm"] == "fast" and all(x[k] == r[k] for k in ("family", "region", "replicate"))
            )
            r["time"] = fast["time"] * 0.8  # exactly 0.8x in every pair
    (tmp_path / "plan.yaml").write_text(DETERMINISTIC_TIME)
    assert run("prereg", "freeze", str(tmp_path / "plan.yaml")).returncode == 0
    ev = evaluate(tmp_path, table)
    cells = [c for c in ev["ranking"] if c["family"] == "held_x"]
    assert all("no sampling variability" in c["reason"] for c in cells)
    assert all(
        c["infrastructure"][0]["note"] and "passes through every unit exactly" in c["infrastructure"][0]["note"]
        for c in cells
    )
    assert all(c["ranking"] != "flip" for c in cells)
    fam = next(f for f in ev["families"] if f["family"] == "held_x")
    assert next(g for g in fam["gates"] if g["id"] == "sooner")["verdict"] == "vacuous"


@pytest.mark.subprocess
def test_vacuous_family_gates_are_named_beside_a_supported_decision(tmp_path: Path) -> None:
    table = rows()
    for r in table:
        if r["family"] == "held_z" and r["arm"] == "ctl":
            fast = next(
                x for x in table if x["arm"] == "fast" and all(x[k] == r[k] for k in ("family", "region", "replicate"))
            )
            r["time"] = fast["time"] * 0.8
    (tmp_path / "plan.yaml").write_text(DETERMINISTIC_TIME)
    assert run("prereg", "freeze", str(tmp_path / "plan.yaml")).returncode == 0
    ev = evaluate(tmp_path, table)
    assert ev["decision"] == "supported" and "vacuous (could not have failed) in family held_z" in ev["decision_reason"]
    shown = run("reports", "show", str(tmp_path / "runs" / "evaluation.json"), env={"COLUMNS": "400"}).stdout
    assert "family held_z: sooner" in shown


@pytest.mark.subprocess
def test_drawn_infrastructure_that_differs_between_the_arms_makes_the_cell_abstain(tmp_path: Path) -> None:
    table = rows()
    for r in table:
        if r["family"] == "held_y" and r["region"] == "low" and r["arm"] == "ctl":
            r["bandwidth"] *= 1.5
    ev = evaluate(tmp_path, table)
    cell = next(c for c in ev["ranking"] if c["family"] == "held_y" and c["region"]["region"] == "low")
    assert cell["ranking"] == "abstain" and "not common random numbers" in cell["reason"]


def test_problems_of_an_unknown_family_level_touch_every_family(tmp_path: Path) -> None:
    import yaml

    from gates.families import family_keep
    from prereg.schema import Plan

    plan = Plan.model_validate(yaml.safe_load(PLAN))
    keep_x = family_keep(plan, "held_x")
    assert keep_x({"family": "held_x", "region": "low"}) and not keep_x({"family": "held_y", "region": "low"})
    assert keep_x({"family": "held_q", "region": "low"})  # not a family of the plan: every family is touched
    assert keep_x({"region": "low"}) and keep_x({})


@pytest.mark.subprocess
def test_an_unplanned_run_in_a_cell_makes_that_cell_abstain(tmp_path: Path) -> None:
    from collect.api import read_ledger
    from gates.comparator import choose_comparator, resolve_gates
    from gates.families import evaluate_families
    from gates.invalidators import check_invalidators
    from gates.matching import match_ledger
    from prereg.api import load_lock

    evaluate(tmp_path, rows())
    lock = load_lock(tmp_path / "plan.lock.json")
    match = match_ledger(lock.plan, lock.data["plan_sha256"], read_ledger(tmp_path / "runs"))
    text = "run-x (arm ctl, family=held_y, region=high, replicate=7) is not a cell of the plan"
    match.unplanned.append(("ctl", text))
    match.where[text] = {"family": "held_y", "region": "high"}
    checks = check_invalidators(lock.plan, match)
    choice = choose_comparator(lock.plan, match, None, checks)
    plan, unchosen = resolve_gates(lock.plan, choice)
    families, cells = evaluate_families(plan, match, unchosen, choice, None, checks)
    by_family = {f.family: f for f in families}
    assert by_family["held_y"].decision == "refused" and by_family["held_x"].decision == "supported"
    cell = {(c.family, c.region["region"]): c for c in cells}
    assert cell[("held_y", "high")].ranking == "abstain" and "not a cell of the plan" in cell[("held_y", "high")].reason
    assert cell[("held_y", "low")].ranking == "challenger"
