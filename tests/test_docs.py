"""The documentation holds: README.md and docs/*.md link only inside the repository, to files and
headings that exist; the repository paths they name exist; their runnable blocks run; the Python of
docs/estimators.md runs as written.

Markers a page may use (each on the line right before a fenced block):

- ``<!-- file: NAME -->``: the block's text is written to NAME in the page's working folder.
- ``<!-- runnable -->``: the block runs there with bash (``set -euo pipefail``), through the
  installed console scripts (``NO_COLOR=1``, ``COLUMNS=80``), and must exit 0. In a block with
  ``$ `` prompts only the prompted lines run (the rest is output, shown but not compared);
  otherwise every line runs.
- ``<!-- output -->``: every line of the block but ``...`` is a line the runnable block before it
  printed (trailing spaces aside), so an excerpt of real output cannot go stale.

Each page gets one fresh working folder holding a copy of ``examples/`` and
``tests/fixtures/shared_examples/``; its marked blocks are handled in page order. A worked example's
page is run and checked by that example's own module (``CHECKED_BY``), which then checks the folder the
page's commands made instead of running the example again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.docs import check_page_run, marked_blocks, run_page, script

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
PAGE_IDS = [str(p.relative_to(ROOT)) for p in PAGES]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`\n]+`")
REPO_PATH = re.compile(
    r"`((?:prereg|collect|estimators|gates|reports|prereg_toolkit_cli|tests|benchmarks|examples|docs)/[\w./-]*)`"
)
# Words of the project's history, not of the product (the docs are its reference, not a notebook).
HISTORY = re.compile(
    r"\bissues? \d|pre-issue|\.\./shared|this project's sessions|\bused to (?:be|pass|fail|draw)\b", re.I
)


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def prose(text: str) -> str:
    """The page without its fenced blocks and inline code."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|<[^>]+>", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


@pytest.mark.parametrize("page", ["docs/estimators.md"])
def test_page_runs_as_written(page, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / page)
    assert blocks, f"{page} has no python blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page}[block {i}]", "exec"), namespace)  # noqa: S102 - our own documentation


def test_the_readme_is_short_and_links_every_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = {target.split("#")[0] for target in LINK.findall(prose(readme))}
    for page in (ROOT / "docs").glob("*.md"):
        assert f"docs/{page.name}" in linked, f"README.md does not link docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_link_stays_inside_the_repository_and_resolves(page: Path):
    problems = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            problems.append(f"{target}: leaves the repository")
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if ROOT not in file.parents and file != ROOT:
            problems.append(f"{target}: outside the repository")
        elif not file.exists():
            problems.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            problems.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_no_external_address_and_no_history(page: Path):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"https?://|www\.", text), f"{page.relative_to(ROOT)} names an address outside the repository"
    history = [m.group(0) for m in HISTORY.finditer(text)]
    assert not history, f"{page.relative_to(ROOT)} speaks of the project's history: {history}"


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_repository_path_named_exists(page: Path):
    """A module, test or example named in backticks exists (format names like `collect/run/v1` aside)."""
    named = {m for m in REPO_PATH.findall(page.read_text(encoding="utf-8")) if not re.search(r"/v\d+$", m)}
    missing = sorted(m for m in named if not (ROOT / m.rstrip("/")).exists())
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_marked_blocks_are_found():
    readme = marked_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [(k, n) for k, n, _ in readme] == [("file", "study.yaml"), ("runnable", None), ("output", None)]
    assert "prereg freeze study.yaml" in script(readme[1][2])
    for page in PAGES:  # a marker must sit right before a fence, or it marks nothing
        text = page.read_text(encoding="utf-8")
        markers = sum(text.count(m) for m in ("<!-- runnable -->", "<!-- output -->", "<!-- file: "))
        assert markers == len(marked_blocks(text)), page
        kinds = [k for k, _, _ in marked_blocks(text)]
        assert all(i > 0 and kinds[i - 1] == "runnable" for i, k in enumerate(kinds) if k == "output"), page


RUNNABLE = [p for p in PAGES if marked_blocks(p.read_text(encoding="utf-8"))]
# pages whose blocks a worked example's module runs once, checks with check_page_run, and then checks further
CHECKED_BY = {"docs/byo.md": "test_byo_example.py", "docs/trackers.md": "test_trackers_example.py"}


@pytest.mark.subprocess  # each runnable block is a bash child running the console scripts
@pytest.mark.parametrize(
    "page", [p for p in RUNNABLE if str(p.relative_to(ROOT)) not in CHECKED_BY], ids=lambda p: str(p.relative_to(ROOT))
)
def test_runnable_blocks_run(page: Path, tmp_path: Path):
    """Every runnable block exits 0 with no traceback, every output block shows only lines the runnable
    block before it printed."""
    check_page_run(run_page(page, tmp_path))


def test_pages_checked_elsewhere_are_checked_there():
    for page, module in CHECKED_BY.items():
        assert ROOT / page in RUNNABLE, page
        text = (ROOT / "tests" / module).read_text(encoding="utf-8")
        assert "check_page_run(" in text and page in text, f"tests/{module} does not check {page}'s run"
