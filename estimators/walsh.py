"""Order statistics and counts of the Walsh averages in O(n) memory, O(n log n) time.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

#: up to this n the M averages are materialised (M <= 125 250: about 3 MB with its index arrays)
DIRECT_MAX_N = 500
_SAMPLE = 8192
_MATERIALISE_MIN = 1 << 16
_SAMPLER_SEED = 0x5A1C


def _ok(
    s: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64], t: float, strict: bool
) -> NDArray[np.bool_]:
    w = (s[i] + s[j]) * 0.5
    return w < t if strict else w <= t


def row_counts(s: NDArray[np.float64], t: float, strict: bool) -> NDArray[np.int64]:
    """For every row ``i`` of sorted ``s``: ``#{j in [0, n) : w_ij < t}`` (``strict``) or ``<= t``."""
    n = s.size
    with np.errstate(over="ignore", invalid="ignore"):
        guess = np.searchsorted(s, 2.0 * t - s, side="left" if strict else "right").astype(np.int64)
    rows = np.arange(n, dtype=np.int64)
    prev = np.maximum(guess - 1, 0)
    nxt = np.minimum(guess, n - 1)
    bad = ((guess > 0) & ~_ok(s, rows, prev, t, strict)) | ((guess < n) & _ok(s, rows, nxt, t, strict))
    if np.any(bad):
        r = rows[bad]
        lo = np.zeros(r.size, dtype=np.int64)
        hi = np.full(r.size, n, dtype=np.int64)
        while True:
            live = lo < hi
            if not np.any(live):
                break
            mid = (lo + hi) // 2
            ok = _ok(s, r, np.minimum(mid, n - 1), t, strict)
            lo = np.where(live & ok, mid + 1, lo)
            hi = np.where(live & ~ok, mid, hi)
        guess[bad] = lo
    return guess


def count(s: NDArray[np.float64], t: float, strict: bool) -> int:
    """``#{i <= j : w_ij < t}`` (``strict``) or ``<= t`` over the Walsh averages of sorted ``s``."""
    c = row_counts(s, t, strict)
    return int(np.sum(np.maximum(c - np.arange(s.size, dtype=np.int64), 0)))


def _gather(s: NDArray[np.float64], lo: NDArray[np.int64], sizes: NDArray[np.int64]) -> NDArray[np.float64]:
    """The candidate averages: row ``i``, columns ``lo_i .. lo_i + sizes_i - 1``."""
    total = int(sizes.sum())
    rows = np.repeat(np.arange(s.size, dtype=np.int64), sizes)
    starts = np.cumsum(sizes) - sizes
    cols = np.arange(total, dtype=np.int64) - np.repeat(starts - lo, sizes)
    return (s[rows] + s[cols]) * 0.5


def select(s: NDArray[np.float64], k: int) -> float:
    """The ``k``-th smallest (1-based) Walsh average of sorted ``s`` (module doc)."""
    n = s.size
    m_total = n * (n + 1) // 2
    if not 1 <= k <= m_total:
        raise ValueError(f"rank {k} outside 1..{m_total}")
    rows = np.arange(n, dtype=np.int64)
    lo = rows.copy()  # candidate columns [lo_i, hi_i): strictly between the two pivots
    hi = np.full(n, n, dtype=np.int64)
    below = 0  # averages left of the windows (all smaller than the answer)
    cap = max(_MATERIALISE_MIN, 8 * n)
    rng = np.random.default_rng(_SAMPLER_SEED)
    while True:
        sizes = hi - lo
        total = int(sizes.sum())
        r = k - below  # rank of the answer among the candidates
        if total <= cap:
            vals = _gather(s, lo, sizes)
            return float(np.partition(vals, r - 1)[r - 1])
        m = min(_SAMPLE, total)
        flat = np.sort(rng.integers(0, total, m))
        ends = np.cumsum(sizes)
        row = np.searchsorted(ends, flat, side="right")
        col = lo[row] + flat - (ends[row] - sizes[row])
        sample = np.sort((s[row] + s[col]) * 0.5)
        q = r / total
        spread = 4.0 * math.sqrt(m * q * (1.0 - q)) + 4.0
        picks = sorted(
            {min(max(int(math.floor(m * q - spread)), 0), m - 1), min(max(int(math.ceil(m * q + spread)), 0), m - 1)}
        )
        for p in (float(sample[i]) for i in picks):
            c_lt = row_counts(s, p, True)
            c_le = row_counts(s, p, False)
            n_lt = int(np.sum(np.maximum(c_lt - rows, 0)))
            n_le = int(np.sum(np.maximum(c_le - rows, 0)))
            if n_lt < k <= n_le:
                return p
            if k > n_le:  # the answer lies above p
                lo = np.maximum(np.maximum(c_le, rows), lo)
                below = n_le
            else:  # below p: the upper pivot (if any) is irrelevant
                hi = np.minimum(np.maximum(c_lt, rows), hi)
                break


def materialise(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """All ``n(n+1)/2`` Walsh averages ``(d_i + d_j) / 2, i <= j`` (unordered; O(n^2) memory)."""
    i, j = np.triu_indices(d.size)
    return (d[i] + d[j]) * 0.5


class WalshAverages:
    """The Walsh averages of ``d``: counts on each side of a value and order statistics.

    Materialised for ``n <= DIRECT_MAX_N``, implicit (sorted contrasts only) beyond.
    """

    def __init__(self, d: NDArray[np.float64], direct: bool | None = None) -> None:
        self.n = int(d.size)
        self.m = self.n * (self.n + 1) // 2
        self.direct = self.n <= DIRECT_MAX_N if direct is None else direct
        self.values = materialise(d) if self.direct else None
        self.sorted = None if self.direct else np.sort(d)
        for a in (self.values, self.sorted):
            if a is not None:
                a.flags.writeable = False  # shared through the reference cache

    def counts(self, mu: float) -> tuple[int, int]:
        """``(#{w > mu}, #{w < mu})``."""
        if self.values is not None:
            return int(np.count_nonzero(self.values > mu)), int(np.count_nonzero(self.values < mu))
        assert self.sorted is not None
        return self.m - count(self.sorted, mu, False), count(self.sorted, mu, True)

    def order_stats(self, k: int) -> tuple[float, float, float]:
        """``(w_(k), w_(M+1-k), median)``; ``k = 0`` gives infinite ends."""
        m = self.m
        mid = [(m - 1) // 2, m // 2]  # 0-based
        if self.values is not None:
            kth = sorted(set(mid + ([k - 1, m - k] if k > 0 else [])))
            part = np.partition(self.values, kth)
            lo_v, hi_v, a, b = (
                (part[k - 1] if k > 0 else 0.0),
                (part[m - k] if k > 0 else 0.0),
                part[mid[0]],
                part[mid[1]],
            )
        else:
            assert self.sorted is not None
            cache: dict[int, float] = {}
            for r in mid + ([k - 1, m - k] if k > 0 else []):
                if r not in cache:
                    cache[r] = select(self.sorted, r + 1)
            a, b = cache[mid[0]], cache[mid[1]]
            lo_v, hi_v = (cache[k - 1], cache[m - k]) if k > 0 else (0.0, 0.0)
        median = 0.5 * (a + b)
        if k == 0:
            return -np.inf, np.inf, float(median)
        return float(lo_v), float(hi_v), float(median)
