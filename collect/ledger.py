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
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

RECORD_FORMAT = "collect/run/v1"
LEDGER_NAME = "ledger.jsonl"
TRACES_DIR = "traces"

Evidence = Literal["measured", "modeled", "prior", "unmeasured", "unavailable"]
Scalar = Union[str, bool, int, float]
NonFinite = Literal["NaN", "Infinity", "-Infinity"]
RunId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


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


def ledger_path(runs_dir: str | os.PathLike[str]) -> Path:
    """``RUNS/ledger.jsonl``."""
    return Path(runs_dir) / LEDGER_NAME


def _serialise(record: RunRecord) -> bytes:
    data = record.model_dump(mode="json", exclude_none=True)
    line = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return line.encode() + b"\n"


def append_records(runs_dir: str | os.PathLike[str], records: list[RunRecord]) -> None:
    """Append records durably (one write per record, fsync after each); creates the folder if needed."""
    folder = Path(runs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = ledger_path(folder)
    created = not path.exists()
    payloads = [_serialise(RunRecord.model_validate(r.model_dump())) for r in records]
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if not created and path.stat().st_size > 0:
            with open(path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    os.write(fd, b"\n")  # keep a torn fragment on its own line, visible to readers
        for payload in payloads:
            os.write(fd, payload)
            os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_ledger(runs_dir: str | os.PathLike[str]) -> Ledger:
    """Read every line; invalid lines become ``problems`` (with 1-based line numbers), never data."""
    import hashlib

    path = ledger_path(runs_dir)
    ledger = Ledger(path=path)
    if not path.is_file():
        return ledger
    raw = path.read_bytes()
    ledger.sha256 = hashlib.sha256(raw).hexdigest()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is empty, or a torn record
    tail = lines[-1]
    ledger.lines = len(complete) + (1 if tail else 0)
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line.decode("utf-8"))
            ledger.records.append(RunRecord.model_validate(data))
        except (UnicodeDecodeError, json.JSONDecodeError):
            ledger.problems.append(LedgerProblem(number, "not a JSON object (a torn or corrupted line)"))
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "(record)"
            ledger.problems.append(LedgerProblem(number, f"not a valid run record: {where}: {first['msg']}"))
    if tail:
        ledger.torn_tail = True
        ledger.problems.append(
            LedgerProblem(len(complete) + 1, "torn last line (no newline: the write was interrupted); ignored")
        )
    return ledger
