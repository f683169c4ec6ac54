"""Watching a sweep's Ray control plane (the GCS, the raylet of the driver's node) by TCP probes.

Ray notices a dead GCS only after a minute and then ends the driver without the toolkit's words:
an endpoint that failed every probe for ``LOST_AFTER_S`` seconds stops the sweep with
:class:`ControlPlaneLost` (exit 1; the engine adds the ledger's head and the resume command).
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


class ControlPlaneLost(ToolkitError):
    """The control plane stopped answering mid-sweep (exit 1: the finished runs are kept); ``lost``: what, in words."""

    exit_code = EXIT_NOT_SUPPORTED

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
    """One part of the control plane: ``gcs`` or ``raylet``, its name in a message, where it listens."""

    kind: str
    name: str
    host: str
    port: int
    failing_since: float | None = field(default=None, repr=False)  # monotonic time of the first failed probe


def endpoints() -> list[Endpoint]:
    """The GCS and the driver's raylet of the connected instance, where Ray reports them (``ray://``: none)."""
    import ray  # lazy: ray

    found: list[Endpoint] = []
    try:  # a connection that reports no addresses is not watched, never refused
        context = ray.get_runtime_context()
        gcs = str(getattr(context, "gcs_address", "") or "")
        host, _, port = gcs.rpartition(":")
        if host and port.isdigit():
            found.append(Endpoint("gcs", f"the Ray GCS at {gcs}", host, int(port)))
        for node in ray.nodes():
            if node.get("NodeID") == context.get_node_id() and node.get("NodeManagerPort"):
                where, number = str(node["NodeManagerAddress"]), int(node["NodeManagerPort"])
                found.append(Endpoint("raylet", f"the raylet of this driver's node ({where}:{number})", where, number))
    except Exception:  # noqa: BLE001
        pass
    return found


class ControlWatch:
    """Probes ``parts`` every ``watch_s`` seconds in a daemon thread; ``lost``: the first endpoint lost, else None."""

    def __init__(self, parts: list[Endpoint], watch_s: float = WATCH_S, lost_after_s: float = LOST_AFTER_S) -> None:
        self.parts, self.watch_s, self.lost_after_s = parts, watch_s, lost_after_s
        self.lost: str | None = None
        self._lock, self._stop = threading.Lock(), threading.Event()
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
                part.failing_since = now if part.failing_since is None else part.failing_since
                if now - part.failing_since >= self.lost_after_s and self.lost is None:
                    self.lost = part.name
        return self.lost

    def answering(self) -> bool:
        """Whether every watched endpoint answers a probe now (the sweep starts no GCS-bound call without it)."""
        return all(answers(part.host, part.port) for part in self.parts)

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
