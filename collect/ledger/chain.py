"""The ledger's hash chain checked: ``verify_chain`` (part of ``collect.ledger.store``; the chain is described there)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from collect.ledger.records import GENESIS
from collect.ledger.trace_check import trace_problems

if TYPE_CHECKING:
    from collect.ledger.columns import LedgerColumns, Record
    from collect.ledger.store import Ledger


@dataclass
class ChainReport:
    """What ``verify_chain`` found: ``status`` is intact, broken or empty (no records)."""

    status: Literal["intact", "broken", "empty"]
    head: str | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No evidence of tampering."""
        return self.status != "broken"


def _who(record: Record, line: int) -> str:
    return f"ledger line {line} (run {record.run_id}, arm {record.arm})"


def verify_chain(ledger: Ledger | LedgerColumns, check_traces: bool = True) -> ChainReport:
    """Re-hash every record, follow the ``prev_sha256`` links and (optionally) re-hash the traces."""
    if not ledger.records:
        report = ChainReport("empty", None)
    else:
        report = ChainReport("intact", ledger.hashes[-1])
    expected = GENESIS
    records: Sequence[Record] = ledger.records
    for record, digest, line in zip(records, ledger.hashes, ledger.record_lines, strict=True):
        who = _who(record, line)
        if record.record_sha256 != digest:
            report.problems.append(f"{who}: changed after it was written (its content no longer matches its hash)")
        if record.prev_sha256 != expected:
            report.problems.append(
                f"{who}: the chain is broken before it (a record was removed, inserted or reordered before it)"
            )
        if check_traces:
            report.problems += _trace_problems(ledger.path.parent, record, who)
        expected = digest
    if ledger.stopped_at_line is not None:
        report.problems.insert(
            0,
            f"ledger line {ledger.stopped_at_line}: reading stopped there, too many lines before "
            "it are refused or break the chain; the rest was not checked",
        )
    for line in ledger.refused_lines:
        report.problems.append(f"ledger line {line}: complete but not a valid record (edited or forged)")
    if report.problems:
        report.status = "broken"
    return report


def _trace_problems(runs_dir: Path, record: Record, who: str) -> list[str]:
    return [f"{who}: trace {name} {problem}" for name, problem in trace_problems(runs_dir, record)]
