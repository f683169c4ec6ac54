"""The progress trace ``traces/<run_id>.progress.csv`` and a command run's event fields (quick, no subprocess).

* ``write_progress`` / ``read_progress`` round-trip every row exactly (NaN loss kept, empty tokens and
  loss kept empty), atomically (no temporary file left beside it);
* a malformed file is one ``InputError`` naming the line and the cell, never a traceback;
* a ``Progress`` that breaks the format cannot be made, so it can never be written;
* the event reader keeps a command run's ``attempt`` and ``step``, refuses bad ones, and still reads
  the built-in collectors' rows (which have neither).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from collect.traces.events import read_events
from collect.traces.progress import COLUMNS, SUFFIX, Progress, read_progress, write_progress
from prereg.errors import InputError

HEADER = ",".join(COLUMNS) + "\n"


def test_rows_round_trip_exactly(tmp_path: Path) -> None:
    rows = [
        Progress(0.125, 0, 5, 640, 4.5),
        Progress(3.0, 0, 116, None, None),
        Progress(3.8, 1, 105, 13440, math.nan),
        Progress(7.25, 2, 400, 51200, 0.1 + 0.2),
    ]
    path = tmp_path / f"run-x.{SUFFIX}"
    write_progress(path, rows)
    assert path.read_text().splitlines()[0] == "t_s,attempt,step,tokens,loss"
    assert path.read_text().splitlines()[2] == "3.0,0,116,,"
    back = read_progress(path)
    assert [(p.t_s, p.attempt, p.step, p.tokens) for p in back] == [(p.t_s, p.attempt, p.step, p.tokens) for p in rows]
    assert back[0].loss == 4.5 and back[1].loss is None and math.isnan(back[2].loss or 0.0)
    assert back[3].loss == 0.1 + 0.2  # repr: every digit kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # nothing temporary left
    assert repr(read_progress(path, path.read_bytes())) == repr(back)  # the bytes given (already checked): the same


@pytest.mark.parametrize(
    "body, words",
    [
        ("1.0,0,x,,\n", "line 2: malformed progress row (step must be an integer >= 0 (got 'x'))"),
        ("1.0,0,1.5,,\n", "line 2: malformed progress row (step must be an integer >= 0"),
        ("1.0,-1,1,,\n", "line 2: malformed progress row (attempt must be an integer >= 0 (got -1))"),
        ("1.0,0,1,2.0,\n", "line 2: malformed progress row (tokens must be an integer >= 0 (got '2.0'))"),
        ("1.0,0,1,,abc\n", "line 2: malformed progress row (loss must be a number or empty (got 'abc'))"),
        ("inf,0,1,,\n", "line 2: malformed progress row (t_s must be a finite number of seconds"),
        ("soon,0,1,,\n", "line 2: malformed progress row (t_s must be a number of seconds"),
        ("1.0,0,1\n", "line 2: malformed progress row (expected the 5 columns of the header)"),
        ("1.0,0,1,,,\n", "line 2: malformed progress row (expected the 5 columns of the header)"),
        ("1.0,0,1,,\n2.0,0,2,,\n3.0,1,z,,\n", "line 4: malformed progress row"),
    ],
)
def test_a_malformed_row_is_one_message_naming_its_line(tmp_path: Path, body: str, words: str) -> None:
    path = tmp_path / "p.progress.csv"
    with pytest.raises(InputError) as err:
        read_progress(path, (HEADER + body).encode())
    assert str(err.value).startswith(f"{path}: ") and words in str(err.value)


def test_a_file_that_is_not_a_progress_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.progress.csv"
    with pytest.raises(InputError, match="not a progress trace \\(missing column step"):
        read_progress(path, b"t_s,attempt\n1,0\n")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_progress(path, b"t_s,attempt,step\n\xff\n")
    with pytest.raises(InputError, match="no such file"):
        read_progress(tmp_path / "missing.progress.csv")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"t_s": math.inf, "attempt": 0, "step": 0},
        {"t_s": 1.0, "attempt": -1, "step": 0},
        {"t_s": 1.0, "attempt": 0, "step": 1.5},
        {"t_s": 1.0, "attempt": True, "step": 0},
        {"t_s": 1.0, "attempt": 0, "step": 0, "tokens": -3},
        {"t_s": 1.0, "attempt": 0, "step": 0, "loss": "low"},
    ],
)
def test_a_row_breaking_the_format_cannot_be_made(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Progress(**kwargs)


def test_event_rows_keep_a_command_runs_attempt_and_step(tmp_path: Path) -> None:
    rows = [
        {
            "id": 0,
            "kind": "attempt",
            "site": None,
            "start_ns": 0,
            "end_ns": 3_000_000_000,
            "aborted": True,
            "attempt": 0,
            "step": 104,
        },
        {
            "id": 1,
            "kind": "failure",
            "site": None,
            "start_ns": 3_000_000_000,
            "end_ns": 3_000_000_000,
            "attempt": 0,
            "step": 104,
            "planned": 3.0,
        },
        {"id": 2, "kind": "restart", "site": None, "start_ns": 3_000_000_000, "end_ns": 3_500_000_000, "attempt": 1},
        {"id": 3, "kind": "checkpoint", "site": None, "start_ns": 10, "end_ns": 20, "depth": 0, "marks": 1},
        {"id": 4, "kind": "compute", "site": 1, "start_ns": 0, "end_ns": 5, "work": 3, "steps": [0, 2]},
    ]
    path = tmp_path / "r.events.jsonl"
    events = read_events(path, "".join(json.dumps(r) + "\n" for r in rows).encode())
    assert [(e.kind, e.attempt, e.step, e.aborted) for e in events] == [
        ("attempt", 0, 104, True),
        ("failure", 0, 104, False),
        ("restart", 1, None, False),
        ("checkpoint", None, None, False),
        ("compute", None, None, False),
    ]
    assert events[1].start == events[1].end == 3.0
    for bad, words in (
        ({"attempt": -1}, "'attempt' is not an integer >= 0 or null (-1)"),
        ({"step": "104"}, "'step' is not an integer >= 0 or null ('104')"),
        ({"step": True}, "'step' is not an integer >= 0 or null (True)"),
    ):
        row = {"kind": "failure", "site": None, "start_ns": 1, "end_ns": 1, **bad}
        with pytest.raises(InputError, match=re.escape(f"line 1: malformed event ({words})")):
            read_events(path, (json.dumps(row) + "\n").encode())
