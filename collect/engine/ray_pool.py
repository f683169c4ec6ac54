"""Warm runners on a joined Ray cluster: worker processes that outlive one sweep, for the next.

Ray binds a worker process to one job (one driver): every sweep on a cluster it joins would start
fresh workers (an interpreter, ``import ray``, registration, the toolkit's imports: about 0.7 s of
CPU each on an idle machine, several seconds under load). A sweep that joins a cluster by address
(``collect run --executor ray --address ADDR``) therefore runs its runs on *warm runners* when every
run asks for exactly one CPU and nothing else (``WARM_DEMAND``, the default): named, detached Ray
actors (:class:`WarmRunner`), one per CPU of each alive node (at most ``POOL_MAX``), each holding
``num_cpus=1`` as a task of the same demand would, pinned to its node. The first sweep starts them
(:func:`collect.engine.ray_warm.start_early`, while the lock is verified); later sweeps of any
driver of the cluster find them by name and reuse them. Each runner takes up to ``DEPTH`` batches
at once (Ray queues them on the actor), so it never waits for the driver between batches. A sweep
uses the runners that are up (:func:`started`): one still waiting for its CPU (another job holds
it) is ended rather than given batches it would hold until that CPU frees.

A runner does with a batch exactly what a sweep task does
(:func:`collect.engine.ray_worker.sweep_task`: the guard, a private folder, the same stream). It
leaves the cluster by itself:

* after ``IDLE_S`` seconds without a batch (the CPU it holds goes back to the cluster);
* when its code changed: at a sweep's first batch it re-reads the size and modification time of
  every module file it has loaded; if one differs (the toolkit or a collector was edited or
  reinstalled) it refuses the batch (:class:`StaleRunner`) and exits, and the driver gives the
  batch to another runner, or to a task once none is left;
* when its driver is gone (Ray's job table marks the job dead, or its heartbeat stands still) or a
  later driver of the runs folder asks it to stop (:mod:`collect.engine.ray_registry`).

A sweep on a joined cluster that does not use them (other demands: a GPU, custom resources, more
CPUs; or ``PREREG_RAY_WARM=0``) ends the runners first (:func:`release`): its tasks need their CPUs.
A sweep on a Ray instance of its own never uses them. Imports Ray lazily.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from collect.engine.ray_worker import sweep_task
from collect.engine.resources import Demand
from prereg.errors import EXIT_INTERNAL, ToolkitError

NAMESPACE = "prereg-collect"
IDLE_S = 60.0  # a runner with no batch for this long leaves (and gives its CPU back)
PREFIX = "prereg-warm-runner"
WARM_DEMAND: Demand = (1.0, 0.0, ())  # the only demand warm runners take: one CPU, nothing else
POOL_MAX = 64  # runners at most per sweep
DEPTH = 2  # batches given to one runner at once (the next queued on the actor while one runs)
FIRST_S = 60.0  # how long a sweep waits for its first runner to be up before it uses tasks instead
GRACE_S = 5.0  # how long after the first the others may take (at least; twice the first's time if longer)


class StaleRunner(ToolkitError):
    """A warm runner's loaded code changed on disk since it started (or it was started for other code
    paths): it exits instead of running. Handled by the driver, never shown to a user."""

    exit_code = EXIT_INTERNAL


def enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether warm runners are used (``PREREG_RAY_WARM`` is not ``0``)."""
    return (os.environ if environ is None else environ).get("PREREG_RAY_WARM", "1") != "0"


def _module_files() -> dict[str, tuple[int, int]]:
    """``path -> (size, mtime_ns)`` of every loaded module's file (those that still exist)."""
    files: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or path in files:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        files[path] = (st.st_size, st.st_mtime_ns)
    return files


class WarmRunner:
    """The actor (see the module doc). ``sweep`` is a streaming method with ``sweep_task``'s stream."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self._idle_s = idle_s
        self._busy = 0
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._files = _module_files()
        self._job: str | None = None  # the driver job whose sweep this runner last served
        threading.Thread(target=self._idle_watch, name="warm-runner-idle", daemon=True).start()

    def _idle_watch(self) -> None:
        while True:
            time.sleep(min(5.0, self._idle_s / 4))
            with self._lock:
                if not self._busy and time.monotonic() - self._last > self._idle_s:
                    os._exit(0)  # its name and CPU go back to the cluster

    def pid(self) -> int:
        return os.getpid()

    def stale(self) -> str | None:
        """The first loaded module file whose size or modification time changed, else None."""
        for path, seen in self._files.items():
            try:
                st = os.stat(path)
            except OSError:
                return path
            if (st.st_size, st.st_mtime_ns) != seen:
                return path
        return None

    def sweep(
        self,
        job: Any,
        batch: list[Any],
        inputs: Any,
        guard: Any,
        chunk_bytes: int,
        group_s: float,
        paths: tuple[str, ...] = (),
    ) -> Iterator[list[Any]]:
        """``sweep_task``'s stream for one batch; ``paths``: the driver's ``code_paths()``, each of which
        must be on this runner's ``sys.path`` (where a task of the driver's job would import from)."""
        first = guard.job != self._job  # the code is checked once per sweep (per driver's job)
        changed = self.stale() if first else None
        missing = [p for p in paths if p not in sys.path]
        why = (
            f"{changed} changed since it started"
            if changed is not None
            else f"started without {', '.join(missing)} on its sys.path"
            if missing
            else None
        )
        if why is not None:
            threading.Timer(0.5, os._exit, args=(0,)).start()  # after this call's error reached the driver
            raise StaleRunner(f"warm runner {os.getpid()}: {why}")
        self._job = guard.job
        with self._lock:
            self._busy += 1
        try:
            yield from sweep_task(job, batch, inputs, guard, chunk_bytes, group_s)
        finally:
            if first:  # modules the sweep's first batch loaded (its collector's) are watched from now on
                self._files.update({k: v for k, v in _module_files().items() if k not in self._files})
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()


def code_paths() -> tuple[str, ...]:
    """The folders Ray puts on ``sys.path`` of this driver's task workers (``ray._private.worker.connect``:
    the script's folder when it is on ``sys.path``, and the working directory). A warm runner was
    started by some driver and keeps that driver's paths: runners are named by these, so a driver
    never gets one that would import its collector from elsewhere."""
    paths = []
    script = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
    if script and script in sys.path:
        paths.append(script)
    paths.append(os.path.abspath(os.path.curdir))
    return tuple(paths)


def paths_key(paths: tuple[str, ...]) -> str:
    """8 hex digits of SHA-256 of ``paths``: the runner names' key."""
    return hashlib.sha256("\0".join(paths).encode()).hexdigest()[:8]


def acquire(limit: int = POOL_MAX) -> list[Any]:
    """This driver's warm runners (:func:`runners` for :func:`code_paths`), after ending those started for
    other code paths (they hold the CPUs the new ones need)."""
    key = paths_key(code_paths())
    release(keep=key)
    return runners(key, limit)


def runners(key: str, limit: int = POOL_MAX) -> list[Any]:
    """Handles of one warm runner per CPU of each alive node (found by name, else started), named with
    ``key`` (:func:`paths_key`), at most ``limit``."""
    import ray  # lazy: ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: ray

    actor = ray.remote(WarmRunner)
    handles: list[Any] = []
    for node in sorted(ray.nodes(), key=lambda n: str(n.get("NodeID"))):
        if not node.get("Alive"):
            continue
        cpus = int(float(node.get("Resources", {}).get("CPU", 0)))
        for i in range(cpus):
            if len(handles) >= limit:
                return handles
            name = f"{PREFIX}-{key}-{node['NodeID'][:16]}-{i}"
            handles.append(
                actor.options(
                    name=name,
                    namespace=NAMESPACE,
                    get_if_exists=True,
                    lifetime="detached",
                    num_cpus=1,
                    max_restarts=0,
                    max_task_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                ).remote(IDLE_S)
            )
    return handles


def started(handles: list[Any], first_s: float = FIRST_S, grace_s: float = GRACE_S) -> list[Any]:
    """The runners of ``handles`` that are up: the first within ``first_s``, the others within
    ``max(grace_s, twice the first's time)`` after it. The rest are ended: a runner still waiting for
    its CPU (another job holds it) would hold the batches given to it until that CPU frees, and a
    runner slower than that to start costs the sweep more than its share. None up: an empty list
    (the sweep uses tasks)."""
    import ray  # lazy: ray

    if not handles:
        return []
    t0 = time.monotonic()
    refs = {handle.pid.remote(): handle for handle in handles}
    first, rest = ray.wait(list(refs), num_returns=1, timeout=first_s)
    up = list(first)
    if first and rest:
        more, rest = ray.wait(rest, num_returns=len(rest), timeout=max(grace_s, 2 * (time.monotonic() - t0)))
        up += more
    for ref in rest if first else refs:
        _end(refs[ref])
    return [refs[ref] for ref in up]


def _end(runner: Any) -> None:
    """End ``runner`` now (best effort: it may be gone already)."""
    import ray  # lazy: ray

    try:
        ray.kill(runner)
    except Exception:  # noqa: BLE001 - best effort
        pass


def release(keep: str | None = None) -> int:
    """End the cluster's warm runners (all, or all but those named with ``keep``): a sweep that does
    not use them needs their CPUs. Returns how many were ended. A sweep they were serving loses them as
    it would lose a node, and redoes their runs."""
    import ray  # lazy: ray

    ended = 0
    for actor in ray.util.list_named_actors(all_namespaces=True):
        name = str(actor.get("name", ""))
        if (
            actor.get("namespace") == NAMESPACE
            and name.startswith(PREFIX)
            and not (keep and name.startswith(f"{PREFIX}-{keep}-"))
        ):
            try:
                ray.kill(ray.get_actor(actor["name"], namespace=NAMESPACE))
                ended += 1
            except ValueError:  # gone meanwhile
                continue
    return ended


class Pool:
    """The warm runners of one sweep on a ``joined`` cluster, when ``enabled()`` and every run of the
    sweep is of ``WARM_DEMAND``. A sweep on a ``shared`` instance (one it did not start: by default,
    a joined one) that uses none (other demands, ``PREREG_RAY_WARM=0``, or Ray initialised already
    in this process) ends the runners earlier sweeps left: its tasks need the CPUs they hold.
    Each runner is given up to ``depth`` batches at once: Ray
    queues them on the actor, so it starts the next as soon as one ends, without waiting for the
    driver to take in the last item."""

    def __init__(
        self,
        joined: bool,
        demands: set[Demand],
        depth: int = DEPTH,
        handles: list[Any] | None = None,
        shared: bool | None = None,
    ) -> None:
        self.paths = code_paths()
        if handles is not None:  # given (tests)
            self.handles = list(handles)
        elif joined and enabled() and demands == {WARM_DEMAND}:
            self.handles = started(acquire())
        else:
            self.handles = []
            if joined if shared is None else shared:
                release()
        self.depth = depth
        self._load = {id(h): 0 for h in self.handles}

    @property
    def size(self) -> int:
        return len(self.handles)

    @property
    def free(self) -> bool:
        """Whether some runner has fewer than ``depth`` batches."""
        return any(n < self.depth for n in self._load.values())

    def take(self) -> Any:
        """The runner with the fewest batches, when it has fewer than ``depth`` (one more is counted),
        else None."""
        if not self.handles:
            return None
        runner = min(self.handles, key=lambda h: self._load[id(h)])
        if self._load[id(runner)] >= self.depth:
            return None
        self._load[id(runner)] += 1
        return runner

    def give_back(self, runner: Any) -> None:
        """One batch of ``runner`` ended."""
        if runner is not None and id(runner) in self._load:
            self._load[id(runner)] = max(0, self._load[id(runner)] - 1)

    def drop(self, runner: Any, kill: bool = False) -> None:
        """Stop using ``runner`` (it died, or its code changed); ``kill``: end it too."""
        if runner is None or id(runner) not in self._load:
            return
        self.handles = [h for h in self.handles if h is not runner]
        del self._load[id(runner)]
        if kill:
            _end(runner)


__all__ = [
    "Pool",
    "acquire",
    "code_paths",
    "paths_key",
    "release",
    "started",
    "IDLE_S",
    "NAMESPACE",
    "POOL_MAX",
    "WARM_DEMAND",
    "StaleRunner",
    "WarmRunner",
    "enabled",
    "runners",
]
