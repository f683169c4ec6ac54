"""The run ledger (``RUNS/ledger.jsonl``): one JSON object per finished run, append-only.

This module owns the ledger format; every writer and reader goes through it.

Each line is a ``RunRecord`` (``record: "collect/run/v1"``). Appends are atomic at the line level:
the record is serialised to one line, written with ``O_APPEND`` in a single ``write``, flushed and
fsynced (and the folder fsynced when the file is created). A crash can leave at most a torn last
line; readers report it (with its line number) and never parse it as data, and the next append
starts on a fresh line so the torn fragment stays visible. Nothing is ever rewritten or deleted.

Non-finite metric values (a diverged loss) are kept, not dropped: JSON has no NaN, so they are
stored as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` and read back as floats;
``null`` means the metric was not recorded.

**The hash chain** (fields added to ``collect/run/v1``, optional so older ledgers still read):

* ``record_sha256``: SHA-256 of the record's canonical JSON (sorted keys, no whitespace, UTF-8)
  without this field -- a record edited after it was written no longer matches it;
* ``prev_sha256``: the previous record's hash (``GENESIS``, 64 zeros, for the first record; the
  canonical hash of the last record when appending to a ledger written before the chain existed);
* ``trace_sha256``: trace path (``traces/...``) -> SHA-256 of the trace file, hashed (and fsynced)
  by the writer just before the record is appended.

``verify_chain`` re-hashes every record and follows the links: a changed, removed, inserted or
reordered record breaks it, and it names the first record that does not fit. The *head* hash (the
last record's) is what a reviewer compares with one published when collection ended: someone who
rewrites the whole chain consistently (or drops records from its end) is caught only that way.
Ledgers written before the chain existed are reported as ``absent`` ("no hash chain"), never a crash.
Lines holding a key twice are refused (a reader could otherwise see either value). The ledger and
its traces are never opened through a symbolic link.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from collect.ledger_hashing import record_hash, sealed_line, stored_line_hash
from estimators.vocabulary import Evidence
from prereg.errors import InputError
from prereg.plan import canonical_bytes

RECORD_FORMAT: Final = "collect/run/v1"
LEDGER_NAME = "ledger.jsonl"
TRACES_DIR = "traces"
GENESIS = "0" * 64  # prev_sha256 of a chain's first record
MAX_LEDGER_BYTES = 1 << 30  # a ledger larger than this is refused, not read into memory
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]

Scalar = Union[str, bool, int, float]
NonFinite = Literal["NaN", "Infinity", "-Infinity"]
RunId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PhaseSupport(_Strict):
    """How well one phase of a run is covered by the signal (``collect.telemetry.phases``)."""

    updates: int = Field(ge=0, description="Signal updates whose whole update window lies inside the phase.")
    intervals: int = Field(ge=0, description="How many separate intervals of the phase the run had.")
    duration_ms: float = Field(ge=0, description="Summed duration of the phase's intervals, ms.")


class TelemetrySummary(_Strict):
    """What a run's sensor delivered for one signal (see the telemetry issue for how it is measured)."""

    updates: int | None = Field(default=None, ge=0, description="Counter/sensor value changes seen in the run.")
    effective_period_ms: float | None = Field(default=None, ge=0, description="Median interval between updates, ms.")
    requested_poll_ms: float | None = Field(default=None, gt=0, description="Poll interval asked for, ms.")
    achieved_poll_ms: float | None = Field(default=None, ge=0, description="Median poll interval achieved, ms.")
    bound: float | None = Field(
        default=None, ge=0, description="Measurement bound of the backed metric's value, in that metric's unit."
    )
    evidence: Evidence = "measured"
    metric_bounds: dict[str, Annotated[float, Field(ge=0)]] | None = Field(
        default=None, description="Metric -> its own measurement bound (metric units), for metrics derived "
        "from this signal other than the one ``bound`` belongs to (e.g. per-phase energies).")
    phases: dict[str, PhaseSupport] | None = Field(
        default=None, description="Phase -> the signal's support in it (updates, intervals, duration).")

    def bound_of(self, metric: str) -> float | None:
        """The measurement bound of ``metric``: its own when recorded, else ``bound``."""
        if self.metric_bounds is not None and metric in self.metric_bounds:
            return self.metric_bounds[metric]
        return self.bound


class RunRecord(_Strict):
    """One finished run."""

    record: Literal["collect/run/v1"] = RECORD_FORMAT
    run_id: RunId
    prereg_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    stratum: dict[str, Scalar]
    arm: str
    replicate: int = Field(ge=0)
    status: Literal["complete", "failed"]
    metrics: dict[str, float | NonFinite | None]
    telemetry: dict[str, TelemetrySummary] = Field(default_factory=dict)
    evidence: dict[str, Evidence] | None = Field(
        default=None, description="Metric -> the evidence class the collector gives it (None: not recorded)."
    )
    started_at: str | None = Field(
        default=None, description="UTC ISO-8601 start of the run; None: not recorded (an imported table without it)."
    )
    finished_at: str | None = None
    seed: int | None = None
    code: dict[str, Any] = Field(default_factory=dict, description="Code identity (toolkit version, git commit).")
    env: dict[str, Any] = Field(default_factory=dict, description="Environment identity (python, platform, device).")
    source: str | None = Field(default=None, description="Where the run came from, e.g. 'import:runs.csv row 3'.")
    error: str | None = Field(default=None, description="Why a failed run failed (exception type and message).")
    traces: list[str] = Field(default_factory=list, description="Trace files written beside the ledger (traces/).")
    trace_sha256: dict[str, Sha256] = Field(default_factory=dict, description="Trace path -> SHA-256 of its bytes.")
    prev_sha256: Sha256 | None = Field(default=None, description="The previous record's hash (the chain).")
    record_sha256: Sha256 | None = Field(default=None, description="SHA-256 of this record without this field.")

    def metric(self, name: str) -> float | None:
        """A metric as a float (NaN/inf restored), or None when not recorded."""
        value = self.metrics.get(name)
        if isinstance(value, str):
            return _NON_FINITE[value]
        return value


def encode_metric(value: float | None) -> float | str | None:
    """A metric value as stored: non-finite floats become their string names."""
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


@dataclass
class LedgerProblem:
    """A line of the ledger that is not a valid record (torn, not JSON, or not a record)."""

    line: int
    message: str


@dataclass
class Ledger:
    """A ledger as read: the valid records in order, the problem lines, and the file's hash."""

    path: Path
    records: list[RunRecord] = field(default_factory=list)
    problems: list[LedgerProblem] = field(default_factory=list)
    sha256: str | None = None
    lines: int = 0
    torn_tail: bool = False  # the last line was cut short (no trailing newline: a crash during an append)
    hashes: list[str] = field(default_factory=list)  # canonical hash of each record (parallel to records)
    record_lines: list[int] = field(default_factory=list)  # 1-based line of each record
    refused_lines: list[int] = field(default_factory=list)  # complete lines that are JSON but not a record


def ledger_path(runs_dir: str | os.PathLike[str]) -> Path:
    """``RUNS/ledger.jsonl``."""
    return Path(runs_dir) / LEDGER_NAME


#: the canonical bytes a record is hashed over: sorted keys, no whitespace, UTF-8 (the plan's own form)
canonical_json = canonical_bytes


def _serialise(record: RunRecord) -> bytes:
    data = record.model_dump(mode="json", exclude_none=True)
    return canonical_json(data) + b"\n"


class DuplicateKey(InputError, ValueError):
    """A JSON object holding a key twice."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link or anything but a regular file, with a clear error."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):
            raise OSError(err.errno, "is a symbolic link; never followed out of the runs folder", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "is not a regular file", str(path))
    return fd


def trace_path(runs_dir: str | os.PathLike[str], name: str) -> Path:
    """``RUNS/name`` for a trace named in a record, refusing paths outside ``RUNS/traces`` and links."""
    parts = Path(name).parts
    if len(parts) < 2 or parts[0] != TRACES_DIR or ".." in parts or Path(name).is_absolute():
        raise OSError(errno.EINVAL, "trace path outside the runs folder's traces/", name)
    folder = Path(runs_dir)
    for depth in range(1, len(parts) + 1):
        if (folder.joinpath(*parts[:depth])).is_symlink():
            raise OSError(errno.ELOOP, "is a symbolic link; never followed out of the runs folder",
                          str(folder.joinpath(*parts[:depth])))
    return folder / name


def hash_trace(runs_dir: str | os.PathLike[str], name: str, fsync: bool = False) -> str:
    """SHA-256 of ``RUNS/name`` (a trace), refusing links and paths outside ``RUNS/traces``."""
    fd = _open_no_follow(trace_path(runs_dir, name), os.O_RDONLY)
    digest = hashlib.sha256()
    try:
        if fsync:
            os.fsync(fd)
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


class LedgerAppender:
    """The single writer's handle: knows the chain head, appends records chained to it.

    Use it only while holding the runs folder's lock (``collect.runlock``): the head it read
    must stay the head while it appends.
    """

    def __init__(self, runs_dir: str | os.PathLike[str], current: Ledger | None = None) -> None:
        """``current``: the ledger as the caller just read it under the writer lock (else read here)."""
        self.folder = Path(runs_dir)
        self.folder.mkdir(parents=True, exist_ok=True)
        if current is None:
            current = read_ledger(self.folder)
        self.head = current.hashes[-1] if current.hashes else GENESIS

    def _chained(self, record: RunRecord) -> tuple[bytes, RunRecord]:
        data = record.model_dump(mode="json", exclude_none=True)
        data.pop("record_sha256", None)
        if data.get("traces") and not data.get("trace_sha256"):
            data["trace_sha256"] = {t: hash_trace(self.folder, t, fsync=True) for t in data["traces"]}
        data["prev_sha256"] = self.head
        line, digest = sealed_line(data)
        chained = record.model_copy(
            update={"prev_sha256": self.head, "record_sha256": digest, "trace_sha256": data.get("trace_sha256", {})}
        )
        return line + b"\n", chained

    def append(self, records: list[RunRecord]) -> list[RunRecord]:
        """Append durably: one ``write`` for the batch, then fsync (and the folder's when created).
        Returns the records as written (chained: ``prev_sha256``, ``record_sha256``); ``head`` is the
        new head hash. A crash leaves the batch whole, or absent with at most a torn last line."""
        path = ledger_path(self.folder)
        created = not os.path.lexists(path)
        payloads, written = [], []
        for r in records:
            payload, chained = self._chained(r)
            payloads.append(payload)
            written.append(chained)
            self.head = chained.record_sha256 or self.head
        fd = _open_no_follow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # keep a torn fragment on its own line, visible to readers
            _write_all(fd, b"".join(payloads), path)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            from prereg.fileio import fsync_dir

            fsync_dir(self.folder)
        return written


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from None
        view = view[written:]


def append_records(
    runs_dir: str | os.PathLike[str], records: list[RunRecord], current: Ledger | None = None
) -> list[RunRecord]:
    """Append records durably, chained to the ledger's head (``current``: the ledger as just read
    under the writer lock); creates the folder if needed. Returns the records as written."""
    return LedgerAppender(runs_dir, current).append(records)


def _parse_line(line: bytes) -> dict[str, Any]:
    return json.loads(line.decode("utf-8"), object_pairs_hook=_no_duplicates)


def read_ledger(runs_dir: str | os.PathLike[str]) -> Ledger:
    """Read every line; invalid lines become ``problems`` (with 1-based line numbers), never data.

    Raises ``OSError`` (with the path) for a ledger that is a symbolic link, not a regular file,
    or larger than ``MAX_LEDGER_BYTES``.
    """
    path = ledger_path(runs_dir)
    ledger = Ledger(path=path)
    if not os.path.lexists(path):
        return ledger
    fd = _open_no_follow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_LEDGER_BYTES + 1)
    if len(raw) > MAX_LEDGER_BYTES:
        raise OSError(errno.EFBIG, f"ledger larger than {MAX_LEDGER_BYTES} bytes", str(path))
    ledger.sha256 = hashlib.sha256(raw).hexdigest()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is empty, or a torn record
    tail = lines[-1]
    ledger.lines = len(complete) + (1 if tail else 0)
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            data = _parse_line(line)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            ledger.records.append(RunRecord.model_validate(data))
            stored = stored_line_hash(line)  # the line's own hash, when it is the form that was hashed
            ledger.hashes.append(stored if stored is not None and data.get("record_sha256") == stored
                                 else record_hash(data))
            ledger.record_lines.append(number)
        except DuplicateKey as err:
            ledger.refused_lines.append(number)
            ledger.problems.append(LedgerProblem(number, f"key {str(err)!r} written twice in one record: refused"))
        except RecursionError:
            ledger.refused_lines.append(number)
            ledger.problems.append(LedgerProblem(number, "nested too deeply to be a run record: refused"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            ledger.problems.append(LedgerProblem(number, "not a JSON object (a torn or corrupted line)"))
        except ValueError as err:
            ledger.refused_lines.append(number)
            if isinstance(err, ValidationError):
                first = err.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"]) or "(record)"
                message = f"not a valid run record: {where}: {first['msg']}"
            else:
                message = "not a valid run record: not a JSON object"
            ledger.problems.append(LedgerProblem(number, message))
    if tail:
        ledger.torn_tail = True
        ledger.problems.append(
            LedgerProblem(len(complete) + 1, "torn last line (no newline: the write was interrupted); ignored")
        )
    return ledger


@dataclass
class ChainReport:
    """What ``verify_chain`` found: ``status`` is intact, absent (an older ledger) or broken."""

    status: Literal["intact", "absent", "broken", "empty"]
    head: str | None
    problems: list[str] = field(default_factory=list)
    unchained: int = 0  # records written before the chain existed

    @property
    def ok(self) -> bool:
        """No evidence of tampering (an absent chain is not evidence either way)."""
        return self.status != "broken"


def _who(record: RunRecord, line: int) -> str:
    return f"ledger line {line} (run {record.run_id}, arm {record.arm})"


def verify_chain(ledger: Ledger, check_traces: bool = True) -> ChainReport:
    """Re-hash every record, follow the ``prev_sha256`` links and (optionally) re-hash the traces."""
    if not ledger.records:
        report = ChainReport("empty", None)
    else:
        report = ChainReport("intact", ledger.hashes[-1])
    expected, chained = GENESIS, False
    for record, digest, line in zip(ledger.records, ledger.hashes, ledger.record_lines):
        who = _who(record, line)
        if record.record_sha256 is None and record.prev_sha256 is None:
            report.unchained += 1
            if chained:
                report.problems.append(f"{who}: carries no hash after chained records (inserted, or its hash removed)")
        else:
            if record.record_sha256 != digest:
                report.problems.append(f"{who}: changed after it was written (its content no longer matches its hash)")
            if record.prev_sha256 != expected:
                report.problems.append(
                    f"{who}: the chain is broken before it (a record was removed, inserted or reordered before it)"
                )
            chained = True
            if check_traces:
                report.problems += _trace_problems(ledger.path.parent, record, who)
        expected = digest
    if chained:
        for line in ledger.refused_lines:
            report.problems.append(f"ledger line {line}: complete but not a valid record (edited or forged)")
    if report.problems:
        report.status = "broken"
    elif ledger.records and not chained:
        report.status = "absent"
    return report


def _trace_problems(runs_dir: Path, record: RunRecord, who: str) -> list[str]:
    return [f"{who}: trace {name} {problem}" for name, problem in trace_problems(runs_dir, record)]


def trace_problems(runs_dir: str | os.PathLike[str], record: RunRecord) -> list[tuple[str, str]]:
    """``(trace name, what is wrong)`` for each of ``record``'s traces that does not match its
    recorded SHA-256 (changed, missing, unreadable, or never hashed); empty when all match."""
    problems = []
    for name in record.traces:
        stored = record.trace_sha256.get(name)
        if stored is None:
            problems.append((name, "has no recorded hash"))
            continue
        try:
            actual = hash_trace(runs_dir, name)
        except OSError as err:
            problems.append((name, f"cannot be checked ({err.strerror or err})"))
            continue
        if actual != stored:
            problems.append((name, "changed after the run (SHA-256 differs)"))
    return problems
