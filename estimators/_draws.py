"""Bootstrap resample indices: exact-uniform integers in ``[0, n)`` from a PCG64 stream.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray


def uniform_indices(bg: np.random.PCG64, n: int, need: int, margin: float = 1.01) -> NDArray[np.int64]:
    """``need`` iid uniform indices in ``[0, n)``, exactly uniform by rejection sampling.

    Each 64-bit output of the bit generator is cut into ``64 // L`` fields of ``L = bit_length(n
    - 1)`` bits; fields ``>= n`` are rejected (acceptance >= 1/2). This needs about 5x fewer raw
    words than one 32-bit draw per index, which is what makes the bootstrap fast.
    """
    bits = max(1, (n - 1).bit_length())
    per_word = 64 // bits
    words = int(np.ceil(need / (per_word * n / (1 << bits)) * margin)) + 1
    raw = bg.random_raw(words)
    fields = np.empty((per_word, words), dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1)
    for k in range(per_word):
        np.right_shift(raw, np.uint64(bits * k), out=fields[k])
        np.bitwise_and(fields[k], mask, out=fields[k])
    v: NDArray[np.int64] = fields.ravel()[fields.ravel() < np.uint64(n)].view(np.int64)  # values < n: the same bits
    if v.size < need:  # rare: top up with a second draw
        v = np.concatenate([v, uniform_indices(bg, n, need - v.size, margin)])
    return v[:need]


def _words(n: int, need: int, margin: float = 1.01) -> int:
    """Raw 64-bit words one :func:`uniform_indices` call draws for ``need`` indices below ``n`` (its
    formula; ``math.ceil`` of the same float is ``np.ceil``'s value, without numpy's scalar cost)."""
    bits = max(1, (n - 1).bit_length())
    per_word = 64 // bits
    return math.ceil(need / (per_word * n / (1 << bits)) * margin) + 1


class Sampler:
    """The stream of :func:`uniform_indices` calls, with preallocated buffers (same indices, fewer
    allocations and passes). Each call draws the same raw words; field ``k`` of every word is
    extracted, filtered (``< n``) and appended in the same order, stopping once ``need`` are in.
    """

    def __init__(self, n: int, rows: int) -> None:
        self.n = n
        self.bits = max(1, (n - 1).bit_length())
        self.per_word = 64 // self.bits
        self.mask = np.uint64((1 << self.bits) - 1)
        self.shifts = [np.uint64(self.bits * k) for k in range(self.per_word)]
        words = _words(n, rows * n)
        self.field = np.empty(words, dtype=np.uint64)
        self.keep = np.empty(words, dtype=np.bool_)
        self.out = np.empty(rows * n + words, dtype=np.uint64)  # room for one field's overshoot
        # boolean indexing is faster when few fields are rejected (predictable branches), the
        # branch-free np.compress when many are (acceptance n / 2^bits is in (1/2, 1])
        self.mostly_kept = n / (1 << self.bits) >= 0.8
        self.fields = np.empty((self.per_word, words if self.mostly_kept else 0), dtype=np.uint64)
        self.keep2 = np.empty(self.fields.shape, dtype=np.bool_)

    def indices(self, bg: np.random.PCG64, need: int) -> NDArray[np.int64]:
        """Exactly ``uniform_indices(bg, n, need)``: a view valid until the next call."""
        got = 0
        if self.mostly_kept:  # every field at once, one boolean index (as uniform_indices does)
            words = _words(self.n, need)
            raw = bg.random_raw(words)
            fields = (
                self.fields[:, :words] if words <= self.fields.shape[1] else np.empty((self.per_word, words), np.uint64)
            )
            keep = (
                self.keep2[:, :words] if words <= self.fields.shape[1] else np.empty((self.per_word, words), np.bool_)
            )
            np.bitwise_and(raw, self.mask, out=fields[0])
            for k in range(1, self.per_word):
                np.right_shift(raw, self.shifts[k], out=fields[k])
                np.bitwise_and(fields[k], self.mask, out=fields[k])
            np.less(fields, np.uint64(self.n), out=keep)
            v = fields[keep]  # row-major: field 0 of every word, then field 1, ...
            if v.size >= need:
                return v[:need].view(np.int64)
            got = v.size  # rare: top up below, exactly as uniform_indices recurses
            if got + need > self.out.size:
                self.out = np.empty(got + need + words, dtype=np.uint64)
            self.out[:got] = v
        while got < need:  # the general path (low acceptance), and top-ups
            words = _words(self.n, need - got)
            raw = bg.random_raw(words)
            if words > self.field.size:
                self.field = np.empty(words, dtype=np.uint64)
                self.keep = np.empty(words, dtype=np.bool_)
            if got + words * self.per_word > self.out.size:
                self.out = np.resize(self.out, got + words * self.per_word)
            field, keep = self.field[:words], self.keep[:words]
            for k in range(self.per_word):
                if got >= need:
                    break
                if k:
                    np.right_shift(raw, self.shifts[k], out=field)
                    np.bitwise_and(field, self.mask, out=field)
                else:
                    np.bitwise_and(raw, self.mask, out=field)
                np.less(field, np.uint64(self.n), out=keep)
                if self.mostly_kept:
                    kept = field[keep]
                    self.out[got : got + kept.size] = kept
                    got += kept.size
                else:
                    c = int(np.count_nonzero(keep))
                    np.compress(keep, field, out=self.out[got : got + c])
                    got += c
        return self.out[:need].view(np.int64)


#: fraction of kept bit fields (``n / 2^L``) from which :class:`ChunkSums` looks fields up before
#: compacting (below it, compacting a mask with many rejects mispredicts branches; measured)
DENSE_ACCEPTANCE = 0.9

#: one chunk size's buffers: (words drawn, fields, the fields as int64, keep mask, looked-up values)
_Views = tuple[int, NDArray[np.uint64], NDArray[np.int64], NDArray[np.bool_], NDArray[np.float64]]


class ChunkSums:
    """Row sums of one chunk of bootstrap resamples of ``d``: bit for bit
    ``d[uniform_indices(bg, n, rows * n)].reshape(rows, n).sum(axis=1)``, with buffers reused from chunk
    to chunk (one instance per thread).

    Where at least :data:`DENSE_ACCEPTANCE` of the bit fields are kept (n = 1000: 0.977) the
    fields of all words are cut in one broadcast shift, every field (kept or not, all ``< 2^L``)
    is looked up in ``d`` padded with zeros to ``2^L`` entries, and the looked-up *values* are
    compacted by the ``< n`` mask: the values of the compacted indices, in their order, without
    materialising the index array. numpy's pairwise row sums then see the same operands in the
    same order, so the sums are the same bits. Elsewhere the indices come from :class:`Sampler`
    and are gathered.
    """

    def __init__(self, d: NDArray[np.float64], rows: int) -> None:
        n = int(d.size)
        self.d, self.n = d, n
        self.sampler = Sampler(n, rows)
        s = self.sampler
        self.dense = n / (1 << s.bits) >= DENSE_ACCEPTANCE
        self.below = np.uint64(n)
        self.capacity = 0
        self.views: dict[int, _Views] = {}  # by rows per chunk
        if self.dense:
            self.table = np.zeros(1 << s.bits, dtype=np.float64)
            self.table[:n] = d
            self.shifts = (np.arange(s.per_word, dtype=np.uint64) * np.uint64(s.bits))[:, None]
            self._alloc(_words(n, rows * n))
        else:
            self.vals = np.empty(rows * n, dtype=np.float64)

    def _alloc(self, words: int) -> None:
        size = self.sampler.per_word * words
        self.capacity = words
        self.field_buf = np.empty(size, dtype=np.uint64)
        self.keep_buf = np.empty(size, dtype=np.bool_)
        self.value_buf = np.empty(size, dtype=np.float64)
        self.views.clear()

    def _views(self, rows: int) -> _Views:
        """The buffers shaped for a chunk of ``rows`` resamples (a block has at most two sizes)."""
        views = self.views.get(rows)
        if views is None:
            words = _words(self.n, rows * self.n)
            if words > self.capacity:
                self._alloc(words)
            shape = (self.sampler.per_word, words)
            size = shape[0] * words
            fields = self.field_buf[:size].reshape(shape)
            views = (
                words,
                fields,
                fields.view(np.int64),
                self.keep_buf[:size].reshape(shape),
                self.value_buf[:size].reshape(shape),
            )
            self.views[rows] = views
        return views

    def __call__(self, bg: np.random.PCG64, rows: int, out: NDArray[np.float64]) -> None:
        """Write the sums of the next ``rows`` resamples of ``bg``'s stream (one
        :func:`uniform_indices` call for ``rows * n`` indices) into ``out``."""
        n, need = self.n, rows * self.n
        if not self.dense:
            if need > self.vals.size:
                self.vals = np.empty(need, dtype=np.float64)
            vals = self.vals[:need]
            self.d.take(self.sampler.indices(bg, need), out=vals, mode="clip")  # indices < n
            np.add.reduce(vals.reshape(rows, n), axis=1, out=out)  # = np.sum: pairwise per row
            return
        words, fields, index, keep, values = self._views(rows)
        raw = bg.random_raw(words)
        np.right_shift(raw, self.shifts, out=fields)  # row k: field k of every word
        np.bitwise_and(fields, self.sampler.mask, out=fields)
        np.less(fields, self.below, out=keep)
        self.table.take(index, out=values, mode="clip")  # fields < 2^L: never clipped
        kept = values[keep]  # row-major: field 0 of every word, then field 1, ... (as uniform_indices)
        if kept.size < need:  # rare: uniform_indices tops up with a further call for the remainder
            kept = np.concatenate([kept, self.d[uniform_indices(bg, n, need - kept.size)]])
        np.add.reduce(kept[:need].reshape(rows, n), axis=1, out=out)  # = np.sum: pairwise per row
