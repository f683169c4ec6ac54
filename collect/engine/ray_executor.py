"""The Ray executor of ``collect run --executor ray``: each run a plain Ray task, its traces sent back.

A sweep joins a cluster (``--address`` / ``RAY_ADDRESS``) or starts an instance of ``--jobs`` CPUs; each
run is a task asking for its plan's resources, retried by Ray when its worker or node dies; the driver
alone writes the results (record, trace bytes). Ray's public API only, imported lazily; docs/cluster.md.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from collect.engine.ray_control import ControlWatch, answers, endpoints
from collect.engine.ray_task import SharedInputMismatch, run_task
from collect.engine.resources import by_demand, check_cluster, usable_cpus
from collect.engine.runs import EngineError, Job, PlannedRun, import_collector, load_collector
from collect.engine.transfer import CHUNK_BYTES, Leftovers, Receiver
from prereg.errors import IntegrityError
from prereg.fileio import read_regular_file

RAY_RETRIES = 3  # Ray's retries of a run whose worker or node died (Ray's own default for a task)
JOIN_PROBE_S = 5.0  # how long the head's port may take to accept a TCP connection before the join is refused
# Ray's settings where the environment sets none: no task-event reports of the driver (they feed only the
# dashboard; flushing them makes every disconnect take 0.27 s here); a join's attempts to reach the GCS (1 s each)
RAY_ENV = {"RAY_task_events_report_interval_ms": "0"}
JOIN_ENV = {**RAY_ENV, "RAY_gcs_server_port_wait_time_s": "5"}
NODES_CHECK_S = 5.0  # how often, while runs wait, the alive nodes are checked to still fit them
MAX_SHARED_INPUT_BYTES = 8 << 30  # one shared input larger than this is refused
LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")
TOKEN_HELP = (
    "it requires token authentication and this process has no valid token: set RAY_AUTH_MODE=token and "
    "RAY_AUTH_TOKEN to the cluster's token (or RAY_AUTH_TOKEN_PATH to a file holding it; `ray get-auth-token` "
    "on the head prints it)"
)


class RayStartCostWarning(UserWarning):
    """Starting a Ray instance cost more than the local pool would have taken for the whole sweep."""


def _refuse_unreachable(joined: str) -> None:
    """Refuse, before ``ray.init`` (which would wait minutes, deaf to SIGTERM), a ``HOST:PORT`` that
    does not answer, or a loopback head that Ray would look for at this machine's network address."""
    import ray  # lazy: ray

    host, _, port = joined.rpartition(":")
    if not host or not port.isdigit() or "/" in joined:
        return  # another form (``auto``, ``ray://``): Ray's own
    if not answers(host, int(port), JOIN_PROBE_S):
        raise EngineError(
            f"could not join the Ray cluster at {joined}: nothing accepts a connection on that host and port "
            f"within {JOIN_PROBE_S:g} s (is the head started, `ray start --head`?)"
        )
    loopback_only = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1").lower() in ("0", "false")
    if host.lower() in LOOPBACK and not loopback_only:
        ip = ray.util.get_node_ip_address()
        if ip not in LOOPBACK and not answers(ip, int(port), JOIN_PROBE_S):
            raise EngineError(
                f"could not join the Ray cluster at {joined}: its head listens on the loopback only, and Ray "
                f"reaches a head on this machine at its network address {ip}:{port}, where nothing answers: "
                f"start the head on that address (`ray start --head --node-ip-address {ip}`), or set "
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here too (as for a head that Ray bound to the loopback)"
            )


def _join(joined: str) -> None:
    """``ray.init`` of the cluster at ``joined``; a failure is an ``EngineError`` (exit 2) saying what to set."""
    import ray  # lazy: ray

    if joined == "local":
        raise EngineError("--address local is a new local instance: leave --address out for that")
    _refuse_unreachable(joined)
    try:
        _init(JOIN_ENV, address=joined, log_to_driver=False)
    except getattr(ray.exceptions, "AuthenticationError", ()):  # Ray >= 2.5x: token mode on, no token
        raise EngineError(f"could not join the Ray cluster at {joined}: {TOKEN_HELP}") from None
    except (ConnectionError, RuntimeError, ValueError) as err:
        why = TOKEN_HELP if "AuthToken" in str(err.__cause__) else str(err)
        raise EngineError(f"could not join the Ray cluster at {joined}: {why}".strip()) from None


def _init(settings: dict[str, str], **options: Any) -> None:
    """``ray.init`` with Ray's ``settings`` where the environment sets none (read as Ray connects)."""
    import ray  # lazy: ray

    added = [name for name in settings if name not in os.environ]
    os.environ.update({name: settings[name] for name in added})
    try:
        ray.init(**options)
    finally:
        for name in added:
            os.environ.pop(name, None)


def _shared_files(job: Job, todo: list[PlannedRun]) -> tuple[dict[str, tuple[str, bytes]], dict[str, Any]]:
    """The collector's shared inputs (``Collector.shared_inputs``) as ``name -> (SHA-256, bytes)``, and its facts."""
    collector = load_collector(job.collector) if not job.spec else import_collector(job.collector, job.spec)
    shared = collector.shared_inputs([p.params for p in todo], Path(job.runs_dir))
    files = {}
    for name, path in shared.files.items():
        try:
            data = read_regular_file(path, MAX_SHARED_INPUT_BYTES, follow_links=False)
        except (OSError, ValueError) as err:
            raise EngineError(f"shared input {path} cannot be sent to the workers: {err}") from None
        files[name] = (hashlib.sha256(data).hexdigest(), data)
    return files, dict(shared.facts)


def alive_nodes() -> list[dict[str, float]]:
    """Each alive node's total resources (Ray's names: ``CPU``, ``GPU``, custom ones)."""
    import ray  # lazy: ray

    return [{k: float(v) for k, v in n.get("Resources", {}).items()} for n in ray.nodes() if n.get("Alive")]


def run_on_ray(
    job: Job, todo: list[PlannedRun], jobs: int, address: str | None = None
) -> Iterator[list[dict[str, Any]]]:
    """The sweep on Ray (see the module doc); yields lists of finished records, traces in place."""
    try:
        import ray  # lazy: ray
    except ImportError:
        raise EngineError("--executor ray needs Ray: pip install 'prereg-toolkit[ray]'") from None
    from ray.exceptions import RayError, RayTaskError  # lazy: ray

    joined, connected, start_s = address or os.environ.get("RAY_ADDRESS") or None, False, 0.0
    if not ray.is_initialized():  # else (a notebook, a test): used as it is, left connected
        t0 = time.perf_counter()
        if joined is not None:
            _join(joined)
        else:
            _init(RAY_ENV, address="local", num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        connected, start_s = True, time.perf_counter() - t0
    pending: dict[Any, PlannedRun] = {}
    receiver = Receiver(Path(job.runs_dir), Leftovers(Path(job.runs_dir)))
    watch: ControlWatch | None = None
    finished: list[dict[str, Any]] = []
    try:
        watch = ControlWatch(endpoints())
        where = f"the Ray cluster at {joined}" if joined else "the Ray instance"
        check_cluster(todo, alive_nodes(), where)
        files, facts = _shared_files(job, todo)
        files_ref, remote_job = ray.put(files), replace(job, runs_dir="")  # a worker never sees the driver's folder
        task = ray.remote(run_task)
        for (cpus, gpus, custom), group in by_demand(todo).items():
            demand = task.options(num_cpus=cpus, num_gpus=gpus, resources=dict(custom), max_retries=RAY_RETRIES)
            for planned in group:
                pending[demand.remote(remote_job, planned, files_ref, facts, CHUNK_BYTES)] = planned
        checked = time.monotonic()
        while pending:
            if ray.wait(list(pending), num_returns=1, timeout=watch.watch_s)[0]:  # then every one ready by now
                ready = ray.wait(list(pending), num_returns=len(pending), timeout=0)[0]
            else:
                ready = []
            watch.check()  # the GCS or this node's raylet gone: ControlPlaneLost, not Ray's minute-long wait
            # a lost node's runs may fit nowhere now; asked only while the GCS answers (else Ray waits a minute)
            if not ready and time.monotonic() - checked > NODES_CHECK_S and watch.answering():
                lost = f"{where} (after losing a node: the runs recorded so far are kept; --resume once it fits them)"
                check_cluster(list(pending.values()), alive_nodes(), lost)
                checked = time.monotonic()
            records = []
            for ref in ready:
                planned = pending.pop(ref)
                try:
                    records += receiver.take(ray.get(ref))
                except RayTaskError as err:
                    if isinstance(err.cause, SharedInputMismatch):
                        raise IntegrityError(f"a worker refused the study's shared inputs: {err.cause}") from None
                    raise  # the task itself raised (a run's failure is a record, never this): a bug
                except RayError as err:
                    raise EngineError(
                        f"run {planned.run_id}: its Ray worker or node died {RAY_RETRIES + 1} times "
                        f"({type(err).__name__}); the runs recorded so far are kept: --resume runs the rest"
                    ) from None
            if records:
                finished += records
                yield records
        _start_cost_warning(connected and joined is None, start_s, finished, jobs)
    finally:
        if watch is not None:
            watch.close()
        receiver.close()
        for ref in pending:  # stopped early (an error, a closed iterator): what is left is cancelled
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort: the job's end stops its tasks anyway
                pass
        if connected:
            ray.shutdown()


def _start_cost_warning(own: bool, start_s: float, records: list[dict[str, Any]], jobs: int) -> None:
    """Warn when starting an instance of its own cost more than the local pool of ``jobs`` would need."""
    compute_s = sum(float((r.get("env") or {}).get("seconds") or 0.0) for r in records)
    pool = max(1, min(jobs, usable_cpus()))
    if own and records and start_s > compute_s / pool:
        warnings.warn(
            RayStartCostWarning(
                f"starting its own Ray instance took {start_s:.1f} s, longer than the local pool (--jobs {pool}) "
                f"needs for all {len(records)} runs (about {compute_s / pool:.1f} s: {compute_s:.1f} s of runs); "
                "for a sweep this short use --executor local, or start Ray once (ray start --head) and join it "
                "with --address"
            ),
            stacklevel=3,
        )


__all__ = ["RAY_RETRIES", "RayStartCostWarning", "alive_nodes", "run_on_ray"]
