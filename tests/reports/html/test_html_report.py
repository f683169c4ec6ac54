"""`reports html`: the self-contained page, its words, escaping, figures and run sections (no browser).

The page is checked as text and parsed with the standard library's HTML parser: the same words as
the terminal report (``reports.words.evaluation``), refused gates' numbers only under Diagnostics,
every artifact string escaped, headings in order, nothing that loads from elsewhere, and the run
sections of a real (small) ``sim.multisite`` runs folder: work conservation, traffic classes, the
recovery timeline, trace hashes, a changed trace named and not drawn. The browser checks are in
``test_html_browser.py``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import pytest

from gates.artifact import write_evaluation
from reports.data.axes import gate_axis, pct_change, ratio_ticks, widened_interval
from reports.html.assets import CSS, JS, csp_hash
from reports.html.page import html_report
from reports.words import decision as dt
from reports.words import evaluation as et
from tests.conftest import REPO
from tests.helpers import run
from tests.helpers.evaluations import realistic_evaluation

PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
MAX_BYTES = 5 << 20


class Outline(HTMLParser):
    """Headings, text per section id, and every attribute that could load something."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[int] = []
        self.text: list[str] = []
        self.loads: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.section: list[str] = []
        self.by_section: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))
        a = dict(attrs)
        if tag == "section":
            self.section.append(a.get("id") or "")
        for name in ("src", "href", "srcset", "action", "poster", "data", "xlink:href"):
            value = a.get(name)
            if value is not None and not value.startswith("#"):
                self.loads.append((tag, name, value))
        if tag == "link" or (tag == "script" and a.get("src")):
            self.loads.append((tag, "tag", str(a)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self.section:
            self.section.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for s in self.section:
            self.by_section.setdefault(s, []).append(data)

    def words(self, section: str | None = None) -> str:
        return " ".join("".join(self.by_section.get(section, []) if section else self.text).split())


def outline(page: str) -> Outline:
    parser = Outline()
    parser.feed(page)
    return parser


@pytest.fixture
def sample_page(tmp_path) -> tuple[str, Outline]:
    write_evaluation(tmp_path / "evaluation.json", realistic_evaluation())
    page, _ = html_report(tmp_path / "evaluation.json")
    return page, outline(page)


def test_the_page_says_what_the_terminal_says(sample_page):
    page, doc = sample_page
    ev = realistic_evaluation()
    word, rest = dt.decision_sentence(ev)
    assert " ".join((word + rest).split()) in doc.words("decision")
    assert "POST-DATA AMENDMENT: runs already existed" in doc.words("decision")
    for status, line in et.predecessor_lines(ev):
        assert f"{status} {' '.join(line.split())}" in doc.words("decision")
    for p in ev.predecessors:
        assert p.sha256 in page  # the full hashes, not only their first 12 characters
    gates = doc.words("gates")
    for g in et.primary_gates(ev):
        v = et.gate_view(g, ev)
        assert v.id in gates and v.word in gates and v.rule in gates and v.test in gates
        if v.is_evidence:
            assert v.interval in gates and v.estimate in gates
    for line in et.group_lines(ev):
        assert line in gates
    for r in et.invalidator_rows(ev):
        assert r["id"] in doc.words("invalidators") and r["status"] in doc.words("invalidators")
    for line in et.note_lines(ev):
        assert " ".join(line.split()) in doc.words("notes")
    assert doc.headings[0] == 1 and all(b - a <= 1 for a, b in pairwise(doc.headings))


def test_refused_numbers_appear_only_as_diagnostics(sample_page):
    page, doc = sample_page
    ev = realistic_evaluation()
    refused = next(g for g in ev.gates if g.verdict == "refused")
    interval = et.interval_text(refused)  # '90% CI [0.83x, +inf]'
    assert interval not in doc.words("gates") and interval in doc.words("diagnostics")
    assert "see Diagnostics, not evidence" in doc.words("gates")
    assert "DIAGNOSTIC, not evidence" in doc.words("diagnostics")
    # the unresolvable gate is drawn there with its interval widened by the meter's bounds
    unresolvable = next(g for g in ev.gates if g.verdict == "unresolvable")
    lo, hi = widened_interval(unresolvable) or (0, 0)
    assert (lo, hi) == (-5.0, 2.2)
    diagnostics = page[page.index('id="diagnostics"') : page.index('id="notes"')]
    assert 'fill="#f6e7b4"' in diagnostics and f"[{et.fmt_num(lo)}, {et.fmt_num(hi)}]" in diagnostics
    primary = page[page.index('id="forest-primary"') : page.index('id="invalidators"')]
    assert "Forest row of gate energy_saving" not in primary  # no refused bar among the evidence


def test_nothing_loads_and_only_the_pages_own_blocks_may_run(sample_page):
    page, doc = sample_page
    assert doc.loads == []
    assert doc.tags.count("script") == 1 and doc.tags.count("style") == 1
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    policy = html.unescape(policy)
    assert "default-src 'none'" in policy and csp_hash(JS) in policy and csp_hash(CSS) in policy
    assert f"<script>{JS}</script>" in page and f"<style>{CSS}</style>" in page
    assert "http://" not in page.replace('"http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_every_artifact_string_is_escaped(tmp_path):
    hostile = '<script>alert("x")</script> & "quoted" \x1b[2K'
    ev = realistic_evaluation()
    gates = [g.model_copy(update={"notes": [hostile]}) if i == 0 else g for i, g in enumerate(ev.gates)]
    ev = ev.model_copy(update={"title": hostile, "claim": hostile, "scope": hostile, "gates": gates})
    write_evaluation(tmp_path / "evaluation.json", ev)
    page, _ = html_report(tmp_path / "evaluation.json")
    assert "<script>alert" not in page and "\x1b" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;quoted&#34; \\x1b[2K" in page
    assert page.count("<script") == 1


def test_ratio_axes_hold_1x_and_say_the_change():
    assert 1.0 in ratio_ticks(0.83, 1.04) and 1.0 in ratio_ticks(0.02, 40.0) and 1.0 in ratio_ticks(0.999, 1.3)
    assert [pct_change(x) for x in (0.95, 1.0, 1.2, 5.0)] == ["\u22125%", "0%", "+20%", "+400%"]
    ev = realistic_evaluation()
    gate = next(g for g in ev.gates if g.scale == "ratio")
    axis = gate_axis(gate, [0.7, 1.3])
    assert axis.log and axis.lo < 0.7 and axis.hi > 1.3  # every stratum's point fits on the gate's axis


def test_png_forest_gets_1x_ticks_percentages_and_strata_points():
    pytest.importorskip("matplotlib")
    from reports.plots.figures import forest_figure

    ev = realistic_evaluation()
    fig = forest_figure(ev)
    axes = [ax for ax in fig.axes if ax.get_xscale() == "log"]
    assert axes
    for ax in axes:
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert 1.0 in list(ax.get_xticks()) and "1x\n0%" in labels and all("%" in t for t in labels)
    points = [line for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "o"]
    recorded = sum(value is not None for b in ev.blocks for value in b.contrasts.values())
    assert sum(len(line.get_xdata()) for line in points) == recorded


@pytest.mark.subprocess
def test_markdown_links_the_same_figures_beside_it(tmp_path):
    write_evaluation(tmp_path / "evaluation.json", realistic_evaluation())
    target = tmp_path / "report.md"
    proc = run("reports", "show", str(tmp_path / "evaluation.json"), "--markdown", str(target), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    text = target.read_text()
    for name in ("report.forest.svg", "report.strata.svg"):
        assert f"]({name})" in text
        root = ET.parse(tmp_path / name).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    forest = (tmp_path / "report.forest.svg").read_text()
    for g in realistic_evaluation().gates:
        assert f"Forest row of gate {g.id}" in forest
    (tmp_path / "report.forest.svg").write_text("<svg>someone else's</svg>")
    proc = run("reports", "show", str(tmp_path / "evaluation.json"), "--markdown", str(target), env=PLAIN)
    assert proc.returncode == 2 and "report.forest.svg" in proc.stderr  # never over a foreign file unasked


@pytest.fixture(scope="module")
def multisite(tmp_path_factory) -> Path:
    """A small sim.multisite runs folder (the example plan with fewer steps), evaluated."""
    root = tmp_path_factory.mktemp("html-multisite")
    text = (REPO / "examples" / "multisite-recovery.yaml").read_text()
    text = text.replace("target_steps: 2000", "target_steps: 300").replace(
        "checkpoint_every_steps: 100", "checkpoint_every_steps: 30"
    )
    plan = root / "ms.yaml"
    plan.write_text(text)
    lock = root / "ms.lock.json"
    for args in (
        ("prereg", "freeze", str(plan), "-o", str(lock)),
        ("collect", "run", str(lock), "--out", str(root / "runs"), "--jobs", "1"),
    ):
        proc = run(*args, env=PLAIN)
        assert proc.returncode == 0, proc.stderr
    proc = run("gates", "evaluate", str(lock), str(root / "runs"), env=PLAIN)
    assert proc.returncode in (0, 1), proc.stderr
    return root / "runs"


@pytest.mark.subprocess
def test_multisite_runs_folder(multisite, tmp_path):
    runs = Path(shutil.copytree(multisite, tmp_path / "runs"))
    proc = run("reports", "html", str(runs), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote the HTML report to {runs / 'report.html'}" in proc.stderr
    page = (runs / "report.html").read_text()
    assert len(page.encode()) < MAX_BYTES
    doc = outline(page)
    words = doc.words("runs")
    records = [json.loads(line) for line in (runs / "ledger.jsonl").read_text().splitlines()]
    assert f"attempted = retained + lost holds for all {len(records)} runs" in words
    assert f"the disjoint classes add up to the total in all {len(records)} runs" in words
    for r in records:
        assert r["run_id"] in words
    timeline = doc.words("timeline")
    assert "The first block in the ledger whose runs met a failure" in timeline
    for kind in ("failure", "restore", "replay", "rejoin"):
        assert kind in timeline
    assert 'aria-labelledby="tl-t tl-d"' in page
    assert f"{len(records)} trace files, each re-hashed now: all match" in doc.words("provenance")
    assert "No run of this plan kept a raw telemetry trace" in doc.words("telemetry")
    # the page replaces its own earlier output; --run picks another block
    target = next(r for r in records if r["stratum"]["outage_site"] == "none")
    proc = run("reports", "html", str(runs), "--run", target["run_id"], env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    assert f"The block of run {target['run_id']}" in outline((runs / "report.html").read_text()).words("timeline")


@pytest.mark.subprocess
def test_a_changed_trace_is_named_and_not_drawn(multisite, tmp_path):
    runs = Path(shutil.copytree(multisite, tmp_path / "runs"))
    record = next(
        json.loads(line)
        for line in (runs / "ledger.jsonl").read_text().splitlines()
        if json.loads(line)["stratum"]["outage_site"] not in ("none",)
    )
    trace = runs / record["traces"][0]
    trace.write_text(trace.read_text().replace('"failure"', '"compute"', 1))
    proc = run("reports", "html", str(runs), "--run", record["run_id"], "-o", str(tmp_path / "page.html"), env=PLAIN)
    assert proc.returncode == 3 and "does not match a re-evaluation" in proc.stderr  # evaluated before the edit
    assert run("gates", "evaluate", str(multisite.parent / "ms.lock.json"), str(runs), env=PLAIN).returncode in (
        0,
        1,
        3,
    )
    proc = run("reports", "html", str(runs), "--run", record["run_id"], "-o", str(tmp_path / "page.html"), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    assert "do not match the SHA-256 in their record" in proc.stderr
    doc = outline((tmp_path / "page.html").read_text())
    assert "NOT DRAWN: the block's traces do not match the ledger" in doc.words("timeline")
    assert "changed after the run (SHA-256 differs)" in doc.words("provenance")


@pytest.mark.subprocess
def test_inputs_and_outputs_are_guarded(multisite, tmp_path):
    runs = Path(shutil.copytree(multisite, tmp_path / "runs"))
    proc = run("reports", "html", str(runs), "-o", str(runs / "ledger.jsonl"), env=PLAIN)
    assert proc.returncode == 2 and "ledger.jsonl" in proc.stderr
    other = tmp_path / "notes.html"
    other.write_text("<p>mine</p>")
    proc = run("reports", "html", str(runs), "-o", str(other), env=PLAIN)
    assert proc.returncode == 2 and other.read_text() == "<p>mine</p>"
    assert run("reports", "html", str(runs), "-o", str(other), "--force", env=PLAIN).returncode == 0
    proc = run("reports", "html", str(tmp_path / "nowhere"), env=PLAIN)
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr
    (runs / "evaluation.json").rename(tmp_path / "evaluation.json")
    proc = run("reports", "html", str(runs), env=PLAIN)
    assert proc.returncode == 2 and "gates evaluate" in proc.stderr
    data = json.loads((tmp_path / "evaluation.json").read_text())
    data["decision"] = "supported" if data["decision"] != "supported" else "not_supported"
    (tmp_path / "evaluation.json").write_text(json.dumps(data))
    proc = run("reports", "html", str(tmp_path / "evaluation.json"), env=PLAIN)
    assert proc.returncode == 3 and "INCONSISTENT" in proc.stderr
    proc = run("reports", "html", str(runs), "--run", "run-nope", env=PLAIN)
    assert proc.returncode == 2


@pytest.mark.subprocess
def test_an_evaluation_alone_says_what_is_missing(tmp_path):
    write_evaluation(tmp_path / "evaluation.json", realistic_evaluation())
    proc = run("reports", "html", str(tmp_path / "evaluation.json"), "-o", str(tmp_path / "out" / "r.html"), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    doc = outline((tmp_path / "out" / "r.html").read_text())
    assert "No runs folder beside this evaluation" in doc.words("runs")
    assert "timeline" not in doc.by_section and "telemetry" not in doc.by_section
    proc = run(
        "reports", "html", str(tmp_path / "evaluation.json"), "--run", "x", "-o", str(tmp_path / "r2.html"), env=PLAIN
    )
    assert proc.returncode == 2 and "--run needs the runs folder" in proc.stderr


@pytest.mark.subprocess(quick=True)
def test_html_help_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\nfrom prereg_toolkit_cli.reports import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['html', '--help'])\n    except SystemExit:\n        pass\n"
        "print(' '.join(m for m in ('numpy', 'pydantic', 'matplotlib', 'jinja2', 'collect.ledger.store') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_markup_comes_only_from_autoescaping_templates():
    """No hand escaping and no markup built from strings in reports/html: values reach the templates
    as data (escaped there); ``Markup`` wraps only the page's own style and script, or joins template
    output."""
    from reports.html.render import ENV

    assert ENV.autoescape is True
    by_hand = re.compile(r"\bhtml\.escape\(|\bescape\(|\besc\(|Markup\((?!\)|CSS\)|JS\))")
    for path in sorted((REPO / "reports" / "html").glob("*.py")):
        found = by_hand.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name}: {found}"
