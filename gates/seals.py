"""The lock's seal in the runs: the records were recorded under this lock, as it stands.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from collect.ledger.columns import Record
from collect.ledger.records import parse_utc
from prereg.errors import InputError, IntegrityError
from prereg.lock_seal import check_published, plan_hash_of, seals_by_plan, version_count

NAMED = 3  # runs named in a refusal, then counted


@dataclass
class SealCheck:
    """What the seal check found: runs of another seal, unsealed runs, amendments that followed data."""

    resealed: list[str] = field(default_factory=list)
    unsealed: list[str] = field(default_factory=list)
    hidden_post_data: list[str] = field(default_factory=list)

    def refusals(self) -> list[str]:
        """The decision-level refusals (empty when every record has its version's seal)."""
        out = []
        if self.resealed:
            out.append(
                f"the lock was resealed after these runs were recorded: {len(self.resealed)} run(s) carry "
                f"another seal than the lock's for their plan version ({_named(self.resealed)}); its freeze "
                "time or amendment chain was rewritten after they were recorded, or they were recorded "
                "under another freeze of this plan"
            )
        if self.unsealed:
            out.append(
                f"{len(self.unsealed)} run(s) carry no lock seal ({_named(self.unsealed)}): which freeze of "
                "the plan they were recorded under cannot be shown; collect or import them again"
            )
        out.extend(self.hidden_post_data)
        return out


def _named(items: list[str]) -> str:
    return "; ".join(items[:NAMED]) + (f"; and {len(items) - NAMED} more" if len(items) > NAMED else "")


def check_seals(lock: dict[str, Any], records: Sequence[Record]) -> SealCheck:
    """Check every record recorded under one of ``lock``'s plan versions (see the module doc)."""
    check = SealCheck()
    by_plan = seals_by_plan(lock)
    for record in records:
        expected = by_plan.get(record.prereg_sha256)
        if expected is None:  # another plan: accounted for by the matching, not sealed by this lock
            continue
        if record.lock_seal is None:
            check.unsealed.append(record.run_id)
        elif record.lock_seal not in expected.values():
            versions = ", ".join(f"v{v} {s[:12]}" for v, s in expected.items())
            check.resealed.append(f"{record.run_id} carries {record.lock_seal[:12]}, the lock has {versions}")
    check.hidden_post_data = _hidden_post_data(lock, records)
    return check


def _hidden_post_data(lock: dict[str, Any], records: Sequence[Record]) -> list[str]:
    """Amendments not recorded as post-data that runs of an earlier version in this ledger preceded."""
    out = []
    for entry in lock.get("amendments") or []:
        version = entry.get("version")
        amended = parse_utc(entry.get("amended_at"))
        if entry.get("post_data") or amended is None or not isinstance(version, int):
            continue
        earlier = {plan_hash_of(lock, v): v for v in range(1, min(version, version_count(lock) + 1))}
        before = []
        for record in records:
            started = parse_utc(record.started_at)
            if record.prereg_sha256 in earlier and started is not None and started < amended:
                before.append(f"{record.run_id} (version {earlier[record.prereg_sha256]}) started {record.started_at}")
        if not before:
            continue
        says = (
            "records that no data existed when it was made"
            if entry.get("runs_checked")
            else "was made without checking for data"
        )
        out.append(
            f"amendment v{version} ({entry.get('amended_at')}) {says}, but {len(before)} run(s) of an earlier "
            f"version in this ledger started before it ({_named(before)}): it is a post-data amendment "
            "that its entry does not record as one"
        )
    return out


def published_seal(lock: dict[str, Any], published: str, up_to: int | None = None) -> tuple[bool, str]:
    """``(matches, sentence)``: whether a version of ``lock`` (at most ``up_to``) has the ``published``
    seal, and which, in words (``gates evaluate --published``, ``gates verify --published``);
    ``InputError`` (exit 2) for a malformed seal."""
    try:
        version, sentence = check_published(lock, published, up_to)
    except ValueError as err:
        raise InputError(str(err)) from None
    return version is not None, sentence


def check_published_seal(lock: dict[str, Any], published: str) -> str:
    """The sentence saying which version of ``lock`` has the ``published`` seal; ``IntegrityError``
    (exit 3) when none has it, ``InputError`` (exit 2) for a malformed seal."""
    matches, sentence = published_seal(lock, published)
    if not matches:
        raise IntegrityError(f"{sentence}; refusing to evaluate")
    return sentence
