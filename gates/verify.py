"""Re-verifying an evaluation artifact: evaluate again from the lock and the runs, and compare.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collect.importing.trackers.base import ReadOptions, tracker_source
from collect.importing.trackers.importing import changed_runs
from collect.ledger.looks import read_looks
from collect.ledger.store import GENESIS, read_ledger
from gates.api import evaluate, reevaluate_look
from gates.artifact import Evaluation, seal_status
from gates.seals import published_seal
from prereg.api import load_lock
from prereg.errors import InputError, ToolkitError
from prereg.lock import LOCK_SUFFIX
from prereg.lock_seal import plan_hash_of, version_count
from prereg.schema import Plan

#: top-level fields not compared: they differ between two honest evaluations of the same data
VOLATILE = frozenset({"evaluated_at", "toolkit_version", "seal_sha256", "plan_yaml", "other_plan_note"})
_SLACK = 1e-9  # relative: numbers are compared to this precision
_SHOWN = 12  # differences named, then counted
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Published:
    """What the author published, for ``gates verify`` to hold the lock and runs to: the lock seal
    printed at freeze (``prereg freeze``), and optionally the run ledger head printed when collection
    ended and the look ledger head (``gates evaluate`` prints both; 64 hex digits each)."""

    seal: str | None = None
    head: str | None = None
    looks_head: str | None = None


@dataclass
class Verification:
    """The outcome: ``ok`` when the artifact is sealed and says what the re-evaluation says (and the
    lock and runs are the ones published, when ``published`` was given)."""

    ok: bool
    differences: list[str] = field(default_factory=list)
    lock: str | None = None
    version: int | None = None
    unpublished: bool = False  # the differences are with what the author published: nothing was re-evaluated
    published: str | None = None  # which version has the published seal, in words
    sources: tuple[str, ...] = ()  # tracker sources read again (their runs unchanged when ok)

    def sentence(self) -> str:
        """One line for people."""
        shown = "\n- ".join(self.differences[:_SHOWN])
        more = f"\n- ... and {len(self.differences) - _SHOWN} more" if len(self.differences) > _SHOWN else ""
        if self.unpublished:
            return (
                f"comes with a lock and runs that are not the ones the author published (nothing was "
                f"re-evaluated):\n- {shown}{more}"
            )
        if self.ok:
            also = f"; {self.published}" if self.published else ""
            if self.sources:
                also += f"; the runs imported from {', '.join(self.sources)} read the same there"
            return (
                f"re-verified: evaluating {self.lock} (version {self.version}) on the runs again gives the same "
                f"decision, verdicts and numbers{also}"
            )
        against = f" or of the trackers it was imported from ({', '.join(self.sources)})" if self.sources else ""
        return f"does not match a re-evaluation of its lock and runs{against}:\n- {shown}{more}"


def _comparable(ev: Evaluation) -> dict[str, Any]:
    data = ev.model_dump(mode="json", by_alias=True)
    for key in VOLATILE:
        data.pop(key, None)
    if isinstance(data.get("ledger"), dict):
        data["ledger"].pop("path", None)
    if isinstance(data.get("lock"), dict):
        data["lock"].pop("path", None)
    return data


def _same(a: Any, b: Any) -> bool:
    if (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= _SLACK * max(1.0, abs(a), abs(b))
    return type(a) is type(b) and a == b


def _label(item: Any) -> str:
    return str(item.get("id") or item.get("block") or "") if isinstance(item, dict) else ""


def differences(claimed: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``claimed`` (the artifact) and ``actual`` (the re-evaluation) differ, as field paths with both values."""
    if isinstance(claimed, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in sorted(set(claimed) | set(actual)):
            where = f"{path}.{key}" if path else key
            if key not in actual:
                out.append(f"{where}: the artifact has it, the re-evaluation does not")
            elif key not in claimed:
                out.append(f"{where}: missing from the artifact (the re-evaluation has {_short(actual[key])})")
            else:
                out.extend(differences(claimed[key], actual[key], where))
        return out
    if isinstance(claimed, list) and isinstance(actual, list):
        if len(claimed) != len(actual):
            return [f"{path}: the artifact lists {len(claimed)}, the re-evaluation {len(actual)}"]
        out = []
        for i, (a, b) in enumerate(zip(claimed, actual, strict=True)):
            name = _label(b)
            out.extend(differences(a, b, f"{path}[{name or i}]"))
        return out
    if _same(claimed, actual):
        return []
    return [f"{path}: the artifact says {_short(claimed)}, the re-evaluation {_short(actual)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _hash_text(text: str, what: str) -> str:
    """A published hash as 64 lowercase hex digits; ``InputError`` (exit 2) otherwise."""
    value = text.strip().lower()
    if not _HEX64.fullmatch(value):
        raise InputError(f"{what} {text!r} is not a SHA-256 (64 hexadecimal digits)")
    return value


def published_mismatches(
    lock: dict[str, Any], version: int | None, runs: str | os.PathLike[str], published: Published
) -> tuple[list[str], str | None]:
    """``(mismatches, seal sentence)``: where ``lock`` (up to plan ``version``) and ``runs`` differ from
    what the author ``published`` (``gates.seals.published_seal``; the run and look ledgers' heads as
    they are now). ``InputError`` (exit 2) for a malformed seal or hash."""
    head = _hash_text(published.head, "--head") if published.head is not None else None
    looks_head = _hash_text(published.looks_head, "--looks-head") if published.looks_head is not None else None
    matches, sentence = published_seal(lock, published.seal, version) if published.seal is not None else (True, None)
    found = [] if matches or sentence is None else [sentence]
    if head is not None:
        hashes = read_ledger(runs).hashes
        now = hashes[-1] if hashes else GENESIS
        if now != head:
            found.append(
                f"the run ledger's head is {now[:12]}, not the published {head[:12]}: records were added, "
                "removed or rewritten after the head was published"
            )
    if looks_head is not None:
        now = read_looks(runs).head
        if now != looks_head:
            found.append(
                f"the look ledger's head is {now[:12]}, not the published {looks_head[:12]}: look records "
                "were added, removed or rewritten after the head was published"
            )
    return found, sentence if matches else None


def verify_evaluation(
    ev: Evaluation,
    lock: str | os.PathLike[str],
    runs: str | os.PathLike[str],
    published: Published | None = None,
    sources: Sequence[str] = (),
) -> Verification:
    """Evaluate ``lock`` on ``runs`` again (the plan version ``ev`` names) and compare it with ``ev``;
    with ``published``, first hold the lock and runs to what the author published
    (:func:`published_mismatches`: any mismatch is a failed verification, nothing re-evaluated);
    ``sources``: tracker sources (``mlflow:URI`` ...) the runs were imported from, read again: a run whose
    data or files changed since the import is a difference (:func:`source_changes`).

    Raises what ``gates.api.evaluate`` raises for a lock or runs folder that cannot be evaluated
    (``IntegrityError`` for a lock or ledger that does not verify, ``InputError`` for bad input).
    """

    verified = load_lock(lock)
    version = ev.lock.version if ev.lock is not None else _version_of(verified.data, ev.prereg_sha256)
    current = verified.version
    earlier = version if version is not None and version != current else None
    seal_words = None
    if published is not None:
        mismatches, seal_words = published_mismatches(verified.data, version or current, runs, published)
        if mismatches:
            return Verification(False, mismatches, os.fspath(lock), version, unpublished=True)
    if ev.monitoring is not None:  # a recorded look: re-evaluated on the runs it saw, recording nothing
        grown = _ledger_grown(ev, runs)
        if grown:
            return Verification(False, [grown], os.fspath(lock), version)
        fresh = _as_recorded(reevaluate_look(verified, runs, ev.monitoring.sequence, plan_version=earlier), ev, runs)
    else:
        fresh = evaluate(verified, runs, plan_version=earlier)
    found = (
        []
        if version is not None
        else [f"prereg_sha256: the artifact's plan {ev.prereg_sha256[:12]} is no version of {lock}"]
    )
    status = seal_status(ev)
    if status != "sealed":
        found.append(
            "the artifact carries no seal"
            if status == "unsealed"
            else "the artifact's seal does not match its content (edited after it was written)"
        )
    older = [k for k in ("failed_runs", "descriptive_metrics") if k not in ev.model_fields_set]
    fresh = fresh.model_copy(update=dict.fromkeys(older, []))  # descriptive lists an older artifact lacks
    if (
        ev.monitoring is not None
        and fresh.monitoring is not None
        and "estimates_note" not in ev.monitoring.model_fields_set
    ):
        fresh = fresh.model_copy(update={"monitoring": fresh.monitoring.without_estimates()})  # made before them
    found += differences(_comparable(ev), _comparable(fresh))
    found += source_changes(runs, verified.plan, sources)
    return Verification(
        not found,
        found,
        os.fspath(lock),
        fresh.lock.version if fresh.lock else version,
        published=seal_words,
        sources=tuple(sources),
    )


def source_changes(runs: str | os.PathLike[str], plan: Plan, sources: Sequence[str]) -> list[str]:
    """For each tracker source, the records imported from it whose tracker run changed or is gone since
    the import, as an edited trace is said (``collect.importing.trackers.importing.changed_runs``)."""
    found = []
    records = read_ledger(runs).records if sources else []
    for text in sources:
        source = tracker_source(text, f"--source {text}")
        found += [f"run {line}" for line in changed_runs(records, source, plan, ReadOptions())]
    return found


def _as_recorded(fresh: Evaluation, ev: Evaluation, runs: str | os.PathLike[str]) -> Evaluation:
    """The re-evaluated look naming, as its look ledger head, the hash of the look record it re-evaluates
    (its own time differs from the recorded one's); an artifact that names no head (made before the
    field existed) is compared without it."""
    assert fresh.monitoring is not None and ev.monitoring is not None
    head = None
    if ev.monitoring.looks_head is not None:
        records = read_looks(runs).records
        k = ev.monitoring.sequence
        head = records[k - 1].record_sha256 if 0 < k <= len(records) else None
    return fresh.model_copy(update={"monitoring": fresh.monitoring.model_copy(update={"looks_head": head})})


def _ledger_grown(ev: Evaluation, runs: str | os.PathLike[str]) -> str | None:
    """Why a monitored look cannot be re-verified on ``runs`` now (the run ledger is no longer the one
    it saw), or None. Re-evaluating a grown ledger would be a new look, unrecorded: never done."""
    ledger = read_ledger(runs)
    head = ledger.hashes[-1] if ledger.hashes else None
    if head == ev.ledger.head_sha256:
        return None
    return (
        f"the run ledger has changed since look record {ev.monitoring.sequence if ev.monitoring else '?'} was "
        f"made (head {str(ev.ledger.head_sha256)[:12]} then, {str(head)[:12]} now): a monitored plan's look is "
        "re-verified only on the runs it saw; evaluate again with 'gates evaluate' (which records the look)"
    )


def _version_of(lock: dict[str, Any], plan_sha256: str) -> int | None:
    """The latest version of ``lock`` whose plan is ``plan_sha256`` (None: none is)."""

    matching = [v for v in range(1, version_count(lock) + 1) if plan_hash_of(lock, v) == plan_sha256]
    return matching[-1] if matching else None


def find_lock(ev: Evaluation, runs: Path) -> Path | None:
    """The lock ``ev`` was evaluated under, looked for where it recorded it and beside ``runs`` (module doc)."""

    candidates: list[Path] = []
    if ev.lock is not None:
        candidates.append(Path(ev.lock.path))
    for folder in (runs, runs.parent):
        try:
            candidates += sorted(p for p in folder.iterdir() if p.name.endswith(LOCK_SUFFIX))
        except OSError:
            continue
    for path in dict.fromkeys(candidates):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            data = load_lock(path).data
        except (ToolkitError, OSError):
            continue
        version = ev.lock.version if ev.lock is not None else _version_of(data, ev.prereg_sha256)
        if (
            version is not None
            and 1 <= version <= version_count(data)
            and plan_hash_of(data, version) == ev.prereg_sha256
        ):
            return path
    return None
