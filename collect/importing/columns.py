"""``collect import``'s column-wise fast path: a table checked and turned into ledger lines without a
model per row -- or ``Declined``: "take the row-by-row path".

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import NoneType
from typing import Any

from pydantic import TypeAdapter

from collect.engine.runs import stratum_seed
from collect.importing.rows import (
    TELEMETRY_FIELDS,
    CellError,
    arm_cell,
    check_columns,
    check_range,
    evidence_cell,
    finished_cell,
    level_cell,
    metric_bound_columns,
    parse_integer,
    parse_number,
    parse_time,
    replicate_cell,
    signals_of,
    status_cell,
    telemetry_cell,
)
from collect.importing.text import float_text, rows_of_objects, string_text, value_text
from collect.ledger.cells import cell_key_of
from collect.ledger.hashing import FIELD, PREV, chain_runs
from collect.ledger.store import RECORD_FORMAT, Ledger, RunRecord, encode_metric, imported_run_id
from prereg.errors import EXIT_INTERNAL, ToolkitError
from prereg.jsoncodec import canonical_bytes
from prereg.schema import Plan

Texts = Sequence[str | None]  # per row: an item text ``"key":value``, or a value's text (None: no such key)
#: every stored record of an import holds these, the same in each
_CONSTANT = {"code": {"imported": True}, "env": {}, "trace_sha256": {}, "traces": []}


class Declined(ToolkitError):
    """The fast path does not take this table (the row path will, and say why if it refuses it);
    caught by ``collect.importing.importer``, never shown: were it to escape, that would be a toolkit bug."""

    exit_code = EXIT_INTERNAL


@dataclass
class Table:
    """A table as columns: ``columns[name][i]`` is row ``i``'s cell (every row has every column)."""

    columns: dict[str, list[Any]]
    n: int

    @classmethod
    def of_rows(cls, rows: list[dict[str, Any]]) -> Table:
        """The rows' columns; ``Declined`` unless every row has the same columns."""
        first = rows[0].keys() if rows else None
        if first is None or any(row.keys() != first for row in rows):
            raise Declined("no rows, or rows with different columns")
        return cls({name: [row[name] for row in rows] for name in first}, len(rows))

    def rows(self) -> list[dict[str, Any]]:
        """The table as rows: column -> cell, in the columns' order."""
        names = list(self.columns)
        return (
            [dict(zip(names, cells, strict=True)) for cells in zip(*self.columns.values(), strict=True)]
            if names
            else []
        )

    def column(self, name: str) -> list[Any]:
        """The column, or None for every row when the table has none (what ``row.get`` gives)."""
        return self.columns[name] if name in self.columns else [None] * self.n

    def slice(self, start: int, stop: int) -> Table:
        """Rows ``start .. stop - 1`` (a chunk of the table: ``prepare`` takes a table chunk by chunk)."""
        return Table({name: cells[start:stop] for name, cells in self.columns.items()}, min(stop, self.n) - start)


@dataclass
class Seen:
    """What the chunks of one table share for the duplicate checks (``_new_rows``): the ledger's records by
    run id (popped as rows match them), every run id and complete cell met so far (ledger and table)."""

    present: dict[str, RunRecord]
    ledger_ids: set[str]
    keys: set[tuple[Any, ...]]
    new_ids: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, existing: Ledger, plan_sha256: str) -> Seen:
        """The state before the first chunk."""
        present = {r.run_id: r for r in existing.records}
        keys = {
            cell_key_of(r.stratum, r.arm, r.replicate)
            for r in existing.records
            if r.status == "complete" and r.prereg_sha256 == plan_sha256
        }
        return cls(present, set(present), keys)


@dataclass
class Batch:
    """Rows ready to append: each one's stored form (without chain fields), its canonical item runs
    before ``prev_sha256`` and after ``record_sha256``, and the ids of rows already in the ledger."""

    data: list[dict[str, Any]]
    low: list[bytes]
    high: list[bytes]
    skipped: list[str] = field(default_factory=list)


def _parsed(cells: list[Any], parse: Callable[[Any], Any], key: str) -> tuple[list[Any], Texts]:
    """Each cell's value and its item text ``"key":value`` (None for a None value: no such key);
    each distinct text (or empty) cell is parsed once."""
    prefix = string_text(key) + ":"

    def pair(cell: Any) -> tuple[Any, str | None]:
        value = parse(cell)
        return value, None if value is None else prefix + value_text(value)

    if set(map(type, cells)) <= {str, NoneType}:  # hashable, and equal only when the same
        memo = {cell: pair(cell) for cell in set(cells)}
        pairs = list(map(memo.__getitem__, cells))
    else:
        pairs = [pair(cell) for cell in cells]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _items(key: str, texts: Texts) -> Texts:
    """Each row's item ``"key":value`` from its value's text (None stays None: no such key)."""
    prefix = string_text(key) + ":"
    return [None if t is None else prefix + t for t in texts]


def _numbers(cells: list[Any], name: str) -> list[float | None]:
    """``parse_number`` of each cell: ``float`` of a text cell is the same number when it accepts it
    (``parse_number`` strips, lowercases and then calls ``float``, which ignores both) and it is finite
    (an infinity may be ``inf`` as written or ``1e400`` overflowing: ``parse_number`` tells them apart)."""
    out: list[float | None] = []
    for cell in cells:
        if type(cell) is str:
            try:
                number = float(cell)
            except ValueError:
                pass
            else:
                if not math.isinf(number):
                    out.append(number)
                    continue
        out.append(parse_number(cell, name))
    return out


def _number_items(key: str, values: list[Any]) -> Texts:
    """Items of stored numbers (a finite float, a ``"NaN"``-style name; None: the key left out)."""
    prefix = string_text(key) + ":"
    if set(map(type, values)) == {float} and all(map(math.isfinite, values)):  # the usual column
        return [prefix + text for text in map(float.__repr__, values)]
    return [None if v is None else prefix + float_text(v) for v in values]


def _records(columns: dict[str, list[Any]], n: int) -> list[dict[str, Any]]:
    """Per row, the dict of its entries in ``columns``, an entry that is None left out."""
    full = {k: column for k, column in columns.items() if None not in column}
    out = (
        [dict(zip(full, values, strict=True)) for values in zip(*full.values(), strict=True)]
        if full
        else [{} for _ in range(n)]
    )
    for k, column in columns.items():
        if k not in full:
            for record, value in zip(out, column, strict=True):
                if value is not None:
                    record[k] = value
    return out


def _metrics(table: Table, plan: Plan) -> tuple[list[dict[str, Any]], Texts]:
    """Each row's ``metrics`` in stored form (None kept: a metric not recorded), and its JSON text."""
    names = [m for m in plan.metrics if m in table.columns]
    numbers = {m: _numbers(table.column(m), m) for m in names}
    for m in names:
        if plan.metrics[m].range is not None:
            for v in numbers[m]:
                try:
                    check_range(v, m, plan)
                except CellError:
                    raise Declined(f"{m}: a value outside the plan's range") from None
    values = {m: [encode_metric(v) for v in numbers[m]] for m in names}
    stored = (
        [dict(zip(names, parts, strict=True)) for parts in zip(*values.values(), strict=True)]
        if names
        else [{} for _ in range(table.n)]
    )
    texts = {m: [string_text(m) + ":null" if t is None else t for t in _number_items(m, values[m])] for m in names}
    return stored, rows_of_objects(table.n, texts)


def _telemetry(table: Table, plan: Plan) -> tuple[list[dict[str, Any]], Texts]:
    """Each row's ``telemetry`` in stored form (signal -> its summary's set fields), and its JSON text."""
    stored: list[dict[str, Any]] = [{} for _ in range(table.n)]
    signals: dict[str, Texts] = {}
    per_metric = metric_bound_columns(plan)
    for signal in signals_of(plan):
        bound_columns = [(c, m) for c, (s, m) in per_metric.items() if s == signal and c in table.columns]
        if not bound_columns and not any(f"{signal}.{f}" in table.columns for f in TELEMETRY_FIELDS):
            continue
        columns: dict[str, list[Any]] = {}
        texts: dict[str, Texts] = {}
        columns["evidence"], texts["evidence"] = _parsed(
            table.column(f"{signal}.evidence"), partial(evidence_cell, signal=signal, plan=plan), "evidence"
        )
        for f in sorted(TELEMETRY_FIELDS - {"evidence"}):
            if f"{signal}.{f}" not in table.columns:
                continue
            cells = table.column(f"{signal}.{f}")
            if f == "updates":
                columns[f], texts[f] = _parsed(cells, partial(telemetry_cell, signal=signal, field="updates"), f)
                continue
            columns[f] = _numbers(cells, f"{signal}.{f}")
            if not all(v is None or math.isfinite(v) for v in columns[f]):
                raise Declined(f"{signal}.{f}: a value that is not finite")
            texts[f] = _number_items(f, columns[f])
        if bound_columns:
            columns["metric_bounds"], texts["metric_bounds"] = _metric_bounds(table, bound_columns)
        for summary, entry in zip(stored, _records(columns, table.n), strict=True):
            summary[signal] = entry
        signals[signal] = _items(signal, rows_of_objects(table.n, texts))
    return stored, rows_of_objects(table.n, signals)


def _metric_bounds(table: Table, bound_columns: list[tuple[str, str]]) -> tuple[list[Any], Texts]:
    """Each row's ``metric_bounds`` (metric -> bound, from its non-empty ``<metric>.bound`` cells;
    None when it has none) and its item text; ``Declined`` for a bound ``bound_cell`` refuses."""
    values: dict[str, list[float | None]] = {}
    for column, metric in bound_columns:
        values[metric] = _numbers(table.column(column), column)
        if not all(v is None or (math.isfinite(v) and v >= 0) for v in values[metric]):
            raise Declined(f"{column}: a bound that is not a finite number >= 0")
    names = sorted(values)
    stored = [
        {m: v for m, v in zip(names, parts, strict=True) if v is not None} or None
        for parts in zip(*(values[m] for m in names), strict=True)
    ]
    objects = rows_of_objects(table.n, {m: _number_items(m, values[m]) for m in names})
    return stored, _items("metric_bounds", [None if d is None else t for d, t in zip(stored, objects, strict=True)])


def _run_ids(given: list[str], plan_sha256: str, strata: Texts, arms: list[str], replicates: list[int]) -> list[str]:
    """Each row's run id: as given, else ``collect.ledger.records.run_id``'s -- the hash of the canonical JSON of
    ``[plan_sha256, stratum, arm, replicate]``, a list put together from its values' texts."""
    head = "[" + value_text(plan_sha256) + ","
    arm_text = {a: value_text(a) for a in set(arms)}  # str values: equal only when the same
    replicate_text = {r: value_text(r) for r in set(replicates)}  # int values: likewise
    return [
        run_id or imported_run_id(f"{head}{stratum},{arm_text[arm]},{replicate_text[replicate]}]")
        for run_id, stratum, arm, replicate in zip(given, strata, arms, replicates, strict=True)
    ]


def prepare(
    table: Table,
    plan: Plan,
    plan_sha256: str,
    source: str,
    existing: Ledger,
    *,
    lock_seal: str | None = None,
    seen: Seen | None = None,
    first_row: int = 1,
    looks_seen: tuple[str, int] | None = None,
) -> Batch:
    """The rows not yet in ``existing``, ready to append; ``Declined`` (or any error) if they do not all fit.

    A table taken in chunks: each chunk a ``Table.slice``, ``first_row`` its first row's number in the
    table (1-based), ``seen`` the state the chunks share (``Seen.of``), so the checks are the whole table's.
    ``looks_seen``: the look ledger's ``(head, count)`` every record carries (``collect.ledger.looks``)."""
    if table.n == 0 or check_columns([dict.fromkeys(table.columns)], plan):
        raise Declined("no rows, or a column problem")
    n, factors = table.n, sorted(plan.strata.factors)
    fields: dict[str, list[Any]] = {
        "record": [RECORD_FORMAT] * n,
        "prereg_sha256": [plan_sha256] * n,
        **({"lock_seal": [lock_seal] * n} if lock_seal is not None else {}),
        **({"looks_head": [looks_seen[0]] * n, "looks_count": [looks_seen[1]] * n} if looks_seen is not None else {}),
    }
    items: dict[str, Texts] = {k: [string_text(k) + ":" + value_text(v[0])] * n for k, v in fields.items()}
    items.update({k: [string_text(k) + ":" + value_text(v)] * n for k, v in _CONSTANT.items()})
    fields["arm"], items["arm"] = _parsed(table.column("arm"), lambda v: arm_cell(v, plan), "arm")
    levels: dict[str, list[Any]] = {}
    level_items: dict[str, Texts] = {}
    for f in factors:
        levels[f], level_items[f] = _parsed(table.column(f), partial(level_cell, factor=f, plan=plan), f)
    order = list(plan.strata.factors)  # the row path's stratum order
    fields["stratum"] = [
        dict(zip(order, parts, strict=True)) for parts in zip(*(levels[f] for f in order), strict=True)
    ]
    stratum_texts = rows_of_objects(n, level_items)
    items["stratum"] = _items("stratum", stratum_texts)
    fields["replicate"], items["replicate"] = _parsed(
        table.column("replicate"), lambda v: replicate_cell(v, plan), "replicate"
    )
    fields["status"], items["status"] = _parsed(table.column("status"), status_cell, "status")
    fields["metrics"], metric_texts = _metrics(table, plan)
    items["metrics"] = _items("metrics", metric_texts)
    fields["telemetry"], telemetry_texts = _telemetry(table, plan)
    items["telemetry"] = _items("telemetry", telemetry_texts)
    fields["seed"], items["seed"] = _parsed(table.column("seed"), lambda v: parse_integer(v, "seed", None), "seed")
    if "seed" not in plan.strata.factors and any(s is not None for s in fields["seed"]):
        _check_seeds(fields["seed"], fields["stratum"], fields["replicate"])
    fields["started_at"], items["started_at"] = _parsed(
        table.column("started_at"), lambda v: parse_time(v, "started_at"), "started_at"
    )
    fields["finished_at"] = [finished_cell(v) for v in table.column("finished_at")]
    items["finished_at"] = _items("finished_at", [None if v is None else string_text(v) for v in fields["finished_at"]])
    given = [str(v or "").strip() for v in table.column("run_id")]
    fields["run_id"] = _run_ids(given, plan_sha256, stratum_texts, fields["arm"], fields["replicate"])
    items["run_id"] = _items("run_id", [string_text(r) for r in fields["run_id"]])
    fields["source"] = [f"import:{source} row {i}" for i in range(first_row, first_row + n)]
    items["source"] = _items("source", [string_text(s) for s in fields["source"]])
    if [k for k in sorted(items) if PREV < k < FIELD] != ["record"] or set(items) != set(fields) | set(_CONSTANT):
        raise Declined("not the record keys this path knows")
    kept, skipped = _new_rows(fields, _cell_keys(fields, levels, factors), existing, plan_sha256, seen, first_row)
    if len(kept) < n:
        fields = {k: [column[i] for i in kept] for k, column in fields.items()}
        items = {k: [column[i] for i in kept] for k, column in items.items()}
    data = _records(fields, len(kept))
    for record in data:
        record.update(_CONSTANT)  # shared, as inputs only: the model copies what it validates
    low = [
        ",".join(filter(None, parts)).encode()
        for parts in zip(*(items[k] for k in sorted(items) if k < PREV), strict=True)
    ]
    high = [
        ",".join(filter(None, parts)).encode()
        for parts in zip(*(items[k] for k in sorted(items) if k > FIELD), strict=True)
    ]
    return Batch(data, low, high, skipped)


def _check_seeds(seeds: list[Any], strata: list[dict[str, Any]], replicates: list[int]) -> None:
    """``Declined`` when a given seed is not the plan's derived seed of its row's cell (the row path,
    ``collect.importing.rows.seed_cell``, names the row)."""
    for seed, stratum, replicate in zip(seeds, strata, replicates, strict=True):
        if seed is not None and seed != stratum_seed(stratum, replicate):
            raise Declined("a seed that is not the plan's derived seed")


def _cell_keys(fields: dict[str, list[Any]], levels: dict[str, list[Any]], factors: list[str]) -> list[tuple[Any, ...]]:
    """``cell_key_of`` of each row (``factors`` sorted: the key's order), column by column."""
    parts = [[(f, type(v).__name__, v) for v in levels[f]] for f in factors]
    return (
        list(zip(zip(*parts, strict=True), fields["arm"], fields["replicate"], strict=True))
        if parts
        else [((), a, r) for a, r in zip(fields["arm"], fields["replicate"], strict=True)]
    )


def _new_rows(
    fields: dict[str, list[Any]],
    keys: list[tuple[Any, ...]],
    existing: Ledger,
    plan_sha256: str,
    seen: Seen | None = None,
    first_row: int = 1,
) -> tuple[list[int], list[str]]:
    """``(rows to append, ids of rows already in the ledger identically)``; ``Declined`` for a row the
    row path refuses: a cell or run id repeated in the table, or in the ledger with other content."""
    if not existing.records and seen is None:  # the usual case, the same test without a loop: nothing repeated
        complete = [key for key, status in zip(keys, fields["status"], strict=True) if status == "complete"]
        if len(set(fields["run_id"])) < len(keys) or len(set(complete)) < len(complete):
            raise Declined("a repeated cell or run id")
        return list(range(len(keys))), []
    state = seen if seen is not None else Seen.of(existing, plan_sha256)
    present, ledger_ids, seen_keys, new_ids = state.present, state.ledger_ids, state.keys, state.new_ids
    kept, skipped = [], []
    for i, (run_id, status, key) in enumerate(zip(fields["run_id"], fields["status"], keys, strict=True)):
        if run_id in present:
            # ``content`` of the two records, compared as stored (the same test: a field left out of the
            # stored form is exactly one that is None); the ledger's record dumped once, the row not built
            row = {k: column[i] for k, column in fields.items() if column[i] is not None} | _CONSTANT
            row.pop("trace_sha256")
            if _stored_content(present.pop(run_id)) == row:
                skipped.append(run_id)  # already in, identically: an interrupted or repeated import
                continue
            raise Declined(f"row {first_row + i}: run id {run_id} is in the ledger with other content")
        if (status == "complete" and key in seen_keys) or run_id in new_ids or run_id in ledger_ids:
            raise Declined(f"row {first_row + i}: a repeated cell or run id")
        new_ids.add(run_id)
        if status == "complete":
            seen_keys.add(key)
        kept.append(i)
    return kept, skipped


def _stored_content(record: RunRecord) -> dict[str, Any]:
    """``content(record)`` in stored form: its dump without None fields and chain fields."""
    return record.model_dump(mode="json", exclude_none=True, exclude={"prev_sha256", "record_sha256", "trace_sha256"})


def seal(batch: Batch, head: str) -> tuple[bytes, list[RunRecord], str]:
    """The batch chained to ``head``: ``(the bytes to append, the records as written, the new head)``;
    a ``ValidationError`` if the model refuses a record."""
    lines = []
    mid = b'"record":' + canonical_bytes(RECORD_FORMAT)
    runs = ((low, mid, high) for low, high in zip(batch.low, batch.high, strict=True))
    for data, (line, digest) in zip(batch.data, chain_runs(runs, head), strict=True):
        data["prev_sha256"], data["record_sha256"] = head, digest
        lines.append(line)
        head = digest
    records = TypeAdapter(list[RunRecord]).validate_python(batch.data)
    return b"\n".join(lines) + b"\n" if lines else b"", records, head


__all__ = ["Batch", "Declined", "Seen", "Table", "prepare", "seal"]
