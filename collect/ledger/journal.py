"""A batch of records appended to the ledger whole or not at all, even across ``kill -9`` (part of
``collect.ledger.store``).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from collect.ledger.files import open_no_follow, write_all
from collect.ledger.records import LEDGER_NAME
from prereg.fileio import fsync_dir
from prereg.jsoncodec import loads

PENDING_NAME = ".ledger.pending"
FORMAT = "collect/ledger-pending/v1"


@dataclass
class Pending:
    """A journal as read: the batch ``data`` to be at ``offset`` in the ledger (``problem``: why not)."""

    path: Path
    offset: int = 0
    data: bytes = b""
    problem: str | None = None


def pending_path(folder: Path) -> Path:
    """``RUNS/.ledger.pending``."""
    return folder / PENDING_NAME


def lock(fd: int, exclusive: bool) -> None:
    """``flock`` the ledger (shared for a reader, exclusive for the writer's append); a file system
    without ``flock`` goes unlocked (the writer lock still keeps writers apart)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except OSError as err:
        if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


def read_pending(folder: Path, limit: int) -> Pending | None:
    """The journal in ``folder`` (None when there is none), checked against its own header."""
    path = pending_path(folder)
    if not os.path.lexists(path):
        return None
    fd = open_no_follow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(limit + 1)
    header, _, data = raw.partition(b"\n")
    try:
        info = loads(header)
        offset, length, sha = int(info["offset"]), int(info["length"]), str(info["sha256"])
        if info.get("format") != FORMAT or offset < 0:
            raise ValueError("not a journal of this format")
    except (ValueError, KeyError, TypeError, AttributeError):
        return Pending(path, problem=f"{path}: not a readable journal of a batch; ignored")
    if len(data) != length or hashlib.sha256(data).hexdigest() != sha:
        return Pending(path, problem=f"{path}: its batch does not match its header; ignored")
    return Pending(path, offset, data)


def _missing(size: int, there: bytes, pending: Pending) -> bytes | None:
    """The part of the batch a ledger of ``size`` bytes lacks (b"" when it is all there), from
    ``there``: the ledger's bytes from the batch's offset on, up to one more than the batch. None
    when the journal does not apply: the ledger is shorter than the offset, or it does not go on
    with the batch, or it goes on past it."""
    data = pending.data
    if pending.problem or size < pending.offset or len(there) > len(data) or not data.startswith(there):
        return None
    return data[len(there) :]


def completed_view(raw: bytes, pending: Pending | None) -> tuple[bytes, str | None]:
    """The ledger's bytes as a reader sees them: with a committed batch completed. ``(bytes, note)``."""
    if pending is None:
        return raw, None
    missing = _missing(len(raw), raw[pending.offset : pending.offset + len(pending.data) + 1], pending)
    if missing is None:
        return raw, pending.problem or f"{pending.path}: does not continue the ledger; ignored"
    if not missing:
        return raw, None
    return raw + missing, (
        f"{pending.path}: a committed batch ({len(pending.data)} bytes) whose writer stopped "
        f"before it was all written, read whole; the next writer completes it on disk"
    )


def complete_on_disk(fd: int, folder: Path, limit: int) -> None:
    """Complete a committed batch left by a writer that died (``fd``: the ledger, locked exclusive),
    then remove its journal; ``OSError`` if the journal does not continue the ledger."""
    try:
        os.unlink(pending_path(folder).with_name(PENDING_NAME + ".tmp"))  # a journal never committed
    except FileNotFoundError:
        pass
    pending = read_pending(folder, limit)
    if pending is None:
        return
    size = os.fstat(fd).st_size
    there = os.pread(fd, len(pending.data) + 1, pending.offset) if size >= pending.offset else b""
    missing = _missing(size, there, pending)
    if missing is None:
        raise OSError(
            errno.EINVAL,
            "a journal of a batch that does not continue the ledger: look at it, and remove "
            "it if the ledger is as it should be; nothing is appended until then",
            str(pending.path),
        )
    if missing:
        write_all(fd, missing, folder / LEDGER_NAME)
        os.fsync(fd)
    finish(folder)


def commit(folder: Path, offset: int, data: bytes) -> None:
    """Step 1: the journal of ``data``, to be appended at ``offset``, durably in place."""
    header = json.dumps(
        {"format": FORMAT, "offset": offset, "length": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    ).encode()
    tmp = pending_path(folder).with_name(PENDING_NAME + ".tmp")
    fd = open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, header + b"\n" + data, tmp)
        os.fsync(fd)
    except OSError:  # disk full: no journal, nothing appended, the ledger untouched
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, pending_path(folder))
    fsync_dir(folder)


#: the header slot of a journal written in chunks (its header is known only after the last chunk):
#: the header JSON padded with spaces to this many bytes, then the newline (any JSON reader takes it)
HEADER_SLOT = 256
_COPY_BYTES = 8 << 20


def stage_chunks(folder: Path, offset: int, chunks: Iterable[bytes]) -> int:
    """Step 1 for a batch made chunk by chunk: its journal written and fsynced under the temporary name,
    the header (``offset``, the batch's ``length`` and ``sha256``) put in its slot when the last chunk is
    in; returns the length. Nothing is committed yet (:func:`commit_staged`): an error while the chunks
    are made (a refused row) or written removes the temporary file, and the ledger was never touched."""
    tmp = pending_path(folder).with_name(PENDING_NAME + ".tmp")
    fd = open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    digest, length = hashlib.sha256(), 0
    try:
        write_all(fd, b" " * HEADER_SLOT + b"\n", tmp)
        for chunk in chunks:
            write_all(fd, chunk, tmp)
            digest.update(chunk)
            length += len(chunk)
        header = json.dumps({"format": FORMAT, "offset": offset, "length": length, "sha256": digest.hexdigest()})
        os.pwrite(fd, header.encode().ljust(HEADER_SLOT), 0)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return length


def commit_staged(folder: Path) -> None:
    """Step 1 completed for a staged journal: renamed into place, the folder fsynced (committed)."""
    os.replace(pending_path(folder).with_name(PENDING_NAME + ".tmp"), pending_path(folder))
    fsync_dir(folder)


def drop_staged(folder: Path) -> None:
    """A staged journal that will not be committed, removed."""
    pending_path(folder).with_name(PENDING_NAME + ".tmp").unlink(missing_ok=True)


def committed_pieces(folder: Path) -> Iterator[bytes]:
    """Step 2 for a committed journal written by :func:`stage_chunks`: its batch, in pieces of bounded
    size, for the writer to append to the ledger (and fsync)."""
    source = open_no_follow(pending_path(folder), os.O_RDONLY)
    try:
        position = HEADER_SLOT + 1
        while piece := os.pread(source, _COPY_BYTES, position):
            yield piece
            position += len(piece)
    finally:
        os.close(source)


def finish(folder: Path) -> None:
    """Step 3: the journal removed (a crash before this is harmless: the batch is all there)."""
    os.unlink(pending_path(folder))
    fsync_dir(folder)


__all__ = [
    "PENDING_NAME",
    "Pending",
    "commit",
    "commit_staged",
    "complete_on_disk",
    "completed_view",
    "committed_pieces",
    "drop_staged",
    "finish",
    "lock",
    "pending_path",
    "read_pending",
    "stage_chunks",
]
