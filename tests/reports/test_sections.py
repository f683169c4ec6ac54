"""A study's report sections and plot views as plugins (reports.sections), registered in-process.

A toy study report shows up in the terminal report, the Markdown and the HTML page of an evaluation it
applies to, and nowhere for one it does not; a toy plot view adds its option to ``reports plot`` and is
dispatched to by it; a plugin of the wrong kind is one clear message (exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markupsafe import Markup, escape

from collect.plugins import PluginError
from gates.artifact import Evaluation, sealed, write_evaluation
from prereg_toolkit_cli.reports import main as reports_main
from reports.html.page import html_report
from reports.markdown.evaluation import evaluation_markdown
from reports.sections import PLOT_VIEWS, REPORT_SECTIONS, StudyReport, installed_reports, study_reports
from reports.terminal.evaluation import render_evaluation
from tests.helpers.evaluations import realistic_evaluation

TOY_STUDY = "toy-study"
HEADING = "Toy study: what only this study reports"
HOSTILE = "<script>alert(1)</script> & co"


class ToyReport:
    """Applies to evaluations of the study ``toy-study`` only."""

    def applies(self, ev: Evaluation) -> bool:
        return ev.study == TOY_STUDY

    def terminal(self, ev: Evaluation) -> list[Any]:
        from rich.text import Text

        return [Text(HEADING), Text(f"toy line for {ev.study}")]

    def markdown(self, ev: Evaluation) -> list[str]:
        return ["", f"## {HEADING}", "", f"toy line for {ev.study}"]

    def html_sections(self, ev: Evaluation) -> list[tuple[str, str, Markup]]:
        body = Markup('<p class="toy">toy line for {}: {}</p>').format(ev.study, HOSTILE)
        return [("toy", HEADING, body)]

    def html_run_sections(self, ev: Evaluation, runs_folder: Path) -> list[tuple[str, str, Markup]]:
        return []

    def nav_words(self) -> dict[str, str]:
        return {"toy": "Toy"}


class ToyView:
    """``reports plot EVALUATION_JSON --toy-figure``: prints what it would draw."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--toy-figure", action="store_true", help="draw the toy study's figure")

    def asked(self, args: argparse.Namespace) -> bool:
        return bool(args.toy_figure)

    def plot(self, args: argparse.Namespace, source: Path) -> int:
        print(f"toy figure of {source.name}")
        return 0


class NotAReport:
    """Has none of a study report's methods."""


@pytest.fixture
def toy() -> Iterator[None]:
    REPORT_SECTIONS["toy"] = f"{__name__}:ToyReport"
    PLOT_VIEWS["toy"] = f"{__name__}:ToyView"
    try:
        yield
    finally:
        del REPORT_SECTIONS["toy"], PLOT_VIEWS["toy"]


def toy_evaluation(study: str) -> Evaluation:
    return realistic_evaluation().model_copy(update={"study": study})


def terminal(ev: Evaluation) -> str:
    from rich.console import Console

    console = Console(width=200, no_color=True, highlight=False, record=True, file=open("/dev/null", "w"))
    console.print(render_evaluation(ev))
    return console.export_text()


def page(ev: Evaluation, tmp_path: Path) -> str:
    path = tmp_path / "evaluation.json"
    write_evaluation(path, sealed(ev))
    return html_report(path)[0]


def test_the_toy_report_is_found_and_applies_only_to_its_study(toy):
    assert any(isinstance(r, ToyReport) for r in installed_reports())
    assert isinstance(ToyReport(), StudyReport)
    assert [type(r) for r in study_reports(toy_evaluation(TOY_STUDY)) if isinstance(r, ToyReport)] == [ToyReport]
    assert not any(isinstance(r, ToyReport) for r in study_reports(toy_evaluation("another-study")))


def test_its_sections_show_in_terminal_markdown_and_html(toy, tmp_path):
    ev = toy_evaluation(TOY_STUDY)
    text = terminal(ev)
    assert HEADING in text and f"toy line for {TOY_STUDY}" in text
    md = evaluation_markdown(ev)
    assert f"\n## {HEADING}\n\ntoy line for {TOY_STUDY}\n" in md
    html = page(ev, tmp_path)
    assert '<section id="toy"' in html and 'href="#toy"' in html and str(escape(HEADING)) in html
    assert f'<p class="toy">toy line for {TOY_STUDY}: {escape(HOSTILE)}</p>' in html
    assert "<script>alert" not in html


def test_an_evaluation_no_plugin_applies_to_shows_no_study_section(toy, tmp_path):
    ev = toy_evaluation("another-study")
    assert study_reports(ev) == []  # neither the toy nor any installed study (the controller one included)
    assert HEADING not in terminal(ev) and HEADING not in evaluation_markdown(ev)
    html = page(ev, tmp_path)
    assert HEADING not in html and 'id="toy"' not in html


def test_a_plot_view_adds_its_option_and_is_dispatched_to(toy, tmp_path, capsys):
    path = tmp_path / "evaluation.json"
    write_evaluation(path, sealed(toy_evaluation(TOY_STUDY)))
    assert reports_main(["plot", str(path), "--toy-figure"]) == 0
    assert capsys.readouterr().out == "toy figure of evaluation.json\n"
    with pytest.raises(SystemExit) as stop:
        reports_main(["plot", "--help"])
    assert stop.value.code == 0 and "draw the toy study's figure" in capsys.readouterr().out


def test_a_plugin_of_the_wrong_kind_is_one_clear_message(tmp_path, capsys):
    REPORT_SECTIONS["broken"] = f"{__name__}:NotAReport"
    try:
        with pytest.raises(PluginError, match=r"does not implement reports\.sections\.StudyReport"):
            installed_reports()
    finally:
        del REPORT_SECTIONS["broken"]
    PLOT_VIEWS["broken"] = f"{__name__}:NotAReport"
    try:
        assert reports_main(["plot", str(tmp_path), "--run", "x"]) == 2
    finally:
        del PLOT_VIEWS["broken"]
    err = capsys.readouterr().err
    assert err.startswith("reports: plot view 'broken': ") and "does not implement reports.sections.PlotView" in err
