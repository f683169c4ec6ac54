"""The plan's Python API: freeze, verify, amend and load locks, with the integrity rules built in.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from prereg.errors import InputError, IntegrityError
from prereg.lock import (
    VerifyReport,
    amend_lock,
    build_lock,
    default_lock_path,
    read_lock,
    runs_info,
    verify_lock,
    write_lock,
    yaml_beside,
)
from prereg.lock_seal import check_published, lock_seal, parse_seal
from prereg.plan import LoadedPlan, PlanError, load_plan, plan_from_canonical
from prereg.schema import Plan

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Lock:
    """A lock file that verified when it was read: its JSON (``data``), plan model and path."""

    path: Path
    data: dict[str, Any]
    plan: Plan

    @property
    def plan_sha256(self) -> str:
        """SHA-256 of the current canonical plan."""
        return str(self.data["plan_sha256"])

    @property
    def genesis_sha256(self) -> str:
        """The hash of the plan as first frozen (the one to publish)."""
        amendments = self.data.get("amendments") or []
        return str(amendments[0]["parent_plan_sha256"] if amendments else self.data["plan_sha256"])

    @property
    def version(self) -> int:
        """1 as first frozen, +1 per amendment."""
        return len(self.data.get("amendments") or []) + 1

    @property
    def seal(self) -> str:
        """The current version's seal (``prereg.lock_seal``): what every record collected under it carries."""
        return lock_seal(self.data)

    @property
    def frozen_at(self) -> str:
        """UTC time of the first freeze."""
        return str(self.data["frozen_at"])


def _lock_of(path: Path, data: dict[str, Any]) -> Lock:
    return Lock(path=path, data=data, plan=plan_from_canonical(data["plan"]))


def load_lock(lock_path: PathLike | Lock) -> Lock:
    """Read a lock that verifies; ``IntegrityError`` (exit 3) if it does not, ``LockError`` if not a lock."""
    if isinstance(lock_path, Lock):
        return lock_path
    data = read_lock(lock_path)
    report = verify_lock(data)
    if not report.ok:
        raise IntegrityError(f"{lock_path} does not verify; refusing to use it:\n- " + "\n- ".join(report.differences))
    return _lock_of(Path(lock_path), data)


def freeze(plan_path: PathLike, lock_path: PathLike | None = None, *, loaded: LoadedPlan | None = None) -> Lock:
    """Validate, canonicalise, hash and lock a plan (``<stem>.lock.json`` beside it by default).

    An existing lock of the same plan is returned unchanged; one of a different plan is refused
    (``InputError``): record a change with :func:`amend`. ``loaded`` skips re-reading the YAML.
    """
    if loaded is None:
        loaded = load_plan(plan_path)
    target = Path(lock_path) if lock_path is not None else default_lock_path(plan_path)
    if target.exists():
        existing = read_lock(target)
        if existing.get("plan_sha256") != loaded.plan_sha256:
            raise InputError(
                f"{target} already locks a different plan ({str(existing.get('plan_sha256'))[:12]}); "
                f"re-freezing is refused: record the change with 'prereg amend {plan_path} --reason ...'"
            )
        report = verify_lock(existing)
        if not report.ok:
            raise IntegrityError(
                f"{target} locks this plan but does not verify; refusing to use it:\n- "
                + "\n- ".join(report.differences)
            )
        return _lock_of(target, existing)
    if lock_path is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
    elif not target.parent.is_dir():  # pragma: no cover - the YAML's own folder exists
        raise InputError(f"{target.parent}: no such folder for the lock")
    data = build_lock(loaded, plan_path)
    write_lock(target, data)
    return _lock_of(target, data)


def verify(lock_path: PathLike, yaml_path: PathLike | None = None, published: str | None = None) -> VerifyReport:
    """Check a lock's hashes and chain, that its YAML (given, or beside it) still matches, and that
    it has the ``published`` seal (any of its versions' seals) if given.

    Returns the report (``ok`` false with the differences) rather than raising on a broken lock;
    a file that is not a lock raises ``LockError``, a ``yaml_path`` that does not exist or a
    malformed ``published`` seal ``InputError``.
    """
    data = read_lock(lock_path)
    if published is not None:
        try:
            parse_seal(published)
        except ValueError as err:
            raise InputError(str(err)) from None
    if yaml_path is not None and not Path(yaml_path).is_file():
        raise InputError(f"{yaml_path}: no such file")
    source = yaml_path if yaml_path is not None else yaml_beside(lock_path)
    yaml_plan = None
    yaml_problem = None
    if source is not None:
        try:
            yaml_plan = load_plan(source)
        except PlanError as err:
            yaml_problem = f"{source} no longer validates as a plan:\n{err.render(limit=5)}"
    report = verify_lock(data, yaml_plan)
    if yaml_problem:
        report.ok = False
        report.differences.append(yaml_problem)
    if published is not None and report.seal is not None:  # a broken lock's seals mean nothing
        version, sentence = check_published(data, published)
        if version is None:
            report.ok = False
            report.differences.append(sentence)
        else:
            report.notes.append(sentence)
    return report


def amend(
    plan_path: PathLike, lock_path: PathLike | None = None, reason: str = "", runs: PathLike | None = None
) -> Lock:
    """Record a changed plan as a new version of its lock, with the reason and whether data existed.

    Refused: an empty reason, no lock, a lock that does not verify (``IntegrityError``), a plan
    identical to the locked one, a ``runs`` folder that does not exist.
    """
    reason = (reason or "").strip()
    if not reason:
        raise InputError("--reason must say why the plan changes")
    target = Path(lock_path) if lock_path is not None else default_lock_path(plan_path)
    if not target.exists():
        raise InputError(f"{target}: no lock to amend; freeze the plan first ('prereg freeze {plan_path}')")
    data = read_lock(target)
    report = verify_lock(data)
    if not report.ok:
        raise IntegrityError(
            f"{target} does not verify; refusing to amend a broken chain:\n- " + "\n- ".join(report.differences)
        )
    loaded = load_plan(plan_path)
    if loaded.plan_sha256 == data["plan_sha256"]:
        raise InputError(f"{plan_path} canonicalises to the locked plan: nothing to amend")
    runs_record = None
    if runs is not None:
        if not Path(runs).is_dir():
            raise InputError(f"{runs}: no such runs folder")
        runs_record = runs_info(runs)
    new = amend_lock(data, loaded, plan_path, reason, runs_record)
    write_lock(target, new)
    return _lock_of(target, new)
