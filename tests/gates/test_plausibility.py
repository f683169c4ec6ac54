"""Implausible values: a declared range refuses them; a ratio gate warns of a likely unit mix-up."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.helpers import frozen_shared, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

PLAN = """\
schema: prereg/v1
study: log-energy
title: Does arm a use no more than 2% more energy than arm b?
hypothesis: Arm a's energy is within 2% of arm b's.
arms:
  a: {policy: a}
  b: {policy: b}
strata:
  factors:
    site: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
metrics:
  energy: {unit: J, better: lower, evidence: measured{range}}
gates:
  - id: energy_noninferior
    metric: energy
    contrast: a / b
    method: t
    confidence: 0.90
    pass_if: upper < 1.02
decision:
  claim: Arm a uses at most 2% more energy than arm b.
"""
JITTER = [0.012, -0.008, 0.004, -0.011, 0.007, 0.0, -0.003, 0.009, -0.006, 0.002]


def energies(a_factor: float = 1.05, logs: bool = False, a_scale: float = 1.0) -> list[dict]:
    """About 1000 J per run, arm a ``a_factor`` times arm b; ``logs``: written as natural logs;
    ``a_scale``: arm a's values multiplied (0.001: written in kJ)."""
    rows = []
    for site in range(10):
        b = 1000.0 * (1 + JITTER[site])
        a = b * a_factor * (1 + JITTER[(site + 4) % 10] / 2)
        for arm, value in (("a", a * a_scale), ("b", b)):
            rows.append({"arm": arm, "site": site, "energy": math.log(value) if logs else value})
    return rows


def lock_for(tmp_path: Path, range_text: str = "") -> Path:
    return frozen_shared(tmp_path, "plan.yaml", PLAN.replace("{range}", range_text))


def evaluate(tmp_path: Path, lock: Path, rows: list[dict], name: str = "runs") -> tuple[int, dict]:
    table = write_csv(tmp_path / f"{name}.csv", rows)
    imported = run("collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / name))
    assert imported.returncode == 0, imported.stderr
    proc = run("gates", "evaluate", str(lock), str(tmp_path / name), "--json")
    return proc.returncode, json.loads(proc.stdout)


def test_energies_written_as_natural_logs_carry_the_named_warning(tmp_path):
    lock = lock_for(tmp_path)
    code, ev = evaluate(tmp_path, lock, energies(logs=True))
    gate = ev["gates"][0]
    assert gate["verdict"] == "pass" and code == 0  # the ratio of logs (~1.007) hides a 5% excess
    assert any("looks like natural logs of J" in n for n in gate["notes"]), gate["notes"]
    assert "likely transformed values" not in ev["decision_reason"]  # a guess from the values: with its gate
    text = run("reports", "show", str(tmp_path / "runs" / "evaluation.json"))
    assert "likely transformed values" in " ".join(text.stdout.split())
    # the same energies as measured: the 5% excess fails, with no warning
    code, ev = evaluate(tmp_path, lock, energies(), "joules")
    assert ev["gates"][0]["verdict"] == "fail" and code == 1
    assert not any(n.startswith("likely") for n in ev["gates"][0]["notes"]) and "WARNING" not in ev["decision_reason"]


def test_one_arm_in_kilojoules_carries_the_unit_mix_up_warning(tmp_path):
    lock = lock_for(tmp_path)
    code, ev = evaluate(tmp_path, lock, energies(a_factor=0.97, a_scale=0.001))
    gate = ev["gates"][0]
    assert gate["verdict"] == "pass" and code == 0
    assert gate["estimate"] == pytest.approx(0.00097, rel=0.02)
    assert any(n.startswith("likely unit mix-up") and "(kJ and J" in n for n in gate["notes"]), gate["notes"]
    assert "WARNING: gate energy_noninferior: likely unit mix-up" in ev["decision_reason"]
    report = run("gates", "evaluate", str(lock), str(tmp_path / "runs"), "--out", str(tmp_path / "e2.json"))
    assert "likely unit mix-up" in " ".join(report.stdout.split())


def test_a_declared_range_refuses_log_values_at_import_naming_the_rows(tmp_path):
    lock = lock_for(tmp_path, ", range: [10, 1.0e7]")
    table = write_csv(tmp_path / "runs.csv", energies(logs=True))
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2, proc.stderr
    assert "column 'energy': 20 of 20 rows do not fit (rows 1, 2, 3" in proc.stderr
    assert "outside the plan's range [10, 1e+07] J" in proc.stderr
    assert not (tmp_path / "runs").exists()
    one = energies()
    one[6]["energy"] = 3.2
    proc = run(
        "collect",
        "import",
        str(write_csv(tmp_path / "one.csv", one)),
        "--lock",
        str(lock),
        "--out",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 2 and "row 7: energy = 3.2 is outside the plan's range" in proc.stderr


def test_values_outside_the_range_in_a_ledger_refuse_the_gate(tmp_path):
    """Runs recorded without the import's check (as a collector records what it measured) are refused
    at the gate."""
    import collect.importing.importer as importer
    from prereg.api import load_lock

    ranged = load_lock(lock_for(tmp_path, ", range: [10, 1.0e7]"))
    plain = load_lock(frozen_shared(tmp_path, "plain.yaml", PLAN.replace("{range}", "")))
    rows = energies()
    rows[4]["energy"] = 6.9
    importer.import_table(write_csv(tmp_path / "t.csv", rows), plain.plan, ranged.plan_sha256, tmp_path / "runs")
    proc = run("gates", "evaluate", str(ranged.path), str(tmp_path / "runs"), "--json")
    gate = json.loads(proc.stdout)["gates"][0]
    assert proc.returncode == 3 and gate["verdict"] == "refused"
    assert any(
        "1 energy value(s) outside the plan's range [10, 1e+07] J: 6.9 for arm a" in r["reason"]
        for r in gate["refused_by"]
    ), gate["refused_by"]


@pytest.mark.parametrize(
    "bad, words", [("[5, 5]", "min (5) must be below max (5)"), ("[1]", "at least 2 items"), ("[0, .inf]", "finite")]
)
def test_a_range_must_be_ordered_and_finite_at_freeze(tmp_path, bad, words):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("{range}", f", range: {bad}"))
    proc = run("prereg", "freeze", str(plan))
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def _variant_plan(contrast: str, rule: str, unit: str = "J") -> str:
    return (
        PLAN.replace("contrast: a / b", f"contrast: {contrast}")
        .replace("pass_if: upper < 1.02", f"pass_if: {rule}")
        .replace("{unit: J,", f"{{unit: {unit},")
    )


@pytest.mark.parametrize(
    "name, contrast, rule, unit, rows, kind",
    [
        # one arm in kJ on a difference gate: a large "saving" in J that is a unit mix-up
        ("kj_vs_j_difference", "a - b", "upper < 0", "J", energies(a_factor=0.97, a_scale=0.001), "likely unit mix-up"),
        # minutes against seconds: 60x
        (
            "minutes_vs_seconds",
            "a / b",
            "upper < 0.95",
            "s",
            energies(a_factor=1.0, a_scale=1 / 60),
            "likely unit mix-up",
        ),
        # natural logs on a difference gate
        ("logs_difference", "a - b", "upper < 1", "J", energies(logs=True), "likely transformed values"),
        # natural logs of about 1e25 FLOP (about 57.6)
        (
            "logs_of_flop",
            "a / b",
            "upper < 1.02",
            "FLOP",
            [{**r, "energy": math.log(math.exp(r["energy"]) * 1e22)} for r in energies(logs=True)],
            "likely transformed values",
        ),
    ],
)
def test_unit_mix_ups_on_other_contrasts_and_units_carry_the_warning(tmp_path, name, contrast, rule, unit, rows, kind):
    lock = frozen_shared(tmp_path, "plan.yaml", _variant_plan(contrast, rule, unit).replace("{range}", ""))
    code, ev = evaluate(tmp_path, lock, rows)
    gate = ev["gates"][0]
    assert code in (0, 1) and any(n.startswith(kind) for n in gate["notes"]), gate["notes"]
    if gate["verdict"] == "pass" and kind == "likely unit mix-up":
        assert f"WARNING: gate energy_noninferior: {kind}" in ev["decision_reason"]
    assert "likely transformed values" not in ev["decision_reason"]


def test_genuine_seconds_spread_over_more_than_half_again_carry_no_log_warning(tmp_path):
    """Completion times of 12 to 30 s (a 2.5x spread) are amounts, not logs: no warning."""
    lock = frozen_shared(tmp_path, "plan.yaml", _variant_plan("a / b", "upper < 1.5", "s").replace("{range}", ""))
    rows = [
        {"arm": arm, "site": site, "energy": 12.0 + 2.0 * site + (0.5 if arm == "a" else 0.0)}
        for site in range(10)
        for arm in ("a", "b")
    ]
    code, ev = evaluate(tmp_path, lock, rows)
    assert code in (0, 1) and not any(n.startswith("likely") for n in ev["gates"][0]["notes"])
