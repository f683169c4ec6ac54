"""A gate whose units all show one contrast, rare-event samples, and small first looks: what a small sample
has not seen is never counted as a pass (in process: freeze, import and evaluate through the public APIs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collect.api import import_table
from gates.api import evaluate
from prereg.api import freeze
from prereg.errors import ToolkitError
from prereg.monitoring import run_order
from tests.helpers import write_csv
from tests.helpers.gates import gate_line, plan_text, rows_for

RESTARTS = ", range: [0, 20]"  # extra restarts per run: 0 to 20


def _evaluate(tmp_path: Path, text: bytes, contrasts: list[float], blocks: list[int] | None = None):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(text)
    lock = freeze(plan)
    rows = rows_for(contrasts, base=2.0)
    if blocks is not None:  # the blocks these contrasts belong to (a monitored plan's run order)
        for row in rows:
            row["block"] = blocks[row["block"] - 1]
    import_table(lock, write_csv(tmp_path / "runs.csv", rows), tmp_path / "runs")
    ev = evaluate(lock, tmp_path / "runs")
    return ev, {g.id: g for g in ev.gates}


def test_a_constant_sample_of_a_metric_not_declared_deterministic_is_unresolvable(tmp_path):
    ev, g = _evaluate(tmp_path, plan_text(6, gate_line("g", "t", "upper < 0.5")), [0.0] * 6)
    assert g["g"].verdict == "unresolvable" and ev.decision == "refused"
    note = " ".join(g["g"].notes)
    assert "not declared deterministic" in note and "'range'" in note and "1 in 6" in note


def test_a_deterministic_metric_may_be_vacuous(tmp_path):
    ev, g = _evaluate(
        tmp_path, plan_text(6, gate_line("g", "t", "upper < 0.5"), metric_extra=", deterministic: true"), [0.0] * 6
    )
    assert g["g"].verdict == "vacuous" and ev.decision == "supported" and "could not have failed" in ev.decision_reason


@pytest.mark.parametrize(
    ("n", "rule", "verdict"), [(6, "upper < 0.5", "fail"), (30, "upper < 0.5", "fail"), (30, "upper < 3", "pass")]
)
def test_with_a_range_a_constant_sample_is_judged_on_what_it_cannot_rule_out(tmp_path, n, rule, verdict):
    """30 zeros inside [-20, 20] bound the mean at 1.90 (90%): 'upper < 0.5' fails, 'upper < 3' passes with
    p = (17 / 20)^30 = 0.0076."""
    ev, g = _evaluate(tmp_path, plan_text(n, gate_line("g", "t", rule), metric_extra=RESTARTS), [0.0] * n)
    gate = g["g"]
    assert gate.verdict == verdict and gate.pvalue is not None
    assert gate.upper == pytest.approx(20 * (1 - 0.05 ** (1 / n)), rel=1e-9)
    if verdict == "pass":
        assert gate.pvalue == pytest.approx((17 / 20) ** 30, rel=1e-9)
    assert any("widest mean consistent" in note for note in gate.notes)


def test_rare_events_in_a_passing_gate_are_warned(tmp_path):
    """29 units at -2 s and one 20 s slower (a rare adverse stratum): the t gate passes, and says the mean
    rests on one unit."""
    d = [-2.0] * 29 + [20.0]
    ev, g = _evaluate(tmp_path, plan_text(30, gate_line("g", "t", "upper < 0")), d)
    assert g["g"].verdict == "pass"
    assert any(w.startswith("rare events: 29 of the 30 units") for w in g["g"].warnings), g["g"].warnings
    assert "WARNING" in ev.decision_reason and "gate g" in ev.decision_reason


def test_continuous_contrasts_raise_no_rare_event_warning(tmp_path):
    d = list(np.random.default_rng(3).normal(-1.0, 0.5, 20))
    ev, g = _evaluate(tmp_path, plan_text(20, gate_line("g", "t", "upper < 0")), d)
    assert not any(w.startswith("rare events") for w in g["g"].warnings)


MONITORING = "monitoring: {{looks: [{first}, 30], spending: pocock{reason}}}\n"


def _monitored(first: int, method: str = "t", reason: str = "", metric_extra: str = "") -> bytes:
    tail = MONITORING.format(first=first, reason=f", first_look_reason: {reason}" if reason else "")
    return plan_text(30, gate_line("g", method, "upper < 0"), metric_extra=metric_extra, tail=tail)


def test_a_first_look_too_small_for_the_skew_check_is_refused_for_a_mean_targeting_gate(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(_monitored(6))
    with pytest.raises(ToolkitError, match=r"first look of 6 units, fewer than the 15") as err:
        freeze(plan)
    assert "first_look_reason" in str(err.value) and "betting" in str(err.value)
    for text in (_monitored(6, reason="pilot contrasts were symmetric"), _monitored(15), _monitored(8, "wilcoxon")):
        plan.write_bytes(text)
        freeze(plan, tmp_path / "plan.lock.json").path.unlink()


def test_a_warned_pass_at_a_look_does_not_stop_the_study(tmp_path):
    """First look at 15 units: right-skewed contrasts that pass the t gate at Pocock's level carry the skew
    warning, so the look continues (not supported) instead of stopping for success."""
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(_monitored(15))
    from prereg.api import load_lock  # the frozen order of the strata

    order = run_order(load_lock(freeze(plan)).plan)
    blocks = [int(s["block"]) for s in order[:15]]
    plan.with_name("plan.lock.json").unlink()
    d = [-4.0] * 14 + [10.0]  # mean -3.07, strongly right-skewed
    ev, g = _evaluate(tmp_path, _monitored(15), d, blocks)
    assert g["g"].verdict == "pass" and g["g"].warnings
    assert ev.monitoring is not None and ev.monitoring.status == "decision" and ev.monitoring.look == 1
    assert ev.monitoring.action == "continue" and ev.decision == "not_supported"
    assert "a warned pass does not stop the study" in ev.decision_reason
    from gates.consistency import consistency_problems  # what reports show checks before it shows anything

    assert consistency_problems(ev) == []


def test_the_caveat_prefixes_gates_read_open_the_warnings_the_estimators_write():
    """gates.caveats names the warnings by how they open (standard library only); they must stay the texts
    estimators.feasibility and estimators.betting write."""
    from estimators import Rule
    from estimators.betting import CROSSED_WARNING
    from estimators.feasibility import contrast_warnings
    from gates.caveats import CROSSED_NOTE, RARE_NOTE, SKEW_NOTE

    upper = Rule("upper", "<", 0.0)
    rare = contrast_warnings(np.array([-2.0] * 29 + [20.0]), "t", "difference", upper)
    skewed = contrast_warnings(np.random.default_rng(2).lognormal(0.0, 1.0, 20), "t", "difference", upper)
    assert any(w.startswith(RARE_NOTE) for w in rare) and any(w.startswith(SKEW_NOTE) for w in skewed)
    assert CROSSED_WARNING.startswith(CROSSED_NOTE)
