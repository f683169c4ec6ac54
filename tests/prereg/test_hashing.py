"""The plan hash: stable under key order and formatting, sensitive to anything that changes meaning."""

from __future__ import annotations

import random

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prereg.plan import PlanError, canonical_bytes, canonical_plan, parse_plan, plan_hash
from prereg.schema import Plan


def shuffled(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def dump(data, flow: bool) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=flow, allow_unicode=True, width=60).encode()


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
@given(seed=st.integers(0, 2**32 - 1), flow=st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_key_order_and_layout_do_not_change_the_hash(equal_work_bytes, seed, flow):
    reference = parse_plan(equal_work_bytes).plan_sha256
    data = shuffled(yaml.safe_load(equal_work_bytes), random.Random(seed))
    again = parse_plan(dump(data, flow))
    assert again.plan_sha256 == reference
    assert again.yaml_sha256 != parse_plan(equal_work_bytes).yaml_sha256


def test_formatting_of_numbers_rules_and_contrasts(equal_work_bytes):
    reference = parse_plan(equal_work_bytes).plan_sha256
    edits = [
        ("confidence: 0.90             #", "confidence: 9e-1 #"),
        ("pass_if: upper < 0.02", "pass_if: upper<0.020"),
        ("contrast: adaptive - fixed", "contrast: 'adaptive-fixed'"),
        ("pass_if: upper < 1.0", 'pass_if: "upper < 1"'),
        ("# Preregistration", "# A different comment\n# Preregistration"),
        ("outage_site: [0, 1, 2]", "outage_site:\n      - 0\n      - 1\n      - 2"),
        ("max: 20.0", "max: 20"),
    ]
    raw = equal_work_bytes
    for old, new in edits:
        assert old.encode() in raw, old
        raw = raw.replace(old.encode(), new.encode(), 1)
        assert parse_plan(raw).plan_sha256 == reference, f"hash changed by formatting edit {new!r}"


def test_filled_defaults_hash_like_omitted_ones(equal_work_bytes):
    raw = equal_work_bytes.replace(b"pass_if: upper < 0.02", b"pass_if: upper < 0.02\n    role: primary")
    raw = raw.replace(b"  replicates: 1\n", b"  replicates: 1\n  calibration: []\n")
    assert parse_plan(raw).plan_sha256 == parse_plan(equal_work_bytes).plan_sha256


@pytest.mark.parametrize(
    "old, new",
    [
        ("pass_if: upper < 0.02", "pass_if: upper < 0.03"),
        ("pass_if: upper < 0.02", "pass_if: upper <= 0.02"),
        ("method: t\n    confidence: 0.90             #", "method: wilcoxon\n    confidence: 0.90 #"),
        ("confidence: 0.90             #", "confidence: 0.95 #"),
        ("contrast: adaptive - fixed", "contrast: fixed - adaptive"),
        ("seed: [101, 102]", "seed: [101, 103]"),
        ("seed: [101, 102]", "seed: [102, 101]"),
        ("useful_tokens: 524288", "useful_tokens: 524289"),
        ("useful_tokens: 524288", "useful_tokens: 524288.0"),
        ("multiplicity: none", "multiplicity: holm"),
        ("title: Does", "title: does"),
        ("blocks: [energy_saving]", "blocks: all"),
    ],
)
def test_meaningful_changes_change_the_hash(equal_work_bytes, old, new):
    assert old.encode() in equal_work_bytes
    changed = equal_work_bytes.replace(old.encode(), new.encode(), 1)
    assert parse_plan(changed).plan_sha256 != parse_plan(equal_work_bytes).plan_sha256


def test_canonical_bytes_are_sorted_compact_and_strict():
    assert canonical_bytes({"b": 1, "a": [1.5, "é"]}) == '{"a":[1.5,"é"],"b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_bytes({"x": float("nan")})


PINNED_PLAN = b"""schema: prereg/v1
study: pinned
title: A fixed plan whose hash must never change within prereg/v1
hypothesis: The canonical form is stable.
arms: {a: {policy: restart}, b: {policy: continue}}
strata: {factors: {seed: [1, 2, 3]}}
metrics: {loss: {unit: nats, better: lower, evidence: measured}}
gates:
  - {id: g, metric: loss, contrast: b - a, method: signflip, confidence: 0.9, pass_if: upper < 0.02}
decision: {claim: b is no worse than a}
"""


def test_pinned_hash():
    """Pin the canonicalisation: a change here silently invalidates every existing lock.

    The pinned plan (signflip at 90% on 3 strata) is now refused by the cross-reference checks
    (it could never pass), so its hash is computed from the schema-validated model directly:
    the canonical form and the hash function are what this test pins."""
    plan = Plan.model_validate(yaml.safe_load(PINNED_PLAN))
    assert plan_hash(canonical_plan(plan)) == "c5312027e69ebcd3bf7ff75ca84a5ffc17453c8dccc35eb15fbf27af013ae28c"
    with pytest.raises(PlanError, match="needs at least 5"):
        parse_plan(PINNED_PLAN)
