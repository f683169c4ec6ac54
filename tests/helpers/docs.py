"""The documentation's marked blocks (tests/test_docs.py's markers), one run of a page's blocks and its check.

A page's blocks run in page order in one fresh folder holding a copy of ``examples/`` and
``tests/fixtures/shared_examples/``; a worked example's tests (tests/test_byo_example.py) run their page
once per module and check both the page and the folder its commands made.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKED = re.compile(r"^<!-- (runnable|output|file: ([^>\s]+)) -->\n```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
BLOCK_TIMEOUT_S = 600  # only to catch a hang: every runnable block takes seconds (the byo.md runs about a minute)
COPIED = ("examples", "tests/fixtures/shared_examples")


def marked_blocks(text: str) -> list[tuple[str, str | None, str]]:
    """(kind, file name or None, body) of every marked block, in page order."""
    return [("file" if name else kind, name or None, body) for kind, name, body in MARKED.findall(text)]


def script(body: str) -> str:
    """The commands of a runnable block: its prompted lines, or every line when none is prompted."""
    lines = body.splitlines()
    prompted = [line[2:] for line in lines if line.startswith("$ ")]
    return "\n".join(prompted if prompted else lines)


@dataclass
class Block:
    """One marked block of a page and, for a runnable block that ran, its finished process."""

    number: int  # 1-based, in page order
    kind: str  # "runnable", "output" or "file"
    name: str | None
    body: str
    proc: subprocess.CompletedProcess | None = None

    @property
    def commands(self) -> str:
        return script(self.body)


@dataclass
class PageRun:
    """A page's marked blocks after one run in ``folder``; blocks after a failed runnable block did not run."""

    page: Path
    folder: Path
    blocks: list[Block] = field(default_factory=list)

    def runnable(self, first_command: str) -> Block:
        """The runnable block whose first command is ``first_command`` (there must be exactly one)."""
        found = [b for b in self.blocks if b.kind == "runnable" and b.commands.splitlines()[:1] == [first_command]]
        assert len(found) == 1, f"{self.page.name}: {len(found)} runnable blocks start with {first_command!r}"
        return found[0]


def run_page(page: Path, folder: Path) -> PageRun:
    """Run ``page``'s marked blocks in order in ``folder`` (a fresh, empty folder): file blocks are written,
    runnable blocks run with bash (``set -euo pipefail``, ``NO_COLOR=1``, ``COLUMNS=80``, this interpreter's
    console scripts first on PATH); the run stops after the first runnable block that fails."""
    for copied in COPIED:
        shutil.copytree(ROOT / copied, folder / copied)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
        "COLUMNS": "80",
        "MPLBACKEND": "Agg",
    }
    result = PageRun(page, folder)
    for number, (kind, name, body) in enumerate(marked_blocks(page.read_text(encoding="utf-8")), start=1):
        block = Block(number, kind, name, body)
        result.blocks.append(block)
        if kind == "file":
            assert name and not Path(name).is_absolute() and ".." not in Path(name).parts, name
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(body, encoding="utf-8")
        elif kind == "runnable":
            block.proc = subprocess.run(
                ["bash", "-c", "set -euo pipefail\n" + block.commands],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
            if block.proc.returncode != 0:
                break
    return result


def check_page_run(ran: PageRun) -> None:
    """Every runnable block of the page ran, exited 0 and printed no traceback; every output block shows
    only lines the runnable block before it printed."""
    name_of_page, printed = ran.page.relative_to(ROOT), set[str]()
    for block in ran.blocks:
        if block.kind == "output":
            stale = [line for line in block.body.splitlines() if line.rstrip() not in printed and line != "..."]
            assert not stale, f"{name_of_page} block {block.number} shows lines the block before did not print: {stale}"
        elif block.kind == "runnable":
            proc = block.proc
            assert proc is not None
            assert proc.returncode == 0, (
                f"{name_of_page} runnable block {block.number} exited {proc.returncode}:\n"
                f"{block.commands}\n--- stdout\n{proc.stdout[-3000:]}\n"
                f"--- stderr\n{proc.stderr[-3000:]}"
            )
            assert "Traceback" not in proc.stdout + proc.stderr, (
                f"{name_of_page} runnable block {block.number} printed a traceback:\n{proc.stderr[-3000:]}"
            )
            printed = {line.rstrip() for line in proc.stdout.splitlines()}
    assert [(b.kind, b.name, b.body) for b in ran.blocks] == marked_blocks(ran.page.read_text(encoding="utf-8")), (
        f"{name_of_page}: the blocks that ran are not the page's blocks"
    )
