"""The Ray executor of ``collect run --executor ray``: runs dealt into batches streamed from Ray tasks.

The runs are dealt round-robin into batches, ``RAY_TASKS_PER_SLOT`` per Ray CPU; each batch is
one streaming Ray task whose records come back as they finish. Ray's own retry is off (it would
redo a whole batch, rewriting traces the ledger has already hashed); a batch whose worker died
is resubmitted from its first unreported run, at most ``RAY_RETRIES`` times. Workers of a Ray
instance this process started exit when the driver is gone. Ray is imported only inside
:func:`run_on_ray`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from collect.engine.runs import EngineError, Job, PlannedRun, run_batch
from collect.engine.workers import process_identity, watch_driver

RAY_TASKS_PER_SLOT = 4  # batches per Ray CPU: few enough to amortise a task, enough to balance the tail
RAY_MAX_RUNS_PER_TASK: int | None = None  # a cap on a batch's runs (1: one task per run)


def ray_batches(todo: list[PlannedRun], slots: int, per_slot: int = RAY_TASKS_PER_SLOT,
                max_runs: int | None = None) -> list[list[PlannedRun]]:
    """``todo`` dealt round-robin into ``per_slot`` batches per slot (fewer if there are fewer runs),
    each of at most ``max_runs`` runs: every batch gets a like mix of strata and arms."""
    if not todo:
        return []
    tasks = min(len(todo), max(1, per_slot * slots))
    if max_runs is not None:
        tasks = max(tasks, -(-len(todo) // max(1, max_runs)))
    return [todo[i::tasks] for i in range(tasks)]


def _ray_task(job: Job, batch: list[PlannedRun], driver: tuple[int, int] | None) -> Iterator[dict[str, Any]]:
    """One Ray task: a batch of runs, each record streamed back when it finishes. ``driver`` (pid,
    start time) is given when the Ray instance is this process's own, local one: the worker then
    exits when the driver is gone (``collect.engine.workers.watch_driver``)."""
    if driver is not None:
        watch_driver(*driver)
    yield from run_batch(job, batch)


RAY_RETRIES = 3  # how often a batch whose worker died is resubmitted (Ray's own default for a task)


@dataclass
class _Batch:
    """A batch on Ray: the runs not yet reported, and how often it was resubmitted."""

    runs: list[PlannedRun]
    retries: int = 0
    reported: int = 0


def run_on_ray(job: Job, todo: list[PlannedRun], jobs: int) -> Iterator[list[dict[str, Any]]]:
    """Batches as streaming Ray tasks. Ray's own retry is off (it would redo a whole batch, runs
    already appended included, rewriting traces the ledger has hashed): when a worker dies, its
    batch is resubmitted from the first run it had not reported, at most ``RAY_RETRIES`` times."""
    try:
        import ray  # lazy: ray
    except ImportError:
        raise EngineError("--executor ray needs Ray: pip install 'prereg-toolkit[ray]'") from None
    from ray.exceptions import RayError, RayTaskError  # lazy: ray

    address = _ray_cluster_address()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address="auto" if address else "local", include_dashboard=False,  # local: always its own
                 log_to_driver=False, num_cpus=None if address else jobs)
    own_local = started_here and not address
    streams: dict[Any, _Batch] = {}
    try:
        slots = max(1, int(ray.cluster_resources().get("CPU", jobs)))
        task = ray.remote(_ray_task).options(max_retries=0)  # a generator: each record streams back
        driver = process_identity() if own_local else None
        for runs in ray_batches(todo, slots, RAY_TASKS_PER_SLOT, RAY_MAX_RUNS_PER_TASK):
            streams[task.remote(job, runs, driver)] = _Batch(runs)
        while streams:
            ray.wait(list(streams), num_returns=1)
            ready: list[Any] = ray.wait(list(streams), num_returns=len(streams), timeout=0)[0]
            records: list[dict[str, Any]] = []
            for stream in ready:
                batch = streams[stream]
                try:
                    records.append(ray.get(next(stream)))
                    batch.reported += 1
                except StopIteration:
                    del streams[stream]
                except RayTaskError:
                    raise  # the task itself raised (a run's failure is a record, never this): a bug
                except RayError:  # its worker or node died: the runs it had not reported are redone
                    del streams[stream]
                    if batch.retries >= RAY_RETRIES:
                        raise
                    rest = _Batch(batch.runs[batch.reported:], batch.retries + 1)
                    streams[task.remote(job, rest.runs, driver)] = rest
            if records:
                yield records
    finally:
        for stream in streams:  # stopped early (an error, a closed iterator): cancel what is left
            try:
                ray.cancel(stream)
            except Exception:  # noqa: BLE001 - best effort; shutdown below ends a local instance anyway
                pass
        if started_here:
            ray.shutdown()


def _ray_cluster_address() -> str | None:
    return os.environ.get("RAY_ADDRESS")


__all__ = ["RAY_RETRIES", "RAY_TASKS_PER_SLOT", "ray_batches", "run_on_ray"]
