"""Controller studies: the comparator from calibration runs only, gates per held-out family, the ranking.

Runs are imported from synthetic tables whose every value the tests set, so each promise is
checked by changing exactly the runs it is about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run
from tests.helpers.families import PLAN, REGIONS, evaluate, rows

pytestmark = pytest.mark.subprocess  # its tests run the console scripts (one says quick)


def test_the_comparator_comes_from_calibration_runs_only(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, rows())
    c = ev["comparator"]
    assert c["arm"] == "fast" and c["refused_by"] == []
    assert all("family=cal_" in s for s in c["calibration_strata"]) and len(c["calibration_strata"]) == 4
    assert c["runs_used"] == 2 * 12  # two candidates x 4 calibration strata x 3 replicates
    assert c["values"]["fast"]["time"] < c["values"]["slow"]["time"]
    # the gates name the chosen arm
    gate = ev["gates"][0]
    assert gate["contrast"] == "ctl / fast" and any("comparator = fast" in n for n in gate["notes"])


def test_held_out_runs_never_move_the_choice_calibration_runs_do(tmp_path: Path) -> None:
    base = evaluate(tmp_path, rows(), "base")["comparator"]
    # make 'slow' far faster on every held-out family: the choice must not move
    held = rows()
    for r in held:
        if r["arm"] == "slow" and r["family"].startswith("held"):
            r["time"] = 1.0
    moved_held = evaluate(tmp_path, held, "held")["comparator"]
    assert moved_held == base
    # the same change on calibration runs flips the choice
    cal = rows()
    for r in cal:
        if r["arm"] == "slow" and r["family"].startswith("cal"):
            r["time"] = 1.0
    moved_cal = evaluate(tmp_path, cal, "cal")["comparator"]
    assert moved_cal["arm"] == "slow" and moved_cal["values"] != base["values"]


def test_ties_are_broken_by_the_frozen_tie_break_then_candidate_order(tmp_path: Path) -> None:
    table = rows(times={"slow": 10.0})  # slow and fast tie on time everywhere
    for r in table:
        if r["arm"] == "slow":
            r["nll"] -= 0.5  # and slow learns better: the tie-break picks it
    c = evaluate(tmp_path, table, "tie")["comparator"]
    assert c["arm"] == "slow" and c["ties_broken_by"] == "nll"
    table = rows(times={"slow": 10.0})
    for r in table:
        if r["arm"] == "slow":
            r["nll"] = next(
                x["nll"]
                for x in table
                if x["arm"] == "fast" and all(x[k] == r[k] for k in ("family", "region", "replicate"))
            )
    c = evaluate(tmp_path, table, "tie2")["comparator"]
    assert c["arm"] == "slow" and c["ties_broken_by"] == "candidate order"  # slow is listed first


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
@pytest.mark.subprocess(quick=True)
def test_a_missing_calibration_run_refuses_the_choice_and_every_comparator_gate(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, rows(drop=("cal_b", "high", 1, "slow")))
    c = ev["comparator"]
    assert c["arm"] is None and any("missing calibration run" in r["reason"] for r in c["refused_by"])
    assert ev["decision"] == "refused"
    assert all(g["verdict"] == "refused" for g in ev["gates"])
    assert all(cell["ranking"] == "abstain" and "no comparator" in cell["reason"] for cell in ev["ranking"])


def test_every_family_is_judged_and_one_failing_family_is_not_hidden_by_the_pool(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, rows(ratio={"held_y": 1.1}))  # held_y: the challenger is 10% slower
    fams = {f["family"]: f for f in ev["families"]}
    assert list(fams) == ["held_x", "held_y", "held_z"] and all(f["blocks"] == 6 for f in fams.values())
    sooner = {name: next(g for g in f["gates"] if g["id"] == "sooner") for name, f in fams.items()}
    assert sooner["held_x"]["verdict"] == "pass" and sooner["held_z"]["verdict"] == "pass"
    assert sooner["held_y"]["verdict"] == "fail" and sooner["held_y"]["n_pairs"] == 6
    pooled = next(g for g in ev["gates"] if g["id"] == "sooner")
    assert pooled["verdict"] == "pass" and pooled["n_pairs"] == 18  # the pool alone would have said yes
    assert ev["decision"] == "not_supported" and "family held_y" in ev["decision_reason"]
    # the yardstick: fast is the best fixed arm in hindsight; never a gate
    assert all(f["hindsight"]["best_arm"] == "fast" for f in fams.values())


def test_a_family_with_a_missing_run_is_refused_by_itself(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, rows(drop=("held_z", "low", 2, "ctl")))
    fams = {f["family"]: f for f in ev["families"]}
    assert fams["held_z"]["decision"] == "refused"
    assert all(g["verdict"] == "refused" for g in fams["held_z"]["gates"])
    assert any(
        r["kind"] == "run" and "missing run" in r["reason"] for g in fams["held_z"]["gates"] for r in g["refused_by"]
    )
    for other in ("held_x", "held_y"):
        assert fams[other]["decision"] == "supported"
        assert all(g["verdict"] == "pass" for g in fams[other]["gates"])
    assert ev["decision"] == "refused"  # the claim covers every family
    cells = {(c["family"], c["region"]["region"]): c for c in ev["ranking"]}
    assert cells[("held_z", "low")]["ranking"] == "abstain" and "missing" in cells[("held_z", "low")]["reason"]
    assert cells[("held_z", "high")]["ranking"] == "challenger"


def test_the_ranking_abstains_when_the_interval_crosses_the_null(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, rows(ratio={"held_x": 1.0}))
    cells = {(c["family"], c["region"]["region"]): c for c in ev["ranking"]}
    for reg in REGIONS:
        cell = cells[("held_x", reg)]
        assert cell["ranking"] == "abstain", cell
        assert cell["lower"] < 1.0 < cell["upper"] and "cannot order them" in cell["reason"]
        assert cell["n_pairs"] == 3
    assert cells[("held_y", "low")]["ranking"] == "challenger" and cells[("held_y", "low")]["upper"] < 1


def test_sampling_and_infrastructure_stay_separate_and_a_flip_is_found(tmp_path: Path) -> None:
    # held_z: the challenger is 30% faster at 1 Mbit/s and 30% slower at 4 Mbit/s (inside the low region),
    # and the same trend continues in the high region (slower still)
    ev = evaluate(tmp_path, rows(trend={"held_z": (0.7, 1.0 / 0.7**4)}))
    cells = {(c["family"], c["region"]["region"]): c for c in ev["ranking"]}
    low = cells[("held_z", "low")]
    assert low["ranking"] == "flip", low
    spread = low["infrastructure"][0]
    assert spread["parameter"] == "bandwidth" and spread["drawn"] == [1.0, 2.0, 4.0]
    assert spread["low_end"]["upper"] < 1.0 < spread["high_end"]["lower"]
    assert spread["low_end"]["at"] == pytest.approx(1.0) and spread["high_end"]["at"] == pytest.approx(4.0)
    # the cell's own sampling interval is a different number, reported beside it
    assert (low["lower"], low["upper"]) != (spread["low_end"]["lower"], spread["high_end"]["upper"])
    assert "straight-line fit over 3 pairs" in low["reason"]


def test_plan_checks_refuse_broken_family_and_comparator_declarations(tmp_path: Path) -> None:
    cases = {
        "held_out: [{family: held_x}, {family: held_y}, {family: held_z}]": (
            "held_out: [{family: held_x}, {family: held_y}]",
            "neither calibration nor held out",
        ),
        "calibration: [{family: cal_a}, {family: cal_b}]": (
            "calibration: [{family: cal_a}, {family: cal_b}, {family: held_x, region: low}]",
            "both calibration",
        ),
        "candidates: [slow, fast]": ("candidates: [slow, fast, ctl]", "challenger cannot also be a candidate"),
        "contrast: ctl / comparator": ("contrast: ctl / comparatr", "unknown arm"),
        "metric: time\n  tie_break": ("metric: tme\n  tie_break", "unknown metric 'tme'"),
        "region_factors: {region: bandwidth}": ("region_factors: {region: bandwith}", "unknown metric 'bandwith'"),
        "  replicates: 3": ("  replicates: 1", "judged per family"),  # + signflip below: 2 pairs per family
        "  replicates: 3\n  analysis_unit: replicate": (
            "  replicates: 1\n  analysis_unit: replicate",
            "could never order a cell",
        ),  # t, 1 pair per cell
    }
    for old, (new, message) in cases.items():
        plan = tmp_path / "bad.yaml"
        text = PLAN.replace(old, new)
        if old == "  replicates: 3":
            text = text.replace("contrast: ctl / comparator, method: t", "contrast: ctl / comparator, method: signflip")
            text = text.replace("  region_factors: {region: bandwidth}\n", "")  # a ranking cell: 2 pairs, enough
        if old == "calibration: [{family: cal_a}, {family: cal_b}]":
            text = text.replace("held_out: [{family: held_x}", "held_out: [{family: held_x, region: high}")
        assert text != PLAN
        plan.write_text(text)
        proc = run("prereg", "validate", str(plan))
        assert proc.returncode == 2 and message in proc.stderr, (old, proc.stderr)


def test_without_any_held_out_run_the_choice_is_the_same_and_every_family_is_refused(tmp_path: Path) -> None:
    full = evaluate(tmp_path, rows(), "full")
    only_cal = evaluate(tmp_path, [r for r in rows() if r["family"].startswith("cal")], "cal_only")
    assert only_cal["comparator"] == full["comparator"]
    assert all(f["decision"] == "refused" for f in only_cal["families"])
    assert only_cal["decision"] == "refused"


def test_an_invalidator_on_calibration_runs_refuses_the_choice(tmp_path: Path) -> None:
    table = rows()
    next(r for r in table if r["family"] == "cal_a" and r["arm"] == "slow")["nll"] = 50.0  # beyond sane_nll
    ev = evaluate(tmp_path, table)
    c = ev["comparator"]
    assert c["arm"] is None and any(
        r["id"] == "sane_nll" and "sane_nll fired on the calibration runs" in r["reason"] for r in c["refused_by"]
    )
    assert all(
        any(r["kind"] == "comparator" and "the comparator could not be chosen" in r["reason"] for r in g["refused_by"])
        for g in ev["gates"]
    )


def test_an_invalidator_on_one_held_out_family_refuses_that_family_only(tmp_path: Path) -> None:
    table = rows()
    next(r for r in table if r["family"] == "held_y" and r["arm"] == "ctl")["nll"] = 50.0
    ev = evaluate(tmp_path, table)
    fams = {f["family"]: f for f in ev["families"]}
    assert fams["held_y"]["decision"] == "refused" and fams["held_y"]["invalidators_fired"] == ["sane_nll"]
    assert fams["held_x"]["decision"] == "supported" and fams["held_z"]["decision"] == "supported"
    assert ev["comparator"]["arm"] == "fast"  # the choice never looked at held_y
    assert all(
        c["ranking"] == "abstain" and "sane_nll" in c["reason"] for c in ev["ranking"] if c["family"] == "held_y"
    )
