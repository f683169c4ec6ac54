"""A/A pairs at freeze (prereg.arm_checks): each bad ``control_of`` declaration is one clear message
naming its field; a good one freezes; ``control_of`` never reaches the program's parameters."""

from __future__ import annotations

import pytest

from prereg.arm_checks import CONTROL_OF, aa_pairs, arm_params
from prereg.plan import PlanError, parse_plan
from tests.helpers import run
from tests.helpers.aa import aa_plan


def problems(text: bytes) -> list[tuple[str, str]]:
    """``(field, message)`` of every problem ``parse_plan`` finds (empty: the plan is accepted)."""
    try:
        parse_plan(text)
    except PlanError as err:
        return [(p.field, p.message) for p in err.problems]
    return []


def test_a_control_copy_is_accepted_and_paired():
    loaded = parse_plan(aa_plan())
    assert aa_pairs(loaded.plan) == [("a_again", "a")]
    assert loaded.canonical["arms"]["a_again"][CONTROL_OF] == "a"  # hashed with the plan: a declaration


@pytest.mark.parametrize(
    "copy, field, words",
    [
        ("{policy: x, size: 2, control_of: nope}", "arms.a_again.control_of", "unknown arm 'nope'; arms: a, b"),
        ("{policy: x, size: 2, control_of: a_again}", "arms.a_again.control_of", "cannot be a control copy of itself"),
        ("{policy: x, size: 2, control_of: 3}", "arms.a_again.control_of", "control_of names an arm (a string), not 3"),
        (
            "{policy: z, size: 2, control_of: a}",
            "arms.a_again.policy",
            "parameter 'policy' differs (a_again: 'z', a: 'x'); an A/A pair runs the same configuration",
        ),
        ("{policy: x, size: 2.0, control_of: a}", "arms.a_again.size", "parameter 'size' differs (a_again: 2.0, a: 2)"),
        (
            "{policy: x, control_of: a}",
            "arms.a_again.control_of",
            "parameter 'size' differs (a_again: (not set), a: 2)",
        ),
        (
            "{policy: x, size: 3, lr: 1, control_of: a}",
            "arms.a_again.lr",
            "parameter 'lr' differs (a_again: 1, a: (not set)) (and size)",
        ),
    ],
)
def test_each_bad_declaration_is_one_message_naming_its_field(copy, field, words):
    found = problems(aa_plan(copy=copy))
    assert len(found) == 1, found
    assert found[0][0] == field and words in found[0][1]


def test_control_copies_do_not_chain():
    text = aa_plan().replace(b"  a_again:", b"  a_third: {policy: x, size: 2, control_of: a_again}\n  a_again:")
    found = problems(text)
    assert found == [
        (
            "arms.a_third.control_of",
            "arm 'a_again' is itself a control copy (of 'a'); name the original arm: control copies do not chain",
        )
    ]


def test_a_control_copy_cannot_decide_the_claim():
    found = problems(aa_plan(contrast="b - a_again"))
    assert len(found) == 1 and found[0][0] == "gates[0].contrast"
    assert "compares arm 'a_again', a control copy of 'a'" in found[0][1]
    sensitivity = '  - {id: look, metric: loss, contrast: "a_again - a", method: t, confidence: 0.9, pass_if: "upper < 1", role: sensitivity}\n'
    assert problems(aa_plan(extra_gates=sensitivity)) == []  # a sensitivity gate may show it


def test_a_check_the_planned_units_cannot_compute_is_refused():
    """Two checks split the level: sign-flip at 0.95 needs 6 units and the plan has 5 (its gate, at 0.9,
    needs 5); one check alone fits."""
    other = '  - {id: other, metric: loss, contrast: "b - a", method: t, confidence: 0.9, pass_if: "upper < 0.6"}\n'
    found = problems(aa_plan(blocks=5, method="signflip", extra_gates=other))
    assert found == [
        (
            "arms.a_again.control_of",
            "the A/A check of 'a_again' on loss (as gate 'no_worse', the gates' level split over the plan's 2 A/A "
            "checks) cannot be computed: signflip at confidence 0.95 needs at least 6 pairing strata and has 5: "
            "with fewer blocks the smallest attainable one-sided p-value 2^-n exceeds 0.025, so the interval is "
            "unbounded and the gate could never pass",
        )
    ]
    assert problems(aa_plan(blocks=5, method="signflip")) == []


def test_the_program_never_sees_control_of():
    """collect.engine.runs.merged_params (what collect run and the command collector pass on) drops it."""
    from collect.engine.runs import merged_params
    from prereg.schema import Experiment

    settings: dict[str, str | bool | int | float] = {"policy": "x", "size": 2, CONTROL_OF: "a"}
    assert arm_params(settings) == {"policy": "x", "size": 2}
    plan = parse_plan(aa_plan()).plan
    plan = plan.model_copy(update={"experiment": Experiment(collector="command", params={"steps": 5})})

    class Stub:
        PLAN_METRICS = False
        FAILURES = False
        name = "stub"

    copy, original = (merged_params(plan, Stub, {"block": 1}, arm) for arm in ("a_again", "a"))  # type: ignore[arg-type]
    assert copy == original == {"steps": 5, "policy": "x", "size": 2}


@pytest.mark.subprocess(quick=True)
def test_prereg_freeze_refuses_a_bad_pair_exit_2(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(aa_plan(copy="{policy: z, size: 2, control_of: a}"))
    proc = run("prereg", "freeze", str(plan))
    assert proc.returncode == 2 and not (tmp_path / "plan.lock.json").exists()
    out = " ".join((proc.stderr + proc.stdout).split())
    assert "arms.a_again.policy" in out and "parameter 'policy' differs (a_again: 'z', a: 'x')" in out
    assert "Traceback" not in out
