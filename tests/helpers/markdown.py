"""Reading a Markdown report back: its tables, unescaped."""

from __future__ import annotations

import re

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
ESCAPE = re.compile(r"\\([\\`*_{}\[\]<>#|~])")


def unescape(text: str) -> str:
    """``text`` with the Markdown escapes of ``md_escape`` undone."""
    return ESCAPE.sub(r"\1", text)


def tables(md: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Every GFM table outside code blocks, keyed by the nearest heading above it."""
    found: dict[str, tuple[list[str], list[list[str]]]] = {}
    heading, in_code, lines = "", False, md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            heading = line.lstrip("# ")
        elif (
            not in_code and line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|( --- \|)+", lines[i + 1])
        ):
            split = lambda row: [c.strip() for c in UNESCAPED_PIPE.split(row)[1:-1]]  # noqa: E731
            header, rows = split(line), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(split(lines[i]))
                i += 1
            assert all(len(r) == len(header) for r in rows), heading
            found[heading] = (header, rows)
            continue
        i += 1
    return found
