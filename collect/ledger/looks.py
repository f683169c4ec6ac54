"""The look ledger (``RUNS/looks.jsonl``): one record per evaluation of a monitored plan's runs folder.

This module owns the format (``collect/looks/v1``); every writer and reader goes through it.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from collect.ledger import journal
from collect.ledger.chain import ChainReport
from collect.ledger.files import open_no_follow, write_all
from collect.ledger.hashing import record_hash, sealed_line
from collect.ledger.records import GENESIS, Sha256
from estimators.vocabulary import Decision
from prereg.errors import InputError
from prereg.fileio import fsync_dir
from prereg.jsoncodec import DuplicateKey, NestedTooDeep, NotJSON, loads

LOOKS_NAME = "looks.jsonl"
LOOKS_FORMAT: Final = "collect/looks/v1"
MAX_LOOKS_BYTES = 64 << 20
Status = Literal["decision", "interim_reading"]
Action = Literal["stop_success", "stop_futility", "continue", "final", "none"]


class LookRecord(BaseModel):
    """One evaluation of a monitored runs folder (module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["collect/looks/v1"] = LOOKS_FORMAT
    seq: int = Field(ge=1)
    evaluated_at: str
    prereg_sha256: Sha256
    lock_seal: Sha256 | None = None
    ledger_head: Sha256
    ledger_records: int = Field(ge=0)
    point_blocks: int = Field(ge=0)
    blocks: dict[str, int]
    look: int | None = Field(default=None, ge=1)
    status: Status
    decision: Decision
    action: Action
    nominal_alpha: dict[str, float] = Field(default_factory=dict)
    spent_alpha: dict[str, float] = Field(default_factory=dict)
    pvalue: dict[str, float] = Field(default_factory=dict)
    # gate id -> [estimate, lower, upper] at the look's level, reported scale (finite only); None: not recorded
    interval: dict[str, list[float]] | None = None
    prev_sha256: Sha256 = GENESIS
    record_sha256: Sha256 | None = None


@dataclass
class LookLedger:
    """The look ledger as read: its records in order, their hashes and lines, and the lines refused."""

    path: Path
    records: list[LookRecord] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)  # recomputed hash of each record
    record_lines: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # complete JSON lines that are not records (edited or forged)
    torn_lines: list[int] = field(default_factory=list)  # lines cut short by a crash during an append (not JSON)
    torn_tail: bool = False

    @property
    def head(self) -> str:
        """The hash the next record chains to (``GENESIS`` when empty)."""
        if not self.records:
            return GENESIS
        return self.records[-1].record_sha256 or GENESIS


def looks_path(runs_dir: str | os.PathLike[str]) -> Path:
    """``RUNS/looks.jsonl``."""
    return Path(runs_dir) / LOOKS_NAME


def read_looks(runs_dir: str | os.PathLike[str]) -> LookLedger:
    """Every line of the look ledger; lines that are not records become ``problems``, never data.
    ``OSError`` (with the path) for a link, a file that is not regular, or one over ``MAX_LOOKS_BYTES``."""
    path = looks_path(runs_dir)
    out = LookLedger(path)
    if not os.path.lexists(path):
        return out
    fd = open_no_follow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        journal.lock(fd, exclusive=False)
        raw = fh.read(MAX_LOOKS_BYTES + 1)
    if len(raw) > MAX_LOOKS_BYTES:
        raise OSError(errno.EFBIG, f"look ledger larger than {MAX_LOOKS_BYTES} bytes", str(path))
    lines = raw.split(b"\n")
    if lines[-1]:
        out.torn_tail = True  # a crash during an append: the fragment is never parsed
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            data = loads(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            record = LookRecord.model_validate(data)
        except NotJSON:
            out.torn_lines.append(number)  # a fragment a crash left: never data, not evidence of an edit
            continue
        except (DuplicateKey, NestedTooDeep, ValueError, ValidationError):
            out.problems.append(f"look ledger line {number}: complete but not a valid look record (edited or forged)")
            continue
        out.records.append(record)
        out.hashes.append(record_hash(data))
        out.record_lines.append(number)
    return out


def append_look(runs_dir: str | os.PathLike[str], fields: dict[str, Any]) -> LookRecord:
    """Append one look record, chained to the look ledger's head; ``fields`` is everything but
    ``record``, ``seq``, ``prev_sha256`` and ``record_sha256`` (set here). Returns it as written.
    ``InputError`` naming the file when it cannot be written (nothing is appended then)."""
    folder = Path(runs_dir)
    path = looks_path(folder)
    created = not os.path.lexists(path)
    try:
        fd = open_no_follow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    except OSError as err:
        raise InputError(
            f"{path}: cannot record this look ({err.strerror or err}); a monitored plan is evaluated "
            "only where its look is recorded"
        ) from None
    try:
        journal.lock(fd, exclusive=True)
        current = read_looks_fd(fd, path)
        draft, line, digest = _drafted(fields, len(current.records) + 1, current.head)
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        payload = (b"\n" if torn else b"") + line + b"\n"
        try:
            write_all(fd, payload, path)
            os.fsync(fd)
        except OSError as err:
            os.ftruncate(fd, size)
            os.fsync(fd)
            raise InputError(
                f"{path}: the look could not be recorded ({err.strerror or err}); nothing was appended"
            ) from None
    finally:
        os.close(fd)
    if created:
        fsync_dir(folder)
    return draft.model_copy(update={"record_sha256": digest})


def _drafted(fields: dict[str, Any], seq: int, prev: str) -> tuple[LookRecord, bytes, str]:
    """The look record of ``fields`` as record number ``seq`` chained to ``prev``: the model, its
    sealed line and its ``record_sha256``."""
    draft = LookRecord.model_validate({**fields, "record": LOOKS_FORMAT, "seq": seq, "prev_sha256": prev})
    data = draft.model_dump(mode="json", exclude_none=True)
    data.pop("record_sha256", None)
    line, digest = sealed_line(data)
    return draft, line, digest


def look_sha256(fields: dict[str, Any], seq: int, prev: str) -> str:
    """The ``record_sha256`` :func:`append_look` gives ``fields`` when it appends them as record ``seq``
    after the record whose hash is ``prev``: the look ledger's head once this look is recorded."""
    return _drafted(fields, seq, prev)[2]


def looks_evidence(runs_dir: str | os.PathLike[str]) -> tuple[str, int] | None:
    """``(head, count)``: the look ledger's last record hash and how many records it holds now (None:
    no look recorded). Run-ledger records carry it (``looks_head``, ``looks_count``) as evidence that
    those looks existed; :func:`verify_looks` checks it. ``OSError`` as :func:`read_looks`."""
    looks = read_looks(runs_dir)
    if not looks.records or looks.records[-1].record_sha256 is None:
        return None
    return looks.records[-1].record_sha256, len(looks.records)


def read_looks_fd(fd: int, path: Path) -> LookLedger:
    """The look ledger read through an open descriptor (the writer's, holding the lock)."""
    size = os.fstat(fd).st_size
    if size > MAX_LOOKS_BYTES:
        raise InputError(f"{path}: look ledger larger than {MAX_LOOKS_BYTES} bytes")
    raw = os.pread(fd, size, 0)
    out = LookLedger(path)
    lines = raw.split(b"\n")
    for line in lines[:-1]:
        if not line.strip():
            continue
        try:
            data = loads(line)
            out.records.append(LookRecord.model_validate(data))
        except (DuplicateKey, NestedTooDeep, NotJSON, ValueError, ValidationError):
            continue  # counted by read_looks; the chain continues from the last valid record
    return out


LooksReport = ChainReport  # what verify_looks found: the run ledger's report type (intact, broken, empty)


#: (run id, looks_head, looks_count) of a run-ledger record: the look ledger as that record saw it
LooksSeen = tuple[str, str | None, int | None]


def verify_looks(looks: LookLedger, ledger_hashes: list[str], seen_by_runs: Iterable[LooksSeen] = ()) -> LooksReport:
    """Re-hash every look record, follow its links, sequence and times, and check the run ledger it
    names (``ledger_hashes``: the run ledger's record hashes in order) and the look records the run
    ledger's records saw (``seen_by_runs``: each must still be there) -- module doc."""
    report = LooksReport("intact" if looks.records else "empty", looks.head if looks.records else None)
    position = {digest: i + 1 for i, digest in enumerate(ledger_hashes)}
    expected, last_time, last_seen = GENESIS, "", 0
    for i, (record, digest, line) in enumerate(zip(looks.records, looks.hashes, looks.record_lines, strict=True)):
        who = f"look ledger line {line} (look record {record.seq})"
        if record.record_sha256 != digest:
            report.problems.append(f"{who}: changed after it was written (its content no longer matches its hash)")
        if record.prev_sha256 != expected:
            report.problems.append(
                f"{who}: the chain is broken before it (a look record was removed, inserted or reordered)"
            )
        if record.seq != i + 1:
            report.problems.append(f"{who}: sequence number {record.seq} where {i + 1} was expected")
        if record.evaluated_at < last_time:
            report.problems.append(f"{who}: its time goes backwards ({record.evaluated_at} after {last_time})")
        seen = 0 if record.ledger_head == GENESIS else position.get(record.ledger_head)
        if seen is None:
            report.problems.append(
                f"{who}: the run ledger head it saw ({record.ledger_head[:12]}) is not in the run "
                "ledger's chain: the run ledger was truncated or rewritten after this look"
            )
        elif seen != record.ledger_records:
            report.problems.append(f"{who}: says it saw {record.ledger_records} runs, but its head is record {seen}")
        elif seen < last_seen:
            report.problems.append(f"{who}: saw fewer runs ({seen}) than the look before it ({last_seen})")
        else:
            last_seen = seen
        expected, last_time = digest, max(last_time, record.evaluated_at)
    report.problems += _vanished(looks, seen_by_runs)
    report.problems += looks.problems
    if report.problems:
        report.status = "broken"
    return report


def _vanished(looks: LookLedger, seen_by_runs: Iterable[LooksSeen]) -> list[str]:
    """The look records run-ledger records saw (hash-chained there, so they cannot be stripped) that
    the look ledger no longer holds: it was deleted, emptied, cut back or replaced after them."""
    held = {r.seq: r.record_sha256 for r in looks.records}
    missing = [
        (run, head, count)
        for run, head, count in seen_by_runs
        if head is not None and count is not None and held.get(count) != head
    ]
    if not missing:
        return []
    run, head, count = max(missing, key=lambda m: m[2] or 0)
    now = f"holds {len(looks.records)} look record(s)" if looks.records else "is missing or holds no look record"
    named = ", ".join(m[0] for m in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return [
        f"run record(s) {named} were appended after look record {count} ({head[:12] if head else '?'}), which "
        f"the look ledger no longer holds (it {now}): looks.jsonl was deleted, emptied, cut back or replaced "
        "after those looks were taken"
    ]


def looks_sha256(runs_dir: str | os.PathLike[str]) -> str | None:
    """SHA-256 of the look ledger's bytes (None when there is none)."""
    path = looks_path(runs_dir)
    if not os.path.lexists(path):
        return None
    fd = open_no_follow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        return hashlib.sha256(fh.read(MAX_LOOKS_BYTES + 1)).hexdigest()


__all__ = [
    "LOOKS_FORMAT",
    "LOOKS_NAME",
    "LookLedger",
    "LookRecord",
    "LooksReport",
    "LooksSeen",
    "append_look",
    "look_sha256",
    "looks_evidence",
    "looks_path",
    "looks_sha256",
    "read_looks",
    "verify_looks",
]
