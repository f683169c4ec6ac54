"""The Ray instance a sweep runs on: a cluster it joins, or a local one it starts for itself.

:func:`open_instance` decides, once per sweep:

* A connection :func:`collect.engine.ray_warm.start_early` made to the same address: taken over
  (its workers are starting already), disconnected at the end.
* Ray already initialised in this process (a notebook, a test): used as it is, left connected.
* An address (``--address ADDR``, else ``RAY_ADDRESS``): joined with ``ray.init(address=ADDR)``,
  never told how many CPUs it has (that is the cluster's to say); disconnected at the end, the
  cluster left running.
* Otherwise a local instance of ``jobs`` CPUs, always its own (``address="local"``: never one
  that happens to run here), without the dashboard. It is shut down when the sweep ends, and a
  reaper (:mod:`collect.engine.ray_reaper`, started in its own session right after ``ray.init``)
  kills whatever of it is left once the driver is gone, ``kill -9`` included. The time
  ``ray.init`` took is kept as ``start_s`` (:func:`start_cost_warning` compares it with the runs).

A connection that fails is an ``EngineError`` (exit 2) naming the address. Imports Ray lazily.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collect.engine.ray_warm import adopt, answers, early_failure, join
from collect.engine.resources import usable_cpus
from collect.engine.runs import EngineError

REAPER = Path(__file__).with_name("ray_reaper.py")


JOIN_PROBE_S = 10.0  # how long a HOST:PORT address may take to accept a TCP connection before the join is refused


class RayStartCostWarning(UserWarning):
    """Starting a Ray instance cost more than the local pool would have taken for the whole sweep."""


@dataclass
class Instance:
    """The Ray instance of one sweep."""

    own: bool  # started here (and shut down here)
    joined: str | None  # the address joined, when one was given
    connected: bool = True  # ray.init was called here (so ray.shutdown disconnects at the end)
    start_s: float = 0.0  # how long ray.init took
    _reaper: Any = field(default=None, repr=False)

    def close(self) -> None:
        """Disconnect when connected here (a joined cluster keeps running); an instance started here is
        shut down, then the reaper ends what is left of it."""
        if not self.connected:
            return
        import ray  # lazy: ray

        try:
            ray.shutdown()
        finally:
            if self._reaper is not None:
                self._reaper.stdin.close()
                try:
                    self._reaper.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._reaper.kill()
                    self._reaper.wait()


def address_of(address: str | None) -> str | None:
    """The cluster to join: ``address``, else ``RAY_ADDRESS``, else None (a local instance of its own)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def open_instance(address: str | None, jobs: int) -> Instance:
    """Connect or start (see the module doc)."""
    import ray  # lazy: ray

    joined = address_of(address)
    if adopt(address):  # joined early, its workers started while the driver verified the lock
        return Instance(own=False, joined=joined)
    failed = early_failure(address)
    if ray.is_initialized():
        return Instance(own=False, joined=None, connected=False)
    if joined is not None:
        if joined == "local":
            raise EngineError("--address local is a new local instance: leave --address out for that")
        if failed is not None:
            raise EngineError(f"could not join the Ray cluster at {joined}: {failed}".strip())
        if answers(joined, JOIN_PROBE_S) is False:  # ray.init would wait minutes on an address nobody answers
            raise EngineError(
                f"could not join the Ray cluster at {joined}: nothing accepts a connection on that "
                f"host and port within {JOIN_PROBE_S:g} s (is the head started, `ray start --head`?)"
            )
        try:
            join(address=joined, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise EngineError(f"could not join the Ray cluster at {joined}: {err}".strip()) from None
        return Instance(own=False, joined=joined)
    t0 = time.perf_counter()
    join(address="local", num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    instance = Instance(own=True, joined=None, start_s=time.perf_counter() - t0)
    instance._reaper = _start_reaper()
    return instance


def _start_reaper() -> subprocess.Popen[bytes] | None:
    """The reaper of this process's own instance (Linux: it reads /proc), in its own session."""
    if not sys.platform.startswith("linux"):
        return None
    import ray  # lazy: ray

    node = getattr(ray._private.worker, "_global_node", None)
    session = getattr(node, "session_name", None)
    if not session:
        return None
    return subprocess.Popen(
        [sys.executable, "-S", "-I", str(REAPER), session, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def alive_nodes() -> list[dict[str, float]]:
    """Each alive node's total resources (Ray's names: ``CPU``, ``GPU``, custom ones)."""
    import ray  # lazy: ray

    return [{k: float(v) for k, v in n.get("Resources", {}).items()} for n in ray.nodes() if n.get("Alive")]


def start_cost_warning(instance: Instance, records: list[dict[str, Any]], jobs: int) -> None:
    """Warn (``RayStartCostWarning``) when the instance started here cost more than the local pool of
    ``jobs`` would have taken for these runs (their recorded seconds, spread over the pool)."""
    if not instance.own or not records:
        return
    compute_s = sum(float((r.get("env") or {}).get("seconds") or 0.0) for r in records)
    pool = max(1, min(jobs, usable_cpus()))
    local_s = compute_s / pool
    if instance.start_s > local_s:
        warnings.warn(
            RayStartCostWarning(
                f"starting its own Ray instance took {instance.start_s:.1f} s, longer than the local pool "
                f"(--jobs {pool}) needs for all {len(records)} runs (about {local_s:.1f} s: {compute_s:.1f} s of "
                "runs); for a sweep this short use --executor local, or start Ray once (ray start --head) and "
                "join it with --address"
            ),
            stacklevel=2,
        )


__all__ = ["Instance", "RayStartCostWarning", "address_of", "alive_nodes", "open_instance", "start_cost_warning"]
