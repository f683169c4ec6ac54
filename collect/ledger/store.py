"""The run ledger (``RUNS/ledger.jsonl``): one JSON object per finished run, append-only.

This module owns the ledger format; every writer and reader goes through it.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from collect.ledger import journal as batch_journal
from collect.ledger.chain import ChainReport, trace_problems, verify_chain
from collect.ledger.files import hash_trace, open_no_follow, trace_path, write_all
from collect.ledger.hashing import record_hash, sealed_line
from collect.ledger.looks import looks_evidence
from collect.ledger.reading import MAX_BAD_LINES, MAX_LEDGER_BYTES, Ledger, LedgerProblem, ledger_path, read_ledger
from collect.ledger.records import (
    GENESIS,
    LEDGER_NAME,
    RECORD_FORMAT,
    TRACES_DIR,
    NonFinite,
    PhaseSupport,
    RunId,
    RunRecord,
    Scalar,
    Sha256,
    TelemetrySummary,
    encode_metric,
    imported_run_id,
    run_id,
)
from prereg.errors import InputError
from prereg.fileio import fsync_dir


class LedgerAppender:
    """The single writer's handle: knows the chain head, appends records chained to it.

    Use it only while holding the runs folder's lock (``collect.ledger.runlock``): the head it read
    must stay the head while it appends.
    """

    def __init__(self, runs_dir: str | os.PathLike[str], current: Ledger | None = None) -> None:
        """``current``: the ledger as the caller just read it under the writer lock (else read here)."""
        self.folder = Path(runs_dir)
        self.folder.mkdir(parents=True, exist_ok=True)
        complete_pending(self.folder)
        if current is None:
            current = read_ledger(self.folder)
        self.head = head_of(current)
        self.looks_seen = _looks_now(self.folder)

    def _chained(self, record: RunRecord) -> tuple[bytes, RunRecord]:
        data = record.model_dump(mode="json", exclude_none=True)
        data.pop("record_sha256", None)
        if data.get("traces") and not data.get("trace_sha256"):
            data["trace_sha256"] = {t: hash_trace(self.folder, t, fsync=True) for t in data["traces"]}
        if self.looks_seen is not None and "looks_head" not in data:
            data["looks_head"], data["looks_count"] = self.looks_seen
        data["prev_sha256"] = self.head
        line, digest = sealed_line(data)
        chained = record.model_copy(
            update={
                "prev_sha256": self.head,
                "record_sha256": digest,
                "trace_sha256": data.get("trace_sha256", {}),
                "looks_head": data.get("looks_head"),
                "looks_count": data.get("looks_count"),
            }
        )
        return line + b"\n", chained

    def append(self, records: list[RunRecord], journal: bool | None = None) -> list[RunRecord]:
        """Append durably: one ``write`` for the batch, then fsync (and the folder's when created).
        Returns the records as written (chained: ``prev_sha256``, ``record_sha256``); ``head`` is the
        new head hash. A crash leaves a batch (``write``) whole or absent; a single record written
        without the journal, absent with at most a torn last line."""
        payloads, written = [], []
        head = self.head
        for r in records:
            payload, chained = self._chained(r)
            payloads.append(payload)
            written.append(chained)
            self.head = chained.record_sha256 or self.head
        new_head, self.head = self.head, head
        self.write(b"".join(payloads), new_head, journal)
        return written

    def write(self, payload: bytes, head: str, journal: bool | None = None) -> None:
        """Append ``payload`` -- whole lines chained from ``self.head`` up to ``head`` -- durably, as
        ``append`` does; ``head`` becomes the head. A batch of more than one line (or any, with
        ``journal``) goes through the journal (``collect.ledger.journal``): a crash leaves it whole
        or absent, never a part of it. A batch a dead writer committed is completed first."""
        path = ledger_path(self.folder)
        created = not os.path.lexists(path)
        fd = open_no_follow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            batch_journal.lock(fd, exclusive=True)
            batch_journal.complete_on_disk(fd, self.folder, MAX_LEDGER_BYTES)
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            data = b"\n" + payload if torn else payload  # a torn fragment stays on its own line, visible
            journaled = journal if journal is not None else payload.count(b"\n") > 1
            if journaled:
                try:
                    batch_journal.commit(self.folder, size, data)
                except OSError as err:  # the journal could not be written: the ledger was not touched
                    raise AppendFailed(
                        err.errno or errno.EIO,
                        f"the batch's journal could not be written "
                        f"({err.strerror or err}); nothing was appended: the ledger is exactly as "
                        "it was before it",
                        str(path),
                    ) from None
            try:
                write_all(fd, data, path)
                os.fsync(fd)
            except OSError as err:
                _roll_back(fd, size, path, self.folder if journaled else None, err)
            if journaled:
                batch_journal.finish(self.folder)
        finally:
            os.close(fd)
        self.head = head
        if created:
            fsync_dir(self.folder)

    def write_chunks(self, chunks: Iterable[bytes]) -> None:
        """Append a batch made chunk by chunk (whole lines chained from ``self.head``; the caller sets
        ``head`` after), durably and whole or not at all, as :meth:`write` does with a journal, in memory
        bounded by a chunk: the journal is written as the chunks come (``journal.stage_chunks``), then
        committed and copied into the ledger. An exception raised while the chunks are made leaves the
        ledger and the folder as they were."""
        path = ledger_path(self.folder)
        created = not os.path.lexists(path)
        size, torn = 0, False
        if not created:
            size = os.stat(path).st_size  # stable: the caller holds the runs folder's writer lock
            with open(open_no_follow(path, os.O_RDONLY), "rb", closefd=True) as fh:
                torn = size > 0 and os.pread(fh.fileno(), 1, size - 1) != b"\n"

        def lines() -> Iterator[bytes]:
            if torn:
                yield b"\n"  # a torn fragment stays on its own line, visible
            yield from chunks

        if not batch_journal.stage_chunks(self.folder, size, lines()) - (1 if torn else 0):
            batch_journal.drop_staged(self.folder)  # no new line: nothing to append
            return
        fd = open_no_follow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            batch_journal.lock(fd, exclusive=True)
            if os.fstat(fd).st_size != size:
                batch_journal.drop_staged(self.folder)
                raise AppendFailed(
                    errno.EAGAIN, "the ledger changed while the batch was made; nothing was appended", str(path)
                )
            batch_journal.commit_staged(self.folder)
            try:
                for piece in batch_journal.committed_pieces(self.folder):
                    write_all(fd, piece, path)
                os.fsync(fd)
            except OSError as err:
                _roll_back(fd, size, path, self.folder, err)
            batch_journal.finish(self.folder)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.folder)


class AppendFailed(InputError, OSError):
    """An append that could not be written (disk full, I/O error; exit 2, like any path that cannot
    be written): an ``OSError`` with ``errno``, ``strerror`` and the ledger as ``filename``."""

    def __init__(self, errno_: int, strerror: str, filename: str) -> None:
        OSError.__init__(self, errno_, strerror, filename)
        self.message = f"{filename}: {strerror}"
        self.details = None


def _roll_back(fd: int, size: int, path: Path, journaled: Path | None, err: OSError) -> None:
    """After a failed append: the ledger truncated back to its ``size`` before it (fsynced), the
    batch's journal removed, then ``AppendFailed`` naming the file. When the truncation fails too,
    a journaled batch keeps its journal (readers and the next writer complete it whole), and the
    error says that a torn last line may remain."""
    reason = err.strerror or str(err)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as undo:
        kept = " (its journal completes it whole)" if journaled else "; a torn last line may remain"
        raise AppendFailed(
            err.errno or errno.EIO,
            f"the append failed ({reason}) and could not be undone ({undo.strerror or undo}){kept}",
            str(path),
        ) from None
    if journaled is not None:
        batch_journal.finish(journaled)
    raise AppendFailed(
        err.errno or errno.EIO,
        f"the append failed ({reason}); nothing was appended: the ledger is exactly as it was before it",
        str(path),
    ) from None


def _looks_now(folder: Path) -> tuple[str, int] | None:
    """The look ledger's head and record count as the writer starts (``collect.ledger.looks``), which
    every record it appends carries: evidence, inside the hash chain, that those looks existed."""
    try:
        return looks_evidence(folder)
    except OSError as err:
        raise InputError(
            f"{err.filename or folder}: the look ledger cannot be read ({err.strerror or err}); nothing was recorded"
        ) from None


def head_of(ledger: Ledger) -> str:
    """The hash the next record chains to: the last record's (``GENESIS`` for an empty ledger)."""
    return ledger.hashes[-1] if ledger.hashes else GENESIS


def complete_pending(runs_dir: str | os.PathLike[str]) -> None:
    """Complete on disk a batch a writer committed and did not finish (``collect.ledger.journal``);
    for writers, holding the runs folder's lock. Readers see such a batch whole without it."""
    path = ledger_path(runs_dir)
    if not os.path.lexists(batch_journal.pending_path(Path(runs_dir))) or not os.path.lexists(path):
        return
    fd = open_no_follow(path, os.O_RDWR | os.O_APPEND)
    try:
        batch_journal.lock(fd, exclusive=True)
        batch_journal.complete_on_disk(fd, Path(runs_dir), MAX_LEDGER_BYTES)
    finally:
        os.close(fd)


def append_records(
    runs_dir: str | os.PathLike[str],
    records: list[RunRecord],
    current: Ledger | None = None,
    journal: bool | None = None,
) -> list[RunRecord]:
    """Append records durably, chained to the ledger's head (``current``: the ledger as just read
    under the writer lock); creates the folder if needed. Returns the records as written. More
    than one record (or any, with ``journal``) are appended whole or not at all."""
    return LedgerAppender(runs_dir, current).append(records, journal)


__all__ = [
    "AppendFailed",
    "GENESIS",
    "LEDGER_NAME",
    "MAX_BAD_LINES",
    "MAX_LEDGER_BYTES",
    "RECORD_FORMAT",
    "TRACES_DIR",
    "ChainReport",
    "Ledger",
    "LedgerAppender",
    "LedgerProblem",
    "NonFinite",
    "PhaseSupport",
    "RunId",
    "RunRecord",
    "Scalar",
    "Sha256",
    "TelemetrySummary",
    "append_records",
    "complete_pending",
    "encode_metric",
    "hash_trace",
    "head_of",
    "imported_run_id",
    "ledger_path",
    "read_ledger",
    "record_hash",
    "run_id",
    "trace_path",
    "trace_problems",
    "verify_chain",
]
