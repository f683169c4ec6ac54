"""A study's own report sections and figures, as plugins: what a study registers and which apply.

Groups ``prereg_toolkit.report_sections`` (:class:`StudyReport`: sections of ``reports show``, its
Markdown and ``reports html``) and ``prereg_toolkit.plot_views`` (:class:`PlotView`: options and figures
of ``reports plot``), loaded by :mod:`collect.plugins` like collectors and sensors. Reports print the
sections of every installed study report whose ``applies`` is true, in name order; none, none shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from collect.plugins import Registry

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from pathlib import Path

    from markupsafe import Markup
    from rich.console import RenderableType

    from gates.artifact import Evaluation

REPORT_SECTION_GROUP = "prereg_toolkit.report_sections"
PLOT_VIEW_GROUP = "prereg_toolkit.plot_views"


@runtime_checkable
class StudyReport(Protocol):
    """What a study registers under ``prereg_toolkit.report_sections`` (a class; built with no arguments).

    ``ev`` is the artifact already checked and cleaned for printing. Every method but ``applies`` is
    called only when ``applies(ev)`` is true.
    """

    def applies(self, ev: Evaluation) -> bool:
        """Whether this evaluation is one of the study's (its sections appear only then)."""
        ...

    def terminal(self, ev: Evaluation) -> list[RenderableType]:
        """``reports show``'s sections: rich renderables, user text wrapped in ``Text``."""
        ...

    def markdown(self, ev: Evaluation) -> list[str]:
        """``reports show --markdown``'s sections: Markdown lines, user text escaped."""
        ...

    def html_sections(self, ev: Evaluation) -> list[tuple[str, str, Markup]]:
        """``(anchor, heading, body)`` per section; ``body`` is safe HTML from an autoescaping template."""
        ...

    def html_run_sections(self, ev: Evaluation, runs_folder: Path) -> list[tuple[str, str, Markup]]:
        """Per-run sections drawn from ``runs_folder``; when non-empty they replace the generic
        recovery-timeline section."""
        ...

    def nav_words(self) -> Mapping[str, str]:
        """A short navigation word for each anchor ``html_sections`` and ``html_run_sections`` may return."""
        ...


@runtime_checkable
class PlotView(Protocol):
    """A study's figure for ``reports plot``, registered under ``prereg_toolkit.plot_views`` (built with no
    arguments). Its options are added to ``reports plot`` only when that command runs (``--help`` stays fast).
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the view's options to the ``reports plot`` parser (names no other view uses)."""
        ...

    def asked(self, args: argparse.Namespace) -> bool:
        """Whether ``args`` ask for this view (one of its options was given)."""
        ...

    def plot(self, args: argparse.Namespace, source: Path) -> int:
        """Draw it from ``source`` (the command's EVALUATION_JSON or RUNS), print the paths and the text
        equivalent, and return the exit code; bad input is an ``InputError`` (exit 2)."""
        ...


#: the installed study reports: ``name -> "module:Class"`` (assign a name to add one in-process)
REPORT_SECTIONS = Registry(REPORT_SECTION_GROUP, "reports.sections:StudyReport", "report section", protocol=True)


#: the installed plot views: ``name -> "module:Class"``
PLOT_VIEWS = Registry(PLOT_VIEW_GROUP, "reports.sections:PlotView", "plot view", protocol=True)


def installed_reports() -> list[StudyReport]:
    """One instance of every registered study report, in name order (``PluginError`` if one cannot load)."""
    return [REPORT_SECTIONS.load(name)() for name in REPORT_SECTIONS]


def study_reports(ev: Evaluation) -> list[StudyReport]:
    """The installed study reports whose ``applies(ev)`` is true, in name order."""
    return [report for report in installed_reports() if report.applies(ev)]


def installed_plot_views() -> list[PlotView]:
    """One instance of every registered plot view, in name order (``PluginError`` if one cannot load)."""
    return [PLOT_VIEWS.load(name)() for name in PLOT_VIEWS]
