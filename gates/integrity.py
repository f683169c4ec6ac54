"""The ledger's hash chain as ``gates evaluate`` checks it: a broken chain refuses the decision.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
from typing import Any

from collect.ledger.columns import LedgerColumns
from collect.ledger.looks import LookLedger, LooksReport, LooksSeen, verify_looks
from collect.ledger.store import ChainReport, Ledger, verify_chain
from gates.artifact import read_evaluation
from prereg.errors import IntegrityError, ToolkitError

EVALUATION_NAME = "evaluation.json"  # the artifact's default place in a runs folder


class _ChainRefused(IntegrityError, ValueError):
    """A hash-chained file that does not verify (exit 3): ``path``, ``problems``, a message with the first 50."""

    def __init__(self, path: Any, report: ChainReport, what: str) -> None:
        self.path = path
        self.problems = report.problems
        super().__init__(f"{path}: {what}:\n- " + "\n- ".join(report.problems[:50]), details=report.problems)


class LedgerTampered(_ChainRefused):
    """The ledger's chain does not verify (exit 3): ``problems`` name each record that does not fit.

    The message lists the first 50 problems; ``details`` holds all of them.
    """

    def __init__(self, ledger: Ledger | LedgerColumns, report: ChainReport) -> None:
        super().__init__(ledger.path, report, "the hash chain does not verify; refusing the decision")


def check_ledger(ledger: Ledger | LedgerColumns) -> ChainReport:
    """The chain report of an intact (or empty) ledger; raises ``LedgerTampered`` otherwise.

    The records are checked here; their traces by ``gates.traces`` (a changed trace refuses the
    gates that rely on it, not the whole evaluation)."""
    report = verify_chain(ledger, check_traces=False)
    if not report.ok:
        raise LedgerTampered(ledger, report)
    return report


def chain_sentence(status: str, head: str | None) -> str:
    """What the chain proves, in words, for the report (``status``: intact or empty)."""
    if status == "empty":
        return "no records"
    where = f"; head {head}" if head else ""
    return f"hash chain intact{where} (compare the head with the one published when collection ended)"


class LooksTampered(_ChainRefused):
    """A monitored runs folder's look ledger does not verify (exit 3): a look record edited, removed,
    inserted or reordered, or the run ledger truncated or rewritten after a look (``problems``)."""

    def __init__(self, looks: LookLedger, report: LooksReport) -> None:
        super().__init__(looks.path, report, "the look ledger does not verify; refusing the evaluation")


def _looks_seen(ledger: Ledger | LedgerColumns) -> list[LooksSeen]:
    """(run id, looks_head, looks_count) of every record of ``ledger`` that saw a look."""
    return [(r.run_id, r.looks_head, r.looks_count) for r in ledger.records if r.looks_head is not None]


def _named_by_evaluation(looks: LookLedger) -> list[str]:
    """The look record an evaluation in the runs folder (``RUNS/evaluation.json``) names as the look
    ledger's head, when the look ledger no longer holds it (a file that is no evaluation names none)."""
    path = looks.path.parent / EVALUATION_NAME
    if not os.path.isfile(path) or os.path.islink(path):
        return []
    try:
        ev = read_evaluation(path)
    except (ToolkitError, OSError):
        return []
    named = ev.monitoring.looks_head if ev.monitoring is not None else None
    if named is None or named in {r.record_sha256 for r in looks.records}:
        return []
    return [
        f"{path} names look ledger head {named[:12]} (look record {ev.monitoring.sequence if ev.monitoring else '?'}"
        f", evaluated {ev.evaluated_at}), which the look ledger no longer holds: looks.jsonl was deleted, "
        "emptied, cut back or replaced after that look"
    ]


def check_looks(looks: LookLedger, ledger: Ledger | LedgerColumns) -> LooksReport:
    """The report of an intact (or empty) look ledger checked against ``ledger``; raises
    ``LooksTampered`` otherwise (``collect.ledger.looks.verify_looks``). Looks that vanished refuse
    too: a look record a run record saw when it was appended, or that ``RUNS/evaluation.json`` names
    as the head, that the look ledger no longer holds."""
    report = verify_looks(looks, ledger.hashes, _looks_seen(ledger))
    gone = _named_by_evaluation(looks)
    if gone:
        report.problems += gone
        report.status = "broken"
    if not report.ok:
        raise LooksTampered(looks, report)
    return report
