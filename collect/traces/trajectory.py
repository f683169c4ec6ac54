"""The learning trajectory ``traces/<run_id>.trajectory.csv``: its writer and its reader (the owner).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path

from collect.traces.lines import trace_text
from prereg.errors import InputError
from prereg.fileio import atomic_write

SUFFIX = "trajectory.csv"
COLUMNS = ("tick", "useful_steps", "heldout_nll", "state_tokens")


def write_trajectory(path: Path, rows: Iterable[tuple[float, float, float, float]]) -> None:
    """Write (tick, useful_steps, heldout_nll, state_tokens) rows atomically (fsynced, like the ledger)."""
    buffer = io.StringIO(newline="")
    w = csv.writer(buffer)
    w.writerow(COLUMNS)
    for row in rows:
        w.writerow([row[0], row[1], repr(row[2]), row[3]])
    atomic_write(path, buffer.getvalue().encode("utf-8"))


def read_trajectory(path: Path, data: bytes | None = None) -> list[tuple[float, float]]:
    """(tick, held-out NLL) rows (``data``: the file's bytes, already read and checked); NaN NLL kept."""
    text = trace_text(path, data, "a trajectory is CSV")
    try:
        with io.StringIO(text, newline="") as fh:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            missing = [c for c in ("tick", "heldout_nll") if c not in columns]
            if missing:
                raise InputError(
                    f"{path}: not a trajectory (missing column {', '.join(missing)}; "
                    "expected tick, useful_steps, heldout_nll)"
                )
            rows = []
            for number, row in enumerate(reader, start=2):
                try:
                    tick, nll = float(row["tick"]), float(row["heldout_nll"])
                    if not math.isfinite(tick):
                        raise ValueError
                except (TypeError, ValueError):
                    raise InputError(f"{path}: line {number}: tick and heldout_nll must be numbers") from None
                rows.append((tick, nll))
    except csv.Error as err:
        raise InputError(f"{path}: not a CSV table ({err})") from None
    return sorted(rows)


__all__ = ["COLUMNS", "SUFFIX", "read_trajectory", "write_trajectory"]
