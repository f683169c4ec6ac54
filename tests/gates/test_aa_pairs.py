"""A/A pairs in gates evaluate (gates.aa_pairs): the pair's interval on each primary gate's metric, the
plan-level refusal when it excludes the null or cannot be computed, and the refusal rate under a true
A/A (about the plan's level, 1 - confidence)."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from scipy import stats

from gates.artifact import Evaluation, parse_evaluation
from gates.consistency import consistency_problems
from gates.numbers import as_float
from prereg.jsoncodec import canonical_bytes
from tests.helpers.aa import aa_evaluate, aa_plan, aa_rows


def test_no_difference_no_refusal_interval_shown(tmp_path):
    rows = aa_rows(seed=3)
    ev = aa_evaluate(tmp_path, aa_plan(), rows)
    assert ev.decision == "supported" and ev.decision_refused_by == []
    (r,) = ev.aa_pairs
    assert (r.control, r.original, r.contrast, r.metric, r.gates) == (
        "a_again",
        "a",
        "a_again - a",
        "loss",
        ["no_worse"],
    )
    assert (r.verdict, r.method, r.confidence, r.checks, r.n_pairs) == ("same", "t", 0.9, 1, 10)
    # the t interval of the per-block differences, as scipy computes it
    a = {row["block"]: row["loss"] for row in rows if row["arm"] == "a"}
    d = np.array([row["loss"] - a[row["block"]] for row in rows if row["arm"] == "a_again"])
    low, high = stats.t.interval(0.9, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert r.lower == pytest.approx(low, rel=1e-9) and r.upper == pytest.approx(high, rel=1e-9)
    assert (as_float(r.lower) or 0) < 0 < (as_float(r.upper) or 0) and r.pvalue == pytest.approx(
        stats.ttest_1samp(d, 0).pvalue, rel=1e-9
    )
    assert consistency_problems(ev) == []


def test_a_shifted_copy_refuses_the_decision(tmp_path):
    ev = aa_evaluate(tmp_path, aa_plan(), aa_rows(seed=3, shift=0.2))
    assert ev.decision == "refused"
    assert [g.verdict for g in ev.gates] == ["pass"]  # the gates themselves are untouched
    (refusal,) = ev.decision_refused_by
    assert refusal.kind == "aa_difference"
    (r,) = ev.aa_pairs
    assert r.verdict == "differs" and (as_float(r.lower) or 0) > 0
    assert refusal.reason.startswith("A/A pair a_again (a control copy of a) differs from it: a_again - a on loss: ")
    assert f"[{r.lower:.4g}, {r.upper:.4g}] (90% t interval, 10 units) excludes 0" in refusal.reason
    assert "the pipeline itself manufactures differences" in ev.decision_reason
    assert consistency_problems(ev) == []


def test_a_ratio_gate_checks_the_ratio(tmp_path):
    plan = aa_plan(contrast="b / a", rule="upper < 1.2")
    ev = aa_evaluate(tmp_path, plan, aa_rows(seed=4, shift=0.1, ratio=True))
    (r,) = ev.aa_pairs
    assert (r.contrast, r.scale, r.null, r.verdict) == ("a_again / a", "ratio", 1.0, "differs")
    assert (as_float(r.lower) or 0) > 1 and "excludes 1" in ev.decision_refused_by[0].reason


def test_identical_runs_show_exactly_no_difference(tmp_path):
    """A deterministic pipeline gives the copy the original's values: a constant 0, no difference."""
    rows = aa_rows(seed=5)
    a = {row["block"]: row["loss"] for row in rows if row["arm"] == "a"}
    rows = [{**row, "loss": a[row["block"]]} if row["arm"] == "a_again" else row for row in rows]
    ev = aa_evaluate(tmp_path, aa_plan(), rows)
    (r,) = ev.aa_pairs
    assert (r.verdict, r.estimate, r.lower, r.upper, r.pvalue) == ("same", 0.0, 0.0, 0.0, None)
    assert ev.decision == "supported"


def test_missing_runs_of_the_copy_leave_it_unchecked_and_refuse(tmp_path):
    rows = [row for row in aa_rows(seed=6) if not (row["arm"] == "a_again" and row["block"] > 1)]
    ev = aa_evaluate(tmp_path, aa_plan(), rows)
    (r,) = ev.aa_pairs
    assert r.verdict == "unchecked" and r.lower is None
    assert r.reason == "9 missing runs of arms a, a_again (listed in the run accounting)"
    assert [x.kind for x in ev.decision_refused_by] == ["aa_unchecked"] and ev.decision == "refused"
    assert ev.gates[0].verdict == "pass"  # the gate does not use the copy


def test_two_primary_metrics_split_the_level(tmp_path):
    """Two distinct primary gates: two checks, each at 1 - 0.1 / 2 (Bonferroni); identical gates share one."""
    same = '  - {id: again, metric: loss, contrast: "b - a", method: t, confidence: 0.9, pass_if: "upper < 0.4"}\n'
    other = '  - {id: strict, metric: loss, contrast: "b - a", method: t, confidence: 0.8, pass_if: "upper < 0.4"}\n'
    ev = aa_evaluate(tmp_path, aa_plan(extra_gates=same), aa_rows(seed=7))
    assert [(r.gates, r.checks, r.confidence) for r in ev.aa_pairs] == [(["no_worse", "again"], 1, 0.9)]
    shutil.rmtree(tmp_path / "runs")
    (tmp_path / "plan.lock.json").unlink()
    ev = aa_evaluate(tmp_path, aa_plan(extra_gates=other), aa_rows(seed=7))
    assert [(r.gates, r.checks) for r in ev.aa_pairs] == [(["no_worse"], 2), (["strict"], 2)]
    assert [r.confidence for r in ev.aa_pairs] == pytest.approx([0.95, 0.9])


def test_artifact_without_pairs_has_no_key_and_old_artifacts_load(tmp_path):
    ev = aa_evaluate(tmp_path, aa_plan(), aa_rows(seed=3))
    data = ev.model_dump(mode="json", by_alias=True)
    assert "aa_pairs" in data
    back = parse_evaluation(canonical_bytes(data), "x")
    assert back.aa_pairs == ev.aa_pairs
    without = Evaluation.model_validate({k: v for k, v in data.items() if k != "aa_pairs"})
    assert without.aa_pairs == [] and "aa_pairs" not in without.model_dump(mode="json", by_alias=True)


def test_a_tampered_verdict_is_inconsistent(tmp_path):
    ev = aa_evaluate(tmp_path, aa_plan(), aa_rows(seed=3, shift=0.2))
    hidden = ev.model_copy(update={"decision_refused_by": [], "decision": "supported", "seal_sha256": None})
    assert any("without the decision refusal (aa_difference)" in p for p in consistency_problems(hidden))
    flipped = ev.aa_pairs[0].model_copy(update={"verdict": "same"})
    assert any(
        "contradicts its interval" in p for p in consistency_problems(ev.model_copy(update={"aa_pairs": [flipped]}))
    )


REPS = 300  # true A/A studies; the refusal count is Binomial(REPS, 0.10) when the check holds its level


@pytest.mark.slow
def test_a_true_aa_pair_is_refused_at_the_plans_level(tmp_path):
    """Under a true A/A (copy and original from one distribution), the pipeline refuses about 1 - confidence
    of studies: 10% at 0.90 (seeded; 300 studies, 10 blocks each)."""
    refused = 0
    plan = aa_plan()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # imported runs carry no start time
        for seed in range(REPS):
            shutil.rmtree(tmp_path / "runs", ignore_errors=True)
            ev = aa_evaluate(tmp_path, plan, aa_rows(seed=1000 + seed))
            refused += any(r.kind == "aa_difference" for r in ev.decision_refused_by)
    rate = refused / REPS
    assert stats.binomtest(refused, REPS, 0.10).pvalue > 0.01, rate
    assert 0.06 < rate < 0.14
