"""Reading the ledger (part of ``collect.ledger.store``, which documents the format): the one parser of its lines.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from collect.ledger import journal as batch_journal
from collect.ledger.files import open_no_follow
from collect.ledger.hashing import record_hash, stored_line_hash
from collect.ledger.records import GENESIS, LEDGER_NAME, RECORD_FORMAT, RETIRED_RECORD_FORMATS, RunRecord
from prereg.errors import RetiredFormat
from prereg.jsoncodec import DuplicateKey, NestedTooDeep, NonFiniteLiteral, NotJSON, loads

MAX_LEDGER_BYTES = 1 << 30  # a ledger larger than this is refused, not read into memory

#: refused lines and records that break the hash chain after which parsing stops (the rest is
#: hashed and counted, not parsed): a ledger that damaged is refused whole, in bounded memory
MAX_BAD_LINES = 1000


@dataclass
class LedgerProblem:
    """A line of the ledger that is not a valid record (torn, not JSON, or not a record)."""

    line: int
    message: str


@dataclass
class LedgerLines:
    """What reading the lines found, whatever the sink kept of the records: problems, the file's hash."""

    path: Path
    problems: list[LedgerProblem] = field(default_factory=list)
    sha256: str | None = None
    lines: int = 0
    torn_tail: bool = False  # the last line was cut short (no trailing newline: a crash during an append)
    hashes: list[str] = field(default_factory=list)  # canonical hash of each record (parallel to records)
    record_lines: list[int] = field(default_factory=list)  # 1-based line of each record
    refused_lines: list[int] = field(default_factory=list)  # complete lines that are JSON but not a record
    pending: str | None = None  # a journal of a batch completed in this view, or ignored (collect.ledger.journal)
    stopped_at_line: int | None = None  # parsing stopped here: too many bad lines (``MAX_BAD_LINES``)


@dataclass
class Ledger(LedgerLines):
    """A ledger as read: the valid records in order, the problem lines, and the file's hash."""

    records: list[RunRecord] = field(default_factory=list)


#: a sink: takes a line's parsed object (chain fields present); keeps it as a record, or raises
#: ``ValidationError`` (the line is refused with pydantic's first error)
Sink = Callable[[dict[str, Any]], None]


def ledger_path(runs_dir: str | os.PathLike[str]) -> Path:
    """``RUNS/ledger.jsonl``."""
    return Path(runs_dir) / LEDGER_NAME


def read_ledger(runs_dir: str | os.PathLike[str]) -> Ledger:
    """Read every line; invalid lines become ``problems`` (with 1-based line numbers), never data.

    Raises ``OSError`` (with the path) for a ledger that is a symbolic link, not a regular file,
    or larger than ``MAX_LEDGER_BYTES``. The file is read line by line (hashed as it goes), never
    whole into memory; a chained line repeated byte for byte (a copy: the chain cannot hold one
    record twice) is refused without being parsed again, so a ledger padded with copies costs the
    memory of its distinct records only.
    """
    ledger = Ledger(path=ledger_path(runs_dir))
    read_into(ledger, lambda data: ledger.records.append(RunRecord.model_validate(data)))
    return ledger


def read_into(ledger: LedgerLines, sink: Sink) -> None:
    """Read ``ledger.path`` into ``ledger``, each record's object handed to ``sink`` (see :func:`read_ledger`)."""
    path = ledger.path
    if not os.path.lexists(path):
        return
    fd = open_no_follow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        batch_journal.lock(fd, exclusive=False)  # no writer is half-way through an append while we read
        if os.fstat(fd).st_size > MAX_LEDGER_BYTES:
            raise OSError(errno.EFBIG, f"ledger larger than {MAX_LEDGER_BYTES} bytes", str(path))
        pending = batch_journal.read_pending(path.parent, MAX_LEDGER_BYTES)
        if pending is None:
            read_lines(ledger, fh, sink)
            return
        raw = fh.read(MAX_LEDGER_BYTES + 1)
    if len(raw) > MAX_LEDGER_BYTES:
        raise OSError(errno.EFBIG, f"ledger larger than {MAX_LEDGER_BYTES} bytes", str(path))
    raw, ledger.pending = batch_journal.completed_view(raw, pending)  # a batch committed by a writer that died
    read_lines(ledger, io.BytesIO(raw), sink)


_CHAINED = b'"record_sha256"'


def read_lines(ledger: LedgerLines, source: IO[bytes], sink: Sink) -> None:
    """Parse ``source`` line by line into ``ledger`` (problems, the bytes' SHA-256; records to ``sink``)."""
    digest = hashlib.sha256()
    seen: dict[bytes, int] = {}  # SHA-256 of each chained line -> its line number
    number, total, tail = 0, 0, b""
    expected, breaks = GENESIS, 0  # the chain followed as the lines are read (collect.ledger.chain re-checks)
    for line in source:
        digest.update(line)
        total += len(line)
        if total > MAX_LEDGER_BYTES:
            raise OSError(errno.EFBIG, f"ledger larger than {MAX_LEDGER_BYTES} bytes", str(ledger.path))
        if not line.endswith(b"\n"):
            tail = line  # only the last line can lack its newline: a torn record
            break
        number += 1
        if ledger.stopped_at_line is not None:
            continue  # hashed and counted only
        if breaks + len(ledger.problems) > MAX_BAD_LINES:
            ledger.stopped_at_line = number
            ledger.problems.append(
                LedgerProblem(
                    number,
                    f"reading stopped here: more than {MAX_BAD_LINES} lines "
                    "before it are refused or break the hash chain, so the "
                    "rest is hashed but not parsed (a ledger this damaged is "
                    "refused whole)",
                )
            )
            continue
        line = line[:-1]
        if not line.strip():
            continue
        if _CHAINED in line:
            key = hashlib.sha256(line).digest()
            first = seen.setdefault(key, number)
            if first != number:
                ledger.refused_lines.append(number)
                ledger.problems.append(
                    LedgerProblem(number, f"a copy of line {first} (the chain cannot hold one record twice): refused")
                )
                continue
        data = _parse_into(ledger, number, line, sink)
        if data is not None:  # a record (its chain fields are strings: the sink validated them)
            digest_now = ledger.hashes[-1]
            if data["record_sha256"] != digest_now or data["prev_sha256"] != expected:
                breaks += 1
            expected = digest_now
    ledger.sha256 = digest.hexdigest()
    ledger.lines = number + (1 if tail else 0)
    if tail:
        ledger.torn_tail = True
        ledger.problems.append(
            LedgerProblem(number + 1, "torn last line (no newline: the write was interrupted); ignored")
        )


def _parse_into(ledger: LedgerLines, number: int, line: bytes, sink: Sink) -> dict[str, Any] | None:
    """One complete line: a record (handed to ``sink``, with its hash and line number; returned) or a problem."""
    try:
        data = loads(line)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if data.get("record") in RETIRED_RECORD_FORMATS:
            raise RetiredFormat(
                f"{ledger.path} line {number}",
                str(data["record"]),
                RECORD_FORMAT,
                "collect the runs again with 'collect run LOCK --out NEW_FOLDER' (or import their "
                "table with 'collect import'), then evaluate the new folder",
            )
        missing = [k for k in ("record_sha256", "prev_sha256") if data.get(k) is None]
        if missing:
            ledger.refused_lines.append(number)
            ledger.problems.append(
                LedgerProblem(
                    number,
                    f"not a valid run record: no {' or '.join(missing)} "
                    "(every stored record carries the hash chain): refused",
                )
            )
            return None
        sink(data)
        stored = stored_line_hash(line)  # the line's own hash, when it is the form that was hashed
        ledger.hashes.append(
            stored if stored is not None and data.get("record_sha256") == stored else record_hash(data)
        )
        ledger.record_lines.append(number)
        return data
    except DuplicateKey as err:
        ledger.refused_lines.append(number)
        ledger.problems.append(LedgerProblem(number, f"key {str(err)!r} written twice in one record: refused"))
    except NestedTooDeep:
        ledger.refused_lines.append(number)
        ledger.problems.append(LedgerProblem(number, "nested too deeply to be a run record: refused"))
    except NonFiniteLiteral as err:
        ledger.refused_lines.append(number)
        ledger.problems.append(LedgerProblem(number, f"not a valid run record: {err}: refused"))
    except NotJSON:
        ledger.problems.append(LedgerProblem(number, "not a JSON object (a torn or corrupted line)"))
    except ValueError as err:
        ledger.refused_lines.append(number)
        ledger.problems.append(LedgerProblem(number, refusal_message(err)))
    return None


def refusal_message(err: ValueError) -> str:
    """The problem text of a line that is JSON but not a valid record (pydantic's first error, where it has one)."""
    if isinstance(err, ValidationError):
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        return f"not a valid run record: {where}: {first['msg']}"
    return "not a valid run record: not a JSON object"
