"""The words of a monitored study's estimates after a stop (``reports.words.monitoring``): repeated
intervals, the ordering p-value, the median-unbiased estimate and final interval, and their meaning,
shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations

import io

from rich.console import Console

from gates.artifact_monitoring import MonitoringResult
from reports.terminal.evaluation import render_evaluation
from reports.words import monitoring as mt
from tests.helpers.evaluations import supported_evaluation
from tests.helpers.monitoring import stopped_monitoring


def test_after_stop_lines_say_every_number_and_what_they_mean() -> None:
    m = stopped_monitoring()
    lines = mt.after_stop_lines(m)
    assert lines[0] == (
        "gate sooner repeated confidence intervals: look 1 at 99.998%: [0.7, 1.2]; look 2 at 95.47%: [0.81, 0.95]"
    )
    assert lines[1] == (
        "gate sooner after the stop at look 2: stage-wise ordering p-value 0.0236 against the rule's threshold 1; median-unbiased "
        "estimate 0.9269 (the look's own 0.8824); 90% final interval [0.8772, 0.986]; the decision is the "
        "boundaries'"
    )
    assert lines[-1].startswith("Repeated confidence intervals hold at every look at once")
    assert mt.after_stop_lines(m, intervals=False)[0].startswith("gate sooner after the stop at look 2")


def test_gate_lines_carry_them_before_the_look_ledger_head() -> None:
    m = stopped_monitoring()
    lines = mt.gate_lines(m)
    assert lines[0].startswith("gate sooner (t): one-sided alpha 0.05")
    assert any("median-unbiased estimate 0.9269" in line for line in lines)
    assert lines[-1].startswith("look ledger head with this look (look record 2)")
    assert not any("median-unbiased" in line for line in mt.gate_lines(m, estimates=False))


def test_interval_rows_and_a_gate_without_an_ordering() -> None:
    m = stopped_monitoring()
    assert mt.interval_rows(m) == [
        ["sooner", "1", "4", "99.998%", "0.92", "[0.7, 1.2]", "look ledger"],
        ["sooner", "2", "8", "95.47%", "0.8824", "[0.81, 0.95]", "this evaluation"],
    ]
    gate = m.gates[0].model_copy(update={"after_stop": None, "after_stop_note": "method signflip spends ..."})
    lines = mt.after_stop_lines(m.model_copy(update={"gates": [gate]}), intervals=False)
    assert lines[0] == "gate sooner after the stop: no ordering estimates: method signflip spends ..."
    empty = m.model_copy(
        update={"gates": [m.gates[0].model_copy(update={"repeated_intervals": [], "after_stop": None})]}
    )
    assert mt.after_stop_lines(empty) == []  # nothing to say: no note of meaning either


def test_the_terminal_shows_them() -> None:
    ev = supported_evaluation().model_copy(update={"monitoring": stopped_monitoring()})
    buf = io.StringIO()
    Console(file=buf, width=100, color_system=None).print(render_evaluation(ev))
    text = " ".join(buf.getvalue().split())
    assert "stage-wise ordering p-value 0.0236" in text and "90% final interval [0.8772, 0.986]" in text
    assert "repeated confidence intervals: look 1 at 99.998%" in text
    assert isinstance(ev.monitoring, MonitoringResult)
