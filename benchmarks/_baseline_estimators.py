"""The estimators' hot paths in their first, plain-loop form (and the first vectorised bootstrap loop),
kept verbatim as benchmark baselines (and as references the tests compare the new code with, bit
for bit).

* ``bootstrap_means``: the bootstrap draws (bit-field rejection sampling, blocks of 1024) with a
  fresh array per chunk; the new ``estimators.bootstrap`` must return the same bits.
* ``sampler_bootstrap_means``: the first vectorised hot loop (``estimators._draws.Sampler`` replaying
  the indices into preallocated buffers, then gather and row sums), the "before" of the
  ``ChunkSums`` loop; the same bits again.
* ``walsh_order_stats`` / ``walsh_counts``: the materialising Wilcoxon path (all n(n+1)/2 Walsh
  averages and their index arrays; n^2 memory).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

BLOCK = 1024
_CHUNK_ELEMENTS = 65_536


def _indices(bg: np.random.PCG64, n: int, need: int, margin: float = 1.01) -> NDArray[np.int64]:
    bits = max(1, (n - 1).bit_length())
    per_word = 64 // bits
    words = int(np.ceil(need / (per_word * n / (1 << bits)) * margin)) + 1
    raw = bg.random_raw(words)
    fields = np.empty((per_word, words), dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1)
    for k in range(per_word):
        np.right_shift(raw, np.uint64(bits * k), out=fields[k])
        np.bitwise_and(fields[k], mask, out=fields[k])
    v: NDArray[np.int64] = fields.ravel()[fields.ravel() < np.uint64(n)].view(np.int64)
    if v.size < need:
        v = np.concatenate([v, _indices(bg, n, need - v.size, margin)])
    return v[:need]


def _block(d: NDArray[np.float64], seq: np.random.SeedSequence, b: int) -> NDArray[np.float64]:
    bg = np.random.PCG64(seq)
    n = d.size
    out = np.empty(b, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // n)
    for s in range(0, b, step):
        c = min(step, b - s)
        out[s : s + c] = d[_indices(bg, n, c * n).reshape(c, n)].sum(axis=1)
    out /= n
    return out


def bootstrap_means(d: NDArray[np.float64], resamples: int, seed: int | None) -> NDArray[np.float64]:
    """The pre-issue-14 bootstrap means (one thread)."""
    n_blocks = -(-resamples // BLOCK)
    seqs = np.random.SeedSequence(seed).spawn(n_blocks)
    sizes = [min(BLOCK, resamples - i * BLOCK) for i in range(n_blocks)]
    return np.concatenate([_block(d, s, b) for s, b in zip(seqs, sizes, strict=True)])


def _sampler_block(d: NDArray[np.float64], seq: np.random.SeedSequence, b: int) -> NDArray[np.float64]:
    from estimators._draws import Sampler

    bg = np.random.PCG64(seq)
    n = d.size
    out = np.empty(b, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // n)
    sampler = Sampler(n, min(step, b))
    vals = np.empty(min(step, b) * n, dtype=np.float64)
    for s in range(0, b, step):
        c = min(step, b - s)
        idx = sampler.indices(bg, c * n)
        np.take(d, idx, out=vals[: c * n], mode="clip")  # idx < n: no bounds check needed
        np.sum(vals[: c * n].reshape(c, n), axis=1, out=out[s : s + c])
    out /= n
    return out


def sampler_bootstrap_means(d: NDArray[np.float64], resamples: int, seed: int | None) -> NDArray[np.float64]:
    """The Sampler-based bootstrap means (one thread), as estimators.bootstrap had them before
    ``ChunkSums``."""
    n_blocks = -(-resamples // BLOCK)
    seqs = np.random.SeedSequence(seed).spawn(n_blocks)
    sizes = [min(BLOCK, resamples - i * BLOCK) for i in range(n_blocks)]
    return np.concatenate([_sampler_block(d, s, b) for s, b in zip(seqs, sizes, strict=True)])


def walsh(d: NDArray[np.float64]) -> NDArray[np.float64]:
    i, j = np.triu_indices(d.size)
    return (d[i] + d[j]) * 0.5


def walsh_order_stats(d: NDArray[np.float64], k: int) -> tuple[float, float, float]:
    """``(w_(k), w_(M+1-k), median)`` by materialising and partitioning (k = 0: infinite ends)."""
    w = walsh(d)
    m = w.size
    mid = [(m - 1) // 2, m // 2]
    kth = sorted(set(mid + ([k - 1, m - k] if k > 0 else [])))
    part = np.partition(w, kth)
    median = 0.5 * (part[mid[0]] + part[mid[1]])
    if k == 0:
        return -np.inf, np.inf, float(median)
    return float(part[k - 1]), float(part[m - k]), float(median)


def walsh_counts(d: NDArray[np.float64], mu: float) -> tuple[int, int]:
    """``(#{w > mu}, #{w < mu})`` over the materialised Walsh averages."""
    w = walsh(d)
    return int(np.count_nonzero(w > mu)), int(np.count_nonzero(w < mu))
