"""Producing runs from Python: run a frozen plan, import a table of runs, read a ledger.

What a notebook calls (re-exported lazily by ``import collect``)::

    summary = collect.run_plan("study.lock.json", "runs/", jobs=4)     # -> RunSummary
    records = collect.import_table("study.lock.json", "runs.csv", "runs/")
    ledger = collect.read_ledger("runs/")                              # -> Ledger

Rules (the ``collect`` CLI only prints what these return):

* every entry point takes a :class:`prereg.Lock` or a lock path, and a path is used only if the
  lock verifies (``prereg.load_lock``: ``IntegrityError``, exit 3, otherwise);
* every parameter of every run is checked before anything runs (``EngineError``, exit 2), and
  the runs folder's writer lock is held while the ledger grows (``RunsBusy`` if another writer has it);
* an imported table is validated whole before any row is appended (``ImportProblem``, exit 2,
  naming each offending row); rows already in the ledger are skipped, never duplicated.

Imports no ``*.cli`` module.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Union

from prereg.api import Lock, load_lock
from prereg.errors import InputError

if TYPE_CHECKING:
    from collect.engine import RunSummary
    from collect.ledger import Ledger, RunRecord

PathLike = Union[str, "os.PathLike[str]"]
LockLike = Union[Lock, str, "os.PathLike[str]"]


def _runs_folder(out: PathLike) -> Path:
    runs = Path(out)
    if runs.exists() and not runs.is_dir():
        raise InputError(f"{runs}: exists and is not a folder")
    return runs


def run_plan(
    lock: LockLike,
    out: PathLike,
    jobs: int = 1,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
) -> RunSummary:
    """Execute every run of a frozen plan not yet complete in ``out``, appending each to its ledger.

    ``executor`` is ``"local"`` (a process pool when ``jobs > 1``) or ``"ray"``; ``progress(done,
    total)`` is called after each run. A run that raises is recorded as failed (``summary.failed``).
    """
    from collect.engine import check_jobs, expand_plan
    from collect.engine import run_plan as engine_run_plan

    verified = load_lock(lock)
    runs = _runs_folder(out)
    check_jobs(jobs, executor)
    expand_plan(verified.plan, verified.plan_sha256)  # every parameter checked before anything runs
    return engine_run_plan(verified.plan, verified.plan_sha256, runs, jobs, executor, progress,
                           lock_seal=verified.seal)


def import_table(
    lock: LockLike, table: PathLike, out: PathLike, skipped: list[str] | None = None
) -> list[RunRecord]:
    """Validate a CSV / JSONL / Parquet table of runs against the plan and append it to ``out``'s ledger.

    Returns the records appended, as written (chained: the last one's ``record_sha256`` is the new
    ledger head); the ids of rows already in the ledger go into ``skipped`` if given.
    """
    from collect.importer import ImportProblem
    from collect.importer import import_table as import_rows
    from prereg.fileio import not_a_readable_file

    verified = load_lock(lock)
    path = Path(table)
    problem = not_a_readable_file(path)
    if problem:
        raise InputError(problem)
    runs = _runs_folder(out)
    try:
        return import_rows(path, verified.plan, verified.plan_sha256, runs, skipped, lock_seal=verified.seal)
    except ImportProblem as err:
        if err.details is not None:  # already names the table
            raise
        raise ImportProblem(err.errors, table=str(path)) from None


def read_ledger(runs: PathLike) -> Ledger:
    """The runs folder's ledger (records, hashes, refused lines); never raises on a damaged line."""
    from collect.ledger import read_ledger as read

    return read(runs)


def ledger_head(runs: PathLike) -> str | None:
    """The ledger's head hash (to publish when collection ends); None for an empty ledger."""
    from collect.ledger import verify_chain

    return verify_chain(read_ledger(runs), check_traces=False).head
