"""Which Ray workers run a runs folder's sweep, kept in the cluster's own key-value store (GCS).

Nothing on the cluster's machines is assumed shared, and a driver's pid means nothing on other
nodes, so the bookkeeping lives in Ray's internal key-value store, under the namespace
``prereg-collect`` and a key per runs folder (``folder_key``: a hash of the driver's host name and
the folder's real path):

* ``<folder>/driver/<job>``: the driver's heartbeat, a counter it raises every ``HEARTBEAT_S``;
* ``<folder>/worker/<job>/<node>/<pid>``: each worker process's heartbeat, raised as often;
* ``<folder>/stop/<job>``: set by a later driver of the same folder: that job's workers exit.

A worker (:func:`guard_worker`, first thing in each task) exits when the driver's heartbeat has
stood still for two beats and Ray's job table marks the driver's job dead (asked only then: the
table lists every job of the cluster), or has not moved for ``DRIVER_LOST_S`` (the driver was
killed; Ray normally ends a dead driver's task workers itself, but not a warm runner, which belongs
to the job that started it) or when asked to stop; it stops beating, and removes its key, once
the driver's key is gone (the driver closed: it removes the driver's key before the workers'), so
a clean sweep leaves no key behind for the next driver of the folder to wait on. Before it submits anything, a driver
(:func:`stop_leftovers`) asks every worker of an earlier job of its folder to stop and watches
their heartbeats: those whose key goes away stopped, those whose heartbeat stands still are gone
(their key is removed), and those whose heartbeat still moves after ``STOP_WAIT_S`` are returned,
to be named. Imports Ray lazily; values are plain decimal text.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from pathlib import Path

NAMESPACE = "prereg-collect"
HEARTBEAT_S = 1.0
DRIVER_LOST_S = 30.0  # a driver heartbeat standing still this long: the driver is gone
STOP_WAIT_S = 3 * HEARTBEAT_S + 1.0  # how long a later driver watches an earlier job's workers


def folder_key(runs_dir: str | os.PathLike[str]) -> str:
    """The runs folder's key: 16 hex digits of SHA-256 of the driver's host name and its real path."""
    return hashlib.sha256(f"{socket.gethostname()}:{Path(runs_dir).resolve()}".encode()).hexdigest()[:16]


def _kv() -> tuple[object, object, object, object]:
    from ray.experimental.internal_kv import (  # lazy: ray
        _internal_kv_del,
        _internal_kv_get,
        _internal_kv_list,
        _internal_kv_put,
    )

    return _internal_kv_put, _internal_kv_get, _internal_kv_del, _internal_kv_list


def _put(key: str, value: str) -> None:
    put = _kv()[0]
    put(key, value.encode(), overwrite=True, namespace=NAMESPACE)  # type: ignore[operator]


def _get(key: str) -> str | None:
    raw = _kv()[1](key, namespace=NAMESPACE)  # type: ignore[operator]
    return None if raw is None else bytes(raw).decode()


def _del(key: str, prefix: bool = False) -> None:
    _kv()[2](key, del_by_prefix=prefix, namespace=NAMESPACE)  # type: ignore[operator]


def _list(prefix: str) -> list[str]:
    return [bytes(k).decode() for k in _kv()[3](prefix, namespace=NAMESPACE)]  # type: ignore[operator]


class DriverBeat:
    """The driver's heartbeat for one job (a daemon thread); ``close`` removes the job's keys."""

    def __init__(self, folder: str, job: str) -> None:
        self.key = f"{folder}/driver/{job}"
        self.folder, self.job = folder, job
        self._stop = threading.Event()
        _put(self.key, "0")
        self._thread = threading.Thread(target=self._beat, name="driver-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        count = 0
        while not self._stop.wait(HEARTBEAT_S):
            count += 1
            try:
                _put(self.key, str(count))
            except Exception:  # noqa: BLE001 - the cluster went away: the sweep itself will say so
                return

    def stop_workers(self, wait_s: float = STOP_WAIT_S) -> None:
        """Ask this job's workers to exit now (its control plane was lost mid-sweep: what they still run
        reports to nobody) and wait, at most ``wait_s`` seconds, until each worker's key is gone or its
        heartbeat has stood still for two beats (a worker that died with its node)."""
        try:
            _put(f"{self.folder}/stop/{self.job}", "1")
            start = time.monotonic()
            seen = {k: (_get(k), start) for k in _list(f"{self.folder}/worker/{self.job}/")}
            while seen and time.monotonic() - start < wait_s:
                time.sleep(HEARTBEAT_S / 2)
                now = time.monotonic()
                for key, (value, since) in list(seen.items()):
                    current = _get(key)
                    if current is not None and current != value:
                        seen[key] = (current, now)  # still beating
                    elif current is None or now - since > 2 * HEARTBEAT_S:
                        del seen[key]  # stopped (its key removed), or dead (its heartbeat stands still)
        except Exception:  # noqa: BLE001 - best effort: the GCS may have gone too
            pass

    def close(self, gcs_up: bool = True) -> None:
        """Stop beating and remove the job's keys; ``gcs_up=False`` (the GCS is gone): only stop, asking
        nothing of it (a call to a dead GCS waits a minute)."""
        self._stop.set()
        if not gcs_up:
            return
        self._thread.join(timeout=5)
        for key in (self.key, f"{self.folder}/stop/{self.job}"):
            try:
                _del(key)
            except Exception:  # noqa: BLE001 - best effort: the cluster may be gone already
                pass
        try:
            _del(f"{self.folder}/worker/{self.job}/", prefix=True)
        except Exception:  # noqa: BLE001 - best effort
            pass


_guarded: set[tuple[str, str]] = set()
_guard_lock = threading.Lock()


def guard_worker(folder: str, job: str, node: str) -> None:
    """In a worker: heartbeat, and exit when the driver's heartbeat stands still or a stop is asked
    (see the module doc); once per process and job."""
    with _guard_lock:
        if (folder, job) in _guarded:
            return
        _guarded.add((folder, job))
    key = f"{folder}/worker/{job}/{node}/{os.getpid()}"
    _put(key, "0")
    threading.Thread(target=_worker_beat, args=(folder, job, key), name="sweep-heartbeat", daemon=True).start()


def _worker_beat(folder: str, job: str, key: str) -> None:
    count, seen, since = 0, _get(f"{folder}/driver/{job}"), time.monotonic()
    while True:
        time.sleep(HEARTBEAT_S)
        count += 1
        try:
            _put(key, str(count))
            beat = _get(f"{folder}/driver/{job}")  # read after the put: a driver that closed meanwhile is seen
            stop = _get(f"{folder}/stop/{job}") is not None
            if beat is None:  # the driver closed (its keys removed): no key of this worker may outlive it
                _del(key)
                with _guard_lock:
                    _guarded.discard((folder, job))
                return
        except Exception:  # noqa: BLE001 - the GCS is unreachable: Ray ends this worker itself
            continue
        if beat != seen:
            seen, since = beat, time.monotonic()
        still = time.monotonic() - since  # how long the driver's heartbeat has stood still
        if stop or still > DRIVER_LOST_S or (still > 2 * HEARTBEAT_S and _job_dead(job)):
            try:
                _del(key)
            finally:
                os._exit(1)


def _job_dead(job: str) -> bool:
    """Whether Ray's job table marks ``job`` (hex id) dead: its driver is gone without closing (a clean
    driver removes its key first). Ray ends a dead job's task workers itself; a warm runner
    (:mod:`collect.engine.ray_pool`) belongs to another job and learns it here. False when unknown."""
    try:
        import ray._private.state as state  # lazy: ray (internal, as the key-value store is)

        return any(j.get("JobID") == job and j.get("IsDead") for j in state.state.job_table())
    except Exception:  # noqa: BLE001 - the GCS is unreachable or the table changed: the heartbeat decides
        return False


def stop_leftovers(folder: str, job: str, wait_s: float = STOP_WAIT_S) -> list[str]:
    """Stop the workers earlier jobs of this folder left (see the module doc); returns the ones still
    running after ``wait_s`` as ``node <id> pid <pid> (job <job>)``."""
    prefix = f"{folder}/worker/"
    keys = [k for k in _list(prefix) if k.split("/")[2] != job]
    for old in {k.split("/")[2] for k in keys}:
        _put(f"{folder}/stop/{old}", "1")
    first = {k: _get(k) for k in keys}
    deadline = time.monotonic() + wait_s
    moving: dict[str, str | None] = {}
    while keys and time.monotonic() < deadline:
        time.sleep(HEARTBEAT_S / 2)
        now = {k: _get(k) for k in keys}
        moving = {k: v for k, v in now.items() if v is not None and v != first[k]}
        if all(v is None for v in now.values()):
            break  # every one stopped and said so
    for key in keys:
        if key not in moving:
            _del(key)  # stopped, or its heartbeat stood still: gone
    for old in {k.split("/")[2] for k in keys} - {k.split("/")[2] for k in moving}:
        _del(f"{folder}/stop/{old}")
        _del(f"{folder}/driver/{old}")
    return [f"node {k.split('/')[3][:12]} pid {k.split('/')[4]} (job {k.split('/')[2]})" for k in sorted(moving)]


__all__ = ["DRIVER_LOST_S", "HEARTBEAT_S", "DriverBeat", "folder_key", "guard_worker", "stop_leftovers"]
