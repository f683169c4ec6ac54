"""`reports html` for runs of the ``command`` collector: every block's attempts, faults, restarts and curves.

Quick (no subprocess, no browser): the run sections are built from a synthetic runs folder
(``tests.helpers.command_runs``) and checked as text and parsed XML. The page says of runs what
they are (collected by command, imported), never "imported runs keep none" of collected runs.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from collect.ledger.store import RunRecord, append_records, read_ledger, trace_problems
from reports.data.timeline import load_block
from reports.html.page import Source, build_page
from reports.html.runs import RunsContext, traces_table
from reports.html.telemetry import telemetry_section
from reports.html.timeline import timeline_section
from reports.words.palette import ALARM_COLOUR
from tests.helpers.command_runs import SHA, command_runs_folder
from tests.helpers.evaluations import realistic_evaluation


def context(runs: Path) -> RunsContext:
    """The runs folder as the report reads it: every record, each trace re-hashed against its record."""
    ledger = read_ledger(runs)
    records = list(ledger.records)
    problems = {r.run_id: p for r in records if (p := trace_problems(runs, r))}
    return RunsContext(runs, ledger, records, 0, problems)


def figures(html: str) -> list[ET.Element]:
    """Every top-level inline SVG figure, parsed as XML (it must be well formed)."""
    return [
        ET.fromstring(m)
        for m in re.findall(r'<svg class="figure".*?</svg>(?=<svg class="figure"|<figcaption)', html, re.S)
    ]


def texts(svg: ET.Element) -> list[tuple[str, str | None]]:
    return [("".join(n.itertext()), n.get("fill")) for n in svg.iter() if n.tag.rsplit("}", 1)[-1] == "text"]


class Details(HTMLParser):
    """The summary of each top-level ``<details>`` and whether it is open."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.items, self.in_summary = 0, [], False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "details":
            self.depth += 1
            if self.depth == 1:
                self.items.append(["", "open" in dict(attrs)])
        if tag == "summary" and self.depth == 1:
            self.in_summary = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.depth -= 1
        if tag == "summary":
            self.in_summary = False

    def handle_data(self, data: str) -> None:
        if self.in_summary:
            self.items[-1][0] += data


def details(html: str) -> list[tuple[str, bool]]:
    parser = Details()
    parser.feed(html)
    return [(text, is_open) for text, is_open in parser.items]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return command_runs_folder(tmp_path)


def test_every_block_shows_its_faults_and_restarts(runs):
    html = timeline_section(context(runs), None)
    blocks = [d for d in details(html) if d[0].startswith("stratum")]
    assert blocks == [
        (
            "stratum seed=1, replicate 0: ckpt_100: 3 attempts, 2 faults, 2 restarts; "
            "ckpt_25: 3 attempts, 2 faults, 2 restarts",
            True,
        ),
        ("stratum seed=2, replicate 0: ckpt_25: 1 attempt, 0 faults, 0 restarts", False),
    ]
    svgs = figures(html)
    assert len(svgs) == 2 + 2 * 2  # per block: the timeline, step over time, loss over steps
    timeline = texts(svgs[0])
    steps = [e.step for t in load_block(runs, "run-cmd-a").runs for e in t.events if e.kind == "failure"]
    assert len(steps) == 4
    for step in steps:  # each fault: a red label with the program's step then
        assert (f"fault at step {step}", ALARM_COLOUR) in timeline
    labels = [t for t, _ in timeline]
    assert labels.count("restart 1") == 2 and labels.count("restart 2") == 2
    assert "ckpt_25 · attempts" in labels and "ckpt_25 · phases" in labels
    assert len(svgs[1].findall(".//{*}polyline")) == 6  # step over time: 2 runs x 3 attempts
    assert "fault at step" in html.split("Text equivalent")[1]  # the text equivalent names them too
    assert "ended by the fault at step" in html and "(the program started again with PREREG_RESTART=1)" in html
    assert "imported runs keep none" not in html


def test_the_run_asked_for_comes_first_and_open(runs):
    html = timeline_section(context(runs), "run-cmd-c")
    assert [d for d in details(html) if d[0].startswith("stratum")][0] == (
        "stratum seed=2, replicate 0: ckpt_25: 1 attempt, 0 faults, 0 restarts",
        True,
    )


def test_a_changed_trace_is_named_and_its_block_not_drawn(runs):
    trace = runs / "traces" / "run-cmd-b.progress.csv"
    trace.write_text(trace.read_text().replace(",0,", ",1,", 1))
    html = timeline_section(context(runs), None)
    assert "NOT DRAWN: the traces of the block of run <code>run-cmd-a</code> do not match the ledger" in html
    assert "run-cmd-b: traces/run-cmd-b.progress.csv changed after the run" in html
    assert [d[0] for d in details(html) if d[0].startswith("stratum")] == [
        "stratum seed=2, replicate 0: ckpt_25: 1 attempt, 0 faults, 0 restarts"
    ]


def test_the_page_says_what_the_runs_are(tmp_path):
    runs = tmp_path / "runs"
    append_records(
        runs,
        [
            RunRecord(
                run_id=f"run-{i}",
                prereg_sha256=SHA,
                stratum={"seed": i},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                code={"collector": "command", "sensor": "none"},
            )
            for i in range(3)
        ],
    )
    ctx = context(runs)
    assert "none of its 3 runs collected by command did" in timeline_section(ctx, None)
    assert "none of its 3 runs collected by command did" in telemetry_section(ctx)
    assert "No run kept a trace file (none of its 3 runs collected by command did)" in traces_table(ctx)
    imported = tmp_path / "imported"
    append_records(
        imported,
        [
            RunRecord(
                run_id="imp-1",
                prereg_sha256=SHA,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                code={"imported": True},
                source="import:runs.csv row 2",
            )
        ],
    )
    ctx = context(imported)
    assert "none of its 1 imported run did" in timeline_section(ctx, None)
    sim = tmp_path / "sim"
    append_records(
        sim,
        [
            RunRecord(
                run_id="run-s",
                prereg_sha256=SHA,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                code={"collector": "sim.multisite"},
            )
        ],
    )
    assert "none of its 1 run collected by sim.multisite did" in telemetry_section(context(sim))


def test_the_whole_page_carries_the_story(runs):
    ev = realistic_evaluation()
    source = Source(runs / "evaluation.json", "0" * 64, runs)
    page = build_page(ev, source, "sealed", context(runs))
    section = page.split('<section id="timeline"')[1].split("</section>")[0]
    assert "fault at step" in section and "restart 2" in section and "Training loss the programs reported" in section
    assert "imported runs keep none" not in page


def test_a_run_without_an_event_trace_is_said_so_not_drawn_as_done(runs):
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-cmd-g",
                prereg_sha256=SHA,
                stratum={"seed": 1},
                arm="ckpt_50",
                replicate=0,
                status="failed",
                metrics={},
                code={"collector": "command"},
                error="the program exited with status 1",
            )
        ],
    )
    html = timeline_section(context(runs), "run-cmd-g")
    assert details(html)[0] == (
        "stratum seed=1, replicate 0: ckpt_100: 3 attempts, 2 faults, 2 restarts; "
        "ckpt_25: 3 attempts, 2 faults, 2 restarts; ckpt_50: no event trace",
        True,
    )
    labels = [t for t, _ in texts(figures(html)[0])]
    assert "ckpt_50: no event trace (failed)" in labels
    assert not any(label.startswith("ckpt_50 done") for label in labels)


class Text(HTMLParser):
    """Every text node of a page, and every tag name."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.data: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def test_ledger_strings_reach_the_page_as_text(runs):
    """Arm names come from the ledger, not the artifact: they too are escaped where the templates
    place them (runs table, timeline summary, figure), never markup."""
    hostile = '<img src=x onerror="alert(1)"> & \x1b[2K'
    record = RunRecord(
        run_id="run-cmd-h",
        prereg_sha256=SHA,
        stratum={"seed": 1},
        arm=hostile,
        replicate=0,
        status="failed",
        metrics={},
        code={"collector": "command"},
        error="the program exited with status 1",
    )
    append_records(runs, [record])
    page = build_page(realistic_evaluation(), Source(runs / "evaluation.json", "0" * 64, runs), "sealed", context(runs))
    parsed = Text()
    parsed.feed(page)
    assert "img" not in parsed.tags and "\x1b" not in page
    shown = [d for d in parsed.data if '<img src=x onerror="alert(1)"> & \\x1b[2K' in d]
    assert len(shown) >= 3  # the runs table's arm cell, the block's summary, the figure's label
