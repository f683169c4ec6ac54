"""A Ray cluster joined early, so its workers start while the driver still verifies the lock.

A sweep on a cluster it joins (``collect run --executor ray --address ADDR``, or ``RAY_ADDRESS``)
gets fresh Ray worker processes: Ray binds a worker to one job (one driver), so every sweep's
workers start an interpreter, import Ray, register, and import the toolkit before the first run
(about 1 s on an idle 2-core machine, several under load). :func:`start_early` begins that at once:
the console script calls it before its own imports, then imports the toolkit, verifies the lock,
reads the ledger and prepares the shared inputs while the workers start.

It joins the cluster (:func:`join`, as :func:`collect.engine.ray_instance.open_instance` would),
then finds or starts the cluster's warm runners (:func:`collect.engine.ray_pool.runners`: workers
that outlive a sweep, so a later sweep pays no start at all). With the runners turned off
(``PREREG_RAY_WARM=0``) it ends any that are left and submits instead, to each alive node, one
warm-up task per CPU it has (at most ``WARM_MAX`` in all: 1 CPU each, placed on that node if it can
be, else anywhere), each of which only imports the worker's modules (:func:`warm_worker`); the
workers they started stay with the job, and Ray gives the sweep's tasks to them. Nothing runs, and
nothing of the plan is sent.

Best effort, and never a change in what a sweep does or says: without a ``HOST:PORT`` address whose
port answers at once, with Ray already initialised in this process (a notebook, a test) or without
Ray, it does nothing; a join that fails is reported by the sweep, after the lock's checks, as
before (``early_failure``), and any other failure disconnects and is forgotten. ``open_instance`` takes the connection over (:func:`adopt`); one no sweep took (the lock
was refused, the runs folder busy) is closed by :func:`release`. Imports Ray lazily.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

TASK_EVENTS_ENV = "RAY_task_events_report_interval_ms"
WARM_MAX = 64  # warm-up tasks at most: a large cluster's workers start with the sweep's tasks as they come
REACH_S = 0.5  # how long the head's port may take to accept a connection before the early join is skipped


@dataclass
class _Early:
    address: str
    refs: list[Any] = field(default_factory=list)


_early: _Early | None = None
_failed: tuple[str, str] | None = None  # (address, why) of an early join that failed, for the sweep to report


def join(**options: Any) -> None:
    """``ray.init(**options)`` for a driver of this toolkit. Unless the user set it, Ray's task-event
    reports of this process are off (``RAY_task_events_report_interval_ms=0``): they feed only the
    dashboard's list of submitted tasks, and flushing them costs every ``ray.shutdown`` 0.27 s (the
    workers still report what they run)."""
    import ray  # lazy: ray

    if TASK_EVENTS_ENV in os.environ:
        ray.init(**options)
        return
    os.environ[TASK_EVENTS_ENV] = "0"  # read once, as Ray connects; not left in this process's environment
    try:
        ray.init(**options)
    finally:
        os.environ.pop(TASK_EVENTS_ENV, None)


def warm_worker() -> int:
    """A warm-up task: the imports a sweep task needs, then nothing; returns the worker's pid."""
    import collect.engine.ray_worker  # noqa: F401  # lazy: pydantic (what every sweep task imports)

    return os.getpid()


def answers(address: str, timeout_s: float) -> bool | None:
    """Whether ``HOST:PORT`` accepts a TCP connection within ``timeout_s``; None for an address of
    another form (``auto``, ``ray://...``), left to ``ray.init``."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "/" in address:
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError):
        return False
    return True


def _reachable(address: str) -> bool:
    """``HOST:PORT`` that accepts a TCP connection within ``REACH_S`` (``ray.init`` waits minutes on an
    address nobody answers: the sweep refuses it, after the lock's checks)."""
    return answers(address, REACH_S) is True


def start_early(address: str | None) -> bool:
    """Join ``address`` (else ``RAY_ADDRESS``) now and start its workers (see the module doc); True
    when it did."""
    global _early, _failed
    joined = address or os.environ.get("RAY_ADDRESS") or None
    if _early is not None or _failed is not None or joined is None or not _reachable(joined):
        return False
    try:
        import ray  # lazy: ray
    except ImportError:
        return False
    if ray.is_initialized():
        return False
    try:
        join(address=joined, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as err:  # reported by the sweep, after the lock's checks
        _failed = (str(joined), str(err))
        return False
    except Exception:  # noqa: BLE001 - best effort: the sweep joins itself and says what is wrong
        return False
    _early = _Early(str(joined))
    try:
        from collect.engine import ray_pool  # lazy: pydantic (what every sweep task imports)

        if ray_pool.enabled():  # warm runners: found by name (an earlier sweep's), else started now
            _early.refs.extend(ray_pool.acquire(WARM_MAX))
            return True
        ray_pool.release()  # runners turned off: the warm-up tasks (and the sweep's) need their CPUs
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: ray

        task = ray.remote(warm_worker)
        for node in ray.nodes():
            cpus = int(node.get("Resources", {}).get("CPU", 0)) if node.get("Alive") else 0
            for _ in range(min(cpus, WARM_MAX - len(_early.refs))):
                strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=True)
                _early.refs.append(task.options(num_cpus=1, max_retries=0, scheduling_strategy=strategy).remote())
    except Exception:  # noqa: BLE001 - best effort, as above
        release()
        return False
    return True


def early_failure(address: str | None) -> str | None:
    """Why the early join of ``address`` (else ``RAY_ADDRESS``) failed, once (None if it did not):
    the sweep reports it instead of waiting for the same failure again."""
    global _failed
    joined = address or os.environ.get("RAY_ADDRESS") or None
    failed, _failed = _failed, None
    return failed[1] if failed is not None and failed[0] == joined else None


def adopt(address: str | None) -> bool:
    """True when an early connection to ``address`` (else ``RAY_ADDRESS``) exists: the sweep takes it
    over (and disconnects it when it ends); an early connection to another address is closed."""
    global _early
    if _early is None:
        return False
    joined = address or os.environ.get("RAY_ADDRESS") or None
    if joined != _early.address:
        release()
        return False
    _early = None
    return True


def release() -> None:
    """Disconnect an early connection no sweep took over (a no-op otherwise)."""
    global _early, _failed
    _failed = None
    if _early is None:
        return
    _early = None
    import ray  # lazy: ray

    try:
        ray.shutdown()
    except Exception:  # noqa: BLE001 - best effort: the process is ending the sweep anyway
        pass


__all__ = ["WARM_MAX", "adopt", "join", "early_failure", "release", "start_early", "warm_worker"]
