"""The lock file format (``prereg/lock/v1``): a frozen plan, its hashes and its amendment chain.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prereg._version import __version__
from prereg.errors import InputError, ToolkitError
from prereg.fileio import write_output
from prereg.jsoncodec import DuplicateKey, NestedTooDeep, NotJSON, loads, readable_bytes
from prereg.lock_schema import LockFile
from prereg.lock_seal import lock_seal
from prereg.monitoring import run_order
from prereg.plan import (
    LoadedPlan,
    canonical_bytes,
    format_path,
    plan_from_canonical,
    plan_hash,
    read_input_file,
    sha256_hex,
)

LOCK_FORMAT = "prereg/lock/v1"
LOCK_SUFFIX = ".lock.json"
LEDGER_NAME = "ledger.jsonl"  # the run ledger's file name (its format is owned by collect/)
_MAX_LOCK_BYTES = 64 << 20


class LockError(InputError):
    """A file that is not a readable lock (exit 2), as opposed to a lock that fails verification."""


@dataclass
class VerifyReport:
    """The outcome of verifying a lock: ``ok`` and, when not, what differs."""

    ok: bool
    plan_sha256: str | None
    genesis_plan_sha256: str | None = None
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    yaml_checked: str | None = None
    seal: str | None = None  # the current version's seal (``prereg.lock_seal``), when the lock verifies

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {
            "ok": self.ok,
            "plan_sha256": self.plan_sha256,
            "genesis_plan_sha256": self.genesis_plan_sha256,
            "differences": self.differences,
            "notes": self.notes,
            "yaml_checked": self.yaml_checked,
            "seal": self.seal,
        }


def utc_now() -> str:
    """Current UTC time as ISO-8601 with a ``Z`` suffix, to the second."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def default_lock_path(yaml_path: str | os.PathLike[str]) -> Path:
    """``study.yaml`` -> ``study.lock.json`` beside it."""
    p = Path(yaml_path)
    return p.with_name(p.stem + LOCK_SUFFIX) if p.suffix in (".yaml", ".yml") else p.with_name(p.name + LOCK_SUFFIX)


def yaml_beside(lock_path: str | os.PathLike[str]) -> Path | None:
    """The ``<stem>.yaml`` (or ``.yml``) beside ``<stem>.lock.json``, if it exists."""
    p = Path(lock_path)
    if not p.name.endswith(LOCK_SUFFIX):
        return None
    stem = p.name[: -len(LOCK_SUFFIX)]
    for suffix in (".yaml", ".yml"):
        candidate = p.with_name(stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def _git_identity(folder: Path) -> dict[str, Any] | None:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=5, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": bool(status.strip()) if status is not None else None}


def environment_info(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Python, platform and the git commit + dirty flag of ``folder``'s repository (or null)."""
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "git": _git_identity(Path(folder).resolve()),
    }


def _with_run_order(lock: dict[str, Any], plan: Any) -> dict[str, Any]:
    """``lock`` with the ``run_order`` of a monitored plan (``prereg.monitoring``), none otherwise."""
    lock = {k: v for k, v in lock.items() if k != "run_order"}
    if plan.monitoring is not None:
        lock["run_order"] = run_order(plan)
    return lock


def build_lock(loaded: LoadedPlan, yaml_path: str | os.PathLike[str]) -> dict[str, Any]:
    """A fresh lock (no amendments) for a validated plan."""
    return _with_run_order(
        {
            "format": LOCK_FORMAT,
            "plan": loaded.canonical,
            "plan_sha256": loaded.plan_sha256,
            "yaml_sha256": loaded.yaml_sha256,
            "yaml_file": Path(yaml_path).name,
            "frozen_at": utc_now(),
            "toolkit_version": __version__,
            "environment": environment_info(Path(yaml_path).parent),
            "amendments": [],
        },
        loaded.plan,
    )


def lock_hash(lock: dict[str, Any]) -> str:
    """SHA-256 of the whole lock's canonical bytes, ``lock_sha256`` itself left out."""
    return sha256_hex(canonical_bytes({k: v for k, v in lock.items() if k != "lock_sha256"}))


def genesis_hash(lock: dict[str, Any]) -> Any:
    """The hash of the plan as first frozen (the one to publish or register elsewhere)."""
    amendments = lock.get("amendments")
    if isinstance(amendments, list) and amendments and isinstance(amendments[0], dict):
        return amendments[0].get("parent_plan_sha256")
    return lock.get("plan_sha256")


def write_lock(path: str | os.PathLike[str], lock: dict[str, Any]) -> None:
    """Seal ``lock`` (set ``lock_sha256``), write it atomically to ``path`` and make it read-only.

    Under the output rule (``prereg.fileio.write_output``): a new lock is created, never over
    anything that appears meanwhile; an existing file is replaced only when it is a lock of the same
    plan lineage (an amendment), never a link, ledger, trace, evaluation or any other file.
    """
    lock["lock_sha256"] = lock_hash(lock)
    genesis = genesis_hash(lock)

    def same_lineage(existing: Path) -> bool:
        try:
            return genesis_hash(read_lock(existing)) == genesis
        except ToolkitError:
            return False

    write_output(path, readable_bytes(lock), ours=same_lineage, read_only=True)


def _looks_like_plan(path: str | os.PathLike[str], raw: bytes) -> bool:
    """A YAML file name, or text that starts like a prereg/v1 plan rather than JSON."""
    if Path(path).suffix.lower() in (".yaml", ".yml"):
        return True
    head = raw[:4096].lstrip()
    return not head.startswith(b"{") and b"schema: prereg/v1" in raw[:65536]


def read_lock(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a lock file as JSON; raise ``LockError`` if it is unreadable or not a prereg lock.

    A plan YAML given where a lock is expected gets the next step ("run prereg freeze") instead.
    """
    try:
        raw = read_input_file(path, limit=_MAX_LOCK_BYTES)
        if _looks_like_plan(path, raw):
            raise LockError(
                f"{path} is a plan (YAML), not a lock: run 'prereg freeze {path}' first and pass the lock it "
                f"writes ({default_lock_path(path)})"
            )
        lock = loads(raw)
    except DuplicateKey as err:
        raise LockError(f"{path}: not a lock file (duplicate key {str(err)!r})") from None
    except NotJSON:
        raise LockError(f"{path}: not UTF-8 JSON: not a lock file") from None
    except NestedTooDeep:
        raise LockError(f"{path}: nested too deeply to be a lock file") from None
    except ValueError as err:  # JSONDecodeError is a ValueError; read_input_file raises ValueError
        message = str(err)
        raise LockError(message if message.startswith(str(path)) else f"{path}: not a lock file ({message})") from None
    if not isinstance(lock, dict) or lock.get("format") != LOCK_FORMAT:
        raise LockError(f'{path}: not a prereg lock (expected "format": "{LOCK_FORMAT}")')
    return lock


def diff_paths(old: Any, new: Any, path: tuple[Any, ...] = ()) -> list[str]:
    """Field paths (``gates[0].pass_if``) where two canonical plans differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                out.append(format_path((*path, key)))
            else:
                out.extend(diff_paths(old[key], new[key], (*path, key)))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=True)) for p in diff_paths(a, b, (*path, i))]
    if type(old) is not type(new) or old != new:
        return [format_path(path) or "(whole plan)"]
    return []


def _check_plan_data(plan: Any, what: str, stored_hash: Any, problems: list[str]) -> str | None:
    if not isinstance(plan, dict):
        problems.append(f"{what}: the plan is missing or not an object")
        return None
    actual = plan_hash(plan)
    if actual != stored_hash:
        problems.append(f"{what}: stored hash {str(stored_hash)[:12]} does not match the plan's hash {actual[:12]}")
    try:
        plan_from_canonical(plan)
    except ValidationError as err:
        problems.append(f"{what}: the stored plan no longer validates ({err.error_count()} problems)")
    return actual


def _check_run_order(lock: dict[str, Any], problems: list[str]) -> None:
    """A monitored plan's lock holds the run order its plan gives (``prereg.monitoring``); others hold none."""
    try:
        plan = plan_from_canonical(lock.get("plan"))  # type: ignore[arg-type]
    except (ValidationError, TypeError):
        return  # said by _check_plan_data
    expected = run_order(plan) if plan.monitoring is not None else None
    stored = lock.get("run_order")
    if expected is None and stored is not None:
        problems.append("the lock holds a run order but its plan has no monitoring section")
    elif expected is not None and canonical_bytes(stored) != canonical_bytes(expected):
        problems.append("the lock's run order is not the one its plan's monitoring seed gives (prereg.monitoring)")


def structure_problems(lock: dict[str, Any]) -> list[str]:
    """Fields of a lock that are missing, unknown or of the wrong type (empty when well-formed)."""
    try:
        LockFile.model_validate(lock)
    except ValidationError as err:
        return [
            f"malformed lock: {format_path(tuple(e['loc'])) or '(top level)'}: {e['msg']}"
            for e in err.errors(include_url=False)
        ]
    return []


def verify_chain(lock: dict[str, Any]) -> list[str]:
    """Integrity problems of a lock read by ``read_lock``: structure, hashes, the plan, the chain."""
    problems: list[str] = structure_problems(lock)[:10]
    current = _check_plan_data(lock.get("plan"), "current plan", lock.get("plan_sha256"), problems)
    if isinstance(lock.get("plan"), dict):
        _check_run_order(lock, problems)
    amendments = lock.get("amendments")
    if not isinstance(amendments, list):
        return [*problems, "the amendment chain is missing or not a list"]
    times = [lock.get("frozen_at")]
    for i, entry in enumerate(amendments):
        label = f"amendment {i + 1}"
        if not isinstance(entry, dict):
            problems.append(f"{label}: not an object")
            continue
        _check_plan_data(entry.get("parent_plan"), f"{label} parent", entry.get("parent_plan_sha256"), problems)
        if i > 0 and isinstance(amendments[i - 1], dict):
            if entry.get("parent_plan_sha256") != amendments[i - 1].get("plan_sha256"):
                problems.append(f"{label}: its parent is not the plan that amendment {i} produced")
        nxt = amendments[i + 1] if i + 1 < len(amendments) else None
        produced = nxt.get("parent_plan_sha256") if isinstance(nxt, dict) else current
        if entry.get("plan_sha256") != produced:
            problems.append(f"{label}: the plan it records does not match the next version in the chain")
        if entry.get("plan_sha256") == entry.get("parent_plan_sha256"):
            problems.append(f"{label}: amends a plan into itself")
        if entry.get("entry_sha256") != entry_hash(entry):
            problems.append(f"{label}: the entry was edited after it was written (its entry hash does not match)")
        previous = amendments[i - 1].get("entry_sha256") if i > 0 and isinstance(amendments[i - 1], dict) else None
        if entry.get("parent_entry_sha256") != previous:
            problems.append(f"{label}: does not link to the previous amendment entry")
        if not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
            problems.append(f"{label}: no reason recorded")
        times.append(entry.get("amended_at"))
    if not all(isinstance(t, str) for t in times):
        problems.append("missing or malformed timestamps (frozen_at / amended_at)")
    elif times != sorted(str(t) for t in times):
        problems.append("timestamps go backwards: frozen_at and amended_at must be in order")
    if lock.get("lock_sha256") != lock_hash(lock):
        problems.append("the lock was edited after it was written (lock_sha256 does not match its content)")
    return problems


def renderable(lock: dict[str, Any]) -> bool:
    """Whether a lock's current plan and amendment entries are well-formed enough to display."""
    if structure_problems(lock):
        return False
    try:
        plan_from_canonical(lock["plan"])
    except ValidationError:
        return False
    return True


def verify_lock(lock: dict[str, Any], yaml_plan: LoadedPlan | None = None) -> VerifyReport:
    """Verify a lock end to end, and optionally that ``yaml_plan`` still canonicalises to its plan."""
    differences = verify_chain(lock)
    report = VerifyReport(
        ok=not differences,
        plan_sha256=lock.get("plan_sha256"),
        genesis_plan_sha256=genesis_hash(lock),
        differences=differences,
    )
    if not differences:
        report.seal = lock_seal(lock)
    if yaml_plan is not None:
        report.yaml_checked = yaml_plan.source
        if yaml_plan.plan_sha256 != lock.get("plan_sha256"):
            changed = diff_paths(lock.get("plan"), yaml_plan.canonical)
            report.ok = False
            report.differences.append(
                f"{yaml_plan.source} no longer matches the lock (plan hash {yaml_plan.plan_sha256[:12]} "
                f"vs locked {str(lock.get('plan_sha256'))[:12]}); changed: {', '.join(changed[:12])}"
                + (" ..." if len(changed) > 12 else "")
                + "; use 'prereg amend' to record a change"
            )
        elif yaml_plan.yaml_sha256 != lock.get("yaml_sha256"):
            report.notes.append(f"{yaml_plan.source}: the text changed (comments or layout) but the plan is identical")
    return report


def runs_info(runs_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What a runs folder holds, for an amendment: whether a ledger exists, its hash and line count."""
    ledger = Path(runs_dir) / LEDGER_NAME
    if not ledger.is_file():
        return {"dir": str(runs_dir), "ledger_sha256": None, "ledger_lines": 0}
    digest, lines = hashlib.sha256(), 0
    fd = os.open(ledger, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced by a FIFO or device since is_file()
            raise InputError(f"{ledger}: is not a regular file; not read")
        while chunk := os.read(fd, 1 << 20):  # streamed: bounded memory for any ledger size
            digest.update(chunk)
            lines += chunk.count(b"\n")
    finally:
        os.close(fd)
    return {"dir": str(runs_dir), "ledger_sha256": digest.hexdigest(), "ledger_lines": lines}


def entry_hash(entry: dict[str, Any]) -> str:
    """SHA-256 of an amendment entry's canonical bytes, ``entry_sha256`` itself left out."""
    return sha256_hex(canonical_bytes({k: v for k, v in entry.items() if k != "entry_sha256"}))


def amend_lock(
    lock: dict[str, Any],
    loaded: LoadedPlan,
    yaml_path: str | os.PathLike[str],
    reason: str,
    runs: dict[str, Any] | None,
) -> dict[str, Any]:
    """A new lock version: ``loaded`` becomes the plan, the old one the parent of a new amendment."""
    entry = {
        "version": len(lock["amendments"]) + 2,
        "parent_plan_sha256": lock["plan_sha256"],
        "parent_yaml_sha256": lock["yaml_sha256"],
        "parent_plan": lock["plan"],
        "plan_sha256": loaded.plan_sha256,
        "yaml_sha256": loaded.yaml_sha256,
        "reason": reason,
        "amended_at": utc_now(),
        "post_data": bool(runs and runs["ledger_sha256"] is not None and runs["ledger_lines"] > 0),
        "runs_checked": runs is not None,
        "runs": runs,
        "changed": diff_paths(lock["plan"], loaded.canonical),
        "toolkit_version": __version__,
        "environment": environment_info(Path(yaml_path).parent),
    }
    previous = lock["amendments"][-1]["entry_sha256"] if lock["amendments"] else None
    entry["parent_entry_sha256"] = previous
    entry["entry_sha256"] = entry_hash(entry)
    return _with_run_order(
        {
            **lock,
            "plan": loaded.canonical,
            "plan_sha256": loaded.plan_sha256,
            "yaml_sha256": loaded.yaml_sha256,
            "yaml_file": Path(yaml_path).name,
            "amendments": [*lock["amendments"], entry],
        },
        loaded.plan,
    )
