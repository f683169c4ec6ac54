"""One runs folder, one plan: the check ``collect run`` and ``collect import`` make before appending.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from collect.ledger.store import Ledger
from prereg.errors import InputError, IntegrityError
from prereg.lock import read_lock
from prereg.lock_seal import seals_by_plan

MAX_LOCKS_LOOKED_AT = 200
MAX_LOCK_BYTES = 8 << 20


class OtherPlanRuns(IntegrityError):
    """The runs folder holds runs of a plan outside the lock's amendment chain (exit 3); nothing appended."""


def lineage(lock_data: Mapping[str, Any]) -> set[str]:
    """The plan hashes of a lock's chain: its current plan and every amendment's parent plan."""
    return {str(lock_data["plan_sha256"])} | {str(a["parent_plan_sha256"]) for a in lock_data.get("amendments") or []}


def check_folder_plan(
    existing: Ledger, runs_dir: Path, plan_sha256: str, study: str, chain: Collection[str] | None = None
) -> None:
    """Refuse (``OtherPlanRuns``) when ``existing`` holds records of a plan not in ``chain`` (default:
    only ``plan_sha256``); the message names the folder's plan(s) and the way on."""
    allowed = set(chain or ()) | {plan_sha256}
    others = Counter(r.prereg_sha256 for r in existing.records if r.prereg_sha256 not in allowed)
    if not others:
        return
    named = [f"{count} run(s) of plan {sha[:12]}{_study_of(sha, runs_dir)}" for sha, count in others.most_common()]
    raise OtherPlanRuns(
        f"{runs_dir}: refused, nothing appended: this runs folder holds {'; '.join(named)}, which is not "
        f"study {study!r} (plan {plan_sha256[:12]}) nor a version in its lock's amendment chain. A ledger is "
        "append-only: one folder holds one plan's runs. Write these runs into a folder of their own "
        "(--out NEW_RUNS)"
    )


def _study_of(sha: str, runs_dir: Path) -> str:
    """`` (study 'x', lock PATH)`` for a lock near the folder whose chain has plan ``sha``, else a note."""
    places = [runs_dir, runs_dir.parent, Path.cwd()]
    seen: set[Path] = set()
    looked = 0
    for place in places:
        try:
            candidates = sorted(place.glob("*.lock.json"))
        except OSError:
            continue
        for path in candidates:
            looked += 1
            if looked > MAX_LOCKS_LOOKED_AT:
                break
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            data = _lock_json(path)
            if data is not None and sha in lineage(data):
                study = data.get("plan", {}).get("study")
                return f" (study {study!r}, lock {path})" if isinstance(study, str) else f" (lock {path})"
    return " (no lock of it found in or beside the folder)"


def _lock_json(path: Path) -> dict[str, Any] | None:
    """A lock file's JSON when it reads as one (a label only: never trusted for anything else)."""
    try:
        data = read_lock(path)
        lineage(data)
    except (InputError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return data


def lock_seals(lock_data: Mapping[str, Any]) -> dict[str, set[str]]:
    """Plan hash -> the seals of the lock's versions with that plan (``prereg.lock_seal``)."""
    return {plan: set(by_version.values()) for plan, by_version in seals_by_plan(dict(lock_data)).items()}


def check_folder_seals(existing: Ledger, runs_dir: Path, seals: Mapping[str, Collection[str]]) -> None:
    """Refuse (``IntegrityError``, exit 3) to append under a lock whose seal the folder's runs of the
    same plans do not carry (``seals``: :func:`lock_seals` of the lock): the lock was resealed (its
    freeze time or amendment chain rewritten) after those runs were recorded. Unsealed records are
    left to ``gates evaluate``, which refuses them."""
    foreign = [
        r.run_id
        for r in existing.records
        if r.lock_seal is not None and r.prereg_sha256 in seals and r.lock_seal not in seals[r.prereg_sha256]
    ]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise IntegrityError(
            f"{runs_dir}: refused, nothing appended: {len(foreign)} run(s) here ({shown}) carry another seal than "
            "this lock's for their plan version: the lock was resealed (its freeze time or amendment chain "
            "rewritten) after they were recorded, or they belong to another freeze of the same plan"
        )


__all__ = ["OtherPlanRuns", "check_folder_plan", "check_folder_seals", "lineage", "lock_seals"]
