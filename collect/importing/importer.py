"""``collect import``: bring a table of runs made elsewhere into a ledger under a frozen plan.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
import gc
import gzip
import io
import json
import zlib
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from collect.importing.columns import Declined, Seen, Table, prepare, seal
from collect.importing.rows import (
    RESERVED,
    TELEMETRY_FIELDS,
    CellError,
    check_columns,
    content,
    expected_columns,
    row_record,
)
from collect.ledger.cells import cell_key_of
from collect.ledger.folder_plan import check_folder_plan, check_folder_seals
from collect.ledger.looks import looks_evidence
from collect.ledger.runlock import lock_path, runs_lock
from collect.ledger.store import (
    Ledger,
    LedgerAppender,
    RunRecord,
    append_records,
    complete_pending,
    head_of,
    read_ledger,
)
from prereg.errors import EXIT_INTERNAL, InputError, ToolkitError
from prereg.jsoncodec import JSONFormatError, loads
from prereg.plan import read_input_file
from prereg.schema import Plan

if TYPE_CHECKING:
    from collect.importing.columns import Table
    from collect.importing.logs import TelemetryLogs

MAX_ERRORS = 20
MAX_TABLE_BYTES = 64 << 20
MAX_ROWS = 100_000


class ImportProblem(InputError, ValueError):
    """The table does not fit the plan; ``errors`` name each offending row (1-based data rows).

    With ``table`` the message names it and says nothing was imported (what ``collect import`` prints).
    """

    def __init__(self, errors: list[str], table: str | None = None) -> None:
        head = f"{table}: nothing imported; the table does not fit the plan:\n" if table is not None else ""
        super().__init__(head + "\n".join(errors), details=errors if table is not None else None)
        self.errors = errors


def _read_bounded(path: Path, gz: bool) -> bytes:
    """The file's bytes (decompressed when ``gz``), refusing more than ``MAX_TABLE_BYTES``."""
    try:
        raw = read_input_file(path, limit=MAX_TABLE_BYTES)
    except ValueError as err:
        raise ImportProblem([str(err)]) from None
    if not gz:
        return raw

    with gzip.open(io.BytesIO(raw), "rb") as fh:
        data = fh.read(MAX_TABLE_BYTES + 1)
    if len(data) > MAX_TABLE_BYTES:
        raise ImportProblem([f"{path.name}: decompresses to more than {MAX_TABLE_BYTES} bytes; refused"])
    return data


def _check_rows(count: int, path: Path) -> None:
    if count > MAX_ROWS:
        raise ImportProblem([f"{path.name}: more than {MAX_ROWS} rows; split the table"])


def read_table(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV / JSONL / Parquet file as dicts (CSV cells are strings)."""
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        text = _read_bounded(path, name.endswith(".gz")).decode("utf-8-sig")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = []
        for row in reader:
            if None in row:
                raise ImportProblem([f"row {reader.line_num - 1}: more cells than header columns"])
            rows.append(dict(row))
            _check_rows(len(rows), path)
        return rows
    if name.endswith((".jsonl", ".ndjson")):
        rows = []
        for number, line in enumerate(_read_bounded(path, False).decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = loads(line, allow_nonfinite=True, mark_overflow=True)  # NaN literal: NaN; 1e400: refused
            except JSONFormatError as err:
                raise ImportProblem([f"row {number}: {err}"]) from None
            if not isinstance(value, dict):
                raise ImportProblem([f"row {number}: not a JSON object"])
            rows.append(value)
            _check_rows(len(rows), path)
        return rows
    if name.endswith(".parquet"):
        return _read_parquet(path)
    raise ImportProblem([f"{path.name}: unknown table format (use .csv, .csv.gz, .jsonl or .parquet)"])


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    raw = _read_bounded(path, False)
    try:
        import pandas as pd  # lazy: pandas
        import pyarrow.parquet as pq  # lazy: pyarrow
    except ImportError as err:
        raise ImportProblem([f"reading Parquet needs pandas with pyarrow ({err})"]) from None
    try:
        meta = pq.ParquetFile(io.BytesIO(raw)).metadata
        _check_rows(meta.num_rows, path)
        frame = pd.read_parquet(io.BytesIO(raw))
    except ImportProblem:
        raise
    except Exception as err:  # noqa: BLE001 - pyarrow raises many types for a file that is not Parquet
        raise ImportProblem([f"{path.name}: not a readable Parquet file ({type(err).__name__})"]) from None
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars."""
    return value.item() if hasattr(value, "item") else value


def build_records(
    rows: list[dict[str, Any]],
    plan: Plan,
    plan_sha256: str,
    source: str,
    existing: Ledger,
    skipped: list[str] | None = None,
    *,
    lock_seal: str | None = None,
    traces: Mapping[str, list[str]] | None = None,
    updates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[RunRecord]:
    """The records of rows not yet in the ledger, or ``ImportProblem`` listing the rows that do not fit.

    Rows already in the ledger identically are left out (their run ids go to ``skipped``);
    ``traces``: run id -> the trace files its record lists (``collect.importing.logs``); ``updates``: run id
    -> fields its record takes besides the row's (a tracker run's ``source`` and ``provenance``).
    """
    errors: list[str] = []
    records: list[RunRecord] = []
    if not rows:
        raise ImportProblem([f"{source}: the table has no rows"])
    column_errors = check_columns(rows, plan)
    if column_errors:
        raise ImportProblem(column_errors)
    by_column: dict[str, list[tuple[int, str]]] = {}
    present = {r.run_id: r for r in existing.records}  # compared (dumped) only when a row's id is there
    seen_ids = {r.run_id: "the ledger" for r in existing.records}
    seen_keys: dict[tuple[Any, ...], str] = {}
    for r in existing.records:
        if r.status == "complete" and r.prereg_sha256 == plan_sha256:
            seen_keys[cell_key_of(r.stratum, r.arm, r.replicate)] = "the ledger"
    for number, row in enumerate(rows, start=1):
        try:
            record = row_record(row, number, plan, plan_sha256, source, lock_seal=lock_seal)
            if traces and record.run_id in traces:
                record = record.model_copy(update={"traces": traces[record.run_id]})
            if updates and record.run_id in updates:
                record = RunRecord.model_validate({**record.model_dump(), **updates[record.run_id]})
        except CellError as err:
            by_column.setdefault(err.column, []).append((number, str(err)))
            continue
        except (ValueError, ValidationError) as err:
            message = str(err).splitlines()[0] if not isinstance(err, ValidationError) else _pydantic_message(err)
            errors.append(f"row {number}: {message}")
            continue
        key = cell_key_of(record.stratum, record.arm, record.replicate)
        if (
            record.run_id in present
            and seen_ids.get(record.run_id) == "the ledger"
            and content(present[record.run_id]) == content(record)
        ):
            seen_ids[record.run_id] = f"row {number} (already in the ledger)"
            if skipped is not None:
                skipped.append(record.run_id)
            continue  # an interrupted or repeated import: this row is already in, identically
        if record.status == "complete" and key in seen_keys:
            errors.append(
                f"row {number}: arm {record.arm} in stratum {record.stratum} replicate {record.replicate} "
                f"is already in {seen_keys[key]}"
            )
        elif record.run_id in seen_ids:
            errors.append(f"row {number}: run_id {record.run_id!r} is already in {seen_ids[record.run_id]}")
        seen_ids.setdefault(record.run_id, f"row {number}")
        if record.status == "complete":
            seen_keys.setdefault(key, f"row {number}")
        records.append(record)
    for column, cells in by_column.items():  # a problem of a whole column is said once
        if len(cells) == 1:
            errors.append(f"row {cells[0][0]}: {cells[0][1]}")
        else:
            rows_text = ", ".join(str(n) for n, _ in cells[:8]) + (" ..." if len(cells) > 8 else "")
            errors.append(
                f"column {column!r}: {len(cells)} of {len(rows)} rows do not fit (rows {rows_text}); "
                f"row {cells[0][0]}: {cells[0][1]}"
            )
    if errors:
        extra = [f"... and {len(errors) - MAX_ERRORS} more"] if len(errors) > MAX_ERRORS else []
        raise ImportProblem(errors[:MAX_ERRORS] + extra)
    return records


def _pydantic_message(err: Any) -> str:
    first = err.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def import_table(
    table: Path,
    plan: Plan,
    plan_sha256: str,
    runs_dir: Path,
    skipped: list[str] | None = None,
    chain: Collection[str] | None = None,
    *,
    lock_seal: str | None = None,
    seals: Mapping[str, Collection[str]] | None = None,
    telemetry: TelemetryLogs | None = None,
    keep: bool = True,
) -> list[Any]:
    """Validate the whole table against the plan, then append the rows not yet in, in one batch.

    Returns the records as written; ``keep=False``: for a table the column-wise path takes, only their
    :class:`Appended` entries (id, start, hash), so a long table's records are never all in memory.

    Holds the runs folder's writer lock (``collect.ledger.runlock.RunsBusy`` if another writer has it).
    A folder holding runs of a plan outside ``chain`` (the lock's plan hashes, ``collect.ledger.folder_plan``;
    default: ``plan_sha256`` only), or, given ``seals`` (``collect.ledger.folder_plan.lock_seals``), runs
    that carry another seal than the lock's, is refused before anything is appended. ``telemetry``:
    each run's power log fills its telemetry columns and is kept as its trace (``collect.importing.logs``).
    """
    with _gc_paused():
        return _import_table(
            table,
            plan,
            plan_sha256,
            runs_dir,
            skipped,
            chain=chain,
            lock_seal=lock_seal,
            seals=seals,
            telemetry=telemetry,
            keep=keep,
        )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the import: it makes and keeps a few objects per cell,
    none of them cyclic, and a collector walking them again and again doubled a 100k-row import."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                # What the import made (the records returned among it) would all be "young" to the
                # collector, whose next pass would walk it all; freezing and unfreezing moves it to
                # the oldest generation instead (two list splices; nothing stays frozen).
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def frame_rows(frame: Any) -> list[dict[str, Any]]:
    """A pandas DataFrame's rows as dicts of Python scalars (a named index becomes its columns, an
    unnamed one -- row labels -- is dropped; a null in a float column is NaN, as from Parquet)."""
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()
    if len(frame) > MAX_ROWS:
        raise ImportProblem([f"the DataFrame has more than {MAX_ROWS} rows; split the table"])
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def import_rows(
    rows: list[dict[str, Any]],
    source: str,
    plan: Plan,
    plan_sha256: str,
    runs_dir: Path,
    skipped: list[str] | None = None,
    chain: Collection[str] | None = None,
    *,
    lock_seal: str | None = None,
    seals: Mapping[str, Collection[str]] | None = None,
    updates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[RunRecord]:
    """``import_table`` for rows already read (e.g. from a DataFrame); ``source`` names them in records;
    ``updates``: run id -> fields its record takes besides the row's (``build_records``)."""
    with _gc_paused():
        return _import_table(
            None, plan, plan_sha256, runs_dir, skipped, (rows, source), chain, lock_seal, seals, updates=updates
        )


def _import_table(
    table: Path | None,
    plan: Plan,
    plan_sha256: str,
    runs_dir: Path,
    skipped: list[str] | None,
    given: tuple[list[dict[str, Any]], str] | None = None,
    chain: Collection[str] | None = None,
    lock_seal: str | None = None,
    seals: Mapping[str, Collection[str]] | None = None,
    telemetry: TelemetryLogs | None = None,
    keep: bool = True,
    updates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Any]:
    rows: list[dict[str, Any]] | None
    if given is not None:
        columns, (rows, name) = None, given
    else:
        assert table is not None
        name = table.name
        try:
            columns = _csv_columns(table)
            rows = read_table(table) if columns is None else None
        except (UnicodeDecodeError, json.JSONDecodeError, csv.Error, gzip.BadGzipFile, EOFError, zlib.error) as err:
            raise ImportProblem([f"{name}: cannot be read as a table ({type(err).__name__}: {err})"]) from None
    traces: dict[str, Any] = {}
    if telemetry is not None:  # each row's log read and summarised before the folder is locked
        from collect.importing.logs import attach_logs  # lazy: numpy

        rows, traces, log_errors = attach_logs(
            (rows or []) if columns is None else columns.rows(), plan, plan_sha256, name, telemetry
        )
        columns = None
        if log_errors:
            raise ImportProblem(log_errors[:MAX_ERRORS])
    created = not Path(runs_dir).exists()
    try:
        with runs_lock(runs_dir, f"collect import {name}"):
            complete_pending(runs_dir)  # a batch an import killed mid-write had committed
            existing = read_ledger(runs_dir)
            check_folder_plan(existing, Path(runs_dir), plan_sha256, plan.study, chain)
            if seals is not None:
                check_folder_seals(existing, Path(runs_dir), seals)  # not under a resealed lock
            if telemetry is not None:
                out: list[RunRecord] = []
                _append_with_traces(
                    rows or [], plan, plan_sha256, name, Path(runs_dir), existing, skipped, lock_seal, traces, out
                )
                return out
            fast = (
                None
                if updates
                else _append_fast(columns or rows or [], plan, plan_sha256, name, runs_dir, existing, lock_seal, keep)
            )
            if fast is not None:
                records, already = fast
                if skipped is not None:
                    skipped += already
            else:  # row by row: what does not fit is said there, in its words
                rows = rows if columns is None else columns.rows()
                records = build_records(
                    rows or [], plan, plan_sha256, name, existing, skipped, lock_seal=lock_seal, updates=updates
                )
                if records:
                    records = append_records(runs_dir, records, existing, journal=True)
    except BaseException:
        if created:  # a refused import leaves no trace: remove the folder it made for its lock
            _remove_if_only_lock(Path(runs_dir))
        raise
    return records


def _append_with_traces(
    rows: list[dict[str, Any]],
    plan: Plan,
    plan_sha256: str,
    name: str,
    runs_dir: Path,
    existing: Ledger,
    skipped: list[str] | None,
    lock_seal: str | None,
    traces: dict[str, Any],
    out: list[RunRecord],
) -> None:
    """The row path for rows with power logs: their traces staged, listed in the records, moved into
    ``traces/`` and hashed as the records are appended (``collect.importing.logs``); into ``out``."""
    from collect.importing.logs import drop_staging, install_traces, stage_traces  # lazy: numpy

    try:
        names = stage_traces(runs_dir, traces)
        records = build_records(rows, plan, plan_sha256, name, existing, skipped, lock_seal=lock_seal, traces=names)
        if records:
            install_traces(runs_dir, records)
            records = append_records(runs_dir, records, existing, journal=True)
        out += records
    finally:
        drop_staging(runs_dir)


def _csv_columns(path: Path) -> Table | None:
    """A CSV table as columns -- the cells ``read_table``'s rows hold, without a dict per row -- when
    it is plainly regular (a header of distinct names, every other non-blank line as many cells);
    None for anything else (``read_table`` then reads it, and says what is wrong with it)."""
    name = path.name.lower()
    if not name.endswith((".csv", ".csv.gz")):
        return None
    text = _read_bounded(path, name.endswith(".gz")).decode("utf-8-sig")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header or len(set(header)) != len(header):
            return None
        columns: list[list[str]] = [[] for _ in header]
        known: list[dict[str, str]] = [{} for _ in header]  # each distinct cell text held once per column
        rows = 0
        for cells in reader:  # row by row into the columns: no list of every row's cells
            if cells == []:
                continue  # blank lines skipped, as DictReader does
            if len(cells) != len(header):
                return None
            for column, seen, cell in zip(columns, known, cells, strict=True):
                column.append(seen.setdefault(cell, cell))
            rows += 1
            if rows > MAX_ROWS:
                break
    except csv.Error:
        return None
    del text
    _check_rows(rows, path)
    return Table(dict(zip(header, columns, strict=True)), rows)


#: rows per chunk of the column-wise path: a table is checked, sealed and journaled chunk by chunk, so an
#: import's memory is a chunk's (plus the table's cells), whatever the table's length
CHUNK_ROWS = 10_000


@dataclass(frozen=True)
class Appended:
    """What ``keep=False`` keeps of each appended record: its id, start time and hash (a record as
    written holds them too)."""

    run_id: str
    started_at: str | None
    record_sha256: str | None


class _NotFast(ToolkitError):
    """A chunk the column-wise path does not take (raised out of the chunks, caught by ``_append_fast``;
    were it to escape, that would be a toolkit bug)."""

    exit_code = EXIT_INTERNAL


def _append_fast(
    table: Table | list[dict[str, Any]],
    plan: Plan,
    plan_sha256: str,
    source: str,
    runs_dir: Path,
    existing: Ledger,
    lock_seal: str | None = None,
    keep: bool = True,
) -> tuple[list[Any], list[str]] | None:
    """The column-wise path (``collect.importing.columns``): ``(records as written -- or, ``keep=False``,
    their ``Appended`` entries --, ids skipped)``, or None -- nothing written -- when the table does not fit
    it in any way. The whole table is checked before anything is appended: its chunks are sealed into the
    batch's journal as they come (``LedgerAppender.write_chunks``), committed only after the last."""
    written: list[Any] = []
    skipped: list[str] = []
    try:
        whole = Table.of_rows(table) if isinstance(table, list) else table
    except Declined:
        return None
    if whole.n == 0:
        return None  # the row path says what an empty table lacks
    seen = Seen.of(existing, plan_sha256)
    head = head_of(existing)
    try:
        looks_seen = looks_evidence(runs_dir)  # what every record carries, as the row path's appender does
    except OSError as err:
        raise InputError(
            f"{err.filename or runs_dir}: the look ledger cannot be read ({err.strerror or err}); nothing was imported"
        ) from None

    def chunks() -> Iterator[bytes]:
        nonlocal head
        for start in range(0, whole.n, CHUNK_ROWS):
            try:
                batch = prepare(
                    whole.slice(start, start + CHUNK_ROWS) if whole.n > CHUNK_ROWS else whole,
                    plan,
                    plan_sha256,
                    source,
                    existing,
                    lock_seal=lock_seal,
                    seen=seen,
                    first_row=start + 1,
                    looks_seen=looks_seen,
                )
                payload, records, head = seal(batch, head)
            except (Declined, ValueError, TypeError, ArithmeticError) as err:  # cell, model and encoder
                raise _NotFast(str(err)) from err  # refusals: what does not fit, the row path says in its own words
            skipped.extend(batch.skipped)
            written.extend(records if keep else (Appended(r.run_id, r.started_at, r.record_sha256) for r in records))
            if payload:
                yield payload

    appender = LedgerAppender(runs_dir, existing)
    try:
        appender.write_chunks(chunks())
    except _NotFast:
        return None
    appender.head = head
    return written, skipped


def _remove_if_only_lock(runs_dir: Path) -> None:
    """Remove ``runs_dir`` when it holds nothing but the writer lock file."""
    try:
        if {p.name for p in runs_dir.iterdir()} <= {lock_path(runs_dir).name}:
            lock_path(runs_dir).unlink(missing_ok=True)
            runs_dir.rmdir()
    except OSError:
        pass


__all__ = [
    "RESERVED",
    "TELEMETRY_FIELDS",
    "CellError",
    "ImportProblem",
    "build_records",
    "check_columns",
    "expected_columns",
    "frame_rows",
    "import_rows",
    "import_table",
    "read_table",
]
