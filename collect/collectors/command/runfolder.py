"""A ``command`` run's private folder, handled only through directory file descriptors.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path
from types import TracebackType

from collect.collectors.command.outputs import MAX_MARKS_BYTES, Mark, RunFailure, parse_marks
from prereg.readfile import read_at_most

RUN_FILE, METRICS_FILE, MARKS_FILE = "run.json", "metrics.json", "marks.txt"  # in the run's folder
STDOUT_FILE, STDERR_FILE = "stdout.txt", "stderr.txt"

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def remove_entry(parent_fd: int, name: str) -> None:
    """Remove ``name`` in the folder ``parent_fd``, never following a link: a link or file is unlinked
    itself, a folder removed with ``shutil.rmtree``'s descriptor-based walk (links inside unlinked)."""
    try:
        mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, dir_fd=parent_fd)
    else:
        os.unlink(name, dir_fd=parent_fd)


class RunFolder:
    """``traces_dir/name``, created afresh and held open (see the module doc); a context manager."""

    def __init__(self, traces_dir: Path, name: str) -> None:
        self.path = traces_dir / name
        self.name = name
        try:
            self.parent_fd = os.open(traces_dir, _DIR_FLAGS)
        except OSError as err:
            why = "is a symbolic link" if err.errno == errno.ELOOP else (err.strerror or str(err))
            raise RunFailure(f"the traces folder {str(traces_dir)!r} cannot be used ({why}); nothing was run") from None
        try:
            remove_entry(self.parent_fd, name)
            os.mkdir(name, 0o755, dir_fd=self.parent_fd)
            self.fd = os.open(name, _DIR_FLAGS, dir_fd=self.parent_fd)
        except OSError as err:
            os.close(self.parent_fd)
            raise RunFailure(
                f"the run's folder {name!r} cannot be made afresh ({err.strerror or err}); nothing was run"
            ) from None
        except BaseException:
            os.close(self.parent_fd)
            raise
        st = os.fstat(self.fd)
        self.identity = (st.st_dev, st.st_ino)
        self._created: dict[str, tuple[int, int]] = {}

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptors (idempotent)."""
        for attr in ("fd", "parent_fd"):
            fd = getattr(self, attr, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)

    def create(self, name: str) -> int:
        """A new, empty file ``name`` in the folder, created exclusively (never through a link); its fd."""
        fd = os.open(name, _CREATE_FLAGS, 0o644, dir_fd=self.fd)
        st = os.fstat(fd)
        self._created[name] = (st.st_dev, st.st_ino)
        return fd

    def write_new(self, name: str, data: bytes) -> None:
        """Create ``name`` (:meth:`create`) holding ``data``."""
        fd = self.create(name)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)

    @staticmethod
    def rewrite(fd: int, data: bytes) -> None:
        """Replace the content of a file the toolkit created (``fd`` from :meth:`create`) with ``data``."""
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        _write_all(fd, data)

    def _open_regular(self, name: str, what: str) -> tuple[int, os.stat_result] | None:
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise RunFailure(f"{what} {name} is a symbolic link; never followed") from None
            raise RunFailure(f"{what} {name} cannot be read ({err.strerror or err})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise RunFailure(f"{what} {name} is {_kind(st.st_mode)}, not a regular file; not read")
        return fd, st

    def read(self, name: str, limit_bytes: int, what: str) -> bytes | None:
        """The bytes of the regular file ``name`` (None when absent); ``RunFailure`` for a link, a hard
        link (more than one name), anything but a regular file, or more than ``limit_bytes`` (checked
        before reading; at most ``limit_bytes + 1`` bytes are ever read)."""
        opened = self._open_regular(name, what)
        if opened is None:
            return None
        fd, st = opened
        try:
            if st.st_nlink != 1:
                raise RunFailure(f"{what} {name} has {st.st_nlink} names (a hard link to another file); not read")
            if st.st_size > limit_bytes:
                raise RunFailure(f"{what} {name} is {st.st_size} bytes, more than the {limit_bytes} allowed; not read")
            data = read_at_most(fd, limit_bytes + 1)
            if len(data) > limit_bytes:
                raise RunFailure(f"{what} {name} grew past the {limit_bytes} bytes allowed while it was read")
            return data
        finally:
            os.close(fd)

    def append(self, name: str, data: bytes, what: str) -> None:
        """Append ``data`` to the regular file ``name`` the program made (created if absent), never
        through a link; ``RunFailure`` for a link, a hard link or anything but a regular file."""
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644, dir_fd=self.fd)
        except OSError as err:
            why = "is a symbolic link; never followed" if err.errno == errno.ELOOP else f"cannot be written ({err})"
            raise RunFailure(f"{what} {name} {why}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                raise RunFailure(f"{what} {name} is not a regular file with one name; not written")
            _write_all(fd, data)
        finally:
            os.close(fd)

    def remove(self, name: str) -> None:
        """Remove ``name`` from the folder (never following a link; nothing when absent)."""
        remove_entry(self.fd, name)

    def read_at(self, name: str, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes of ``name`` from ``offset`` (empty when absent or not a plain regular
        file): a live look at a file the program is still writing, never blocking, never through a link."""
        try:
            opened = self._open_regular(name, "file")
        except RunFailure:
            return b""
        if opened is None:
            return b""
        fd, _ = opened
        try:
            return os.pread(fd, size, offset)
        except OSError:
            return b""
        finally:
            os.close(fd)

    def check_intact(self) -> None:
        """``RunFailure`` unless the folder's name is still this folder and every file the toolkit
        created is still at its name (the program replaced neither by a link or another file)."""
        try:
            st = os.stat(self.name, dir_fd=self.parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise RunFailure(f"the run's folder {self.name!r} was removed while the program ran") from None
        if (st.st_dev, st.st_ino) != self.identity:
            raise RunFailure(
                f"the run's folder {self.name!r} was replaced (now {_kind(st.st_mode)}) while the "
                "program ran; nothing was written through it"
            )
        for name, identity in self._created.items():
            try:
                mine = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            except FileNotFoundError:
                raise RunFailure(f"{name} in the run's folder was removed by the program") from None
            if (mine.st_dev, mine.st_ino) != identity:
                now = "another file" if stat.S_ISREG(mine.st_mode) else _kind(mine.st_mode)
                raise RunFailure(
                    f"{name} in the run's folder was replaced by the program (now {now}); "
                    "the toolkit writes it, never through another name"
                )

    def files(self) -> list[str]:
        """Every file in the folder as a path relative to it (sorted), walked through descriptors;
        ``RunFailure`` for a symbolic link, a special file or a file with more than one name."""
        out: list[str] = []
        self._walk(os.dup(self.fd), "", out)
        return sorted(out)

    def _walk(self, fd: int, prefix: str, out: list[str]) -> None:
        try:
            with os.scandir(fd) as entries:
                items = [(e.name, e.stat(follow_symlinks=False)) for e in entries]
            for name, st in items:
                rel = f"{prefix}{name}"
                if stat.S_ISDIR(st.st_mode):
                    try:
                        sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as err:
                        raise RunFailure(
                            f"the run's folder holds {rel!r}, which cannot be opened ({err.strerror or err})"
                        ) from None
                    self._walk(sub, f"{rel}/", out)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise RunFailure(f"the run's folder holds {rel!r}, {_kind(st.st_mode)}: traces are regular files")
                if st.st_nlink != 1:
                    raise RunFailure(
                        f"the run's folder holds {rel!r}, a file with {st.st_nlink} names (a hard "
                        "link): traces are files of their own"
                    )
                out.append(rel)
        finally:
            os.close(fd)


def read_marks_in(folder: RunFolder) -> list[Mark]:
    """The marks of the run's ``marks.txt`` (none when absent), read through the folder's descriptor."""
    data = folder.read(MARKS_FILE, MAX_MARKS_BYTES, "marks file")
    return [] if data is None else parse_marks(data)


__all__ = [
    "MARKS_FILE",
    "METRICS_FILE",
    "RUN_FILE",
    "STDERR_FILE",
    "STDOUT_FILE",
    "RunFolder",
    "read_marks_in",
    "remove_entry",
]
