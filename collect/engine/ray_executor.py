"""The Ray executor of ``collect run --executor ray``: runs placed on a cluster, their traces sent back.

One sweep, one Ray instance (:mod:`collect.engine.ray_instance`: a cluster joined with
``--address`` / ``RAY_ADDRESS``, or a local instance of its own). Before anything is submitted:

1. every run's demand (``experiment.resources``) must fit on some alive node
   (:func:`collect.engine.resources.check_cluster`: ``ResourcesMissing``, exit 2, names what is missing);
2. workers an earlier, killed driver of this runs folder left on the cluster are stopped; those
   that cannot be are named in a ``LeftoverWorkersWarning`` (:mod:`collect.engine.ray_registry`);
3. the collector's shared inputs (``Collector.shared_inputs``: the torch warm start, the ``command``
   program's code files) are put in Ray's object store once, with their SHA-256.

The runs are grouped by demand and dealt round-robin into batches. On a cluster joined by address,
runs of the default demand go to its warm runners (:mod:`collect.engine.ray_pool`: actors that
outlive a sweep), ``WARM_BATCHES_PER_RUNNER`` batches per runner, each runner holding at most
``ray_pool.DEPTH`` at once; otherwise each batch is one streaming Ray task placed by its demand,
``RAY_TASKS_PER_SLOT`` per run the cluster holds at once. Either way the batch runs in a private
folder on its node (:func:`collect.engine.ray_worker.sweep_task`) and streams records and trace bytes
back. The driver (the only writer, holding the runs folder's lock) writes and hashes the traces as
they arrive (:class:`collect.engine.transfer.Receiver`) and appends the records. Ray's own retry is
off (it would redo a whole batch); a batch whose worker, runner or node died is resubmitted from its
first unreported run, elsewhere (another runner while one is left, else a task), at most
``RAY_RETRIES`` times, once some alive node still fits it; a batch a runner refused because its code
changed goes the same way. The driver watches the control plane (:mod:`collect.engine.ray_control`:
the GCS and its own node's raylet) while it waits: once either is lost the sweep stops with
``ControlPlaneLost`` (exit 1; the engine adds the ledger's head, the runs not recorded and the
resume command), asking nothing more of a GCS that does not answer, and, while the GCS answers,
asking this sweep's workers to exit first. Imports Ray only inside :func:`run_on_ray`.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from collect.engine.ray_control import WATCH_S, ControlPlaneLost, ControlWatch, endpoints
from collect.engine.ray_instance import alive_nodes, open_instance, start_cost_warning
from collect.engine.ray_pool import WARM_DEMAND, Pool, StaleRunner
from collect.engine.ray_registry import DriverBeat, folder_key, stop_leftovers
from collect.engine.ray_worker import Guard, Inputs, SharedInputMismatch, sweep_task
from collect.engine.resources import by_demand, capacity, check_cluster
from collect.engine.runs import EngineError, Job, PlannedRun, import_collector, load_collector
from collect.engine.transfer import CHUNK_BYTES, Leftovers, Receiver
from collect.engine.workers import process_identity
from prereg.errors import IntegrityError
from prereg.fileio import read_regular_file

RAY_TASKS_PER_SLOT = 4  # batches per run the cluster holds at once: few enough to amortise a task, enough for the tail
WARM_BATCHES_PER_RUNNER = 8  # a warm runner starts nothing per batch: smaller batches, a shorter tail
RAY_MAX_RUNS_PER_TASK: int | None = None  # a cap on a batch's runs (1: one task per run)
RAY_RETRIES = 3  # how often a batch whose worker died is resubmitted (Ray's own default for a task)
GROUP_S = 0.25  # a stream item carries the records of up to this many seconds of runs (or CHUNK_BYTES)
BACKPRESSURE_ITEMS = 8  # items a task may have sent ahead of the driver: bounds the object store's share
MAX_SHARED_INPUT_BYTES = 8 << 30  # one shared input larger than this is refused


class LeftoverWorkersWarning(UserWarning):
    """Workers of an earlier driver of this runs folder are still running and did not stop."""


def ray_batches(
    todo: list[PlannedRun], slots: int, per_slot: int = RAY_TASKS_PER_SLOT, max_runs: int | None = None
) -> list[list[PlannedRun]]:
    """``todo`` dealt round-robin into ``per_slot`` batches per slot (fewer if there are fewer runs),
    each of at most ``max_runs`` runs: every batch gets a like mix of strata and arms."""
    if not todo:
        return []
    tasks = min(len(todo), max(1, per_slot * slots))
    if max_runs is not None:
        tasks = max(tasks, -(-len(todo) // max(1, max_runs)))
    return [todo[i::tasks] for i in range(tasks)]


@dataclass
class _Batch:
    """A batch on Ray: its runs, how many it has reported, how often it was resubmitted, its receiver."""

    runs: list[PlannedRun]
    receiver: Receiver
    retries: int = 0
    reported: int = 0


def _put_inputs(job: Job, todo: list[PlannedRun]) -> Inputs:
    """The collector's shared inputs in the object store, each with its SHA-256 (see the module doc)."""
    import ray  # lazy: ray

    collector = load_collector(job.collector) if not job.spec else import_collector(job.collector, job.spec)
    shared = collector.shared_inputs([p.params for p in todo], Path(job.runs_dir))
    files = {}
    for name, path in shared.files.items():
        try:
            data = read_regular_file(path, MAX_SHARED_INPUT_BYTES, follow_links=False)
        except (OSError, ValueError) as err:
            raise EngineError(f"shared input {path} cannot be sent to the workers: {err}") from None
        files[name] = (hashlib.sha256(data).hexdigest(), ray.put(data))
    return Inputs(files, dict(shared.facts))


def _options(key: Any) -> dict[str, Any]:
    cpus, gpus, custom = key
    return {
        "num_cpus": cpus,
        "num_gpus": gpus,
        "resources": dict(custom),
        "max_retries": 0,
        "_generator_backpressure_num_objects": BACKPRESSURE_ITEMS,
    }


def run_on_ray(
    job: Job, todo: list[PlannedRun], jobs: int, address: str | None = None
) -> Iterator[list[dict[str, Any]]]:
    """The sweep on Ray (see the module doc); yields lists of finished records, traces in place."""
    try:
        import ray  # lazy: ray
    except ImportError:
        raise EngineError("--executor ray needs Ray: pip install 'prereg-toolkit[ray]'") from None
    from ray.exceptions import RayError, RayTaskError  # lazy: ray

    instance = open_instance(address, jobs)
    streams: dict[Any, _Batch] = {}
    beat: DriverBeat | None = None
    pool: Pool | None = None
    watch: ControlWatch | None = None
    runner_of: dict[Any, Any] = {}  # stream -> the warm runner serving it
    finished: list[dict[str, Any]] = []
    try:
        watch = ControlWatch(endpoints())
        nodes = alive_nodes()
        where = f"the Ray cluster at {instance.joined}" if instance.joined else "the Ray instance"
        check_cluster(todo, nodes, where)
        folder = folder_key(job.runs_dir)
        ray_job = ray.get_runtime_context().get_job_id()
        left = stop_leftovers(folder, ray_job)
        if left:
            warnings.warn(
                LeftoverWorkersWarning(
                    f"{len(left)} worker(s) of an earlier, killed collect run of this runs folder are still running "
                    f"on the cluster and did not stop when asked: {'; '.join(left)}; their results are never "
                    "recorded (only this driver writes), but they hold resources: end them with 'ray stop' on "
                    "those nodes"
                ),
                stacklevel=2,
            )
        beat = DriverBeat(folder, ray_job)
        inputs = _put_inputs(job, todo)
        remote_job = replace(job, runs_dir="")  # a worker never writes to (or sees) the driver's folder
        guard = Guard(process_identity() if instance.own else None, folder, ray_job)
        task = ray.remote(sweep_task)
        groups = by_demand(todo)
        pool = Pool(instance.joined is not None, set(groups), shared=not instance.own)
        options: dict[Any, Any] = {}

        def submit(batch: _Batch, key: Any) -> None:
            """``batch`` to a free warm runner when its demand is theirs, else (none left) as a task."""
            runner = pool.take() if key == WARM_DEMAND else None
            args = (remote_job, batch.runs, inputs, guard, CHUNK_BYTES, GROUP_S)
            if runner is not None:
                ref = runner.sweep.options(_generator_backpressure_num_objects=BACKPRESSURE_ITEMS).remote(
                    *args, paths=pool.paths
                )
                runner_of[ref] = runner
            else:
                ref = task.options(**options[key]).remote(*args)
            streams[ref] = batch

        def lost(stream: Any) -> None:
            """Forget a stream that broke off before its batch ended: its runner (if any) is dropped, the
            partial files of its batch too (the runs it had not reported are redone)."""
            streams.pop(stream).receiver.abort()
            pool.drop(runner_of.pop(stream, None))

        keys: dict[int, Any] = {}
        waiting: list[_Batch] = []  # batches for warm runners, none of which is free yet
        leftovers = Leftovers(Path(job.runs_dir))  # listed once, before the first run's files go in
        for key, group in groups.items():
            options[key] = _options(key)
            warm = key == WARM_DEMAND and pool.size > 0
            slots, per_slot = (
                (pool.size, WARM_BATCHES_PER_RUNNER) if warm else (capacity(key, nodes), RAY_TASKS_PER_SLOT)
            )
            for runs in ray_batches(group, slots, per_slot, RAY_MAX_RUNS_PER_TASK):
                batch = _Batch(runs, Receiver(Path(job.runs_dir), leftovers))
                keys[id(batch)] = key
                if warm and not pool.free:
                    waiting.append(batch)
                else:
                    submit(batch, key)
        while streams:
            while not ray.wait(list(streams), num_returns=1, timeout=WATCH_S)[0]:
                watch.check()  # the GCS or this node's raylet gone: ControlPlaneLost, not Ray's minute-long wait
            watch.check()
            ready: list[Any] = ray.wait(list(streams), num_returns=len(streams), timeout=0)[0]
            records: list[dict[str, Any]] = []
            for stream in ready:
                batch = streams[stream]
                runner = runner_of.get(stream)
                try:
                    item = ray.get(next(stream))
                except StopIteration:
                    del streams[stream]
                    runner_of.pop(stream, None)
                    batch.receiver.close()
                    pool.give_back(runner)
                    continue
                except RayTaskError as err:
                    if isinstance(err.cause, SharedInputMismatch):
                        raise IntegrityError(f"a worker refused the study's shared inputs: {err.cause}") from None
                    if not isinstance(err.cause, StaleRunner):
                        raise  # the task itself raised (a run's failure is a record, never this): a bug
                    lost(stream)  # a warm runner whose code changed: its batch goes to another, or a task
                    waiting.insert(0, _Batch(batch.runs[batch.reported :], batch.receiver, batch.retries))
                    continue
                except RayError:  # its worker or node died: the runs it had not reported are redone elsewhere
                    watch.settle()  # unless the control plane itself is gone (ControlPlaneLost)
                    lost(stream)
                    if batch.retries >= RAY_RETRIES:
                        raise
                    rest = _Batch(batch.runs[batch.reported :], batch.receiver, batch.retries + 1)
                    check_cluster(
                        rest.runs,
                        alive_nodes(),
                        f"{where} (after losing a node: the runs "
                        "recorded so far are kept; --resume once it has them again)",
                    )
                    keys[id(rest)] = keys[id(batch)]
                    if runner is None:
                        submit(rest, keys[id(rest)])
                    else:  # to another warm runner (tasks would wait for CPUs the runners hold)
                        waiting.insert(0, rest)
                    continue
                got = batch.receiver.take(item)
                batch.reported += len(got)
                records += got
            if records:
                finished += records
                yield records
            while waiting and (pool.free or not pool.size):  # every runner lost: tasks take the rest
                submit(waiting.pop(0), WARM_DEMAND)
        start_cost_warning(instance, finished, jobs)
    finally:
        # nothing that needs the GCS is asked of a GCS that is gone (Ray would wait a minute on it): a joined
        # cluster's workers see the job die, an instance of its own is reaped
        gcs_up = watch is None or watch.gcs_answers()
        if watch is not None:
            watch.close()
        for stream, batch in streams.items():  # stopped early (an error, a closed iterator): cancel what is left
            batch.receiver.abort()
            if (
                pool is not None and stream in runner_of
            ):  # a running actor method cannot be cancelled: its runner is ended
                if gcs_up:
                    pool.drop(runner_of[stream], kill=True)
                continue
            try:
                ray.cancel(stream, force=True)
            except Exception:  # noqa: BLE001 - best effort; shutdown below ends a local instance anyway
                pass
        if beat is not None:
            if gcs_up and watch is not None and watch.lost is not None and not instance.own:
                beat.stop_workers()  # a batch still running on the cluster would report to nobody (an
                # instance of its own is ended whole by its reaper)
            beat.close(gcs_up)
        instance.close()


__all__ = [
    "RAY_RETRIES",
    "RAY_TASKS_PER_SLOT",
    "ControlPlaneLost",
    "LeftoverWorkersWarning",
    "ray_batches",
    "run_on_ray",
]
