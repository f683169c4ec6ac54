"""What the JSON-lines and CSV trace readers share: a bounded read, UTF-8 text, checked numbers."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from prereg.errors import InputError
from prereg.fileio import read_regular_file
from prereg.jsoncodec import loads

T = TypeVar("T")
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


def json_rows(text: str | Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of each non-blank line of ``text`` (a whole text, or its lines one
    at a time); ``ValueError`` for a line that is not one JSON object (duplicate keys and bare NaN
    literals included: ``prereg.jsoncodec``)."""
    lines = text.splitlines() if isinstance(text, str) else text
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as err:
            raise LineError(number, str(err)) from None
        if not isinstance(row, dict):
            raise LineError(number, "not a JSON object")
        yield number, row


class LineError(InputError, ValueError):
    """A line of a JSON-lines trace that is not one JSON object (``number``: 1-based)."""

    def __init__(self, number: int, message: str) -> None:
        super().__init__(message)
        self.number = number


def parsed_rows(
    path: Path, data: bytes | None, what: str, row_name: str, parse: Callable[[dict[str, Any]], T]
) -> list[T]:
    """``parse`` of each row of a JSON-lines trace (:func:`trace_text`, :func:`json_rows`); a row
    ``parse`` refuses (``ValueError``/``TypeError``) or a line that is not one object is one
    ``InputError``: ``PATH: line N: malformed <row_name> (why)``."""
    out: list[T] = []
    try:
        for number, row in json_rows(trace_text(path, data, what)):
            try:
                out.append(parse(row))
            except (ValueError, TypeError) as err:
                raise InputError(f"{path}: line {number}: malformed {row_name} ({err})") from None
    except LineError as err:
        raise InputError(f"{path}: line {err.number}: malformed {row_name} ({err})") from None
    return out


def finite(value: Any, what: str) -> float:
    """``value`` as a float when it is a finite JSON number (never a bool); ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} is not a finite number ({value!r})")
    return float(value)


__all__ = ["MAX_TRACE_BYTES", "LineError", "finite", "json_rows", "parsed_rows", "trace_text"]
