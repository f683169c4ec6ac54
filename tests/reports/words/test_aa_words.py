"""The A/A check in the reports (reports.words.aa): the same rows and rule in the terminal, Markdown and
HTML, the refusal explained in the decision's words, and nothing at all for a plan without A/A pairs."""

from __future__ import annotations

import io

from rich.console import Console

from gates.artifact import Evaluation
from gates.artifact_aa import AAPairResult
from gates.refusal import Refusal
from reports.html.aa import aa_section
from reports.markdown.evaluation import evaluation_markdown
from reports.terminal.evaluation import render_evaluation
from reports.words.aa import aa_row, aa_rows, aa_rule
from reports.words.decision import decision_sentence
from tests.helpers.evaluations import supported_evaluation
from tests.helpers.markdown import tables


def pair(**overrides: object) -> AAPairResult:
    """A difference check that shows no difference unless overridden."""
    fields: dict[str, object] = dict(
        control="restart_again",
        original="restart",
        contrast="restart_again - restart",
        metric="final_nll",
        unit="nats",
        scale="difference",
        method="t",
        gates=["learning_noninferior"],
        gate_confidence=0.9,
        confidence=0.9,
        checks=1,
        verdict="same",
        estimate=-9.5e-05,
        lower=-0.000426,
        upper=0.000235,
        null=0.0,
        pvalue=0.6,
        n_pairs=8,
    )
    fields.update(overrides)
    return AAPairResult.model_validate(fields)


DIFFERS = pair(verdict="differs", estimate=0.012, lower=0.004, upper=0.02, pvalue=0.012)
REASON = "A/A pair restart_again (a control copy of restart) differs from it: ... excludes 0"


def with_pairs(*pairs: AAPairResult, refused: bool = False) -> Evaluation:
    ev = supported_evaluation()
    update: dict[str, object] = {"aa_pairs": list(pairs)}
    if refused:
        update |= {"decision": "refused", "decision_refused_by": [Refusal(kind="aa_difference", reason=REASON)]}
    return ev.model_copy(update=update)


def terminal(ev: Evaluation) -> str:
    console = Console(width=80, file=io.StringIO(), no_color=True, highlight=False)
    console.print(render_evaluation(ev))
    return " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]


def test_rows_say_pair_metric_interval_and_verdict():
    row = aa_row(pair())
    assert row.word == "NO DIFFERENCE" and row.metric == "final_nll (nats)"
    assert row.pair == "restart_again - restart (restart_again is a control copy of restart)"
    assert row.interval == "-9.5e-05 nats, 90% CI [-0.000426, 0.000235] nats"
    assert row.test == "t, n = 8 units; contains 0; two-sided p = 0.6"
    ratio = aa_row(
        pair(scale="ratio", contrast="a / b", estimate=1.05, lower=1.00001, upper=1.1, null=1.0, verdict="differs")
    )
    assert (
        ratio.word == "DIFFERS" and ratio.interval == "1.05x, 90% CI [1.00001x, 1.1x]"
    )  # an end never prints as the null
    assert "excludes 1" in ratio.test
    unchecked = aa_row(
        pair(verdict="unchecked", estimate=None, lower=None, upper=None, reason="only 1 complete strata")
    )
    assert unchecked.word == "UNCHECKED" and unchecked.interval == "not computed: only 1 complete strata"


def test_the_rule_states_the_level_and_the_split():
    assert "refused at most 10% of the time" in aa_rule(with_pairs(pair()))
    two = with_pairs(pair(checks=2, confidence=0.95), pair(checks=2, confidence=0.95, metric="energy"))
    assert "2 checks, each at 95% (Bonferroni" in aa_rule(two)


def test_no_pairs_no_section_anywhere():
    ev = supported_evaluation()
    assert aa_rows(ev) == [] and aa_rule(ev) == "" and aa_section(ev) is None
    assert "A/A" not in terminal(ev) and "A/A" not in evaluation_markdown(ev)


def test_terminal_markdown_and_html_show_the_check():
    ev = with_pairs(DIFFERS, refused=True)
    text = terminal(ev)
    assert "A/A check (the pipeline's own false alarms)" in text and "DIFFERS" in text
    assert "0.012 nats," in text and "[0.004," in text and "excludes 0" in text  # cells wrap in 80 columns
    md = evaluation_markdown(ev)
    head, rows = tables(md)["A/A check (the pipeline's own false alarms)"]
    assert head == ["verdict", "A/A pair", "interval", "test"]
    assert rows[0][0] == "**DIFFERS**" and "restart\\_again - restart" in rows[0][1]
    html = str(aa_section(ev))
    assert '<span class="badge v-fail">DIFFERS</span>' in html and "90% CI [0.004, 0.02] nats" in html


def test_the_decision_explains_an_aa_refusal():
    word, rest = decision_sentence(with_pairs(DIFFERS, refused=True))
    assert word.startswith("REFUSED") and REASON in rest
    assert "the measurement pipeline itself makes differences" in rest
