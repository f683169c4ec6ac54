"""Before a resume runs anything: the code files still hash as they did for the folder's first run.

A ``command`` record carries the SHA-256 of each file its plan's ``code`` globs matched
(``code.command.files``: path relative to ``workdir`` -> SHA-256; ``collect.collectors.command.identity``).
A runs folder is one study made by one code: a file edited between two ``collect run`` calls into the
same folder (a fix before ``--resume``) would give runs of two codes, which ``gates evaluate`` refuses
only at the end (``gates.code_identity``). So before a sweep that still has runs to do, the code files
each planned run would hash now are compared with what the folder's first record of the same
``workdir`` and ``code`` globs carries; any file changed, added or gone refuses the sweep
(:class:`CodeChanged`, exit 3) naming the files, the commit the first run recorded, and the two ways
on: restore the files, or collect into a new runs folder (the old one kept as it is).

Records of other collectors (no ``code.command.files``), failed runs (they record no code files) and a
plan that declares ``code_identity: {may_differ: [files, ...]}`` are not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from collect.collectors.base import ParamError
from collect.collectors.command.identity import file_hashes
from collect.collectors.command.params import code_files
from prereg.errors import IntegrityError

if TYPE_CHECKING:
    from collect.engine.runs import PlannedRun
    from collect.ledger.store import RunRecord
    from prereg.schema import Plan

SHOWN_FILES: Final = 8  # changed files named in the message (the rest counted)


class CodeChanged(IntegrityError):
    """The code files changed since the folder's first run (exit 3); ``details``: the files."""


def _recorded_files(record: RunRecord) -> dict[str, str] | None:
    """The code files a ``command`` record hashed (path -> SHA-256), or None when it carries none."""
    command = record.code.get("command") if isinstance(record.code, dict) else None
    files = command.get("files") if isinstance(command, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(k): v for k, v in files.items()}


def _setup(params: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A ``command`` run's (workdir, code globs): what decides which files it hashes."""
    return str(params["workdir"]), tuple(str(g) for g in params["code"])


def _current_files(workdir: str, globs: tuple[str, ...]) -> dict[str, str]:
    """What the code files hash to now (as the collector hashes them); a glob now matching nothing counts
    as no file (the collector's own check refuses it when a run starts)."""
    root = Path(workdir).resolve()
    found: list[Path] = []
    for glob in globs:
        try:
            found += code_files([glob], root)
        except ParamError:
            continue
    return file_hashes(sorted(set(found)), root)


def _changes(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each file that differs, in words: 'train.py (changed)', 'model.py (new)', 'util.py (gone)'."""
    out = [f"{name} (changed)" for name in sorted(set(recorded) & set(now)) if recorded[name] != now[name]]
    out += [f"{name} (new: not there at the first run)" for name in sorted(set(now) - set(recorded))]
    out += [f"{name} (gone)" for name in sorted(set(recorded) - set(now))]
    return out


def _commit_words(record: RunRecord) -> tuple[str, str | None]:
    """('commit abc123def456 (clean)', full commit) of the first run's workdir, or words saying none."""
    git = record.code.get("command", {}).get("files_git")
    if not isinstance(git, dict) or not git.get("commit"):
        return "no git commit recorded (the workdir was not in a repository)", None
    commit = str(git["commit"])
    dirty = git.get("dirty")
    state = " with uncommitted changes to tracked files" if dirty else " (clean)" if dirty is False else ""
    return f"commit {commit[:12]}{state}", commit


def check_code_unchanged(
    plan: Plan, collector: str, planned: Sequence[PlannedRun], records: Sequence[RunRecord], runs: Path, lock_path: str
) -> None:
    """Refuse (:class:`CodeChanged`) a sweep into ``runs`` (``planned``: the plan's runs, checked
    parameters; ``records``: the folder's ledger) whose code files no longer hash as the folder's first
    run of the same ``workdir`` and ``code`` globs recorded (module doc). Only ``command`` plans."""
    declared = plan.code_identity
    if collector != "command" or (declared is not None and "files" in declared.may_differ):
        return
    setup_of = {p.run_id: _setup(p.params) for p in planned}
    setups = set(setup_of.values())
    only = next(iter(setups)) if len(setups) == 1 else None  # a run of an earlier plan version: the one setup
    first: dict[tuple[str, tuple[str, ...]], tuple[RunRecord, dict[str, str]]] = {}
    for record in records:  # ledger order: the first record of each setup
        files = _recorded_files(record)
        setup = setup_of.get(record.run_id, only)
        if files is not None and setup is not None and setup not in first:
            first[setup] = (record, files)
    for setup, (record, recorded) in first.items():
        changes = _changes(recorded, _current_files(*setup))
        if changes:
            raise CodeChanged(_message(record, changes, setup[0], runs, lock_path), details=changes)


def _message(record: RunRecord, changes: list[str], workdir: str, runs: Path, lock_path: str) -> str:
    shown = "; ".join(changes[:SHOWN_FILES]) + (
        f"; and {len(changes) - SHOWN_FILES} more" if len(changes) > SHOWN_FILES else ""
    )
    commit, full = _commit_words(record)
    changed = [c.split(" (", 1)[0] for c in changes if c.endswith("(changed)") or c.endswith("(gone)")]
    restore = (
        f"restore them as they were (the first run recorded {commit}: e.g. 'git stash', or "
        f"'git checkout {full[:12]} -- {' '.join(changed[:SHOWN_FILES]) or '.'}' in {workdir})"
        if full
        else f"restore them as they were ({commit}; their SHA-256 are in the folder's records, code.command.files)"
    )
    return (
        f"the code files changed since this runs folder's first run ({record.run_id}, started "
        f"{record.started_at or 'at a time not recorded'}): {shown}. Nothing was run: runs of two codes in one "
        f"folder would refuse the decision at 'gates evaluate'. Either {restore} and resume ('collect run "
        f"{lock_path} --out {runs} --resume'), or keep this folder as it is and collect into a new one "
        f"('collect run {lock_path} --out NEW_RUNS') with the code as it is now"
    )


__all__ = ["CodeChanged", "check_code_unchanged"]
