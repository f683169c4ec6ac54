"""Random sign patterns as packed bits: the sign-flip Monte Carlo's draws (part of :mod:`estimators.signflip`).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: bytes (one per eight blocks) per chunk of patterns: bounds each worker's memory (about 16 bytes each)
CHUNK_BYTES = 2_000_000
_POPCOUNT = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)


class SignSums:
    """Subset sums and sizes of the seeded sign patterns of one contrast vector ``d`` (module doc)."""

    def __init__(self, d: NDArray[np.float64], seed: int | None) -> None:
        n = int(d.size)
        self.n = n
        self.words = (n + 63) // 64  # raw words per pattern
        self.groups = (n + 7) // 8  # bytes (lookups) per pattern
        padded = np.zeros(self.groups * 8, dtype=np.float64)
        padded[:n] = d
        eights = padded.reshape(self.groups, 8)
        table = np.zeros((self.groups, 256), dtype=np.float64)
        for bit in range(8):  # doubling: the values with this bit set are those without it plus d
            h = 1 << bit
            np.add(table[:, :h], eights[:, bit : bit + 1], out=table[:, h : 2 * h])
        self.table = table.ravel()
        self.offsets = np.arange(self.groups, dtype=np.intp) * 256
        self.tail_mask = np.uint8((1 << (n % 8)) - 1) if n % 8 else None
        self.state: Mapping[str, Any] = np.random.default_rng(seed).bit_generator.state
        self.rows = max(1, CHUNK_BYTES // self.groups)  # patterns per chunk

    def _chunk(self, first: int, sums: NDArray[np.float64], sizes: NDArray[np.float64]) -> None:
        """Patterns ``first .. first + len(sums) - 1`` into ``sums`` and ``sizes``."""
        rows = sums.size
        bg = np.random.PCG64()
        bg.state = self.state  # type: ignore[assignment]  # numpy's stub wants its TypedDict
        bg.advance(first * self.words)
        raw = bg.random_raw((rows, self.words))
        if sys.byteorder != "little":  # the bytes of a word, least significant first
            raw = raw.byteswap()
        octets = raw.view(np.uint8)  # (rows, 8 W): byte g holds blocks 8g .. 8g + 7, bit k block 8g + k
        used = octets[:, : self.groups]
        if self.tail_mask is not None:
            np.bitwise_and(used[:, -1], self.tail_mask, out=used[:, -1])
        index = np.add(used, self.offsets, dtype=np.intp)
        values = self.table.take(index, mode="clip")  # index < 256 groups: never clipped
        np.add.reduce(values, axis=1, out=sums)
        counts = _POPCOUNT.take(used)  # uint8 counts of the used bits, summed exactly as integers
        np.add.reduce(counts, axis=1, dtype=np.int64, out=index[:, 0])
        sizes[:] = index[:, 0]

    def draw(
        self, first: int, last: int, workers: int | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Sums and sizes of patterns ``first .. last - 1``, in chunks of fixed size drawn by up to
        ``workers`` threads (numpy releases the GIL in the lookups and sums)."""
        count = last - first
        sums = np.empty(count, dtype=np.float64)
        sizes = np.empty(count, dtype=np.float64)
        starts = range(first, last, self.rows)
        if workers is None:
            workers = min(4, len(os.sched_getaffinity(0))) if len(starts) > 1 else 1

        def chunk(start: int) -> None:
            stop = min(start + self.rows, last)
            self._chunk(start, sums[start - first : stop - first], sizes[start - first : stop - first])

        if workers <= 1:
            for start in starts:
                chunk(start)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(chunk, starts))
        return sums, sizes


def sampled_means(
    d: NDArray[np.float64], resamples: int, seed: int | None, workers: int | None = None
) -> tuple[NDArray[np.float64], int]:
    """Means of the first ``resamples`` seeded subsets (each block flipped w.p. 1/2) and the count of
    empty subsets among them (those equal the observed pattern and count in both tails)."""
    sums, sizes = SignSums(d, seed).draw(0, resamples, workers)
    empty = sizes == 0
    return sums[~empty] / sizes[~empty], int(np.count_nonzero(empty))
