"""The Ray task of ``collect run --executor ray``: a batch of runs in a private folder, streamed back.

:func:`sweep_task` runs on a worker of any node. It assumes nothing shared with the driver:

1. It guards itself: on a Ray instance the driver started for itself, it exits when the driver
   process is gone (``collect.engine.workers.watch_driver``); on any instance it heartbeats in the
   cluster's key-value store and exits when the driver's heartbeat stands still or a later driver
   asks it to stop (``collect.engine.ray_registry``).
2. It makes a private runs folder (``tempfile.mkdtemp`` on its own machine) and places there the
   study's shared inputs the driver put in Ray's object store (the torch warm start, the ``command``
   program's ``code`` files: ``Collector.shared_inputs``), each checked against the SHA-256 the driver
   computed; a mismatch fails the task (``SharedInputMismatch``), never a run.
3. It runs each run there and streams its record and trace bytes back
   (``collect.engine.transfer.record_pieces``), grouped into items of about ``chunk_bytes`` or
   ``group_s`` seconds of runs, whichever comes first; a run's files are deleted once sent, and the
   folder when the batch ends. Writes there skip fsync (``prereg.fileio.scratch_folder``): the
   driver makes the durable copies.

Imports Ray only inside the task (it runs in a Ray worker, where Ray is loaded).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from collect.collectors.base import Shipped
from collect.engine.ray_registry import guard_worker
from collect.engine.runs import Job, PlannedRun, execute_run
from collect.engine.transfer import Piece, record_pieces
from collect.engine.workers import watch_driver
from collect.ledger.store import TRACES_DIR
from prereg.errors import IntegrityError
from prereg.fileio import scratch_folder


class SharedInputMismatch(IntegrityError):
    """A shared input arrived with other bytes than the driver hashed (exit 3)."""


@dataclass(frozen=True)
class Guard:
    """How a task knows its driver: its (pid, start time) on its own local instance, else None; the
    runs folder's key in the cluster's key-value store; the driver's Ray job id (a warm runner,
    :mod:`collect.engine.ray_pool`, belongs to the job that started it, not to the one it serves)."""

    driver: tuple[int, int] | None
    folder: str
    job: str | None = None


@dataclass(frozen=True)
class Inputs:
    """The shared inputs as sent: name -> (SHA-256, object reference of the bytes), and the facts."""

    files: dict[str, tuple[str, Any]]
    facts: dict[str, Any]


def place_inputs(inputs: Inputs, root: Path, fetch: Any) -> Shipped:
    """Each shared input fetched (``fetch(ref) -> bytes``), checked and written under ``root``."""
    for name, (sha256, ref) in sorted(inputs.files.items()):
        parts = PurePosixPath(name).parts
        if not parts or PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
            raise SharedInputMismatch(f"shared input named {name!r}: not a relative path inside the runs folder")
        data = fetch(ref)
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise SharedInputMismatch(f"shared input {name} arrived with SHA-256 {got}, not the driver's {sha256}")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return Shipped(root, inputs.facts)


def _forget(root: Path, run_id: str) -> None:
    traces = root / TRACES_DIR
    try:
        names = os.listdir(traces)
    except FileNotFoundError:
        return
    for old in (traces / name for name in names if name.startswith(f"{run_id}.")):
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def run_private(
    job: Job, batch: list[PlannedRun], shipped_root: Path, shipped: Shipped, chunk_bytes: int, group_s: float
) -> Iterator[list[Piece]]:
    """The batch run in ``shipped_root`` (a private runs folder), as stream items (see the module doc)."""
    pending: list[Piece] = []
    size, since = 0, 0.0
    for planned in batch:
        record = execute_run(
            job.collector, planned, job.plan_sha256, str(shipped_root), job.identity, job.spec, shipped
        )
        for piece in record_pieces(record, shipped_root, chunk_bytes):
            if not pending:
                since = time.monotonic()
            pending.append(piece)
            size += len(piece[3]) if piece[0] == "data" else 512
            if size >= chunk_bytes:
                yield pending
                pending, size = [], 0
        _forget(shipped_root, planned.run_id)
        if pending and time.monotonic() - since >= group_s:
            yield pending
            pending, size = [], 0
    if pending:
        yield pending


def sweep_task(
    job: Job, batch: list[PlannedRun], inputs: Inputs, guard: Guard, chunk_bytes: int, group_s: float
) -> Iterator[list[Piece]]:
    """One Ray task (see the module doc)."""
    import ray  # lazy: ray (loaded already in a Ray worker)

    if guard.driver is not None:
        watch_driver(*guard.driver)
    context = ray.get_runtime_context()
    guard_worker(guard.folder, guard.job or context.get_job_id(), context.get_node_id())
    root = Path(tempfile.mkdtemp(prefix="prereg-sweep-"))
    scratch_folder(root)  # its files are sent and deleted: the driver writes the durable copies
    try:
        shipped = place_inputs(inputs, root, ray.get)
        yield from run_private(job, batch, root, shipped, chunk_bytes, group_s)
    finally:
        scratch_folder(root, scratch=False)
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["Guard", "Inputs", "SharedInputMismatch", "place_inputs", "run_private", "sweep_task"]
