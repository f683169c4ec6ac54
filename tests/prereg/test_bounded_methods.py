"""``method: betting`` at freeze: it needs the metric's range (positive for a ratio), cannot judge a
signal-backed metric, and a comparator's ranking cannot use it; then it runs end to end."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import estimators as E
from collect.api import import_table
from gates.api import evaluate
from prereg.api import freeze
from prereg.errors import ToolkitError
from tests.helpers import write_csv
from tests.helpers.gates import gate_line, plan_text, rows_for


def _freeze(tmp_path: Path, text: bytes):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(text)
    return freeze(plan)


@pytest.mark.parametrize(
    ("contrast", "extra", "says"),
    [("a - b", "", "needs the metric's 'range'"), ("a / b", ", range: [0, 20]", "needs a positive range")],
)
def test_betting_without_a_usable_range_is_refused_at_freeze(tmp_path, contrast, extra, says):
    text = plan_text(
        10,
        gate_line("g", "betting", "upper < 1" if "/" in contrast else "upper < 0", contrast=contrast),
        metric_extra=extra,
    )
    with pytest.raises(ToolkitError, match=says):
        _freeze(tmp_path, text)


def test_betting_on_a_signal_backed_metric_is_refused_at_freeze(tmp_path):
    text = plan_text(10, gate_line("g", "betting", "upper < 0"), signal=True, metric_extra=", range: [0, 20]")
    with pytest.raises(ToolkitError, match="no measurement-resolution bound"):
        _freeze(tmp_path, text)


def test_a_betting_gate_decides_from_the_installed_pipeline_as_the_estimator_does(tmp_path):
    """A clear effect inside a narrow range passes; the gate's interval and p-value are the estimator's on
    the contrast range [-20, 20] the metric range [0, 20] gives a difference, tuned to the plan's 30 units."""
    rng = np.random.default_rng(5)
    d = list(np.clip(-6.0 + rng.normal(size=30), -20, 20))
    lock = _freeze(tmp_path, plan_text(30, gate_line("g", "betting", "upper < 0"), metric_extra=", range: [0, 20]"))
    rows = rows_for(d, base=10.0)
    import_table(lock, write_csv(tmp_path / "runs.csv", rows), tmp_path / "runs")
    ev = evaluate(lock, tmp_path / "runs")
    gate = ev.gates[0]
    in_order = np.array([d[b - 1] for b in _hash_order(30)])  # the order the gate reads its units in
    want = E.decide_rule(E.Rule("upper", "<", 0.0), in_order, 0.9, "betting", bounds=(-20.0, 20.0), horizon=30)
    assert gate.verdict == ("pass" if want.holds else "fail") and gate.pvalue == pytest.approx(want.pvalue, rel=1e-12)
    assert gate.upper == pytest.approx(want.result.upper, rel=1e-9) and gate.method == "betting"
    assert gate.verdict == "pass" and not any("symmetric" in n for n in gate.notes)
    assert ev.decision == "supported" and "WARNING" not in ev.decision_reason


def _hash_order(blocks: int) -> list[int]:
    """The plan's blocks (1..n, factor ``block``) in the order a betting gate of an unmonitored plan reads
    them: by the SHA-256 of each stratum's canonical form (gates.unit_order)."""
    from prereg.jsoncodec import canonical_bytes

    return sorted(
        range(1, blocks + 1),
        key=lambda b: hashlib.sha256(canonical_bytes({"seed": 0, "stratum": {"block": b}})).hexdigest(),
    )


def test_units_that_drift_over_the_run_order_refuse_a_betting_gate(tmp_path):
    """The first half of the 40 units (in the order read) at +10, the second at -10: no single mean fits
    both halves, the betting test rejects every mean at 80%, and the gate is refused, never passed."""
    order = _hash_order(40)
    d = [0.0] * 40
    for k, b in enumerate(order):
        d[b - 1] = 10.0 if k < 20 else -10.0
    text = plan_text(40, gate_line("g", "betting", "upper < 0", conf=0.8), metric_extra=", range: [0, 10]")
    lock = _freeze(tmp_path, text)
    import_table(lock, write_csv(tmp_path / "runs.csv", _rows_in_range(d)), tmp_path / "runs")
    ev = evaluate(lock, tmp_path / "runs")
    gate = ev.gates[0]
    assert gate.verdict == "refused" and ev.decision == "refused"
    assert any("rejects every mean" in r.reason for r in gate.refused_by)
    from gates.consistency import consistency_problems

    assert consistency_problems(ev) == []


def _rows_in_range(contrasts: list[float]) -> list[dict]:
    """Rows of arms a, b in [0, 10] whose a - b is each contrast (+10: a = 10, b = 0; -10: the reverse)."""
    rows = []
    for i, c in enumerate(contrasts):
        a, b = (10.0, 0.0) if c > 0 else (0.0, 10.0)
        rows += [
            {"arm": "a", "block": i + 1, "replicate": 0, "loss": a},
            {"arm": "b", "block": i + 1, "replicate": 0, "loss": b},
        ]
    return rows


def test_compare_takes_a_metric_range_for_betting():
    data = {
        "b": list(range(12)) * 2,
        "arm": ["x"] * 12 + ["y"] * 12,
        "v": [5.0 - 3.0 + 0.1 * i for i in range(12)] + [5.0] * 12,
    }
    res = E.compare(
        data,
        metric="v",
        arm="arm",
        block="b",
        contrast="x - y",
        rule="upper < 0",
        method="betting",
        metric_range=(0.0, 10.0),
    )
    assert res.verdict in ("pass", "fail") and res.pvalue is not None and res.result is not None
    assert res.result.bounds == (-10.0, 10.0)
    with pytest.raises(ValueError, match="needs the contrasts' range"):
        E.compare(data, metric="v", arm="arm", block="b", contrast="x - y", rule="upper < 0", method="betting")


def test_a_betting_gate_uses_its_whole_alpha_at_every_look_and_needs_no_first_look_reason(tmp_path):
    """Its p-value is anytime-valid, so a first look of 10 units is no risk and no alpha is spent: a clear effect
    stops the study for success at look 1."""
    from prereg.api import load_lock
    from prereg.monitoring import look_levels, run_order

    tail = "monitoring: {looks: [10, 30], spending: obrien_fleming}\n"
    text = plan_text(30, gate_line("g", "betting", "upper < 0"), metric_extra=", range: [0, 20]", tail=tail)
    lock = load_lock(_freeze(tmp_path, text))
    levels = look_levels(lock.plan, lock.plan.gates[0])
    assert [lv.kind for lv in levels] == ["anytime", "anytime"]
    assert [lv.nominal_alpha for lv in levels] == [pytest.approx(0.05)] * 2
    assert [lv.cumulative_alpha for lv in levels] == [pytest.approx(0.05)] * 2
    blocks = [int(s["block"]) for s in run_order(lock.plan)[:10]]
    rows = rows_for([-15.0] * 10, base=17.0)
    for row in rows:
        row["block"] = blocks[row["block"] - 1]
    import_table(lock, write_csv(tmp_path / "runs.csv", rows), tmp_path / "runs")
    ev = evaluate(lock, tmp_path / "runs")
    assert ev.monitoring is not None and ev.monitoring.look == 1 and ev.monitoring.action == "stop_success"
    assert ev.decision == "supported" and ev.gates[0].verdict == "pass"
    assert ev.monitoring.gates[0].kind == "anytime"


def test_a_betting_look_that_could_never_pass_is_refused_at_freeze(tmp_path):
    """At most a factor 1 + c = 1.5 per unit when the threshold sits mid-range (c = 1/2): 6 units reach 11.4,
    short of 1 / alpha = 20, whatever the data."""
    tail = "monitoring: {looks: [6, 30], spending: obrien_fleming}\n"
    text = plan_text(30, gate_line("g", "betting", "upper < 0"), metric_extra=", range: [0, 20]", tail=tail)
    with pytest.raises(ToolkitError, match=r"could never pass at look 1 \(6 units\)"):
        _freeze(tmp_path, text)
