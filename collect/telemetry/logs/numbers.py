"""A log column's cells parsed as they are read: one float64 and one status byte per row.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from functools import partial

import numpy as np

from collect.telemetry.logs.common import UNAVAILABLE, UNITS, LogError

#: the statuses a cell can have, by code
STATUSES = ("ok", "error", "not_supported", "no_permission")
_CODE = {name: k for k, name in enumerate(STATUSES)}


def _first_line(cells: list[str], lines: list[int], cell: str) -> int:
    """The line of the first row holding ``cell`` (asked for only when a message or a new unit needs it)."""
    return lines[cells.index(cell)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class Numbers:
    """One column of numbers, filled block by block (:meth:`extend`) and read once (:meth:`finish`)."""

    def __init__(self, unit: str | None, where: str, prepare: Callable[[str], str] | None = None) -> None:
        """``unit``: the header's (None: none named); ``where``: the file, for messages; ``prepare``:
        applied to each cell before it is read (``P0`` -> ``0``)."""
        self.unit, self.where, self.prepare = unit, where, prepare
        self.values = array("d")
        self.status = array("b")
        self.units: dict[str, int] = {}  # a unit spelled in cells -> the first line it is on

    def _parse(self, cell: str, line: Callable[[], int]) -> tuple[float, int]:
        text = (self.prepare(cell) if self.prepare else cell).strip()
        missing = UNAVAILABLE.get(text.lower())
        if missing is not None:
            return np.nan, _CODE[missing]
        number, _, cell_unit = text.rpartition(" ")
        if not number or _is_number(cell_unit):
            number, cell_unit = text, ""
        if cell_unit not in self.units:
            self.units[cell_unit] = line()
            if len(self.units) > 1:
                raise LogError(
                    f"{self.where} line {line()}: the column mixes units "
                    f"({', '.join(repr(u) for u in sorted(self.units))})"
                )
        try:
            value = float(number)
        except ValueError:
            raise LogError(
                f"{self.where} line {line()}: {text!r} is not a number" + (f" in {self.unit}" if self.unit else "")
            ) from None
        return (value, 0) if np.isfinite(value) else (np.nan, 1)

    def extend(self, cells: list[str], lines: list[int]) -> None:
        """Append a block of rows' cells (row ``i`` on line ``lines[i]``)."""
        distinct = list(dict.fromkeys(cells))
        parsed = [self._parse(cell, partial(_first_line, cells, lines, cell)) for cell in distinct]
        index = dict(zip(distinct, range(len(distinct)), strict=True))
        codes = np.fromiter(map(index.__getitem__, cells), dtype=np.intp, count=len(cells))
        self.values.frombytes(np.array([v for v, _ in parsed], dtype=np.float64)[codes].tobytes())
        self.status.frombytes(np.array([s for _, s in parsed], dtype=np.int8)[codes].tobytes())

    def finish(self, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, str | None]:
        """``(values in the toolkit's unit, statuses, that unit)`` of the rows ``keep`` (None: all)."""
        values = np.frombuffer(self.values, dtype=np.float64)
        codes = np.frombuffer(self.status, dtype=np.int8)
        if keep is not None:
            values, codes = values[keep], codes[keep]
        name = next(iter(self.units), "") or self.unit
        target, factor = UNITS.get(name.lower(), (name, 1.0)) if name else (None, 1.0)
        status = np.array(STATUSES, dtype=object)[codes]
        return (values * factor if factor != 1.0 else values), status, target


__all__ = ["STATUSES", "Numbers"]
