"""Plan validation: the shared and own examples are accepted; every refusal names its field and line."""

from __future__ import annotations

import pytest
import yaml

from prereg.plan import PlanError, load_plan, parse_plan
from tests.conftest import OWN_EXAMPLES, REPO


def problems(raw: bytes) -> list:
    with pytest.raises(PlanError) as info:
        parse_plan(raw, "plan.yaml")
    return info.value.problems


def one_problem(raw: bytes, field: str, words: str, line: int | None = None):
    found = problems(raw)
    match = [p for p in found if p.field == field and words in p.message]
    assert match, f"expected {field}: ...{words}... in {[(p.field, p.message) for p in found]}"
    if line is not None:
        assert match[0].line == line
    return match[0]


def replace(raw: bytes, old: str, new: str) -> bytes:
    assert old.encode() in raw, old
    return raw.replace(old.encode(), new.encode(), 1)


def test_shared_examples_are_accepted(equal_work_bytes, cadence_bytes):
    ew = parse_plan(equal_work_bytes)
    assert ew.plan.study == "equal-work-continuation"
    assert [g.id for g in ew.plan.gates] == ["learning_noninferior", "work_saved", "energy_saving"]
    assert ew.plan.gates[1].contrast.scale == "ratio"
    assert len(ew.plan.strata.enumerate()) == 6
    ce = parse_plan(cadence_bytes)
    assert ce.plan.decision.multiplicity == "holm"
    assert ce.plan.gates[0].contrast.coefficients == {
        "dense_restart": 1.0,
        "dense_sparse": -1.0,
        "sparse_restart": -1.0,
        "sparse_sparse": 1.0,
    }
    # signflip gates get their resampling settings pinned at freeze time
    assert (ce.plan.gates[2].resamples, ce.plan.gates[2].seed) == (100_000, 0)
    assert ce.canonical["gates"][0].get("resamples") is None  # t gates carry none


@pytest.mark.parametrize("path", sorted(OWN_EXAMPLES.glob("*.yaml")) + [REPO / "prereg/templates/starter.yaml"])
def test_own_examples_and_starter_are_accepted(path):
    assert load_plan(path).plan.gates


def test_own_examples_exist():
    assert len(list(OWN_EXAMPLES.glob("*.yaml"))) >= 2


def test_defaults_are_filled(equal_work_bytes):
    canonical = parse_plan(equal_work_bytes).canonical
    assert canonical["gates"][0]["role"] == "primary"
    assert canonical["strata"]["calibration"] == [] and canonical["predecessors"] == []
    assert "scope" not in canonical and "signal" not in canonical["metrics"]["final_nll"]


# --- every refusal of the issue, each naming the field (and line where YAML gives one) ---------


def test_unknown_key(equal_work_bytes):
    raw = replace(equal_work_bytes, "    method: t\n", "    method: t\n    metod: t\n")
    one_problem(raw, "gates[0].metod", "unknown key 'metod'", line=53)


def test_unknown_top_level_key(equal_work_bytes):
    one_problem(equal_work_bytes + b"extra_section: 1\n", "extra_section", "unknown key")


def test_missing_key(equal_work_bytes):
    raw = replace(equal_work_bytes, "    pass_if: upper < 0.02\n", "")
    one_problem(raw, "gates[0].pass_if", "missing required key")


def test_duplicate_yaml_key(equal_work_bytes):
    raw = replace(
        equal_work_bytes, "    confidence: 0.90             #", "    confidence: 0.90\n    confidence: 0.99 #"
    )
    one_problem(raw, "", "duplicate key 'confidence'", line=54)


def test_alias_refused(equal_work_bytes):
    raw = replace(equal_work_bytes, "  fixed:\n    policy: restart", "  fixed: &f\n    policy: restart")
    raw = replace(raw, "  adaptive:\n    policy: continue", "  adaptive: *f")
    one_problem(raw, "", "anchors")


def test_non_finite_refused(equal_work_bytes):
    one_problem(replace(equal_work_bytes, "max: 20.0", "max: .inf"), "", "non-finite")


@pytest.mark.parametrize("value", ["0.5", "1.0", "1", "0.3", "'0.9'"])
def test_confidence_outside_open_interval(equal_work_bytes, value):
    raw = replace(equal_work_bytes, "confidence: 0.90             #", f"confidence: {value} #")
    one_problem(raw, "gates[0].confidence", "", line=53)


def test_unknown_metric_in_gate(equal_work_bytes):
    raw = replace(equal_work_bytes, "metric: final_nll\n    contrast", "metric: final_loss\n    contrast")
    one_problem(raw, "gates[0].metric", "unknown metric 'final_loss'", line=50)


def test_unknown_arm_in_contrast(equal_work_bytes):
    raw = replace(equal_work_bytes, "contrast: adaptive - fixed", "contrast: adaptive - fixd")
    one_problem(raw, "gates[0].contrast", "unknown arm(s) 'fixd'", line=51)


def test_bad_contrast_and_rule_named(equal_work_bytes):
    raw = replace(equal_work_bytes, "contrast: adaptive - fixed", "contrast: adaptive - fixed / 2")
    one_problem(raw, "gates[0].contrast", "0.5*b")
    raw = replace(equal_work_bytes, "pass_if: upper < 0.95", "pass_if: upper > 0.95")
    one_problem(raw, "gates[2].pass_if", "is not a rule", line=66)


def test_mixed_contrast_forms(cadence_bytes):
    raw = replace(
        cadence_bytes, "contrast: sparse_sparse / sparse_restart", "contrast: sparse_sparse / sparse_restart - 1"
    )
    one_problem(raw, "gates[1].contrast", "mixes")


def test_coefficients_must_sum_to_zero(cadence_bytes):
    raw = replace(
        cadence_bytes, "contrast: sparse_sparse - sparse_restart", "contrast: sparse_sparse - 2*sparse_restart"
    )
    one_problem(raw, "gates[2].contrast", "sum to zero")


def test_ratio_threshold_must_be_positive(equal_work_bytes):
    raw = replace(equal_work_bytes, "pass_if: upper < 0.95", "pass_if: upper < 0")
    one_problem(raw, "gates[2].pass_if", "ratio above 0")


def test_unknown_gate_in_blocks(equal_work_bytes):
    raw = replace(equal_work_bytes, "blocks: [energy_saving]", "blocks: [energy_savings]")
    one_problem(raw, "invalidators[0].blocks[0]", "unknown gate 'energy_savings'", line=40)


def test_unknown_metric_in_invalidator(equal_work_bytes):
    raw = replace(equal_work_bytes, "metric: final_nll\n    min", "metric: nll\n    min")
    one_problem(raw, "invalidators[1].metric", "unknown metric 'nll'")


def test_signal_must_back_a_metric(equal_work_bytes):
    raw = replace(equal_work_bytes, "signal: energy_counter\n    min_updates", "signal: power\n    min_updates")
    one_problem(raw, "invalidators[0].signal", "backs no metric", line=38)


def test_unknown_invalidator_kind(equal_work_bytes):
    raw = replace(equal_work_bytes, "kind: metric_bounds", "kind: metric_bound")
    one_problem(raw, "invalidators[1]", "does not match any of the expected tags")


def test_invalidator_kind_parameters(equal_work_bytes):
    raw = replace(equal_work_bytes, "min_updates: 20", "min_update: 20")
    found = problems(raw)
    assert {p.field for p in found} >= {"invalidators[0].min_update", "invalidators[0].min_updates"}
    raw = replace(equal_work_bytes, "    min: 0.0\n    max: 20.0\n", "")
    one_problem(raw, "invalidators[1]", "needs 'min', 'max' or both")
    raw = replace(equal_work_bytes, "    min: 0.0\n    max: 20.0\n", "    min: 5\n    max: 1\n")
    one_problem(raw, "invalidators[1]", "must be below max")


def test_controls_identical_selector(equal_work_bytes):
    block = (
        "  - id: controls\n    kind: controls_identical\n    metric: final_nll\n"
        "    where: {outage_site: %s}\n    blocks: all\n"
    )
    raw = replace(equal_work_bytes, "  - id: sane_nll\n", block % "1" + "  - id: sane_nll\n")
    assert parse_plan(raw).plan.invalidators[1].kind == "controls_identical"
    raw = replace(equal_work_bytes, "  - id: sane_nll\n", block % "none" + "  - id: sane_nll\n")
    one_problem(raw, "invalidators[1].where.outage_site", "'none' is not a level")


def test_duplicate_ids(equal_work_bytes):
    raw = replace(equal_work_bytes, "id: work_saved", "id: learning_noninferior")
    one_problem(raw, "gates[1].id", "duplicate gate id")
    raw = replace(equal_work_bytes, "id: sane_nll", "id: counter_support")
    one_problem(raw, "invalidators[1].id", "duplicate invalidator id")


def test_empty_factor_and_repeated_level(equal_work_bytes):
    one_problem(
        replace(equal_work_bytes, "outage_site: [0, 1, 2]", "outage_site: []"),
        "strata.factors.outage_site",
        "at least 1",
    )
    one_problem(
        replace(equal_work_bytes, "seed: [101, 102]", "seed: [101, 101]"), "strata.factors.seed[1]", "listed twice"
    )


def test_levels_are_typed(equal_work_bytes):
    """1 and '1' are different levels (YAML types are kept), so both may be listed."""
    raw = replace(equal_work_bytes, "seed: [101, 102]", "seed: [101, '101']")
    assert len(parse_plan(raw).plan.strata.enumerate()) == 6


def test_calibration_and_held_out_overlap(equal_work_bytes):
    ok = replace(
        equal_work_bytes,
        "  replicates: 1\n",
        "  replicates: 1\n  calibration: [{seed: 101}]\n  held_out: [{seed: 102}]\n",
    )
    assert parse_plan(ok).plan.strata.calibration == [{"seed": 101}]
    bad = replace(
        equal_work_bytes,
        "  replicates: 1\n",
        "  replicates: 1\n  calibration: [{seed: 101}]\n  held_out: [{outage_site: 0}]\n",
    )
    one_problem(bad, "strata.held_out", "both calibration and held out")
    bad = replace(equal_work_bytes, "  replicates: 1\n", "  replicates: 1\n  calibration: [{seed: 103}]\n")
    one_problem(bad, "strata.calibration[0].seed", "not a level")


def test_arm_setting_clashing_with_factor(equal_work_bytes):
    raw = replace(equal_work_bytes, "    policy: restart ", "    policy: restart\n    seed: 5 ")
    one_problem(raw, "arms.fixed.seed", "set by both a stratum factor and arm")


def test_resamples_only_for_resampling_methods(equal_work_bytes):
    raw = replace(equal_work_bytes, "    method: t\n", "    method: t\n    resamples: 999\n")
    one_problem(raw, "gates[0]", "applies only to resampling methods")
    raw = replace(equal_work_bytes, "    method: t\n", "    method: signflip\n    resamples: 999\n    seed: 7\n")
    gate = parse_plan(raw).plan.gates[0]
    assert (gate.resamples, gate.seed) == (999, 7)


def test_no_primary_gate(equal_work_bytes):
    raw = equal_work_bytes
    for rule in ("upper < 0.02", "upper < 1.0", "upper < 0.95"):
        raw = replace(raw, f"pass_if: {rule}", f"pass_if: {rule}\n    role: sensitivity")
    one_problem(raw, "gates", "no primary gate")


def test_wrong_schema_and_shape(equal_work_bytes):
    one_problem(replace(equal_work_bytes, "schema: prereg/v1", "schema: prereg/v2"), "schema", "unsupported schema")
    one_problem(replace(equal_work_bytes, "schema: prereg/v1\n", ""), "schema", "missing required key")
    assert "mapping" in problems(b"- a\n- b\n")[0].message
    assert "mapping" in problems(b"just a string\n")[0].message


def test_invalid_names(equal_work_bytes):
    one_problem(replace(equal_work_bytes, "  fixed:\n", "  fixed-arm:\n"), "arms.fixed-arm", "identifiers", line=18)
    one_problem(replace(equal_work_bytes, "study: equal-work", "study: -equal-work"), "study", "slug")


def test_predecessors_and_scope(equal_work_bytes):
    good = equal_work_bytes + (
        b"scope: Three sites only.\npredecessors:\n  - path: ../pilot/evaluation.json\n"
        b"    sha256: " + b"ab" * 32 + b"\n    changes: tighter margin\n"
    )
    plan = parse_plan(good).plan
    assert plan.scope == "Three sites only." and plan.predecessors[0].changes == "tighter margin"
    one_problem(good.replace(b"ab" * 32, b"AB" * 32), "predecessors[0].sha256", "64 lowercase hexadecimal")
    one_problem(good.replace(b"ab" * 32, b"12" * 32), "predecessors[0].sha256", "put the value in quotes")


def test_many_problems_reported_together(equal_work_bytes):
    raw = replace(equal_work_bytes, "metric: final_nll\n    contrast", "metric: x\n    contrast")
    raw = replace(raw, "blocks: [energy_saving]", "blocks: [y]")
    fields = {p.field for p in problems(raw)}
    assert {"gates[0].metric", "invalidators[0].blocks[0]"} <= fields


def test_error_rendering_names_file_line_and_field(equal_work_bytes):
    raw = replace(equal_work_bytes, "pass_if: upper < 0.02", "pass_if: upper > 0.02")
    with pytest.raises(PlanError) as info:
        parse_plan(raw, "study.yaml")
    assert info.value.render().startswith("study.yaml:54:14: gates[0].pass_if: 'upper >' is not a rule")


def test_missing_and_directory_paths(tmp_path):
    with pytest.raises(PlanError, match="no such file"):
        load_plan(tmp_path / "nope.yaml")
    with pytest.raises(PlanError, match="is a folder"):
        load_plan(tmp_path)


def test_yaml_dump_round_trip_accepted(equal_work_bytes):
    """A plan re-emitted by a YAML library (flow style, no comments) is still the same valid plan."""
    data = yaml.safe_load(equal_work_bytes)
    again = yaml.safe_dump(data, default_flow_style=True).encode()
    assert parse_plan(again).plan_sha256 == parse_plan(equal_work_bytes).plan_sha256
