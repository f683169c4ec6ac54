"""Failed runs and undeclared metrics in the user's words, read from ledger records.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

STDERR_LINES = 3  # lines of a failed program's stderr shown
#: how the command collector quotes a failed program's stderr (``_error_with_stderr``)
STDERR_QUOTE = "; stderr ends: "
NOTHING_ON_STDERR = " (nothing on stderr)"
#: the source location ``failure_reason`` appends to an exception of a collector's own code
_SOURCE_LOCATION = re.compile(r" at [\w.-]+\.py:\d+$")
REASON_CHARS = 300  # a shown reason is cut here (the ledger keeps it whole)
SHOWN_FAILED = 20  # failed runs listed one by one, then counted


class _Record(Protocol):
    """What is read of a ledger record (``RunRecord``, or a ``LedgerColumns`` row)."""

    @property
    def run_id(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def stratum(self) -> Mapping[str, Any]: ...
    @property
    def replicate(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def code(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class FailedRun:
    """One failed run, as a person reads it."""

    run_id: str
    arm: str
    stratum: dict[str, Any]
    replicate: int
    reason: str  # the first line of the error, without a source location or the stderr quote
    stderr_tail: list[str] = field(default_factory=list)  # its last lines (at most STDERR_LINES)

    def to_json(self) -> dict[str, Any]:
        """``{run_id, arm, stratum, replicate, reason, stderr_tail}``."""
        return {
            "run_id": self.run_id,
            "arm": self.arm,
            "stratum": dict(self.stratum),
            "replicate": self.replicate,
            "reason": self.reason,
            "stderr_tail": list(self.stderr_tail),
        }


def _quoted_stderr(text: str) -> str | None:
    """The stderr text a Python string literal quotes, or None when it is not one."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def failure_words(error: str | None, lines: int = STDERR_LINES) -> tuple[str, list[str]]:
    """``(reason, stderr tail)`` of a failed run's ``error``: the reason's first line without the
    source location ``failure_reason`` appends nor the quoted stderr, cut at ``REASON_CHARS``; the
    last ``lines`` non-blank lines of the quoted stderr (none when the error quotes none)."""
    text = (error or "").strip()
    if not text:
        return "no reason recorded", []
    tail: list[str] = []
    head, sep, quoted = text.partition(STDERR_QUOTE)
    if sep:
        stderr = _quoted_stderr(quoted)
        if stderr is None:
            head = text  # not the collector's quote: shown as it is
        else:
            tail = [line.rstrip() for line in stderr.splitlines() if line.strip()][-lines:] if lines > 0 else []
    head = head.removesuffix(NOTHING_ON_STDERR)
    reason = _SOURCE_LOCATION.sub("", head.splitlines()[0].rstrip() if head.strip() else text.splitlines()[0])
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 3] + "..."
    return reason, tail


def failed_runs(records: Iterable[_Record]) -> list[FailedRun]:
    """Every failed record of ``records``, in their order, in words (:func:`failure_words`)."""
    out = []
    for r in records:
        if r.status == "complete":
            continue
        reason, tail = failure_words(r.error)
        out.append(FailedRun(r.run_id, r.arm, dict(r.stratum), r.replicate, reason, tail))
    return out


def stratum_words(stratum: Mapping[str, Any], replicate: int) -> str:
    """``site=1 #0``: a stratum's levels and the replicate."""
    levels = ", ".join(f"{k}={v}" for k, v in stratum.items())
    return f"{levels} #{replicate}" if levels else f"#{replicate}"


def failed_run_lines(
    failed: list[FailedRun], limit: int | None = SHOWN_FAILED, indent: str = "    ", more: str = ""
) -> list[str]:
    """One line per failed run (its id, arm, stratum, reason), each followed by its stderr tail,
    indented; the first ``limit`` runs (None: all), then a line counting the rest (``more``: where
    they are all listed)."""
    out = []
    for f in failed[:limit]:
        out.append(f"{f.run_id}: arm {f.arm}, {stratum_words(f.stratum, f.replicate)}: {f.reason}")
        out += [f"{indent}{line}" for line in f.stderr_tail]
    left = len(failed) - len(failed[:limit])
    if left > 0:
        out.append(f"... and {left} more failed run{'s' if left != 1 else ''}" + (f" ({more})" if more else ""))
    return out


def undeclared_metrics(record: _Record) -> dict[str, float | None]:
    """The metrics ``record``'s program wrote that the plan does not declare (``code.undeclared_metrics``):
    name -> value kept (None: not a finite number); empty when none or malformed."""
    kept = record.code.get("undeclared_metrics") if isinstance(record.code, Mapping) else None
    if not isinstance(kept, dict):
        return {}
    return {
        str(k): (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None) for k, v in kept.items()
    }


def undeclared_words(records: Iterable[_Record], named: int = 2) -> list[str]:
    """One warning per set of metrics some runs wrote that their plan does not declare, naming the
    metrics and the runs (the first ``named``, then a count), in the order first met."""
    groups: dict[str, list[str]] = {}
    for r in records:
        names = sorted(undeclared_metrics(r))
        more = r.code.get("undeclared_metrics_more") if isinstance(r.code, Mapping) else None
        if not names and not more:
            continue
        shown = ", ".join(names) + (f" and {more} more (not kept)" if isinstance(more, int) and more > 0 else "")
        groups.setdefault(shown, []).append(r.run_id)
    out = []
    for shown, runs in groups.items():
        who = (
            f"run {runs[0]}"
            if len(runs) == 1
            else f"{len(runs)} runs ({', '.join(runs[:named])}"
            + (f" and {len(runs) - named} more)" if len(runs) > named else ")")
        )
        out.append(f"{who} wrote metric(s) {shown} the plan does not declare: kept as descriptive, not analysed")
    return out


__all__ = [
    "FailedRun",
    "STDERR_LINES",
    "failed_run_lines",
    "failed_runs",
    "failure_words",
    "stratum_words",
    "undeclared_metrics",
    "undeclared_words",
]
