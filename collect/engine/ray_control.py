"""Watching a sweep's Ray control plane: the GCS and the raylet of the driver's node.

Ray itself notices a dead GCS only after ``gcs_rpc_server_reconnect_timeout_s`` (60 s by default),
and then ends the driver's process from one of its own threads, with one log line and none of the
toolkit's cleanup; a dead raylet of the driver's node leaves the driver waiting on tasks that can
no longer report. So the driver watches both itself (:class:`ControlWatch`, a daemon thread): every
``WATCH_S`` seconds it opens a TCP connection to the GCS's address
(``ray.get_runtime_context().gcs_address``) and to the raylet's node-manager port of the driver's
node (from ``ray.nodes()``). An endpoint that has refused or not answered (within ``PROBE_S``) every
probe for ``LOST_AFTER_S`` seconds is lost: the sweep stops waiting (:mod:`collect.engine.ray_executor`
waits in steps of ``WATCH_S``) and raises :class:`ControlPlaneLost` naming what was lost. A short
network blip (a probe or two) is not a loss. A process that is alive but hung still accepts
connections (the kernel answers for it): that case is left to Ray.

:class:`ControlPlaneLost` is what a user sees (exit 1, ``collect run``'s "runs did not all
complete" code): the engine (:mod:`collect.engine.runner`) fills in how many runs the ledger holds,
its head, the runs not recorded and the command that finishes them. Imports Ray lazily.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from prereg.errors import EXIT_NOT_SUPPORTED, ToolkitError

WATCH_S = 0.5  # seconds between probes (and the step the sweep waits in)
PROBE_S = 1.0  # seconds a probe's TCP connection may take
LOST_AFTER_S = 3.0  # seconds an endpoint must fail every probe before it counts as lost
EXIT_RUNS_UNFINISHED = EXIT_NOT_SUPPORTED  # collect run's code for "runs did not all complete" (1)


class ControlPlaneLost(ToolkitError):
    """The Ray cluster's control plane (its GCS, or the raylet of the driver's node) stopped answering
    mid-sweep: the runs that had finished are in the ledger, the rest are to be resumed (exit 1).
    ``lost``: what was lost, in words."""

    exit_code = EXIT_RUNS_UNFINISHED

    def __init__(self, message: str, *, lost: str = "", details: object = None) -> None:
        super().__init__(message, details=details)
        self.lost = lost or message


def answers(host: str, port: int, timeout_s: float = PROBE_S) -> bool:
    """Whether ``host:port`` accepts a TCP connection within ``timeout_s`` seconds."""
    try:
        socket.create_connection((host.strip("[]"), port), timeout=timeout_s).close()
    except (OSError, ValueError):
        return False
    return True


@dataclass
class Endpoint:
    """One part of the control plane: which (``gcs`` or ``raylet``), what it is called in a message, and
    where it listens."""

    kind: str
    name: str
    host: str
    port: int
    failing_since: float | None = field(default=None, repr=False)  # monotonic time of the first failed probe


def endpoints() -> list[Endpoint]:
    """The GCS and the driver's raylet of the Ray instance this process is connected to: those whose
    address Ray reports (a Ray Client connection, ``ray://``, reports neither: nothing is watched)."""
    import ray  # lazy: ray

    found: list[Endpoint] = []
    try:
        context = ray.get_runtime_context()
        gcs = str(getattr(context, "gcs_address", "") or "")
        host, _, port = gcs.rpartition(":")
        if host and port.isdigit():
            found.append(Endpoint("gcs", f"the Ray GCS at {gcs}", host, int(port)))
        node_id = context.get_node_id()
        for node in ray.nodes():
            if node.get("NodeID") == node_id and node.get("NodeManagerPort"):
                where, number = str(node["NodeManagerAddress"]), int(node["NodeManagerPort"])
                found.append(Endpoint("raylet", f"the raylet of this driver's node ({where}:{number})", where, number))
    except Exception:  # noqa: BLE001 - a connection that reports no addresses is not watched, never refused
        return found
    return found


class ControlWatch:
    """Probes ``parts`` every ``watch_s`` seconds in a daemon thread (see the module doc); ``lost`` is the
    name of the first endpoint that failed for ``lost_after_s`` seconds, else None."""

    def __init__(self, parts: list[Endpoint], watch_s: float = WATCH_S, lost_after_s: float = LOST_AFTER_S) -> None:
        self.parts = parts
        self.watch_s = watch_s
        self.lost_after_s = lost_after_s
        self.lost: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ray-control-watch", daemon=True)
        if parts:
            self._thread.start()

    def probe(self) -> str | None:
        """One round of probes; the name of a lost endpoint (and ``lost`` set), else None."""
        now = time.monotonic()
        for part in self.parts:
            up = answers(part.host, part.port)
            with self._lock:
                if up:
                    part.failing_since = None
                    continue
                if part.failing_since is None:
                    part.failing_since = now
                if now - part.failing_since >= self.lost_after_s and self.lost is None:
                    self.lost = part.name
        return self.lost

    def settle(self) -> None:
        """After Ray reported a worker or node gone: probe until every endpoint answers (return) or one is
        lost (:class:`ControlPlaneLost`), at most about ``lost_after_s`` seconds, so that the loss of the
        control plane is never taken for the loss of a node."""
        while True:
            self.probe()
            self.check()
            with self._lock:
                if all(p.failing_since is None for p in self.parts):
                    return
            time.sleep(self.watch_s)

    def gcs_answers(self) -> bool:
        """Whether the GCS (when watched) answers a probe now: calls that need it may be made."""
        return all(answers(p.host, p.port) for p in self.parts if p.kind == "gcs")

    def _watch(self) -> None:
        while not self._stop.wait(self.watch_s):
            if self.probe() is not None:
                return

    def check(self) -> None:
        """Raise :class:`ControlPlaneLost` (its message completed by the engine) once something was lost."""
        if self.lost is not None:
            raise ControlPlaneLost(f"{self.lost} stopped answering", lost=self.lost)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.watch_s + PROBE_S * 2 * len(self.parts) + 1)


__all__ = ["LOST_AFTER_S", "PROBE_S", "WATCH_S", "ControlPlaneLost", "ControlWatch", "Endpoint", "answers", "endpoints"]
