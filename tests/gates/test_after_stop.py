"""A monitored study's estimates after it stops (``gates.after_stop``, wired by ``gates.looks``):
repeated intervals at every look, the stage-wise ordering p-value, the median-unbiased estimate and
the final interval in the artifact, the look ledger and the reports; the decision untouched."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special

import gates
from collect.ledger.looks import LookRecord, read_looks
from estimators.after_stop import after_stop
from gates.after_stop import after_stop_estimate
from gates.artifact import Evaluation
from gates.artifact_monitoring import GateLooks, LookEntry, MonitoringResult
from gates.looks import settle
from tests.helpers.looks import frozen, plan_text, run_strata
from tests.helpers.monitoring import stopped_monitoring


def _evaluate(tmp_path, counts, **plan):
    lock = frozen(tmp_path, plan_text(**plan))
    runs = tmp_path / "runs"
    out = []
    for count in counts:
        run_strata(lock, runs, count)
        out.append(gates.evaluate(lock, runs, out=runs / "evaluation.json", force=True))
    return lock, runs, out


def test_a_stop_at_look_1_reports_the_looks_own_numbers(tmp_path):
    """Stopping at the first look: the ordering p-value is the gate's p-value, the median-unbiased
    estimate the look's estimate; the repeated interval is the look's interval; all in the JSON."""
    _, runs, (ev,) = _evaluate(tmp_path, [4], margin="1.1")
    m = ev.monitoring
    assert (ev.decision, m.look, m.action) == ("supported", 1, "stop_success")
    g, gate = m.gates[0], ev.gates[0]
    a = g.after_stop
    assert a is not None and g.after_stop_note is None
    assert (a.stop_look, a.stopped_early, a.null) == (1, True, 1.1)
    assert a.ordering_pvalue == pytest.approx(gate.pvalue, rel=1e-9)
    assert a.median_unbiased == pytest.approx(gate.estimate, rel=1e-12) == a.naive_estimate
    assert a.final_lower < a.median_unbiased < a.final_upper < 1.1  # a rejection: excludes the threshold
    assert [(r.look, r.lower, r.upper, r.source) for r in g.repeated_intervals] == [
        (1, gate.lower, gate.upper, "this evaluation")
    ]
    data = json.loads((runs / "evaluation.json").read_text())["monitoring"]
    assert data["gates"][0]["after_stop"]["median_unbiased"] == pytest.approx(a.median_unbiased)
    assert data["gates"][0]["repeated_intervals"][0]["look"] == 1 and "Jennison" in data["estimates_note"]
    (record,) = read_looks(runs).records
    assert record.interval == {"sooner": [gate.estimate, gate.lower, gate.upper]}


def test_a_stop_at_look_2_corrects_the_estimate_as_the_estimator_does(tmp_path):
    """The artifact's numbers are ``estimators.after_stop`` on the gate's log contrasts, the look
    levels' z bounds and ``Phi^-1(1 - p)``; the estimate moves toward the threshold; look 1's
    repeated interval comes from the look ledger."""
    _, runs, (first, ev) = _evaluate(tmp_path, [4, 8])
    m = ev.monitoring
    assert (ev.decision, m.look, m.action) == ("supported", 2, "stop_success")
    g, gate = m.gates[0], ev.gates[0]
    logs = np.log([row.contrasts["sooner"] for row in ev.blocks])
    se = logs.std(ddof=1) / math.sqrt(logs.size)
    ref = after_stop(
        [b.fraction for b in g.looks],
        [float(b.z_bound) for b in g.looks],
        g.alpha,
        2,
        float(-special.ndtri(gate.pvalue)),
        float(logs.mean()),
        se,
        null=0.0,
        upper=False,
    )
    a = g.after_stop
    assert a.ordering_pvalue == pytest.approx(ref.ordering_pvalue, rel=1e-12)
    assert [a.median_unbiased, a.final_lower, a.final_upper] == pytest.approx(
        [math.exp(ref.median_unbiased), math.exp(ref.final_lower), math.exp(ref.final_upper)], rel=1e-12
    )
    assert gate.estimate < a.median_unbiased < 1.0  # pulled toward the threshold, still below it
    assert a.final_upper < 1.0 and a.ordering_pvalue < g.alpha
    looks = [(r.look, r.lower, r.upper, r.source) for r in g.repeated_intervals]
    assert looks == [
        (1, first.gates[0].lower, first.gates[0].upper, "look ledger"),
        (2, gate.lower, gate.upper, "this evaluation"),
    ]
    assert first.monitoring.gates[0].after_stop is None  # look 1 continued: nothing to correct
    assert len(first.monitoring.gates[0].repeated_intervals) == 1
    assert Evaluation.model_validate_json((runs / "evaluation.json").read_text()).monitoring == m


def test_the_final_look_reports_them_and_the_decision_is_the_boundaries(tmp_path):
    _, _, evs = _evaluate(tmp_path, [4, 8, 12], margin="0.85")
    ev = evs[-1]
    m, gate = ev.monitoring, ev.gates[0]
    assert (ev.decision, m.action) == ("not_supported", "final")
    a = m.gates[0].after_stop
    assert a is not None and (a.stop_look, a.stopped_early) == (3, False)
    assert a.ordering_pvalue > m.gates[0].alpha and a.final_lower < 0.85 < a.final_upper
    assert [r.look for r in m.gates[0].repeated_intervals] == [1, 2, 3]
    assert gate.verdict == "fail"


def test_the_reports_show_them(tmp_path, capsys):
    from prereg_toolkit_cli.gates import main
    from reports.html.looks import looks_section
    from reports.markdown.evaluation import evaluation_markdown

    lock, runs, (ev,) = _evaluate(tmp_path, [4], margin="1.1")
    page = looks_section(ev)
    assert 'class="looks look-intervals"' in page and "median-unbiased estimate" in page
    assert page.count("repeated confidence intervals:") == 0  # the table says it in the page
    text = evaluation_markdown(ev)
    assert "gate sooner repeated confidence intervals: look 1 at" in text
    assert "stage-wise ordering p-value" in text
    main(["evaluate", str(lock.path), str(runs), "--force"])
    out = " ".join(capsys.readouterr().out.split())
    assert "median-unbiased estimate" in out and "repeated confidence intervals" in out


def _gate(method="signflip", quantity="upper", threshold=1.0):
    rule = SimpleNamespace(quantity=quantity, threshold=threshold)
    return SimpleNamespace(method=method, pass_if=rule)


def _levels(kind):
    return [SimpleNamespace(kind=kind, fraction=f, z_bound=2.0, cumulative_alpha=0.05) for f in (0.5, 1.0)]


@pytest.mark.parametrize(
    ("gate", "kind", "words"),
    [
        (_gate("signflip"), "increment", "alpha increments (a union bound)"),
        (_gate("betting"), "anytime", "an anytime-valid p-value"),
        (_gate("t", "within", None), "boundary", "needs a one-sided rule"),
    ],
)
def test_gates_without_an_ordering_say_why(gate, kind, words):
    outcome = SimpleNamespace(refused_by=[], result=None, pvalue=0.01, scale="difference")
    estimate, note = after_stop_estimate(gate, _levels(kind), 2, outcome)
    assert estimate is None and note is not None and words in note


def test_a_stop_the_decision_refuses_drops_the_estimates():
    m = stopped_monitoring()
    settled = settle(m, "refused")
    assert m.gates[0].after_stop is not None
    assert settled is not None and settled.action == "continue" and settled.gates[0].after_stop is None


def test_records_and_artifacts_without_them_still_load():
    record = {
        "seq": 1,
        "evaluated_at": "2026-01-01T00:00:00Z",
        "prereg_sha256": "a" * 64,
        "ledger_head": "b" * 64,
        "ledger_records": 2,
        "point_blocks": 1,
        "blocks": {"g": 1},
        "status": "decision",
        "decision": "not_supported",
        "action": "continue",
        "look": 1,
    }
    assert LookRecord.model_validate(record).interval is None
    entry = LookEntry(
        seq=1,
        evaluated_at="t",
        look=1,
        status="decision",
        point_blocks=1,
        decision="supported",
        action="final",
        ledger_records=1,
    )
    assert entry.intervals == {}
    assert GateLooks(id="g", method="t", alpha=0.05, kind="boundary", looks=[]).repeated_intervals == []


def test_an_artifact_without_them_compares_equal_to_the_section_without_them(tmp_path):
    """What ``gates verify`` needs for an artifact made before the estimates: its monitoring section
    reads back (defaults) as the fresh section ``without_estimates``."""
    _, runs, (_, ev) = _evaluate(tmp_path, [4, 8])
    data = json.loads((runs / "evaluation.json").read_text())
    section = data["monitoring"]
    del section["estimates_note"]
    for g in section["gates"]:
        for key in ("repeated_intervals", "after_stop", "after_stop_note"):
            g.pop(key, None)
    for entry in section["history"]:
        entry.pop("intervals", None)
    old = MonitoringResult.model_validate(section)
    assert old == ev.monitoring.without_estimates() != ev.monitoring
