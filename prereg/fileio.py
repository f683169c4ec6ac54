"""Durable, atomic file writes shared by every writer in the toolkit, and the one rule for outputs.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from prereg.errors import InputError
from prereg.readfile import UnreadableFile, file_kind, not_a_readable_file, read_regular_file

__all__ = [
    "OutputRefused",
    "UnreadableFile",
    "atomic_write",
    "check_output",
    "file_head",
    "fsync_dir",
    "not_a_readable_file",
    "output_kind",
    "read_regular_file",
    "runs_folder_of",
    "scratch_folder",
    "write_output",
    "write_text_atomically",
]

#: folders whose files are scratch: a worker's private runs folder that its executor sends to the
#: driver and then deletes (the driver writes the durable copies). Writes under them skip fsync.
_SCRATCH: set[str] = set()
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def scratch_folder(folder: str | os.PathLike[str], scratch: bool = True) -> None:
    """Mark (or unmark) ``folder`` as scratch for this process: :func:`atomic_write` and
    :func:`fsync_dir` then skip their fsyncs under it (nothing there needs to survive a crash)."""
    (_SCRATCH.add if scratch else _SCRATCH.discard)(os.path.abspath(folder))


def _durable(path: str | os.PathLike[str]) -> bool:
    if not _SCRATCH:
        return True
    where = os.path.abspath(path)
    return not any(where == root or where.startswith(root + os.sep) for root in _SCRATCH)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder so a rename or creation inside it survives a crash."""
    if not _durable(folder):
        return
    fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_name(name: str) -> str:
    return f".{name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"


def atomic_write(path: str | os.PathLike[str], data: bytes, read_only: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically; ``read_only`` leaves it mode 0444.

    The temporary file is created ``O_EXCL | O_NOFOLLOW`` and renamed over ``path``: a rename
    replaces the name, never writes through a link or into another name of the same file.
    """
    target = Path(path)
    tmp = target.with_name(_temp_name(target.name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if _durable(target):
                os.fsync(fh.fileno())
        if read_only:
            os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except OSError as err:  # e.g. disk full: say which file could not be written
        tmp.unlink(missing_ok=True)
        if err.filename is None:
            raise OSError(err.errno, f"cannot be written ({err.strerror or err})", str(target)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def write_text_atomically(
    path: str | os.PathLike[str], text: str, force: bool = False, ours: Callable[[Path], bool] | None = None
) -> None:
    """Write ``text`` (UTF-8) to ``path`` under the output rule (:func:`write_output`).

    A folder or missing parent is an ``InputError``; an existing file is replaced only when
    :func:`check_output` (called here, or earlier by the command for the same path) allows it.
    """
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise InputError(f"{target}: is a folder, not a file to write")
    parent = target.parent
    if not parent.is_dir():
        raise InputError(f"{parent}: no such folder")
    write_output(target, text.encode("utf-8"), force, ours)


# --- the output rule ---------------------------------------------------------------------------

#: files whose presence makes a folder a runs folder (the ledger, its writer lock, the look
#: ledger, a batch journal); everything in it and below it is the runs folder's
RUNS_FOLDER_MARKERS = ("ledger.jsonl", ".collect.lock", "looks.jsonl", ".ledger.pending")
PROTECTED_NAMES = {
    "ledger.jsonl": "a run ledger",
    ".collect.lock": "a runs folder's lock",
    "looks.jsonl": "a look ledger",
    ".ledger.pending": "a ledger journal",
    "evaluation.json": "an evaluation",
}
_SUFFIX_KINDS = (
    (".lock.json", "a plan lock"),
    (".yaml", "a plan"),
    (".yml", "a plan"),
    (".jsonl", "a trace"),
    (".polls.parquet", "a trace"),
    (".polls.csv.gz", "a trace"),
)
_CONTENT_KINDS = (
    (rb'"record":\s*"collect/run/v\d+"', "a run ledger"),
    (rb'"record":\s*"collect/looks/v\d+"', "a look ledger"),
    (rb'"format":\s*"collect/ledger-pending/v\d+"', "a ledger journal"),
    (rb'"format":\s*"prereg/lock/v\d+"', "a plan lock"),
    (rb"(?m)^schema:\s*['\"]?prereg/v1", "a plan"),
    (rb'"format":\s*"collect/trace/v\d+"', "a trace"),
    (rb'"schema":\s*"gates/evaluation/v\d+"', "an evaluation"),
)
#: protected kinds that their own writer may replace when its ``ours`` says the file is its own
#: (a lock by its amendment, an evaluation by a new evaluation of the same study)
REPLACEABLE_KINDS = ("a plan lock", "an evaluation")
_HEAD_BYTES = 4096
#: what check_output approved: absolute path -> (st_dev, st_ino) of the file to replace, or None
#: when nothing was there (then the write must create the file)
_approved: dict[str, tuple[int, int] | None] = {}


class OutputRefused(InputError, OSError):
    """An output path the toolkit will not write over (a ledger, lock, plan, trace, device...).

    Both an :class:`~prereg.errors.InputError` (exit 2) and an ``OSError`` (``errno``, ``strerror``,
    ``filename``), so callers catching either keep working; its message is ``filename: strerror``.
    """

    def __init__(self, errno_: int, strerror: str, filename: str) -> None:
        OSError.__init__(self, errno_, strerror, filename)
        self.message = f"{filename}: {strerror}"
        self.details = None


def runs_folder_of(path: str | os.PathLike[str]) -> Path | None:
    """The runs folder ``path`` lies in (its folder or any folder above it holds a
    :data:`RUNS_FOLDER_MARKERS` file), links in the folder path resolved; None when there is none."""
    folder = Path(os.path.realpath(os.path.dirname(os.path.abspath(path))))
    for candidate in (folder, *folder.parents):
        for marker in RUNS_FOLDER_MARKERS:
            try:
                os.lstat(candidate / marker)
            except OSError:
                continue
            return candidate
    return None


def file_head(path: str | os.PathLike[str], size: int = 4096) -> bytes:
    """The first ``size`` bytes of the regular file ``path`` (never through a link, never blocking); b""
    if it is not a readable regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def output_kind(path: str | os.PathLike[str], head: bytes | None = None) -> str | None:
    """The protected kind of the file at ``path`` ('a run ledger', 'a plan lock', 'an evaluation'...),
    recognised by its name, its suffix, a ``traces`` folder or its first bytes; None for any other file."""
    target = Path(path)
    name = target.name
    if name in PROTECTED_NAMES:
        return PROTECTED_NAMES[name]
    for suffix, kind in _SUFFIX_KINDS:
        if name.endswith(suffix):
            return kind
    if target.parent.name == "traces":
        return "a trace"
    data = file_head(target, _HEAD_BYTES) if head is None else head
    for marker, kind in _CONTENT_KINDS:
        if re.search(marker, data):
            return kind
    return None


def check_output(path: str | os.PathLike[str], force: bool = False, ours: Callable[[Path], bool] | None = None) -> None:
    """Refuse to write ``path`` over anything but a file the rule allows (``OutputRefused``, exit 2).

    * Nothing there: allowed (the write creates the file and fails if something appears meanwhile);
      the parent folder must exist.
    * Never written over, even with ``force``: a symbolic link, a folder, a device, a FIFO or
      socket; a run ledger, runs-folder lock, look ledger, ledger journal, plan (``.yaml``) or trace
      (by name, suffix, a ``traces/`` folder or first bytes); a plan lock or an evaluation unless
      ``ours(path)`` says it is the writer's own (an amendment of that lock, an evaluation of the
      same study).
    * In a runs folder (:func:`runs_folder_of`), any other existing file only when
      ``ours(path)`` is true (an earlier output of this kind); ``force`` does not apply there.
    * Elsewhere, an existing regular file when ``ours(path)`` is true, or with ``force``.

    An allowed path is remembered (with the file's device and inode) for :func:`write_output`,
    which re-checks it just before writing.
    """
    target = Path(path)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise OutputRefused(2, "no such folder to write into", str(target.parent)) from None
        _approved[os.path.abspath(target)] = None
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(17, f"exists and is {file_kind(st.st_mode)}; never written over", str(target))
    kind = output_kind(target)
    own = bool(ours is not None and ours(target))
    if kind is not None and not (own and kind in REPLACEABLE_KINDS):
        raise OutputRefused(
            17,
            f"is {kind}; a ledger, lock, plan, trace or evaluation is never written over "
            "by this output (choose another path)",
            str(target),
        )
    if not own:
        runs = runs_folder_of(target)
        if runs is not None:
            raise OutputRefused(
                17,
                f"is in the runs folder {runs} and is not an earlier output of this kind; "
                "nothing in a runs folder is written over, even with --force (choose another "
                "path)",
                str(target),
            )
        if not force:
            raise OutputRefused(
                17,
                "exists and was not written by the toolkit as this kind of output; use --force to replace it",
                str(target),
            )
    _approved[os.path.abspath(target)] = (st.st_dev, st.st_ino)


def write_output(
    path: str | os.PathLike[str],
    data: bytes,
    force: bool = False,
    ours: Callable[[Path], bool] | None = None,
    read_only: bool = False,
) -> None:
    """Write ``data`` to ``path`` under the output rule, atomically and durably.

    The rule is :func:`check_output` (called here unless the command already checked this path).
    The bytes go to a temporary file created ``O_EXCL | O_NOFOLLOW`` in the target's folder (opened
    once as a directory descriptor). A new file is then linked into place (``link(2)`` fails if
    anything appeared at the name since the check); an existing one is renamed over only if the
    name still holds the approved regular file (same device and inode). Remaining window: between
    that last ``lstat`` and the ``rename`` (microseconds) a process could swap the name; the rename
    then replaces the swapped-in *name* (a link, another name of a file), never the content of the
    file it pointed to. On a filesystem without hard links a new file is renamed into place after
    the same check.
    """
    target = Path(path)
    key = os.path.abspath(target)
    if key not in _approved:
        check_output(target, force, ours)
    expected = _approved.pop(key)
    if _state(target) != expected:  # approved earlier, changed since: the rule again, on what is there now
        check_output(target, force, ours)
        expected = _approved.pop(key)
    name = target.name
    folder = target.parent
    dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        _write_in(dfd, name, data, expected, read_only, str(target))
        if _durable(target):
            os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_in(dfd: int, name: str, data: bytes, expected: tuple[int, int] | None, read_only: bool, label: str) -> None:
    """The temporary file, then link (new) or rename (approved replacement), all relative to ``dfd``."""
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if _durable(label):
                os.fsync(fd)
            if read_only:
                os.fchmod(fd, 0o444)
        finally:
            os.close(fd)
        _commit(dfd, tmp, name, expected, label)
    except OSError as err:  # e.g. disk full: say which file could not be written
        _discard(tmp, dfd)
        if isinstance(err, OutputRefused):
            raise
        raise OSError(err.errno, f"cannot be written ({err.strerror or err})", label) from None
    except BaseException:
        _discard(tmp, dfd)
        raise


def _state(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what is at ``path`` (not following a link), None when nothing is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _discard(name: str, dfd: int) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


def _commit(dfd: int, tmp: str, name: str, expected: tuple[int, int] | None, label: str) -> None:
    try:
        now = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        now = None
    if expected is None:
        if now is not None:
            raise OutputRefused(17, "appeared while the output was being written; never written over", label)
        try:
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            raise OutputRefused(17, "appeared while the output was being written; never written over", label) from None
        except OSError:  # no hard links here (e.g. FAT, some FUSE): the lstat above is the check
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            return
        os.unlink(tmp, dir_fd=dfd)
        return
    if now is None or not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != expected:
        raise OutputRefused(17, "was replaced or removed while the output was being written; not written over", label)
    os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
