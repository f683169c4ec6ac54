"""The Ray task of ``collect run --executor ray``: one run in a private folder on its node, sent back whole.

Nothing shared with the driver: shared inputs arrive as bytes (checked against its SHA-256). Imports no Ray.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from collect.collectors.base import Shipped
from collect.engine.runs import Job, PlannedRun, execute_run
from collect.engine.transfer import Piece, record_pieces
from prereg.errors import IntegrityError
from prereg.fileio import scratch_folder

SharedFiles = dict[str, tuple[str, bytes]]  # name (relative POSIX path) -> (SHA-256, bytes)


class SharedInputMismatch(IntegrityError):
    """A shared input arrived with other bytes than the driver hashed, or under a name outside the folder (exit 3)."""


def place_inputs(files: SharedFiles, facts: dict[str, Any], root: Path) -> Shipped:
    """Each shared input checked against its SHA-256 and written under ``root``."""
    for name, (sha256, data) in sorted(files.items()):
        parts = PurePosixPath(name).parts
        if not parts or PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
            raise SharedInputMismatch(f"shared input named {name!r}: not a relative path inside the runs folder")
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise SharedInputMismatch(f"shared input {name} arrived with SHA-256 {got}, not the driver's {sha256}")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return Shipped(root, facts)


def run_task(job: Job, planned: PlannedRun, files: SharedFiles, facts: dict[str, Any], chunk_bytes: int) -> list[Piece]:
    """One run in a private runs folder (removed after): its trace chunks, then its record. The folder's
    path is the same for every run of this worker, so what a collector caches by path is kept."""
    root = Path(tempfile.gettempdir()) / f"prereg-sweep-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)  # what a killed earlier process of this pid left
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:  # not ours to remove
        root = Path(tempfile.mkdtemp(prefix="prereg-sweep-"))
    scratch_folder(root)  # its files are sent and deleted: the driver writes the durable copies
    try:
        shipped = place_inputs(files, facts, root)
        record = execute_run(job.collector, planned, job.plan_sha256, str(root), job.identity, job.spec, shipped)
        return list(record_pieces(record, root, chunk_bytes))
    finally:
        scratch_folder(root, scratch=False)
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["SharedFiles", "SharedInputMismatch", "place_inputs", "run_task"]
