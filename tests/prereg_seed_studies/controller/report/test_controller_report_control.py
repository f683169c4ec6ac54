"""The controller report shows how the ranking held its error over cells: the control and each cell's
adjusted level and interval beside the unadjusted ones, the same words in terminal, Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from markupsafe import escape

from gates.artifact import Evaluation, read_evaluation, sealed, write_evaluation
from prereg_seed_studies.controller.report import words as ct
from reports.html.page import html_report
from reports.markdown.evaluation import evaluation_markdown
from reports.terminal.evaluation import render_evaluation
from tests.conftest import REPO
from tests.helpers.markdown import unescape

FIXTURE = REPO / "tests" / "reports" / "fixtures" / "controller-evaluation.json"


@pytest.fixture(scope="module")
def holm() -> Evaluation:
    """The fixture's ranking as Holm over its 12 cells would record it (levels and intervals set here)."""
    ev = read_evaluation(FIXTURE)
    cells = [
        c.model_copy(
            update={
                "error_control": "holm",
                "pvalue": 0.0256,
                "flip_pvalue": 1.0,
                "claims": 2,
                "cells_tested": 12,
                "pvalue_adjusted": 0.406,
                "adjusted_level": 0.1 / 11,
                "adjusted_confidence": 1 - 0.1 / 22,
                "adjusted_lower": 0.8538,
                "adjusted_upper": 1.465,
            }
        )
        for c in ev.ranking
    ]
    return ev.model_copy(update={"ranking": cells})


def test_old_artifacts_show_no_control_and_new_ones_show_it(holm: Evaluation) -> None:
    old = read_evaluation(FIXTURE)
    assert all(c.error_control is None for c in old.ranking) and ct.control_sentence(old) == ""
    assert "Holm" not in ct.sampling_text(old.ranking[0], old)
    text = ct.sampling_text(holm.ranking[0], holm)
    assert text.startswith(ct.sampling_text(old.ranking[0], old))  # the unadjusted interval first, as before
    assert "p 0.0256; Holm over 12 cells:" in text and "[0.8538x, 1.465x] at 99.55%, adjusted p 0.406" in text
    sentence = ct.control_sentence(holm)
    assert "held at 10% over the 12 tested cells by Holm's step-down" in sentence
    assert sentence in ct.ranking_intro(holm)


def test_the_three_outputs_carry_the_control(holm: Evaluation, tmp_path: Path) -> None:
    from rich.console import Console

    console = Console(width=2000, no_color=True, highlight=False, record=True, file=open("/dev/null", "w"))
    console.print(render_evaluation(holm))
    terminal = console.export_text()
    md = evaluation_markdown(holm)
    path = tmp_path / "evaluation.json"
    write_evaluation(path, sealed(holm))
    page, _ = html_report(path)
    sampling = ct.sampling_text(holm.ranking[0], holm)
    for out in (terminal, unescape(md)):
        assert sampling in out and ct.control_sentence(holm) in " ".join(out.split())
    assert escape(sampling) in page and escape(ct.control_sentence(holm)) in page


def test_per_cell_says_the_chance_grows_with_the_cells(holm: Evaluation) -> None:
    cells = [c.model_copy(update={"error_control": "per_cell", "pvalue_adjusted": None}) for c in holm.ranking]
    ev = holm.model_copy(update={"ranking": cells})
    assert "judged alone at 90%" in ct.control_sentence(ev) and "exceeds 10%" in ct.control_sentence(ev)
