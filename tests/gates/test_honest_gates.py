"""Gates that cannot decide honestly, through the console scripts: rules on the point estimate,
confidence below the floor, too few resamples, measured metrics with no resolution check,
mean-targeting intervals below the n the skew check needs, and near-constant contrasts."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
from scipy import stats

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

NOISE = [0.3, -0.5, 0.1, 0.8, -0.2, -0.9, 0.4, -0.1]  # a - b, mean -0.0125: a noise-level estimate below 0


# 1. a rule on the point estimate cannot decide a claim ------------------------------------------


@pytest.mark.subprocess
def test_estimate_rule_on_primary_gate_is_refused_at_freeze(tmp_path):
    for rule, suggested in (("estimate < 0", "upper < 0.0"), ("estimate > -0.1", "lower > -0.1")):
        rc, out, lock = freeze_text(tmp_path, plan_text(8, gate_line("g", "t", rule)))
        assert rc == 2 and not lock.exists(), out
        assert "gates[0]" in out and "gate 'g'" in out and "point estimate alone" in out
        assert f"use '{suggested}'" in out and "role: sensitivity" in out


@pytest.mark.subprocess
def test_estimate_rule_on_sensitivity_gate_is_descriptive_and_outside_multiplicity(tmp_path):
    gates = "\n".join(
        [gate_line("real", "t", "upper < 0.5"), gate_line("desc", "t", "estimate < 0", extra=", role: sensitivity")]
    )
    lock = frozen(tmp_path, plan_text(8, gates, multiplicity="holm"))
    runs = imported(tmp_path, lock, rows_for(NOISE))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)
    desc, real = g["desc"], g["real"]
    assert desc["verdict"] == "pass" and desc["pvalue"] is None and desc["pvalue_adjusted"] is None
    assert any(n.startswith("descriptive:") for n in desc["notes"])
    # the family is the one tested primary gate: Holm leaves its p-value as it is
    assert real["pvalue"] is not None and real["pvalue_adjusted"] == real["pvalue"]
    text = report(lock, runs)
    assert "DESCRIPTIVE: a rule on the point estimate" in text and "descriptive (no test)" in text
    assert "a gate with a tested rule (upper, lower, within) passes exactly when" in text
    show = run("prereg", "show", str(lock), env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "DESCRIPTIVE (no test, no p-value)" in " ".join(show.stdout.replace("│", " ").split())


def test_old_estimate_rule_rate_is_now_refused_and_the_t_gate_holds_its_level():
    """Case 1 in miniature (the full rates: benchmarks/bench_false_support.py): on pure noise the
    point-estimate rule passes about half the time; the t gate about alpha."""
    from benchmarks.bench_false_support import case1_rates

    estimate_rate, t_rate = case1_rates(reps=2000, seed=11)
    assert 0.45 < estimate_rate < 0.55 and 0.035 < t_rate < 0.065


# 2. a confidence floor for claims ----------------------------------------------------------------


@pytest.mark.subprocess
def test_confidence_below_floor_is_refused_without_a_reason(tmp_path):
    rc, out, lock = freeze_text(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0", conf=0.51)))
    assert rc == 2 and not lock.exists()
    assert "gate 'g': confidence 0.51 is below the 0.8 floor" in out and "confidence_reason" in out


@pytest.mark.subprocess
def test_a_blank_reason_is_no_reason(tmp_path):
    gate = gate_line("g", "t", "upper < 0", conf=0.51, extra=", confidence_reason: '   '")
    rc, out, lock = freeze_text(tmp_path, plan_text(8, gate))
    assert rc == 2 and not lock.exists()
    assert "confidence_reason: is only white space" in out


@pytest.mark.subprocess
def test_confidence_below_floor_with_a_reason_is_accepted_and_reported(tmp_path):
    reason = "a screening pilot whose pass only selects arms for the real study"
    gate = gate_line("g", "t", "upper < 0", conf=0.51, extra=f", confidence_reason: {reason}")
    lock = frozen(tmp_path, plan_text(8, gate))
    show = run("prereg", "show", str(lock), env={"NO_COLOR": "1", "COLUMNS": "200"})
    shown = " ".join(show.stdout.replace("│", " ").split())
    assert show.returncode == 0 and "this gate's interval is only 51% two-sided" in shown and reason in shown
    runs = imported(tmp_path, lock, rows_for(NOISE))
    rc, data = evaluate(lock, runs)
    notes = gates_by_id(data)["g"]["notes"]
    assert any("this gate's interval is only 51% two-sided" in n and reason in n for n in notes)
    assert "this gate's interval is only 51% two-sided" in report(lock, runs)


@pytest.mark.subprocess
def test_ordinary_confidence_needs_no_reason(tmp_path):
    rc, out, _ = freeze_text(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0", conf=0.8)))
    assert rc == 0, out


# 3. resamples below the estimators' minimum -------------------------------------------------------


@pytest.mark.subprocess
def test_too_few_resamples_are_refused_at_freeze(tmp_path):
    for method, resamples, conf, need in (
        ("bootstrap", 99, 0.9, 100),
        ("signflip", 99, 0.9, 100),
        ("bca", 150, 0.99, 199),
    ):
        gate = gate_line("g", method, "upper < 0", conf=conf, extra=f", resamples: {resamples}")
        rc, out, lock = freeze_text(tmp_path, plan_text(25, gate))
        assert rc == 2 and not lock.exists(), out
        assert f"resamples {resamples} is below the {need} the {method} estimator needs" in out


@pytest.mark.subprocess
def test_minimum_resamples_evaluate_without_internal_error(tmp_path):
    rng = np.random.default_rng(5)
    d = list(rng.normal(-0.5, 1.0, 25))
    for method in ("bootstrap", "signflip"):  # sign-flip beyond 20 blocks is sampled: resamples matter
        folder = tmp_path / method
        folder.mkdir()
        lock = frozen(folder, plan_text(25, gate_line("g", method, "upper < 0", extra=", resamples: 100")))
        proc = run("gates", "evaluate", str(lock), str(imported(folder, lock, rows_for(d))), "--json")
        assert proc.returncode in (0, 1), proc.stderr
        assert json.loads(proc.stdout)["gates"][0]["verdict"] in ("pass", "fail")


# 4. a measured metric without a signal: no resolution check, said plainly -------------------------


@pytest.mark.subprocess
def test_measured_metric_without_signal_says_no_resolution_check(tmp_path):
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0.5")))
    runs = imported(tmp_path, lock, rows_for(NOISE))
    rc, data = evaluate(lock, runs)
    g = gates_by_id(data)["g"]
    assert g["resolution"] is None
    assert any(n.startswith("no resolution check applies: loss is declared measured") for n in g["notes"])
    words = "no resolution check applies"
    assert words in report(lock, runs)
    md = run("reports", "show", str(runs / "evaluation.json"), "--markdown", "-")
    assert md.returncode == 0 and words in md.stdout
    out = tmp_path / "report.html"
    page = run("reports", "html", str(runs), "-o", str(out))
    assert page.returncode == 0, page.stderr
    assert words in html.unescape(out.read_text())


@pytest.mark.subprocess
def test_metric_with_a_signal_gets_no_such_note(tmp_path):
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0.5"), signal=True))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for(NOISE, bound=1e-6)))
    g = gates_by_id(data)["g"]
    assert g["resolution"] is not None and not any("no resolution check" in n for n in g["notes"])


# 5. mean-targeting gates below the n the skew check needs -----------------------------------------


@pytest.mark.subprocess
def test_mean_targeting_gate_below_skew_check_n_says_symmetry_is_unchecked(tmp_path):
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0.5")))
    runs = imported(tmp_path, lock, rows_for(NOISE))
    rc, data = evaluate(lock, runs)
    assert any(
        "coverage rests on near-symmetric contrasts that n = 8 cannot check" in n
        for n in gates_by_id(data)["g"]["notes"]
    )
    assert "symmetry unchecked at this n" in report(lock, runs)


@pytest.mark.subprocess
def test_enough_units_or_wilcoxon_carry_no_symmetry_note(tmp_path):
    rng = np.random.default_rng(9)
    d = list(rng.normal(-0.5, 1.0, 16))
    for method, n in (("t", 16), ("wilcoxon", 8)):
        folder = tmp_path / method
        folder.mkdir()
        lock = frozen(folder, plan_text(n, gate_line("g", method, "upper < 0.5")))
        rc, data = evaluate(lock, imported(folder, lock, rows_for(d[:n])))
        assert not any("near-symmetric" in note for note in gates_by_id(data)["g"]["notes"]), method


# 6. near-constant contrasts: vacuous only when exactly constant -----------------------------------


def _t_upper(d: np.ndarray, conf: float = 0.9) -> float:
    return float(d.mean() + stats.t.ppf((1 + conf) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))


@pytest.mark.subprocess
def test_contrasts_varying_by_1e13_relative_are_tested_and_agree_with_the_t_test(tmp_path):
    d = 0.05 * (1 + 1e-13 * np.arange(-3, 5))
    upper, sd = _t_upper(d), float(d.std(ddof=1))
    # threshold between the mean and the t upper bound: holds on the mean (the old "vacuous" pass), the t-test fails
    for label, threshold, want in (("fail", float(d.mean()) + 0.3 * sd, "fail"), ("pass", upper + sd, "pass")):
        folder = tmp_path / label
        folder.mkdir()
        lock = frozen(folder, plan_text(8, gate_line("g", "t", f"upper < {threshold!r}")))
        rc, data = evaluate(lock, imported(folder, lock, rows_for(list(d), base=0.0)))
        g = gates_by_id(data)["g"]
        p = float(stats.ttest_1samp(d, threshold, alternative="less").pvalue)
        assert g["verdict"] == want and g["pvalue"] is not None and abs(g["pvalue"] - p) < 1e-9
        assert (p <= 0.05) == (want == "pass")
        assert not any("same value" in n for n in g["notes"])


@pytest.mark.subprocess
def test_exactly_equal_contrasts_of_a_deterministic_metric_stay_vacuous(tmp_path):
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0.1"), metric_extra=", deterministic: true"))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for([0.05] * 8, base=0.0)))
    g = gates_by_id(data)["g"]
    assert g["verdict"] == "vacuous" and g["pvalue"] is None


@pytest.mark.subprocess
def test_variation_below_underflow_counts_as_constant(tmp_path):
    """Documented edge: deviations whose squares underflow give a standard deviation of exactly
    0, so no t statistic exists; such contrasts are treated as constant (vacuous or fail on
    their single value), never a division by zero."""
    d = [1e-320, 2e-320] * 4
    assert float(np.std(np.array(d))) == 0.0 and np.ptp(np.array(d)) > 0
    lock = frozen(tmp_path, plan_text(8, gate_line("g", "t", "upper < 0.1"), metric_extra=", deterministic: true"))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for(d, base=0.0)))
    g = gates_by_id(data)["g"]
    assert g["verdict"] == "vacuous" and g["pvalue"] is None and rc == 0


@pytest.mark.subprocess
def test_a_skew_warning_on_a_passing_primary_gate_reaches_the_decision_line(tmp_path):
    """At n = 20 the check runs; a passing t gate on right-skewed contrasts says so in the decision."""
    rng = np.random.default_rng(2)
    d = list(rng.lognormal(0.0, 1.0, 20) - np.exp(0.5) - 0.3)  # skewness 2.26; upper bound about -0.06
    lock = frozen(tmp_path, plan_text(20, gate_line("g", "t", "upper < 0.5")))
    rc, data = evaluate(lock, imported(tmp_path, lock, rows_for(d)))
    warned = gates_by_id(data)["g"]["warnings"]
    assert rc == 0 and any(n.startswith("the block contrasts look skewed to the right") for n in warned), warned
    assert "WARNING: gate g: skewed contrasts (its interval for the mean may under-cover)" in data["decision_reason"]
