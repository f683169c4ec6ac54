"""A run's trace is read only after it is checked against the SHA-256 its ledger record holds.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from collect.ledger.files import hash_trace, open_no_follow, trace_path
from collect.ledger.records import LEDGER_NAME, TRACES_DIR, RunRecord
from collect.traces.lines import MAX_TRACE_BYTES
from prereg.errors import IntegrityError

if TYPE_CHECKING:
    from collect.ledger.columns import Record  # a RunRecord, or a row read column-wise


def _uncheckable(record: Record, name: str) -> str | None:
    """Why ``record`` cannot vouch for its trace ``name`` (not listed, or no hash recorded), or None."""
    if name not in record.traces:
        return "is not listed in the run's record, so it cannot be checked"
    if record.trace_sha256.get(name) is None:
        return "has no recorded hash"
    return None


def trace_problem(runs_dir: str | os.PathLike[str], record: Record, name: str) -> str | None:
    """What is wrong with ``record``'s trace ``name`` (None when it matches its recorded SHA-256)."""
    why = _uncheckable(record, name)
    if why is not None:
        return why
    stored = record.trace_sha256[name]
    try:
        actual = hash_trace(runs_dir, name)
    except OSError as err:
        return f"cannot be checked ({err.strerror or err})"
    if actual != stored:
        return "changed after the run (SHA-256 differs)"
    return None


def trace_problems(runs_dir: str | os.PathLike[str], record: Record) -> list[tuple[str, str]]:
    """``(trace name, what is wrong)`` for each of ``record``'s traces that does not match its
    recorded SHA-256 (changed, missing, unreadable, or never hashed); empty when all match."""
    return [(name, problem) for name in record.traces if (problem := trace_problem(runs_dir, record, name))]


def _refused(runs_dir: str | os.PathLike[str], record: Record, name: str, why: str) -> IntegrityError:
    return IntegrityError(
        f"run {record.run_id}: trace {Path(runs_dir) / name} {why}; refusing to read it "
        "(the ledger record holds the SHA-256 the run recorded)",
        details=[name],
    )


def read_verified_trace(
    runs_dir: str | os.PathLike[str], record: Record, name: str, limit: int = MAX_TRACE_BYTES
) -> bytes:
    """The bytes of ``record``'s trace ``name``, after they hash to the SHA-256 its record holds
    (``IntegrityError``, exit 3, naming the file, otherwise)."""
    why = _uncheckable(record, name)
    if why is not None:
        raise _refused(runs_dir, record, name, why)
    stored = record.trace_sha256[name]
    try:
        fd = open_no_follow(trace_path(runs_dir, name), os.O_RDONLY)
    except OSError as err:
        raise _refused(runs_dir, record, name, f"cannot be checked ({err.strerror or err})") from None
    digest, chunks, total = hashlib.sha256(), [], 0
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _refused(runs_dir, record, name, f"is {size} bytes, more than the {limit} bytes a trace may be")
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            digest.update(chunk)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _refused(runs_dir, record, name, f"grew past {limit} bytes while it was read")
    except OSError as err:
        raise _refused(runs_dir, record, name, f"cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if digest.hexdigest() != stored:
        raise _refused(runs_dir, record, name, "changed after the run (SHA-256 differs)")
    return b"".join(chunks)


def verified_loader(runs_dir: str | os.PathLike[str], record: Record) -> Callable[[Path], bytes]:
    """A file reader for ``collect.traces.telemetry.read_trace`` that reads only ``record``'s traces,
    each checked (:func:`read_verified_trace`); a path outside ``RUNS/traces`` is refused."""
    traces = (Path(runs_dir) / TRACES_DIR).absolute()

    def load(path: Path) -> bytes:
        path = Path(path).absolute()
        name = f"{TRACES_DIR}/{path.name}"
        if path.parent != traces:
            raise _refused(runs_dir, record, name, "is not in the runs folder's traces/")
        return read_verified_trace(runs_dir, record, name)

    return load


def runs_folder_of(path: str | os.PathLike[str]) -> Path | None:
    """The runs folder a trace file lies in (``RUNS/traces/<file>`` beside ``RUNS/ledger.jsonl``), else None."""
    p = Path(path).absolute()
    if p.parent.name != TRACES_DIR:
        return None
    folder = p.parent.parent
    return folder if os.path.lexists(folder / LEDGER_NAME) else None


def trace_record(runs_dir: Path, path: str | os.PathLike[str], records: list[RunRecord]) -> tuple[RunRecord, str]:
    """The record (the last one) listing the trace file ``path`` of ``runs_dir`` and its name there;
    ``IntegrityError`` when no record lists it (it cannot be checked against the ledger)."""
    name = f"{TRACES_DIR}/{Path(path).name}"
    for record in reversed(records):
        if name in record.traces:
            return record, name
    raise IntegrityError(
        f"{runs_dir / name}: no record in {runs_dir / LEDGER_NAME} lists this trace, so it cannot "
        "be checked against the ledger; refusing to read it",
        details=[name],
    )


def no_link(path: str | os.PathLike[str], what: str) -> None:
    """``IntegrityError`` when ``path`` is a symbolic link or exists as anything but a folder."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise IntegrityError(f"{path}: {what} is a symbolic link; never followed out of the runs folder")
    if not stat.S_ISDIR(mode):
        raise IntegrityError(f"{path}: {what} is not a folder")


__all__ = [
    "MAX_TRACE_BYTES",
    "no_link",
    "read_verified_trace",
    "runs_folder_of",
    "trace_problem",
    "trace_problems",
    "trace_record",
    "verified_loader",
]
