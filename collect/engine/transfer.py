"""Runs' traces carried from a Ray worker to the driver as bytes: nothing assumes a shared filesystem.

The worker turns a finished run into pieces (:func:`record_pieces`: each trace in chunks, then the
record with its SHA-256 of each file); the driver's :class:`Receiver` writes the chunks to hidden
partial files in ``RUNS/traces/.incoming``, refuses a trace whose hash differs, and installs whole
files (fsynced, renamed, never through a link) before the record is returned. Details: docs/cluster.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from collect.engine.runs import EngineError
from collect.ledger.files import trace_path
from collect.ledger.store import TRACES_DIR
from prereg.fileio import fsync_dir

CHUNK_BYTES = 4 << 20  # a piece of a trace file
INCOMING = ".incoming"  # RUNS/traces/.incoming: partial files while they arrive

Piece = tuple[Any, ...]


def record_pieces(record: dict[str, Any], root: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Piece]:
    """The pieces of one finished run (see the module doc): each listed trace under ``root`` (the
    worker's private runs folder) in chunks, then the record with the worker's SHA-256 of each."""
    hashes: dict[str, str] = {}
    for name in record.get("traces") or []:
        digest = hashlib.sha256()
        path = trace_path(root, name)
        with open(path, "rb") as f:
            chunk = f.read(chunk_bytes)
            while True:
                digest.update(chunk)
                following = f.read(chunk_bytes) if chunk else b""
                yield ("data", record["run_id"], name, chunk, not following)
                if not following:
                    break
                chunk = following
        hashes[name] = digest.hexdigest()
    yield ("record", record, hashes)


class Leftovers:
    """The entries of ``RUNS/traces`` that runs left before this sweep, by run id, listed once (at
    the first use): what an earlier, unrecorded attempt of a run wrote is removed before its new
    files go in. A sweep installs each run's files once (a run reported is never redone), so a
    listing taken before it installs anything names every leftover, without a scan of the folder
    per run (which grows with the sweep)."""

    def __init__(self, runs_dir: Path) -> None:
        self.traces = Path(runs_dir) / TRACES_DIR
        self._by_run: dict[str, list[str]] | None = None

    def pop(self, run: str) -> list[Path]:
        """The entries ``traces/<run>.*`` that were there before the sweep (each given once)."""
        if self._by_run is None:
            self._by_run = {}
            try:
                names = os.listdir(self.traces)
            except FileNotFoundError:
                names = []
            for name in names:
                if "." in name and not name.startswith("."):
                    self._by_run.setdefault(name.split(".", 1)[0], []).append(name)
        return [self.traces / name for name in self._by_run.pop(run, [])]


class Receiver:
    """The driver's end: writes arriving trace files, returns finished records.
    ``leftovers``: the sweep's one listing of what earlier attempts left (one per receiver if not given)."""

    def __init__(self, runs_dir: Path, leftovers: Leftovers | None = None) -> None:
        self.runs_dir = Path(runs_dir)
        self.leftovers = leftovers if leftovers is not None else Leftovers(self.runs_dir)
        self.incoming = self.runs_dir / TRACES_DIR / INCOMING
        self.open: dict[str, tuple[Any, Any, Path]] = {}  # name -> (file, hasher, partial path)
        self.arrived: dict[str, tuple[str, Path]] = {}  # name -> (driver's SHA-256, partial path), whole

    def take(self, item: list[Piece]) -> list[dict[str, Any]]:
        """The records an item finishes (their traces in place, ``trace_sha256`` set). The item's
        files are fsynced together (concurrently, so the file system commits them as one group),
        then moved into place, then their folders fsynced once each: before any record is returned."""
        done = []
        for piece in item:
            if piece[0] == "data":
                self._data(*piece[1:])
            elif piece[0] == "record":
                done.append(self._check(piece[1], piece[2]))
            else:
                raise EngineError(f"a worker sent an unknown piece {piece[0]!r}")
        files = [
            (record["run_id"], name, self.arrived.pop(name)[1])
            for record in done
            for name in record.get("traces") or []
        ]
        if files:
            list(_FSYNC_POOL.map(_fsync_path, [partial for _, _, partial in files]))
            self._install(files)
        return done

    def _data(self, run: str, name: str, chunk: bytes, last: bool) -> None:
        _check_name(run, name)
        if name not in self.open:
            if self.incoming.is_symlink():
                raise EngineError(f"{self.incoming}: is a symbolic link; traces are never written through it")
            self.incoming.mkdir(parents=True, exist_ok=True)
            partial = self.incoming / f"{uuid.uuid4().hex}.partial"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
            self.open[name] = (os.fdopen(fd, "wb"), hashlib.sha256(), partial)
        f, digest, partial = self.open[name]
        f.write(chunk)
        digest.update(chunk)
        if last:
            f.close()  # fsynced with the rest of its item (``take``)
            del self.open[name]
            self.arrived[name] = (digest.hexdigest(), partial)

    def _check(self, record: dict[str, Any], hashes: dict[str, str]) -> dict[str, Any]:
        names = list(record.get("traces") or [])
        got = {}
        for name in names:
            _check_name(record["run_id"], name)
            if name not in self.arrived:
                raise EngineError(f"run {record['run_id']}: trace {name} did not arrive whole from its worker")
            digest, _ = self.arrived[name]
            if hashes.get(name) != digest:
                raise EngineError(
                    f"run {record['run_id']}: trace {name} arrived torn (SHA-256 {digest} on the "
                    f"driver, {hashes.get(name)} on the worker)"
                )
            got[name] = digest
        return {**record, "trace_sha256": got} if names else record

    def _install(self, files: list[tuple[str, str, Path]]) -> None:
        """Arrived files (run, name, partial) moved to their places, after removing what an earlier
        attempt of each run left; each folder fsynced once."""
        for run in dict.fromkeys(run for run, _, _ in files):
            for old in self.leftovers.pop(run):
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old)
                else:
                    old.unlink()
        folders = set()
        for _, name, partial in files:
            target = trace_path(self.runs_dir, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)
            folders.add(target.parent)
        for folder in folders:
            fsync_dir(folder)

    def abort(self) -> None:
        """Drop the partial files of a result that will not complete (its runs are redone)."""
        for f, _, partial in self.open.values():
            f.close()
            partial.unlink(missing_ok=True)
        for _, partial in self.arrived.values():
            partial.unlink(missing_ok=True)
        self.open.clear()
        self.arrived.clear()

    def close(self) -> None:
        """Drop what is left and remove the ``.incoming`` folder when it is empty."""
        self.abort()
        try:
            self.incoming.rmdir()
        except OSError:
            pass  # absent, or a partial file is still in it


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_FSYNC_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="trace-fsync")


def _check_name(run: str, name: str) -> None:
    """A trace name a worker may send for ``run``: ``traces/<run>.<...>``, no ``..``, nothing absolute."""
    parts = name.split("/")
    if (
        len(parts) < 2
        or parts[0] != TRACES_DIR
        or not parts[1].startswith(f"{run}.")
        or any(p in ("", ".", "..") for p in parts)
        or "\\" in name
    ):
        raise EngineError(
            f"run {run}: a worker sent a trace named {name!r}, not one of this run's ({TRACES_DIR}/{run}.*); refused"
        )


__all__ = ["CHUNK_BYTES", "Leftovers", "Receiver", "record_pieces"]
