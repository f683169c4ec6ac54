"""The collection engine behind ``collect run``: plan -> runs -> ledger, crash-safe and resumable.

1. The plan is expanded into runs: every stratum x replicate x arm. A run's parameters are the
   plan's ``experiment.params``, overridden by the stratum's factor levels, overridden by the
   arm's settings; the blocking factors ``seed`` and ``block`` label strata and are not passed to
   the collector. The collector checks them (unknown names refused) before any run starts, and
   every plan metric must be one the collector produces.
2. Each run's seed derives from its stratum and replicate only (SHA-256 of their canonical JSON),
   never from the arm: every arm of a stratum meets the same failures and data (common random
   numbers). Run ids derive from the plan hash, stratum, arm and replicate, so a re-run knows them.
3. Runs execute in-process (``jobs=1``), in a local process pool (``jobs=N``) or on Ray
   (``executor="ray"``, a cluster joined at ``address`` or a local instance of its own:
   :mod:`collect.engine.ray_executor`). On Ray each run is a task placed by its resources, run in a
   private folder on its node; its record and trace bytes come back here, where the traces are
   written and hashed (:mod:`collect.engine.transfer`). Only this
   process appends to the ledger: the records that have finished by the time it looks, in one
   atomic, fsynced write (see ``collect.ledger.store``), in completion order. A ``kill -9`` at any moment
   loses at most the runs in flight; a re-run (``--resume`` is the same) skips runs already complete
   under this plan hash, redoes the rest, and never duplicates. A run that raises is recorded as
   ``failed`` with its error and does not stop the others; a later re-run retries it. The records
   are the same whatever the executor and job count, but for times and the run's seconds.
   A Ray sweep whose control plane is lost (``collect.engine.ray_control.ControlPlaneLost``, exit 1)
   keeps what was appended; its message names the ledger's head, the runs not recorded and the
   resume command.
4. The runs folder's writer lock (``collect.ledger.runlock``) is held for the whole run: a second writer
   is refused naming the holder. Runs asking for resources the executor lacks are refused before
   any run (``collect.engine.resources``). Pool workers die with this process (``collect.engine.workers``);
   Ray ends the tasks of a driver that died. Each record is chained to the ledger's head and carries
   its traces' SHA-256 (``collect.ledger.store``). A resume first re-hashes the traces of the runs it
   would skip: one that no longer matches its record refuses the resume (exit 3, naming the file).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from collect.collectors.base import Collector
from collect.engine.ray_control import ControlPlaneLost
from collect.engine.ray_executor import run_on_ray
from collect.engine.resources import check_local, usable_cpus
from collect.engine.runs import (
    BLOCKING_FACTORS,
    COLLECTORS,
    EngineError,
    Job,
    PlannedRun,
    RunSummary,
    execute_run,
    expand_plan,
    load_collector,
    run_batch,
    stratum_seed,
)
from collect.engine.workers import worker_init
from collect.ledger.runlock import held_descriptors, runs_lock
from collect.ledger.store import TRACES_DIR, Ledger, LedgerAppender, RunRecord, read_ledger
from collect.ledger.trace_check import trace_problems
from prereg.errors import IntegrityError
from prereg.lock import environment_info
from prereg.schema import Plan

__all__ = [
    "BLOCKING_FACTORS",
    "COLLECTORS",
    "MAX_JOBS",
    "EngineError",
    "Job",
    "PlannedRun",
    "RunSummary",
    "check_jobs",
    "execute_run",
    "expand_plan",
    "load_collector",
    "run_batch",
    "run_plan",
    "stratum_seed",
]


# Each executor yields lists of finished records; each list is appended in one write (+ fsync).


def _serial(job: Job, todo: list[PlannedRun], jobs: int) -> Iterator[list[dict[str, Any]]]:
    for record in run_batch(job, todo):
        yield [record]


def _pool(job: Job, todo: list[PlannedRun], jobs: int) -> Iterator[list[dict[str, Any]]]:
    with ProcessPoolExecutor(
        max_workers=jobs, initializer=worker_init, initargs=(os.getpid(), held_descriptors())
    ) as pool:
        pending: set[Future[dict[str, Any]]] = set()
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < 2 * jobs:  # bounded: a kill loses at most these
                pending.add(
                    pool.submit(
                        execute_run, job.collector, queue.pop(0), job.plan_sha256, job.runs_dir, job.identity, job.spec
                    )
                )
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            yield [future.result() for future in done]


def _ray(job: Job, todo: list[PlannedRun], jobs: int, address: str | None = None) -> Iterator[list[dict[str, Any]]]:
    """The Ray executor (:mod:`collect.engine.ray_executor`; Ray is imported only there)."""
    yield from run_on_ray(job, todo, jobs, address)


def run_plan(
    plan: Plan,
    plan_sha256: str,
    runs_dir: Path,
    jobs: int = 1,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
    *,
    lock_seal: str | None = None,
    address: str | None = None,
    only: list[str] | None = None,
    resume_lock: str | None = None,
) -> RunSummary:
    """Run every cell not yet complete in ``runs_dir``'s ledger; append each record as it finishes,
    carrying ``lock_seal`` (the lock version's seal, ``prereg.lock_seal``). ``address``: the Ray
    cluster to join (``executor="ray"``; default ``RAY_ADDRESS``, else a local instance of its own).
    ``only``: run ids to restrict the run to, in the order they are to run (a monitored plan's look,
    ``gates.monitor``). ``resume_lock``: the lock's path, as the resume command of a
    ``ControlPlaneLost`` is to name it (``LOCK`` when not given).

    Holds the runs folder's writer lock throughout (``collect.ledger.runlock.RunsBusy`` if taken).
    Runs asking for resources the executor lacks are refused first (``ResourcesMissing``, exit 2).
    """
    collector, planned = expand_plan(plan, plan_sha256)
    if only is not None:
        rank = {run_id: i for i, run_id in enumerate(only)}
        planned = sorted((p for p in planned if p.run_id in rank), key=lambda p: rank[p.run_id])
    check_jobs(jobs, executor)
    if executor != "ray":
        check_local(planned)  # on Ray the cluster is checked once joined
    runs_dir.mkdir(parents=True, exist_ok=True)
    with runs_lock(runs_dir, f"collect run ({collector.name}, plan {plan_sha256[:12]})"):
        return _run_locked(
            collector, planned, plan_sha256, runs_dir, jobs, executor, progress, lock_seal, address, resume_lock
        )


MAX_JOBS = 256
SHOWN_MISSING = 5  # runs not recorded named in a ControlPlaneLost message (the rest counted)


def check_jobs(jobs: int, executor: str = "local") -> None:
    """``jobs`` must be 1..2 x this machine's CPUs for the local pool (1..MAX_JOBS on Ray)."""
    cpus = usable_cpus()
    limit = MAX_JOBS if executor == "ray" else min(MAX_JOBS, 2 * cpus)
    if not 1 <= jobs <= limit:
        where = "on Ray" if executor == "ray" else f"here ({cpus} CPU{'s' if cpus != 1 else ''})"
        raise EngineError(f"--jobs must be between 1 and {limit} {where}, not {jobs}")


def _check_kept_traces(ledger: Ledger, done: set[str], runs_dir: Path) -> None:
    """Before a resume skips the complete runs: each of their traces must still match the SHA-256 its
    record holds (``collect.ledger.trace_check``); an ``IntegrityError`` (exit 3) naming the files otherwise."""
    bad = [
        (r.run_id, name, why)
        for r in ledger.records
        if r.run_id in done
        and r.status == "complete"
        and (r.trace_sha256 or r.record_sha256 is not None)  # a record from before the chain hashed none
        for name, why in trace_problems(runs_dir, r)
    ]
    if bad:
        shown = "; ".join(f"run {rid}: {runs_dir / name} {why}" for rid, name, why in bad[:5])
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise IntegrityError(
            f"{len(bad)} trace(s) of runs already complete do not match the SHA-256 their "
            f"records hold: {shown}{more}. Nothing was run: restore the traces, or collect into a "
            "new runs folder (the ledger is append-only)",
            details=[n for _, n, _ in bad],
        )


def _run_locked(
    collector: type[Collector],
    planned: list[PlannedRun],
    plan_sha256: str,
    runs_dir: Path,
    jobs: int,
    executor: str,
    progress: Callable[[int, int], None] | None,
    lock_seal: str | None = None,
    address: str | None = None,
    resume_lock: str | None = None,
) -> RunSummary:
    trace_dir = runs_dir / TRACES_DIR
    if trace_dir.is_symlink() or (trace_dir.exists() and not trace_dir.is_dir()):
        raise EngineError(f"{trace_dir}: is a symbolic link or not a folder; traces are never written through it")
    appender = LedgerAppender(runs_dir)
    ledger = read_ledger(runs_dir)
    done = {r.run_id for r in ledger.records if r.status == "complete" and r.prereg_sha256 == plan_sha256}
    _check_kept_traces(ledger, done, runs_dir)
    todo = [p for p in planned if p.run_id not in done]
    summary = RunSummary(len(planned), len(planned) - len(todo), 0, 0)
    if progress:
        progress(summary.skipped, summary.planned)  # at once: what is planned, before any run starts
    identity = {**environment_info(Path.cwd()), "python": platform.python_version()}
    job = Job(collector.name, f"{collector.__module__}:{collector.__qualname__}", plan_sha256, str(runs_dir), identity)
    if todo:
        try:
            collector.prepare([p.params for p in todo], runs_dir)  # shared inputs, once, in this process
        except (OSError, RuntimeError, ValueError) as err:
            raise EngineError(
                f"collector {collector.name} could not prepare the study's shared inputs: {err}"
            ) from None
    recorded: set[str] = set()  # run ids this sweep appended
    batches = _ray(job, todo, jobs, address) if executor == "ray" else (_pool if jobs > 1 else _serial)(job, todo, jobs)
    try:
        for records in batches:
            if not records:
                continue
            sealed = [record if lock_seal is None else {**record, "lock_seal": lock_seal} for record in records]
            appender.append([RunRecord.model_validate(record) for record in sealed])  # one write, one fsync
            recorded.update(str(record["run_id"]) for record in records)
            _count(records, summary, progress)
    except ControlPlaneLost as lost:
        raise _lost_message(
            lost, runs_dir, plan_sha256, [p for p in todo if p.run_id not in recorded], len(recorded), resume_lock
        ) from None
    return summary


def _count(records: list[dict[str, Any]], summary: RunSummary, progress: Callable[[int, int], None] | None) -> None:
    """``records`` (just appended) counted into ``summary``, ``progress`` told after each."""
    for record in records:
        if record["status"] == "complete":
            summary.completed += 1
        else:
            summary.failed += 1
        if progress:
            progress(summary.skipped + summary.completed + summary.failed, summary.planned)


def _lost_message(
    lost: ControlPlaneLost,
    runs_dir: Path,
    plan_sha256: str,
    missing: list[PlannedRun],
    appended: int,
    resume_lock: str | None,
) -> ControlPlaneLost:
    """The user's message for a sweep whose Ray control plane was lost: what was lost, what the ledger
    holds (its head), the runs not recorded (the first ``SHOWN_MISSING`` named) and the resume command."""
    records = read_ledger(runs_dir).records
    head = records[-1].record_sha256 if records else None
    ours = len({r.run_id for r in records if r.prereg_sha256 == plan_sha256})
    named = "; ".join(
        f"{p.run_id} (arm {p.arm}, stratum {p.stratum}, replicate {p.replicate})" for p in missing[:SHOWN_MISSING]
    )
    more = f"; and {len(missing) - SHOWN_MISSING} more" if len(missing) > SHOWN_MISSING else ""
    lock = resume_lock or "LOCK"
    message = (
        f"lost the Ray cluster mid-sweep: {lost.lost} stopped answering; the sweep stopped.\n"
        f"the ledger {runs_dir / 'ledger.jsonl'} keeps every run that finished: {ours} run(s) of this plan "
        f"recorded ({appended} by this sweep)\nledger head sha256 {head}\n"
        f"{len(missing)} planned run(s) not recorded (the runs in flight on the cluster are redone): "
        f"{named}{more}\nfinish the remaining runs with: collect run {lock} --out {runs_dir} --resume "
        "(add --executor ray --address HOST:PORT to run them on a cluster again)"
    )
    details = {
        "lost": lost.lost,
        "ledger": str(runs_dir / "ledger.jsonl"),
        "recorded": ours,
        "recorded_by_this_sweep": appended,
        "ledger_head_sha256": head,
        "not_recorded": [p.run_id for p in missing],
        "resume": ["collect", "run", lock, "--out", str(runs_dir), "--resume"],
    }
    return ControlPlaneLost(message, lost=lost.lost, details=details)
