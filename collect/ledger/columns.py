"""The ledger read column-wise (part of ``collect.ledger.store``, which documents the format): what ``gates evaluate`` reads.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from collect.ledger.reading import Ledger, LedgerLines, ledger_path, read_into, read_ledger
from collect.ledger.records import Provenance, RunRecord, TelemetrySummary
from prereg.errors import ToolkitError
from prereg.jsoncodec import decode_float

#: the fields of a record, in the model's order
FIELDS: tuple[str, ...] = tuple(RunRecord.model_fields)
_ALLOWED = frozenset(FIELDS)
_REQUIRED = frozenset(n for n, f in RunRecord.model_fields.items() if f.is_required())
#: lines validated together (memory of one chunk's objects)
CHUNK = 4096


class _NotColumnar(ToolkitError):  # noqa: N818 - internal signal, never escapes this module
    """A chunk holds a line the column check refuses: the ledger is read record by record instead."""


@cache
def _column_model() -> type[BaseModel]:
    """A model whose every field is a list of the ``RunRecord`` field's type (built on first use)."""
    fields: dict[str, Any] = {}
    for name, info in RunRecord.model_fields.items():
        kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[name] = (list[kind], ...)  # type: ignore[valid-type]
    return create_model("RunRecordColumns", __config__=ConfigDict(strict=True, extra="forbid"), **fields)


def _defaults() -> dict[str, Any]:
    return {
        n: f.get_default(call_default_factory=True) for n, f in RunRecord.model_fields.items() if not f.is_required()
    }


@dataclass
class LedgerColumns(LedgerLines):
    """A ledger as read for evaluation: the records' validated fields as columns (module doc)."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in FIELDS})
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)  # what readers derive once (a metric as floats)
    _rows: list[RecordRow] | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """Number of records."""
        return len(self.hashes)

    def column(self, name: str) -> list[Any]:
        """Field ``name`` of every record, in ledger order."""
        return self.columns[name]

    def row(self, index: int) -> RecordRow:
        """Record ``index`` as a view with ``RunRecord``'s attributes."""
        return RecordRow(self.columns, index)

    @property
    def records(self) -> list[RecordRow]:
        """Every record as a :class:`RecordRow` (made once)."""
        if self._rows is None:
            self._rows = [RecordRow(self.columns, i) for i in range(self.size)]
        return self._rows

    def metric_floats(self, name: str) -> list[float]:
        """Metric ``name`` of every record as a float (``RunRecord.metric``), NaN where not recorded."""
        out = []
        for metrics in self.columns["metrics"]:
            value = metrics.get(name)
            out.append(math.nan if value is None else decode_float(value) if isinstance(value, str) else value)
        return out

    @classmethod
    def from_ledger(cls, ledger: Ledger) -> LedgerColumns:
        """The columns of a ledger read record by record (the same lines, problems and hashes)."""
        out = cls(
            path=ledger.path,
            problems=ledger.problems,
            sha256=ledger.sha256,
            lines=ledger.lines,
            torn_tail=ledger.torn_tail,
            hashes=ledger.hashes,
            record_lines=ledger.record_lines,
            refused_lines=ledger.refused_lines,
            pending=ledger.pending,
            stopped_at_line=ledger.stopped_at_line,
        )
        out.columns = {name: [getattr(r, name) for r in ledger.records] for name in FIELDS}
        return out


def read_ledger_columns(runs_dir: str | os.PathLike[str]) -> LedgerColumns:
    """The ledger of ``runs_dir`` as columns (module doc); the same errors as ``read_ledger``."""
    out = LedgerColumns(path=ledger_path(runs_dir))
    chunk: list[dict[str, Any]] = []
    defaults = _defaults()

    def flush() -> None:
        if not chunk:
            return
        for data in chunk:
            if not (_REQUIRED <= data.keys() <= _ALLOWED):
                raise _NotColumnar("a line holds another set of keys")
        raw = {name: [data.get(name, defaults.get(name)) for data in chunk] for name in FIELDS}
        try:
            valid = _column_model().model_validate(raw)
        except ValidationError:
            raise _NotColumnar("a value its field refuses") from None
        for name, values in out.columns.items():
            values.extend(getattr(valid, name))
        chunk.clear()

    def sink(data: dict[str, Any]) -> None:
        chunk.append(data)
        if len(chunk) >= CHUNK:
            flush()

    try:
        read_into(out, sink)
        flush()
    except _NotColumnar:
        return LedgerColumns.from_ledger(read_ledger(runs_dir))
    return out


def _field(name: str) -> property:
    return property(lambda self: self._c[name][self.index], doc=f"The record's ``{name}``.")


class RecordRow:
    """Record ``index`` of a :class:`LedgerColumns`, read with ``RunRecord``'s attribute names."""

    __slots__ = ("_c", "index")

    def __init__(self, columns: dict[str, list[Any]], index: int) -> None:
        self._c = columns
        self.index = index

    def _get(self, name: str) -> Any:
        return self._c[name][self.index]

    if TYPE_CHECKING:  # the RunRecord fields, each read from its column
        record: str
        run_id: str
        prereg_sha256: str
        lock_seal: str | None
        stratum: dict[str, Any]
        arm: str
        replicate: int
        status: str
        metrics: dict[str, Any]
        telemetry: dict[str, TelemetrySummary]
        evidence: dict[str, str] | None
        started_at: str | None
        finished_at: str | None
        seed: int | None
        code: dict[str, Any]
        env: dict[str, Any]
        source: str | None
        error: str | None
        traces: list[str]
        trace_sha256: dict[str, str]
        provenance: Provenance | None
        looks_head: str | None
        looks_count: int | None
        prev_sha256: str | None
        record_sha256: str | None
    else:
        record = _field("record")
        run_id = _field("run_id")
        prereg_sha256 = _field("prereg_sha256")
        lock_seal = _field("lock_seal")
        stratum = _field("stratum")
        arm = _field("arm")
        replicate = _field("replicate")
        status = _field("status")
        metrics = _field("metrics")
        telemetry = _field("telemetry")
        evidence = _field("evidence")
        started_at = _field("started_at")
        finished_at = _field("finished_at")
        seed = _field("seed")
        code = _field("code")
        env = _field("env")
        source = _field("source")
        error = _field("error")
        traces = _field("traces")
        trace_sha256 = _field("trace_sha256")
        provenance = _field("provenance")
        looks_head = _field("looks_head")
        looks_count = _field("looks_count")
        prev_sha256 = _field("prev_sha256")
        record_sha256 = _field("record_sha256")

    def metric(self, name: str) -> float | None:
        """A metric as a float (NaN/inf restored), or None when not recorded (``RunRecord.metric``)."""
        value = self.metrics.get(name)
        if isinstance(value, str):
            return decode_float(value)
        return value

    def as_record(self) -> RunRecord:
        """This row as a ``RunRecord`` (validated again)."""
        return RunRecord.model_validate({name: self._get(name) for name in FIELDS})


#: a record as the gates read it: a model from ``read_ledger`` or a row of ``read_ledger_columns``
Record = RunRecord | RecordRow

__all__ = ["CHUNK", "FIELDS", "LedgerColumns", "Record", "RecordRow", "read_ledger_columns"]
