"""A power log read line by line in bounded memory, and columns of cells kept as codes.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from collect.telemetry.logs.errors import LogError

#: a log larger than this is refused before a byte is read. Converting a log peaks at a multiple of its
#: size (measured above the imports, docs/collectors.md): nvidia-smi with 4 signals 5.1-5.6x (85 MiB
#: for 15 MiB, 403 MiB for 79 MiB), dcgmi dmon 6.9x, Zeus 17x (each window is a phase too); writing
#: the trace (``collect telemetry``) 9.2x for a 98 MiB nvidia-smi log. A 1 GiB log: about 5-17 GiB.
MAX_LOG_BYTES = 1 << 30
#: a log's text: the whole text, or its lines (with their endings) as :func:`log_lines` yields them
LogText = str | Iterable[str]


def text_lines(text: LogText) -> Iterator[str]:
    """The lines of ``text`` with their endings (a string is split as a file is read)."""
    return iter(io.StringIO(text, newline="")) if isinstance(text, str) else iter(text)


def _open(path: Path, limit: int) -> int:
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise LogError(f"{path}: cannot be read (no such file)") from None
    except OSError as err:
        why = "is a folder" if err.errno == errno.EISDIR else (err.strerror or str(err))
        raise LogError(f"{path}: cannot be read ({why})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        os.close(fd)
        why = "not a regular file" if not stat.S_ISREG(st.st_mode) else f"{st.st_size} bytes, over the {limit} allowed"
        raise LogError(f"{path}: cannot be read ({why}); not read")
    return fd


def log_lines(path: str | os.PathLike[str], limit: int = MAX_LOG_BYTES) -> Iterator[str]:
    """The lines of the regular file ``path`` (at most ``limit`` bytes, also while it grows), one at a
    time; ``LogError`` naming the file (and the line that is not UTF-8) otherwise. The file is
    opened when the first line is asked for."""
    fd = _open(Path(path), limit)
    total, number = 0, 0
    with os.fdopen(fd, "rb", buffering=1 << 20) as stream:
        while block := stream.readlines(1 << 20):  # about 1 MiB of whole lines at a time
            total += sum(map(len, block))
            if total > limit:
                raise LogError(f"{path}: grew past the {limit} bytes allowed while it was read; not read")
            try:
                lines = [block[0].decode("utf-8-sig" if number == 0 else "utf-8"), *map(bytes.decode, block[1:])]
            except UnicodeDecodeError:
                bad = next(k for k, raw in enumerate(block) if not _utf8(raw, number + k))
                raise LogError(f"{path} line {number + bad + 1}: not UTF-8 text") from None
            number += len(block)
            yield from lines


def _utf8(raw: bytes, index: int) -> bool:
    try:
        raw.decode("utf-8-sig" if index == 0 else "utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Cells:
    """One column's cells: the distinct cells in order of appearance and one int32 code per row."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.codes = array("i")

    def add(self, cell: str) -> None:
        """Append one row's cell."""
        self.codes.append(self.index.setdefault(cell, len(self.index)))

    def extend(self, cells: list[str]) -> None:
        """Append many rows' cells (a block of a log; new distinct cells coded in order of appearance)."""
        index = self.index
        for cell in dict.fromkeys(cells):
            index.setdefault(cell, len(index))
        self.codes.extend(map(index.__getitem__, cells))

    @property
    def distinct(self) -> list[str]:
        """The distinct cells; code ``k`` is ``distinct[k]``."""
        return list(self.index)

    def code_array(self) -> np.ndarray:
        """The codes as a numpy array (a view of the compact buffer, no copy)."""
        return np.frombuffer(self.codes, dtype=np.int32) if len(self.codes) else np.empty(0, dtype=np.int32)


__all__ = ["MAX_LOG_BYTES", "Cells", "LogText", "log_lines", "text_lines"]
