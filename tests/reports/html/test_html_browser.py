"""`reports html` pages opened in a real browser: headless Chromium driven over a pipe.

A tiny client for the Chrome DevTools Protocol on ``--remote-debugging-pipe`` (standard library
only: JSON messages separated by NUL bytes on file descriptors 3 and 4) opens the page from disk,
records every console message, uncaught exception, log entry and network request, reads the DOM,
reaches a ``<details>`` with Tab and opens it with Enter, clicks the telemetry buttons and a sort
button, takes screenshots at 1280 and 360 px (nothing may widen the page at 360 px) and prints to
PDF (every ``<details>`` open on paper). Chromium is
Debian's ``chromium`` package, which ``.ci/run`` installs before the tests; where it is not
installed the tests skip, saying so. The browser is killed (its whole process group) after each
module, whatever happens.

The pages come from a real torch.multisite runs folder (the small copy of the demo plan that the
telemetry plot tests use: 4 runs, traces, a timeline and telemetry), from the imported
continuation example (no traces) and from a controller study's artifact (its ranking table read
back from the DOM).
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.helpers import run

HERE = Path(__file__).resolve().parent
PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
TIMEOUT = 60.0  # seconds for any one browser answer: only there to catch a hang
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # Chromium on pages of real torch runs


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high(fd: int) -> int:
    """``fd`` moved above 9, so that the redirections onto 3 and 4 (bash: dash takes one digit) cannot clobber it."""
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """Headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, exe: str, profile: Path) -> None:
        to_browser_r, self._to_browser = (_high(fd) for fd in os.pipe())
        self._from_browser, from_browser_w = (_high(fd) for fd in os.pipe())
        flags = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--mute-audio",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        command = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", command, exe, *flags],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._answers: dict[int, Any] = {}
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._inbox.put(None)
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                self._inbox.put(json.loads(message))

    def _wait(self, done: Any) -> Any:
        """Pump messages until ``done(message)`` is true for one; events are kept in ``self.events``."""
        while True:
            try:
                message = self._inbox.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError("chromium did not answer in time") from None
            if message is None:
                raise AssertionError("chromium closed the DevTools pipe")
            if "id" not in message:
                self.events.append(message)
            if done(message):
                return message

    def call(self, method: str, session: str | None = None, **params: Any) -> Any:
        self._next += 1
        ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        answer = self._wait(lambda m: m.get("id") == ident)
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def page(self, method: str, **params: Any) -> Any:
        return self.call(method, self.session, **params)

    def wait_event(self, method: str) -> dict[str, Any]:
        seen = next((e for e in self.events if e.get("method") == method), None)
        return seen or self._wait(lambda m: m.get("method") == method)

    def open(self, path: Path, width: int, height: int, mobile: bool = False) -> None:
        self.viewport(width, height, mobile)
        self.events.clear()
        self.page("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)

    def js(self, expression: str) -> Any:
        result = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def key(self, name: str, code: int) -> None:
        """Press and release one key, as a keyboard would."""
        text = {"Enter": "\r"}.get(name, "")
        self.page("Input.dispatchKeyEvent", type="keyDown", key=name, code=name, windowsVirtualKeyCode=code, text=text)
        self.page("Input.dispatchKeyEvent", type="keyUp", key=name, code=name, windowsVirtualKeyCode=code)

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.page("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data

    def pdf(self) -> bytes:
        return base64.b64decode(self.page("Page.printToPDF", printBackground=True)["data"])

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                out.append(f"console {params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log: {params['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close")
                except AssertionError:
                    pass
                self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            try:  # the browser's helpers share its process group: none may outlive the test
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    exe = chromium_path()
    if exe is None:
        pytest.skip(
            "chromium is not installed (.ci/run installs Debian's chromium package with apt-get before the "
            "tests; it could not here), so the HTML report is not checked in a browser"
        )
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        b = Browser(exe, Path(profile))
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def torch_report(tmp_path_factory, small_torch_runs) -> tuple[Path, Path]:
    """The HTML report of a real torch.multisite runs folder (and the folder): a copy of the session's
    small torch runs (tests/reports/conftest.py), evaluated and reported here."""
    lock, made = small_torch_runs
    root = tmp_path_factory.mktemp("html-torch")
    shutil.copytree(made, root / "runs")
    proc = run("gates", "evaluate", str(lock), str(root / "runs"), env=PLAIN)
    assert proc.returncode in (0, 1), proc.stderr
    proc = run("reports", "html", str(root / "runs"), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    return root / "runs" / "report.html", root / "runs"


@pytest.fixture(scope="module")
def imported_report(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("html-imported")
    lock = root / "continuation.lock.json"
    for args in (
        ("prereg", "freeze", str(REPO / "examples" / "continuation.yaml"), "-o", str(lock)),
        (
            "collect",
            "import",
            str(REPO / "examples" / "runs" / "continuation.csv"),
            "--lock",
            str(lock),
            "--out",
            str(root / "runs"),
        ),
    ):
        proc = run(*args, env=PLAIN)
        assert proc.returncode == 0, proc.stderr
    proc = run("gates", "evaluate", str(lock), str(root / "runs"), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    out = root / "continuation.html"
    proc = run("reports", "html", str(root / "runs" / "evaluation.json"), "-o", str(out), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    return out, root / "runs"


def expected(runs: Path) -> tuple[str, list[tuple[str, str]]]:
    """The decision sentence and (gate id, verdict word) of the primary gates, from the artifact itself."""
    from gates.api import read_evaluation
    from reports.words import decision as dt
    from reports.words import evaluation as et
    from reports.words import palette

    ev = read_evaluation(runs / "evaluation.json")
    word, rest = dt.decision_sentence(ev)
    return word + rest, [(g.id, palette.VERDICT_WORDS[g.verdict]) for g in et.primary_gates(ev)]


READ_DOM = """(() => ({
  decision: document.getElementById('decision-text').textContent,
  gates: Array.from(document.querySelectorAll('#gates-table tbody tr')).map(r =>
    [r.dataset.gate, r.cells[0].querySelector('.badge').textContent, r.cells.length]),
  headings: Array.from(document.querySelectorAll('h1,h2,h3,h4')).map(h => Number(h.tagName[1])),
  svgs: Array.from(document.querySelectorAll('svg.figure')).map(s => [s.getAttribute('role'),
    !!s.querySelector('title'), s.getBoundingClientRect().width]),
  details: Array.from(document.querySelectorAll('details')).map(d => d.querySelector(':scope > summary') !== null),
  scrollWidth: document.documentElement.scrollWidth,
  title: document.title,
}))()"""


def check_page(b: Browser, page: Path, runs: Path, shots: Path, name: str) -> dict[str, Any]:
    b.open(page, 1280, 900)
    dom = b.js(READ_DOM)
    sentence, gates = expected(runs)
    assert " ".join(dom["decision"].split()) == " ".join(sentence.split())
    assert [(gid, word) for gid, word, _ in dom["gates"]] == gates
    assert all(n == 10 for *_, n in dom["gates"])  # every column of the gate table rendered
    levels = dom["headings"]
    assert levels[0] == 1 and all(b2 - a <= 1 for a, b2 in pairwise(levels)), levels
    assert dom["svgs"] and all(role == "img" and titled and width > 0 for role, titled, width in dom["svgs"])
    assert all(dom["details"])
    for _ in range(400):  # the keyboard alone reaches a <details> and opens it
        b.key("Tab", 9)
        if b.js("document.activeElement.tagName") == "SUMMARY":
            break
    else:
        raise AssertionError("no <details> summary reachable with Tab")
    b.key("Enter", 13)
    assert b.js("document.activeElement.parentElement.open") is True
    b.key("Enter", 13)
    assert b.js("document.activeElement.parentElement.open") is False
    b.js("window.scrollTo(0, 0); document.activeElement.blur()")
    wide = b.screenshot(shots / f"{name}-1280.png")
    assert wide[:8] == PNG_MAGIC and int.from_bytes(wide[16:20], "big") == 1280
    b.viewport(360, 780, mobile=True)
    assert b.js("document.documentElement.scrollWidth") <= 360  # nothing widens the page on a phone
    narrow = b.screenshot(shots / f"{name}-360.png")
    assert int.from_bytes(narrow[16:20], "big") == 360
    b.js(
        "window.addEventListener('beforeprint', () => { window.closedWhenPrinting ="
        " document.querySelectorAll('details:not([open])').length; })"
    )
    assert b.pdf()[:5] == b"%PDF-"
    assert b.js("window.closedWhenPrinting") == 0  # every <details> is open on paper
    assert b.js("document.querySelectorAll('details[open]').length") == 0  # and closed again afterwards
    return dom


def test_torch_report_in_chromium(browser, torch_report, tmp_path):
    page, runs = torch_report
    check_page(browser, page, runs, tmp_path, "torch")
    browser.viewport(1280, 900)
    buttons = browser.js("document.querySelectorAll('button.draw').length")
    assert buttons == 4  # every run kept its telemetry trace
    browser.js(
        "document.querySelectorAll('details').forEach(d => d.open = true);"
        "document.querySelectorAll('button.draw').forEach(b => b.click())"
    )
    drawn = browser.js("""new Promise(done => { const t0 = Date.now(); (function poll() {
        const figs = document.querySelectorAll('.trace-figure svg');
        if (figs.length === document.querySelectorAll('button.draw').length || Date.now() - t0 > 20000) {
          done(Array.from(figs).map(s => [s.querySelectorAll('.updates circle').length,
            s.querySelector('polyline.polls').getAttribute('points').split(' ').length]));
        } else { setTimeout(poll, 50); } })(); })""")
    assert len(drawn) == 4 and all(updates > 0 and points > 1 for updates, points in drawn), drawn
    statuses = browser.js("Array.from(document.querySelectorAll('[role=status]')).map(s => s.textContent)")
    assert all(s.startswith("Drawn: ") for s in statuses), statuses
    browser.js("document.querySelector('#runs-table thead th:nth-child(2) button').click()")
    arms = browser.js("Array.from(document.querySelectorAll('#runs-table tbody tr')).map(r => r.cells[1].textContent)")
    assert arms == sorted(arms)
    assert (
        browser.js("document.querySelector('#runs-table thead th:nth-child(2)').getAttribute('aria-sort')")
        == "ascending"
    )
    browser.screenshot(tmp_path / "torch-drawn.png")
    assert browser.problems() == []
    assert set(browser.requests()) == {page.resolve().as_uri()}  # the page itself, nothing else


def test_imported_report_in_chromium(browser, imported_report, tmp_path):
    page, runs = imported_report
    dom = check_page(browser, page, runs, tmp_path, "continuation")
    assert dom["title"].startswith("continuation-imported: SUPPORTED")
    assert browser.js("document.querySelectorAll('button.draw').length") == 0
    assert "kept a raw telemetry trace" in browser.js("document.getElementById('telemetry').textContent")
    assert browser.problems() == []
    assert set(browser.requests()) == {page.resolve().as_uri()}


def test_a_hostile_title_stays_text_in_the_browser(browser, tmp_path):
    """A plan title holding markup and a script shows as text; nothing runs, nothing is fetched."""
    from gates.artifact import sealed, write_evaluation
    from reports.html.page import write_html_report
    from tests.helpers.evaluations import realistic_evaluation

    hostile = '<img src="https://example.invalid/x.png" onerror="console.error(1)"><script>console.error(2)</script>'
    ev = realistic_evaluation().model_copy(update={"title": hostile, "claim": hostile})
    write_evaluation(tmp_path / "evaluation.json", sealed(ev))
    path, _, _ = write_html_report(tmp_path / "evaluation.json", tmp_path / "hostile.html")
    browser.open(path, 1280, 900)
    assert browser.js("document.querySelector('h1').textContent") == hostile
    assert browser.js("document.querySelectorAll('main img, main script').length") == 0
    assert browser.problems() == []
    assert set(browser.requests()) == {path.resolve().as_uri()}


def test_kept_traces_travel_compressed_with_every_update(torch_report):
    """Without a browser: each embedded trace decodes (base64, gzip, JSON) to the points the PNG draws."""
    import gzip
    import re

    from collect.ledger.store import read_ledger
    from reports.data.telemetry import drawn, load_telemetry

    page, runs = torch_report
    text = page.read_text()
    assert len(text.encode()) < 5 << 20
    blobs = dict(
        re.findall(r'<script type="application/gzip\+base64" id="(tm\d+)-data">([A-Za-z0-9+/=]+)</script>', text)
    )
    records = [r for r in read_ledger(runs).records if any(t.endswith(".telemetry.meta.json") for t in r.traces)]
    assert len(blobs) == len(records) == 4
    for i, record in enumerate(records):
        data = json.loads(gzip.decompress(base64.b64decode(blobs[f"tm{i}"])))
        shown = drawn(load_telemetry(runs, record.run_id))
        assert len(data["ux"]) == shown.update_x.size and len(data["px"]) == shown.poll_x.size
        assert data["ux"] == [float(f"{v:.6g}") for v in shown.update_x]
        assert {p[0] for p in data["phases"]} >= {"compute", "checkpoint"}


def test_controller_ranking_table_in_chromium(browser, tmp_path):
    """A controller study's page: the ranking table read back from the DOM, abstentions apart, nothing fetched."""
    from gates.api import read_evaluation
    from prereg_seed_studies.controller.report import words as ct
    from reports.html.page import write_html_report
    from reports.words import palette

    fixture = REPO / "tests" / "reports" / "fixtures" / "controller-evaluation.json"
    path, _, _ = write_html_report(fixture, tmp_path / "controller.html")
    ev = read_evaluation(fixture)
    browser.open(path, 1280, 900)
    rows = browser.js("""Array.from(document.querySelectorAll('#ranking-table tbody tr')).map(r => [
        r.dataset.family, r.dataset.ranking, r.classList.contains('abstain'),
        r.cells[2].querySelector('.rank').textContent, r.cells[3].textContent, r.cells[5].textContent,
        getComputedStyle(r.cells[2].querySelector('.rank')).borderTopStyle])""")
    assert rows == [
        [
            str(c.family),
            c.ranking,
            c.ranking == "abstain",
            palette.RANKING_WORDS[c.ranking],
            ct.sampling_text(c, ev),
            c.reason,
            "dashed" if c.ranking == "abstain" else "solid",
        ]
        for c in ev.ranking
    ]
    families = browser.js(
        "Array.from(document.querySelectorAll('#families-table tbody tr')).map(r => r.dataset.family)"
    )
    assert families == [str(f.family) for f in ev.families]
    levels = browser.js("Array.from(document.querySelectorAll('h1,h2,h3,h4')).map(h => Number(h.tagName[1]))")
    assert levels[0] == 1 and all(b2 - a <= 1 for a, b2 in pairwise(levels)), levels
    browser.viewport(360, 780, mobile=True)
    assert browser.js("document.documentElement.scrollWidth") <= 360  # the wide tables scroll inside their region
    assert browser.problems() == []
    assert set(browser.requests()) == {path.resolve().as_uri()}
