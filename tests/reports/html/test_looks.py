"""The HTML looks section shows the estimates after a stop: the repeated-interval table and the
ordering p-value, median-unbiased estimate and final interval (``reports.html.looks``)."""

from __future__ import annotations

from reports.html.looks import looks_section
from tests.helpers.evaluations import supported_evaluation
from tests.helpers.monitoring import stopped_monitoring


def test_the_section_has_the_interval_table_and_the_estimates() -> None:
    ev = supported_evaluation().model_copy(update={"monitoring": stopped_monitoring()})
    page = str(looks_section(ev))
    assert "<h3>Estimates that account for the looks</h3>" in page
    table = page[page.index('class="looks look-intervals"') :]
    assert "<td>99.998%</td><td>0.92</td><td>[0.7, 1.2]</td><td>look ledger</td>" in table
    assert (
        "stage-wise ordering p-value 0.0236 against the rule&#39;s threshold 1; median-unbiased estimate 0.9269" in page
    )
    assert "Repeated confidence intervals hold at every look at once" in page
    assert page.count("repeated confidence intervals:") == 0  # said once, by the table


def test_a_look_without_estimates_has_no_estimates_heading() -> None:
    m = stopped_monitoring()
    bare = m.model_copy(
        update={"gates": [m.gates[0].model_copy(update={"repeated_intervals": [], "after_stop": None})]}
    )
    page = str(looks_section(supported_evaluation().model_copy(update={"monitoring": bare})))
    assert "Estimates that account for the looks" not in page
