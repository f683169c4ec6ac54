"""The one rule for a cell recorded more than once, used by the importer, gates and reports alike.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from prereg.errors import InputError

if TYPE_CHECKING:  # records import pydantic; this rule stays light for the report loaders
    from collect.ledger.records import RunRecord


def cell_key_of(stratum: dict[str, Any], arm: str, replicate: int) -> tuple[Any, ...]:
    """The type-aware key of a cell of one plan (stratum items sorted by factor)."""
    return (tuple(sorted((k, type(v).__name__, v) for k, v in stratum.items())), arm, replicate)


def cell_of(record: RunRecord) -> tuple[Any, ...]:
    """The cell a record fills: its plan hash and :func:`cell_key_of`."""
    return (record.prereg_sha256, *cell_key_of(record.stratum, record.arm, record.replicate))


class _Run(Protocol):
    @property
    def status(self) -> str: ...


R = TypeVar("R", bound=_Run)  # a RunRecord, or a row read column-wise (collect.ledger.columns)


def split_repeats(
    records: Iterable[R],
    key: Callable[[R], Hashable] = cell_of,  # type: ignore[assignment]
) -> tuple[dict[Hashable, R], list[tuple[R, R]]]:
    """The rule: (the first complete record of each cell, [(a later complete record, the first)]).
    ``key`` names the cell (default :func:`cell_of`; gates key by the plan's own level forms)."""
    first: dict[Hashable, R] = {}
    repeats: list[tuple[R, R]] = []
    for record in records:
        if record.status != "complete":
            continue
        k = key(record)
        if k in first:
            repeats.append((record, first[k]))
        else:
            first[k] = record
    return first, repeats


class DuplicateCell(InputError):
    """A cell with more than one complete record, asked to be drawn (exit 2)."""


def _refuse(record: RunRecord, first: RunRecord) -> DuplicateCell:
    where = ", ".join(f"{k}={v}" for k, v in record.stratum.items()) or "no factors"
    return DuplicateCell(
        f"arm {record.arm} in stratum {where}, replicate {record.replicate} is recorded complete "
        f"twice (runs {first.run_id} and {record.run_id}): the ledger does not say which is the "
        "real one, so it is not drawn (gates evaluate refuses the gates using it too)"
    )


def standing(records: Iterable[RunRecord]) -> dict[Hashable, RunRecord]:
    """Each cell's record by :func:`cell_of`: its one complete record, else its last failed one;
    ``DuplicateCell`` when a cell has two complete records."""
    records = list(records)
    first, repeats = split_repeats(records)
    if repeats:
        raise _refuse(*repeats[0])
    out: dict[Hashable, RunRecord] = {}
    for record in records:  # cells in ledger order; a failed-only cell: its last attempt stands
        out[cell_of(record)] = record
    out.update(first)
    return out


def run_record(records: Iterable[RunRecord], run_id: str) -> RunRecord | None:
    """The record ``run_id`` stands for under :func:`standing` (None when the ledger has none)."""
    found = list(standing(r for r in records if r.run_id == run_id).values())
    return found[-1] if found else None


__all__ = ["DuplicateCell", "cell_key_of", "cell_of", "run_record", "split_repeats", "standing"]
