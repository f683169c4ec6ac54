"""Producing runs from Python: run a frozen plan, import a table of runs, read a ledger.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from collect.engine.resume_check import check_code_unchanged
from collect.engine.runner import check_jobs, expand_plan
from collect.engine.runner import run_plan as engine_run_plan
from collect.importing.importer import ImportProblem, frame_rows, import_rows
from collect.importing.importer import import_table as import_file
from collect.importing.planned import plan_listing as plan_listing  # part of this API
from collect.importing.planned import planned_runs as list_planned_runs
from collect.importing.time_order import EarlyRunsWarning, early_runs_message
from collect.importing.trackers.base import ReadOptions, tracker_source
from collect.importing.trackers.importing import TrackerImport
from collect.importing.trackers.importing import import_tracker as import_source
from collect.ledger.folder_plan import check_folder_plan, check_folder_seals, lineage, lock_seals
from collect.ledger.store import read_ledger as read
from collect.ledger.store import verify_chain
from collect.ledger.try_marker import refuse_try_folder
from prereg.api import Lock, load_lock
from prereg.errors import InputError
from prereg.fileio import not_a_readable_file
from prereg.monitoring import run_order, stratum_id

if TYPE_CHECKING:
    from collect.engine.runner import RunSummary
    from collect.engine.runs import PlannedRun
    from collect.ledger.store import Ledger, RunRecord
    from collect.telemetry.logs.common import LogOptions

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
    address: str | None = None,
    only: list[str] | None = None,
) -> RunSummary:
    """Execute every run of a frozen plan not yet complete in ``out``, appending each to its ledger.

    ``executor`` is ``"local"`` (a process pool when ``jobs > 1``) or ``"ray"``; ``address`` the Ray
    cluster to join (default ``RAY_ADDRESS``, else a local Ray instance of its own: docs/cluster.md);
    ``progress(done, total)`` is called after each run. A run that raises is recorded as failed
    (``summary.failed``). ``only``: the run ids to restrict it to, in the order to run them (a look of
    a monitored plan: ``gates.monitor.run_monitored``, which ``collect run`` calls for plans with
    ``monitoring:``).

    A folder that already holds runs (a resume) is checked first: its plan, its seal, and for a
    ``command`` plan that its code files still hash as its first run recorded
    (``collect.engine.resume_check``: ``CodeChanged``, exit 3, naming the files and the ways on).
    """
    verified = load_lock(lock)
    runs = _runs_folder(out)
    refuse_try_folder(runs, "collect run")
    check_jobs(jobs, executor)
    existing = _check_folder(verified, runs)  # one plan per runs folder
    collector, planned = expand_plan(verified.plan, verified.plan_sha256)  # every parameter checked first
    if address is not None and executor != "ray":
        raise InputError("address names a Ray cluster: it goes with executor='ray' (--executor ray)")
    if only is None and verified.plan.monitoring is not None:  # a monitored plan runs in its frozen order
        only = frozen_order(verified.plan, planned)
    if existing is not None and _runs_to_do(existing, verified.plan_sha256, planned, only):
        check_code_unchanged(verified.plan, collector.name, planned, existing.records, runs, str(verified.path))
    return engine_run_plan(
        verified.plan,
        verified.plan_sha256,
        runs,
        jobs,
        executor,
        progress,
        lock_seal=verified.seal,
        address=address,
        only=only,
        resume_lock=str(verified.path),
    )


def frozen_order(plan: Any, planned: list[PlannedRun]) -> list[str]:
    """The run ids of a monitored plan in the frozen run order (``prereg.monitoring.run_order``):
    stratum by stratum, every arm and replicate of a stratum together."""
    rank = {stratum_id(s): i for i, s in enumerate(run_order(plan))}
    ordered = sorted(planned, key=lambda p: rank[stratum_id({f: p.stratum[f] for f in plan.strata.factors})])
    return [p.run_id for p in ordered]


def import_table(
    lock: LockLike,
    table: PathLike | Any,
    out: PathLike,
    skipped: list[str] | None = None,
    telemetry: PathLike | None = None,
    telemetry_format: str | None = None,
    *,
    keep: bool = True,
    telemetry_options: LogOptions | None = None,
) -> list[RunRecord]:
    """Validate a table of runs against the plan and append it to ``out``'s ledger.

    ``table``: a CSV / JSONL / Parquet file, or a pandas DataFrame (its columns are the table's,
    checked as a file's are; a named index counts as columns). Returns the records appended, as
    written (chained: the last one's ``record_sha256`` is the new ledger head); the ids of rows
    already in the ledger go into ``skipped`` if given. Rows that started before the plan was frozen
    (or last amended) without ``data: pre_existing`` in the plan give an ``EarlyRunsWarning``.
    ``telemetry``: a folder of one power log per run (``<run_id>.<suffix>``, format ``telemetry_format``
    or recognised) that fills each row's telemetry columns and becomes its trace (``collect.importing.logs``);
    ``telemetry_options``: what the logs do not say about themselves (``collect.telemetry.logs.common.LogOptions``:
    the poll interval, the GPU or every GPU summed, the power range, the counter's period ...; default: none given).
    ``keep=False`` (what ``collect import`` asks): a file the column-wise path takes returns, per record,
    only its ``run_id``, ``started_at`` and ``record_sha256`` (``collect.importing.importer.Appended``),
    so the memory of a long import does not grow with its records.
    """
    verified = load_lock(lock)
    runs = _runs_folder(out)
    refuse_try_folder(runs, "collect import")
    seals = lock_seals(verified.data)  # checked inside the writer lock, with the folder's plan
    logs = None
    if telemetry is not None:
        from collect.importing.logs import TelemetryLogs  # lazy: numpy
        from collect.telemetry.logs.common import LogOptions  # lazy: numpy

        logs = TelemetryLogs(Path(telemetry), telemetry_format, telemetry_options or LogOptions())
    if _is_data_frame(table):
        try:
            records = import_rows(
                frame_rows(table),
                "DataFrame",
                verified.plan,
                verified.plan_sha256,
                runs,
                skipped,
                lineage(verified.data),
                lock_seal=verified.seal,
                seals=seals,
            )
        except ImportProblem as err:
            if err.details is not None:
                raise
            raise ImportProblem(err.errors, table="the DataFrame") from None
        _warn_early(records, verified)
        return records
    if not isinstance(table, (str, os.PathLike)):
        raise InputError(
            f"import_table takes a path to a CSV / JSONL / Parquet file or a pandas DataFrame, "
            f"not a {type(table).__name__}"
        )
    path = Path(table)
    problem = not_a_readable_file(path)
    if problem:
        raise InputError(problem)
    try:
        records = import_file(
            path,
            verified.plan,
            verified.plan_sha256,
            runs,
            skipped,
            lineage(verified.data),
            lock_seal=verified.seal,
            seals=seals,
            telemetry=logs,
            keep=keep,
        )
    except ImportProblem as err:
        if err.details is not None:  # already names the table
            raise
        raise ImportProblem(err.errors, table=str(path)) from None
    _warn_early(records, verified)
    return records


def import_tracker(
    lock: LockLike,
    source: str,
    out: PathLike,
    skipped: list[str] | None = None,
    *,
    experiment: str | None = None,
    filter: str | None = None,  # noqa: A002 - MLflow's own word for its search expression
    match: list[str] | None = None,
) -> TrackerImport:
    """Import the runs of an experiment tracker (``mlflow:URI``, ``tensorboard:DIR``, ``wandb:DIR``,
    ``raytune:DIR``) into ``out``'s ledger, each matched to its planned run by the tag ``prereg.run_id``
    (or by ``match``: ``["seed=params.seed", ...]`` for runs made before the plan) and keeping its
    provenance (``collect.importing.trackers``). ``experiment`` and ``filter`` narrow an MLflow store
    (an experiment name or id; MLflow's search syntax). Early runs warn as ``import_table``'s do.
    """
    parsed = tracker_source(source)
    verified = load_lock(lock)
    runs = _runs_folder(out)
    refuse_try_folder(runs, "collect import")
    done = import_source(
        parsed,
        verified.plan,
        verified.plan_sha256,
        runs,
        skipped,
        lineage(verified.data),
        options=ReadOptions(experiment, filter),
        match=match or [],
        lock_seal=verified.seal,
        seals=lock_seals(verified.data),
    )
    _warn_early(done.records, verified)
    return done


def planned_runs(lock: LockLike) -> list[PlannedRun]:
    """Every run the frozen plan asks for, as ``collect run`` would execute it: run id, stratum, arm,
    replicate, derived seed and merged parameters (``collect.importing.planned``; ``collect plan``)."""
    verified = load_lock(lock)
    return list_planned_runs(verified.plan, verified.plan_sha256)


def _warn_early(records: list[RunRecord], verified: Lock) -> None:
    """Warn (``collect.importing.time_order.EarlyRunsWarning``) when appended rows started before the plan."""
    message = early_runs_message(records, verified.data, verified.plan, str(verified.path))
    if message:
        warnings.warn(EarlyRunsWarning(message), stacklevel=3)


def _check_folder(verified: Lock, runs: Path) -> Ledger | None:
    """``collect.ledger.folder_plan``'s checks of the folder's ledger (none yet: nothing to check, None): one
    plan per folder, and the lock's seal is the one its runs carry. Returns the ledger read."""
    if not (runs / "ledger.jsonl").exists():
        return None
    existing = read(runs)
    check_folder_plan(existing, runs, verified.plan_sha256, verified.plan.study, lineage(verified.data))
    check_folder_seals(existing, runs, lock_seals(verified.data))
    return existing


def _runs_to_do(ledger: Ledger, plan_sha256: str, planned: list[PlannedRun], only: list[str] | None) -> bool:
    """Whether a sweep of ``planned`` (restricted to ``only``) still has a run the ledger lacks complete."""
    done = {r.run_id for r in ledger.records if r.status == "complete" and r.prereg_sha256 == plan_sha256}
    wanted = set(only) if only is not None else {p.run_id for p in planned}
    return bool(wanted - done)


def _is_data_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas DataFrame (pandas imported only when the value comes from it)."""
    if not type(value).__module__.startswith("pandas"):
        return False
    import pandas as pd  # lazy: pandas

    return isinstance(value, pd.DataFrame)


def read_ledger(runs: PathLike) -> Ledger:
    """The runs folder's ledger (records, hashes, refused lines); never raises on a damaged line."""
    return read(runs)


def ledger_head(runs: PathLike) -> str | None:
    """The ledger's head hash (to publish when collection ends); None for an empty ledger."""
    return verify_chain(read_ledger(runs), check_traces=False).head
