"""The event trace ``traces/<run_id>.events.jsonl``: its writer and its reader (the format's owner).

One JSON object per line, in start order, written by a collector that records a run's events (a
study's outages, checkpoints and restarts, through :func:`write_events`): ``id``, ``kind``, ``site``
(null for job-wide events), ``start_ns`` / ``end_ns`` (integers, nanoseconds from the run's start),
``work``, ``steps``, ``checkpoint``, ``parent``, ``bytes``, ``aborted`` and ``work_fate``. The
``command`` collector writes the same rows for the researcher's program, with two more fields:
``attempt`` (which start of the program: 0 the first, k after the k-th restart) and ``step`` (the
program's own progress, e.g. at a fault), and the kinds ``attempt`` (one start to its end; aborted
when a fault ended it), ``failure`` (an instant: the fault), ``restart`` (from the kill to the next
start) and the program's phase marks. The reader keeps what a timeline draws (kind, site, times in
seconds, aborted, attempt and step when present) and refuses, with one ``InputError`` naming the
line, a row that is not an object, lacks a ``kind``, has a non-integer site, non-finite or reversed
times, or an ``attempt`` or ``step`` that is neither null nor an integer >= 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collect.traces.lines import finite, parsed_rows
from prereg.fileio import atomic_write

SUFFIX = "events.jsonl"


@dataclass(frozen=True)
class Event:
    """One trace event, times in seconds from the start of the run."""

    kind: str
    site: int | None
    start: float
    end: float
    aborted: bool = False
    attempt: int | None = None  # command runs: which start of the program (0 the first)
    step: int | None = None  # command runs: the program's progress (e.g. its step at a fault)


def _count(row: dict[str, Any], key: str) -> int | None:
    """``row[key]`` when it is absent, null or an integer >= 0 (never a bool); ``ValueError`` otherwise."""
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"'{key}' is not an integer >= 0 or null ({value!r})")
    return value


def write_events(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write the rows as JSON Lines (compact, keys in the rows' order), atomically and fsynced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)
    atomic_write(path, text.encode("utf-8"))


def _event(row: dict[str, Any]) -> Event:
    kind = row.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ValueError("no 'kind'")
    site = row.get("site")
    if site is not None and (isinstance(site, bool) or not isinstance(site, int)):
        raise ValueError(f"'site' is not an integer or null ({site!r})")
    start = finite(row.get("start_ns"), "'start_ns'") / 1e9
    end = finite(row.get("end_ns"), "'end_ns'") / 1e9
    if end < start:
        raise ValueError("'end_ns' is before 'start_ns'")
    return Event(kind, site, start, end, bool(row.get("aborted", False)), _count(row, "attempt"), _count(row, "step"))


def read_events(path: Path, data: bytes | None = None) -> list[Event]:
    """The events of one trace (``data``: its bytes, already read and checked; blank lines skipped)."""
    return parsed_rows(path, data, "an event trace is JSON lines", "event", _event)


__all__ = ["SUFFIX", "Event", "read_events", "write_events"]
