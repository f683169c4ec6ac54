"""The progress trace ``traces/<run_id>.progress.csv``: its writer and its reader (the format's owner).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from collect.traces.lines import trace_text
from prereg.errors import InputError
from prereg.fileio import atomic_write

SUFFIX = "progress.csv"
COLUMNS = ("t_s", "attempt", "step", "tokens", "loss")
REQUIRED = ("t_s", "attempt", "step")


def _count(value: object, what: str) -> int:
    """``value`` when it is an integer >= 0 (never a bool); ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0 (got {value!r})")
    return value


@dataclass(frozen=True)
class Progress:
    """One progress report: ``t_s`` seconds from the run's first start, the attempt (0-based start of
    the program), its step, its tokens so far (None: not reported) and its loss (None: not reported;
    NaN kept)."""

    t_s: float
    attempt: int
    step: int
    tokens: int | None = None
    loss: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.t_s, bool) or not isinstance(self.t_s, (int, float)) or not math.isfinite(self.t_s):
            raise ValueError(f"t_s must be a finite number of seconds (got {self.t_s!r})")
        _count(self.attempt, "attempt")
        _count(self.step, "step")
        if self.tokens is not None:
            _count(self.tokens, "tokens")
        if self.loss is not None and (isinstance(self.loss, bool) or not isinstance(self.loss, (int, float))):
            raise ValueError(f"loss must be a number or empty (got {self.loss!r})")


def write_progress(path: Path, rows: Iterable[Progress]) -> None:
    """Write the rows (in the order given) atomically and fsynced, like the ledger that points at them."""
    buffer = io.StringIO(newline="")
    w = csv.writer(buffer)
    w.writerow(COLUMNS)
    for row in rows:
        w.writerow(
            [
                repr(float(row.t_s)),
                row.attempt,
                row.step,
                "" if row.tokens is None else row.tokens,
                "" if row.loss is None else repr(float(row.loss)),
            ]
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, buffer.getvalue().encode("utf-8"))


def _integer(text: str | None, what: str) -> int:
    """An integer cell (decimal digits; ``3.0`` is refused)."""
    try:
        return int((text or "").strip())
    except ValueError:
        raise ValueError(f"{what} must be an integer >= 0 (got {text!r})") from None


def _row(row: dict[str, str | None]) -> Progress:
    """One CSV row as a :class:`Progress` (``ValueError`` naming the bad cell)."""
    try:
        t_s = float(row["t_s"] or "")
    except ValueError:
        raise ValueError(f"t_s must be a number of seconds (got {row['t_s']!r})") from None
    tokens_text = (row.get("tokens") or "").strip()
    loss_text = (row.get("loss") or "").strip()
    try:
        loss = float(loss_text) if loss_text else None
    except ValueError:
        raise ValueError(f"loss must be a number or empty (got {loss_text!r})") from None
    return Progress(
        t_s,
        _integer(row["attempt"], "attempt"),
        _integer(row["step"], "step"),
        _integer(tokens_text, "tokens") if tokens_text else None,
        loss,
    )


def read_progress(path: Path, data: bytes | None = None) -> list[Progress]:
    """The rows of one progress trace, in file order (``data``: its bytes, already read and checked)."""
    text = trace_text(path, data, "a progress trace is CSV")
    try:
        with io.StringIO(text, newline="") as fh:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            missing = [c for c in REQUIRED if c not in columns]
            if missing:
                raise InputError(
                    f"{path}: not a progress trace (missing column {', '.join(missing)}; expected {','.join(COLUMNS)})"
                )
            rows = []
            for row in reader:
                number = reader.line_num
                if None in row or any(value is None for value in row.values()):
                    raise InputError(
                        f"{path}: line {number}: malformed progress row "
                        f"(expected the {len(columns)} columns of the header)"
                    )
                try:
                    rows.append(_row(row))
                except ValueError as err:
                    raise InputError(f"{path}: line {number}: malformed progress row ({err})") from None
    except csv.Error as err:
        raise InputError(f"{path}: not a CSV table ({err})") from None
    return rows


__all__ = ["COLUMNS", "SUFFIX", "Progress", "read_progress", "write_progress"]
