"""The reviewer's report of a controller study: comparator choice, per-family ledger, ranking, assumptions.

The fixture is a real artifact (the ``sim.controller`` twin of examples/controller.yaml, 240 runs),
kept unedited so its seal verifies; variants (a refused comparator, a refused family, a flip cell,
hostile strings) are built here with ``model_copy``. The three outputs (terminal, Markdown, HTML)
must say the same words, from the controller study's report plugin (prereg_seed_studies.controller.report);
an artifact without the controller fields shows none of its sections.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from gates.artifact import Evaluation, read_evaluation, seal_status, sealed, write_evaluation
from gates.refusal import Refusal, invalidator_fired
from prereg_seed_studies.controller.report import words as ct
from reports.html.page import html_report
from reports.markdown.evaluation import evaluation_markdown
from reports.terminal.evaluation import render_evaluation
from tests.conftest import REPO
from tests.helpers import run
from tests.helpers.evaluations import realistic_evaluation
from tests.helpers.markdown import tables, unescape

FIXTURE = REPO / "tests" / "reports" / "fixtures" / "controller-evaluation.json"
HEADINGS = (
    "Comparator choice (calibration runs only)",
    "Per-family ledger (each held-out family judged alone)",
    "Ranking (challenger vs comparator per family and region)",
    "Assumptions, uncertainty and missing evidence",
)
RANKING_HEAD = ["family", "region", "ranking", "sampling interval", "infrastructure spread (separate)", "reason"]


@pytest.fixture(scope="module")
def ev() -> Evaluation:
    return read_evaluation(FIXTURE)


def terminal(ev: Evaluation, width: int = 2000) -> str:
    from rich.console import Console

    console = Console(width=width, no_color=True, highlight=False, record=True, file=open("/dev/null", "w"))
    console.print(render_evaluation(ev))
    return console.export_text()


def flat(text: str) -> str:
    return " ".join(text.split())


class Tables(HTMLParser):
    """Rows of every table with an id: id -> list of (row attributes, [cell text])."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[tuple[dict[str, Any], list[str]]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        ident = a.get("id")
        if tag == "table" and ident:
            self._table = ident
            self.tables[ident] = []
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._table and self._body:
            self.tables[self._table].append((a, []))
        elif tag == "td" and self._table and self._body:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table:
            self.tables[self._table][-1][1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def page(ev: Evaluation, tmp_path: Path) -> str:
    path = tmp_path / "evaluation.json"
    write_evaluation(path, sealed(ev))
    text, _ = html_report(path)
    return text


def page_tables(text: str) -> dict[str, list[tuple[dict[str, Any], list[str]]]]:
    parser = Tables()
    parser.feed(text)
    return parser.tables


def refused_comparator(ev: Evaluation) -> Evaluation:
    assert ev.comparator is not None
    choice = ev.comparator.model_copy(
        update={
            "arm": None,
            "refused_by": [
                Refusal(kind="run", reason="candidate local4 has no calibration runs"),
                Refusal(kind="data", reason="the calibration strata recorded no completion_time"),
            ],
        }
    )
    return ev.model_copy(update={"comparator": choice})


def refused_family(ev: Evaluation) -> Evaluation:
    fam = ev.families[1]
    gates = [
        g.model_copy(update={"verdict": "refused", "refused_by": [invalidator_fired("sane_nll")]}) for g in fam.gates
    ]
    fam = fam.model_copy(
        update={
            "decision": "refused",
            "gates": gates,
            "invalidators_fired": ["sane_nll"],
            "decision_reason": "invalidator sane_nll fired on this family's runs",
        }
    )
    return ev.model_copy(update={"families": [ev.families[0], fam, *ev.families[2:]]})


def flip_cell(ev: Evaluation) -> Evaluation:
    cell = ev.ranking[0].model_copy(
        update={
            "ranking": "flip",
            "reason": "the fitted contrast is above 1 at the low end and below 1 at the high end",
        }
    )
    return ev.model_copy(update={"ranking": [cell, *ev.ranking[1:]]})


def test_the_fixture_is_a_sealed_controller_artifact(ev):
    assert seal_status(ev) == "sealed"
    assert ct.has_controller(ev) and ev.comparator.arm == "local16"
    assert len(ev.families) == 6 and len(ev.ranking) == 12


def test_the_terminal_report_shows_every_controller_section(ev):
    text = terminal(ev)
    for heading in HEADINGS:
        assert heading in text
    assert ct.comparator_chosen(ev) in text
    assert ct.HELD_OUT_SENTENCE in text
    for line in ct.comparator_lines(ev):
        assert line in text
    for fam in ct.family_rows(ev):
        assert fam.family in text and fam.hindsight in text
        for line in fam.gates + fam.descriptive:
            assert line in flat(text)
    for r in ct.ranking_rows(ev):
        assert r.reason in text and r.sampling in text
        for line in r.infrastructure:
            assert line in text
    assert "infrastructure spread (separate)" in text
    for line in ct.assumption_lines(ev):
        assert line in text


def test_the_terminal_report_fits_80_columns(ev):
    lines = terminal(ev, width=80).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in "\n".join(lines[lines.index(next(x for x in lines if x.startswith("Comparator choice"))) :])


def test_the_markdown_tables_parse_back(ev):
    md = evaluation_markdown(ev)
    found = tables(md)
    header, rows = found["Ranking (challenger vs comparator per family and region)"]
    assert header == RANKING_HEAD
    for row, r, cell in zip(rows, ct.ranking_rows(ev), ev.ranking, strict=True):
        got = dict(zip(header, (unescape(c) for c in row), strict=True))
        assert got["family"] == f"`{cell.family}`" and got["region"] == r.region
        assert got["ranking"].startswith(f"_{r.word}_" if cell.ranking == "abstain" else f"**{r.word}**")
        assert got["reason"] == cell.reason
        assert got["sampling interval"] == r.sampling
        assert got["infrastructure spread (separate)"] == "<br>".join(r.infrastructure)
        assert "base_bandwidth_mbps" not in got["sampling interval"]  # the two uncertainties never merge
    header, rows = found["Per-family ledger (each held-out family judged alone)"]
    assert [r[0] for r in rows] == [f"`{f.family}`" for f in ev.families]
    first = dict(zip(header, (unescape(c) for c in rows[0]), strict=True))
    assert first["decision"].startswith("**NOT SUPPORTED**: gate faster_than_comparator failed")
    assert (
        "`faster_than_comparator` **FAIL** 1.182x [1.074x, 1.299x] (90%, 6 pairs)"
        in first["gates: verdict, estimate [interval]"]
    )
    assert first["hindsight (yardstick, not a gate)"].startswith("median completion_time: best fixed arm in hindsight")
    header, rows = found["Comparator choice (calibration runs only)"]
    assert [r[0] for r in rows] == ["`sync`", "`local4`", "`local16`"] and rows[2][-1] == "**CHOSEN**"
    bullets = md.split("## Assumptions, uncertainty and missing evidence\n\n", 1)[1].split("\n\n", 1)[0]
    assert [unescape(line[2:]) for line in bullets.splitlines()] == ct.assumption_lines(ev)


def test_the_html_page_has_the_same_words(ev, tmp_path):
    text = page(ev, tmp_path)
    for anchor in ("comparator", "families", "ranking", "assumptions"):
        assert f'<section id="{anchor}"' in text and f'href="#{anchor}"' in text
    assert escape(ct.comparator_chosen(ev)) in text
    found = page_tables(text)
    ranking = found["ranking-table"]
    assert len(ranking) == len(ev.ranking)
    for (attrs, cells), r in zip(ranking, ct.ranking_rows(ev), strict=True):
        assert attrs["data-ranking"] == r.ranking and ("abstain" in attrs.get("class", "")) == r.abstain
        assert cells[2].split("\n")[0] == r.word and cells[3] == r.sampling
        assert cells[4] == "\n".join(r.infrastructure) and cells[5] == r.reason
    families = found["families-table"]
    assert [a["data-family"] for a, _ in families] == [str(f.family) for f in ev.families]
    assert [c[0] for _, c in found["comparator-table"]] == ["sync", "local4", "local16"]
    for line in ct.assumption_lines(ev):
        assert escape(line) in text


def test_a_refused_comparator_says_why_in_all_three(ev, tmp_path):
    bad = refused_comparator(ev)
    reasons = ["candidate local4 has no calibration runs", "the calibration strata recorded no completion_time"]
    sentence = ct.comparator_chosen(bad)
    assert sentence.startswith("No comparator could be chosen: " + "; ".join(reasons))
    assert sentence in terminal(bad)
    md = evaluation_markdown(bad)
    assert f"**{sentence}**" in unescape(md) and "**CHOSEN**" not in md
    text = page(bad, tmp_path)
    assert escape(sentence) in text and 'class="alarm"><strong>No comparator' in text
    assert any(line.startswith("No comparator could be chosen") for line in ct.assumption_lines(bad))


def test_a_refused_family_renders_with_its_reason(ev, tmp_path):
    bad = refused_family(ev)
    row = ct.family_rows(bad)[1]
    assert (
        row.decision_word == "REFUSED"
        and row.gates[0] == "faster_than_comparator REFUSED: invalidator sane_nll fired (no claim either way)"
    )
    assert (
        "Families refused: latency_spikes (invalidator sane_nll fired on this family's runs)."
        in ct.assumption_lines(bad)
    )
    text = terminal(bad)
    assert "invalidator sane_nll fired on this family's runs" in text and row.gates[0] in text
    md = unescape(evaluation_markdown(bad))
    assert "**REFUSED**: invalidator sane_nll fired on this family's runs" in md
    assert "`faster_than_comparator` **REFUSED**: invalidator sane_nll fired (no claim either way)" in md
    cells = page_tables(page(bad, tmp_path))["families-table"][1]
    assert cells[0]["data-decision"] == "refused" and "invalidator sane_nll fired" in cells[1][1]


def test_a_flip_cell_is_named(ev, tmp_path):
    odd = flip_cell(ev)
    assert "FLIP" in terminal(odd)
    assert (
        "Cells whose order flips across their region: bandwidth_collapse / bandwidth_region=low."
        in ct.assumption_lines(odd)
    )
    rows = tables(evaluation_markdown(odd))["Ranking (challenger vs comparator per family and region)"][1]
    assert rows[0][2].startswith("**FLIP**")
    assert page_tables(page(odd, tmp_path))["ranking-table"][0][0]["data-ranking"] == "flip"


def test_hostile_strings_stay_text(ev, tmp_path):
    hostile = "<script>alert(1)</script>|*x*"
    cell = ev.ranking[0].model_copy(update={"reason": hostile, "family": hostile})
    bad = ev.model_copy(update={"ranking": [cell, *ev.ranking[1:]]})
    text = page(bad, tmp_path)
    assert "<script>alert" not in text and escape(hostile) in text
    md = evaluation_markdown(bad)
    assert "| \\<script\\>alert(1)\\</script\\>\\|\\*x\\* |" in md  # the reason: escaped
    assert "| `<script>alert(1)</script>\\|*x*` |" in md  # the family: a code span, shown literally


def test_a_plain_artifact_shows_no_controller_section(tmp_path):
    plain = realistic_evaluation()
    assert not ct.has_controller(plain) and ct.assumption_lines(plain) == []
    text, md, page_text = terminal(plain), evaluation_markdown(plain), page(plain, tmp_path)
    for heading in HEADINGS:
        assert heading not in text and heading not in md and heading not in page_text
    assert not re.search(r'id="(comparator|families|ranking|assumptions)"', page_text)


@pytest.mark.subprocess(quick=True)
def test_reports_show_prints_it(tmp_path):
    proc = run("reports", "show", str(FIXTURE), env={"NO_COLOR": "1", "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    assert "Chosen comparator: local16" in proc.stdout and "Ranking per family x region" in proc.stdout
    out = tmp_path / "report.md"
    proc = run("reports", "show", str(FIXTURE), "--markdown", str(out), env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "## Ranking (challenger vs comparator per family and region)" in out.read_text()
