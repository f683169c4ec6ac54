"""What the JSON-lines and CSV trace readers share: a bounded read, UTF-8 text, checked numbers."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prereg.errors import InputError
from prereg.fileio import read_regular_file
from prereg.jsoncodec import loads

MAX_TRACE_BYTES = 512 << 20  # a trace read into memory is at most this large (bytes)


def trace_text(path: Path, data: bytes | None, what: str) -> str:
    """The file's text (``data``: its bytes, already read and checked against the ledger; else a
    bounded read of ``path`` that never follows a link); ``InputError`` when it is not UTF-8."""
    try:
        raw = read_regular_file(path, MAX_TRACE_BYTES, follow_links=False) if data is None else data
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text ({what})") from None
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror or err})") from None


def json_rows(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of each non-blank line; ``ValueError`` for a line that is not
    one JSON object (duplicate keys and bare NaN literals included: ``prereg.jsoncodec``)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as err:
            raise LineError(number, str(err)) from None
        if not isinstance(row, dict):
            raise LineError(number, "not a JSON object")
        yield number, row


class LineError(ValueError):
    """A line of a JSON-lines trace that is not one JSON object (``number``: 1-based)."""

    def __init__(self, number: int, message: str) -> None:
        super().__init__(message)
        self.number = number


def finite(value: Any, what: str) -> float:
    """``value`` as a float when it is a finite JSON number (never a bool); ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} is not a finite number ({value!r})")
    return float(value)


__all__ = ["MAX_TRACE_BYTES", "LineError", "finite", "json_rows", "trace_text"]
