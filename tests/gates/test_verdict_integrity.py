"""Through the console scripts: no verdict disagrees with its own statistics.

Each case imports a tiny table of pairs ``a`` vs ``b`` and runs ``gates evaluate``; the
contrast is ``a - b`` (or ``a / b``) per block.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from collect.ledger.store import read_ledger
from gates.assemble import build_evaluation
from prereg.schema import Plan
from tests.helpers import run
from tests.helpers.gates import (
    evaluate,
    freeze_text,
    frozen,
    gate_line,
    gates_by_id,
    imported,
    plan_text,
    report,
    rows_for,
)

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

# 1. vacuous means exactly: every contrast equal ------------------------------------------------


def test_varying_contrasts_are_never_vacuous(tmp_path):
    lock = frozen(tmp_path, plan_text(7, gate_line("g", "t", "upper < 0.1")))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for([0, 0, 0, 0, 0, 0, -0.3])))
    g = gates_by_id(data)["g"]
    assert g["verdict"] == "pass" and g["pvalue"] is not None and g["lower"] < g["upper"]
    assert not any("same value" in n for n in g["notes"])


def test_bootstrap_all_but_one_equal_is_computed_not_vacuous(tmp_path):
    lock = frozen(tmp_path, plan_text(20, gate_line("g", "bca", "upper < 0.05")))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for([0.0] * 19 + [-0.3])))
    g = gates_by_id(data)["g"]
    assert g["verdict"] in ("pass", "fail") and g["verdict"] != "vacuous" and g["lower"] < g["upper"]


def test_bootstrap_gate_on_two_blocks_is_refused_at_freeze(tmp_path):
    rc, out, _ = freeze_text(tmp_path, plan_text(2, gate_line("g", "bootstrap", "upper < 0.1")))
    assert rc == 2 and "needs at least 20" in out and "gates[0].method" in out


def test_all_equal_contrasts_of_a_deterministic_metric_are_vacuous_without_p_value(tmp_path):
    lock = frozen(tmp_path, plan_text(6, gate_line("g", "t", "upper < 0.1"), metric_extra=", deterministic: true"))
    runs = imported(tmp_path, lock, rows_for([0.0] * 6))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    assert rc == 0 and g["verdict"] == "vacuous" and g["pvalue"] is None and g["pvalue_adjusted"] is None
    text = report(lock, runs)
    assert "p < 0.0001" not in text and "no p-value (no variability to test)" in text
    assert "VACUOUS: every unit's contrast is exactly the same value" in text


# 2. a constant contrast still goes through the resolution check -------------------------------


def test_constant_contrast_with_wide_meter_bound_is_unresolvable(tmp_path):
    gates = gate_line("g", "t", "upper < 1.05", contrast="a / b")
    lock = frozen(tmp_path, plan_text(6, gates, signal=True))
    runs = imported(tmp_path, lock, rows_for([1.0] * 6, base=1000.0, bound=500.0, ratio=True))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    assert g["verdict"] == "unresolvable" and g["resolution"]["could_change"] is True
    assert rc == 3 and data["decision"] == "refused"
    assert "UNRESOLVABLE: moving the measured values" in report(lock, runs)


# 3. a vacuous gate enters the multiplicity family with p = 1 ----------------------------------


def test_vacuous_gate_enters_holm_with_p_one(tmp_path):
    gates = "\n".join(
        [gate_line("flat", "t", "upper < 0.1"), gate_line("real", "t", "upper < 0.5", extra=", description: second")]
    )
    text = plan_text(6, gates, multiplicity="holm", metric_extra=", deterministic: true").replace(
        b"  - {id: real, metric: loss", b"  - {id: real, metric: other"
    )
    text = text.replace(b"metrics:\n", b"metrics:\n  other: {unit: nats, better: lower, evidence: measured}\n")
    lock = frozen(tmp_path, text)
    contrasts = [0.1, 0.2, 0.05, 0.15, 0.12, 0.08]
    rows = rows_for([0.0] * 6)
    for row, c in zip(rows, [x for x in contrasts for _ in (0, 1)], strict=True):
        row["other"] = 2.0 + (c if row["arm"] == "a" else 0.0)
    rc, data = evaluate(lock, imported(tmp_path, lock, rows))
    g = gates_by_id(data)
    assert g["flat"]["verdict"] == "vacuous" and g["flat"]["pvalue"] is None
    from statsmodels.stats.multitest import multipletests  # lazy: statsmodels takes a second to import

    expected = multipletests([1.0, g["real"]["pvalue"]], method="holm")[1][1]
    assert g["real"]["pvalue_adjusted"] == pytest.approx(expected)


# 4. one decision rule: <= / >= at the boundary, independent of the multiplicity setting --------


@pytest.mark.parametrize("multiplicity", ["none", "holm", "bonferroni"])
@pytest.mark.parametrize("rule", ["upper <= 0", "upper < 0"])
def test_boundary_rule_agrees_with_its_p_value(tmp_path, multiplicity, rule):
    lock = frozen(tmp_path, plan_text(6, gate_line("g", "signflip", rule), multiplicity=multiplicity))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for([1, -3, -1, -3, -2, -1])))
    g = gates_by_id(data)["g"]
    assert g["upper"] == 0.0 and g["pvalue"] == pytest.approx(0.0625)
    assert g["verdict"] == "fail" and rc == 1 and data["decision"] == "not_supported"


# 5. Wilcoxon with ties: the interval, the p-value and the verdict are one construction --------


@pytest.mark.parametrize("rule, verdict", [("lower > 0.45", "fail"), ("lower > 0.39", "pass")])
def test_wilcoxon_ties_verdict_agrees_with_interval_and_p(tmp_path, rule, verdict):
    d = [1.3, 2.3, 0.4, 0.6, 1.3, 2.0, 0.6, 0.7, 0.4, -0.9]
    lock = frozen(tmp_path, plan_text(10, gate_line("g", "wilcoxon", rule), better="higher"))
    runs = imported(tmp_path, lock, rows_for(d))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    assert (g["lower"], g["upper"]) == pytest.approx((0.4, 1.35))
    assert g["verdict"] == verdict and (g["pvalue"] <= 0.05) == (verdict == "pass")
    text = report(lock, runs)
    assert "(pseudo-median)" in text and "Hodges-Lehmann pseudo-median" in text


# 6. plans that can never pass are refused at freeze, with the minimum number of blocks -------


@pytest.mark.parametrize("method, need", [("signflip", 5), ("wilcoxon", 5), ("bootstrap", 20), ("bca", 20)])
def test_freeze_refuses_gates_that_cannot_reach_their_level(tmp_path, method, need):
    rc, out, lock = freeze_text(tmp_path, plan_text(4, gate_line("g", method, "upper < 0")))
    assert rc == 2 and f"needs at least {need}" in out and "and has 4" in out and not lock.exists()


def test_freeze_counts_strata_not_replicates_by_default(tmp_path):
    rc, out, _ = freeze_text(tmp_path, plan_text(4, gate_line("g", "signflip", "upper < 0"), replicates=3))
    assert (
        rc == 2 and "needs at least 5 pairing strata (not calibration or control; replicates averaged) and has 4" in out
    )
    text = plan_text(
        4, gate_line("g", "signflip", "upper < 0"), replicates=3, extra_strata="  analysis_unit: replicate\n"
    )
    rc, out, _ = freeze_text(tmp_path, text)
    assert rc == 0, out


def test_evaluate_refuses_a_gate_below_its_minimum_blocks(tmp_path):
    """A lock frozen before the freeze check existed (here: a plan object that bypasses it)."""
    lock = frozen(tmp_path, plan_text(6, gate_line("g", "t", "upper < 0.5")))
    runs = imported(tmp_path, lock, rows_for([0.1, 0.2, -0.1, 0.3, 0.0, 0.1]))
    lock_data = json.loads(lock.read_text())
    canonical = dict(lock_data["plan"])
    canonical["gates"] = [dict(canonical["gates"][0], method="bootstrap", resamples=999, seed=0)]
    plan = Plan.model_validate(canonical)
    ev = build_evaluation(lock_data, plan, read_ledger(runs), lock)
    g = ev.gates[0]
    assert g.verdict == "refused" and ev.decision == "refused"
    assert any("needs at least 20 complete strata and has 6" in r.reason for r in g.refused_by)


# 7. coverage caveats from the data ------------------------------------------------------------


def test_skewed_contrasts_warn_with_the_remedy(tmp_path):
    d = [0.01, 0.02, 0.015, 0.03, 0.02, 0.01, 0.025, 2.5]
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 5")))
    runs = imported(tmp_path, lock, rows_for(d))
    rc, data = evaluate(lock, runs)
    warnings = " ".join(gates_by_id(data)["g"]["warnings"])
    assert "look skewed to the right" in warnings and "log-ratio contrast" in warnings and "more blocks" in warnings
    assert "look skewed to the right" in report(lock, runs)


def test_symmetric_contrasts_do_not_warn(tmp_path):
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 5")))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for([0.1, -0.1, 0.2, -0.2, 0.05, -0.05, 0.0, 0.12])))
    assert not any("skewed" in w for w in gates_by_id(data)["g"]["warnings"])


# 8. the unit of analysis: one pair per stratum by default ------------------------------------


def test_default_unit_is_the_stratum_mean_of_replicates(tmp_path):
    d = [0.1, 0.3, -0.2, 0.0, 0.4, 0.2, 0.1, 0.1, 0.5, 0.3, 0.0, 0.2]  # 6 strata x 2 replicates
    lock = frozen(tmp_path, plan_text(6, gate_line("g", "t", "upper < 1"), replicates=2))
    runs = imported(tmp_path, lock, rows_for(d, replicates=2))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    means = np.array(d).reshape(6, 2).mean(axis=1)
    assert g["n_pairs"] == 6 and g["analysis_unit"] == "stratum"
    assert g["estimate"] == pytest.approx(means.mean())
    assert "n = 6 strata" in report(lock, runs)
    show = run("prereg", "show", str(lock), env={"COLUMNS": "200"}).stdout
    assert "unit of analysis: one pair per stratum" in show
    assert len(data["blocks"]) == 12  # the per-replicate rows are still reported


def test_replicate_unit_only_when_the_plan_says_so(tmp_path):
    d = [0.1, 0.3, -0.2, 0.0, 0.4, 0.2, 0.1, 0.1, 0.5, 0.3, 0.0, 0.2]
    text = plan_text(6, gate_line("g", "t", "upper < 1"), replicates=2, extra_strata="  analysis_unit: replicate\n")
    lock = frozen(tmp_path, text)
    runs = imported(tmp_path, lock, rows_for(d, replicates=2))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    assert g["n_pairs"] == 12 and g["analysis_unit"] == "replicate"
    assert "n = 12 replicate pairs" in report(lock, runs)
    show = run("prereg", "show", str(lock), env={"COLUMNS": "200"}).stdout
    assert "unit of analysis: every replicate pair is an independent block" in show
