"""One resampling per gate: a small cache of reference distributions keyed on their inputs.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

T = TypeVar("T")

MAX_ENTRIES = 16
#: the exact sign-flip reference at n = 20 is 8 MB; this keeps a few of them
MAX_BYTES = 64 * 1024 * 1024

_lock = threading.Lock()
_entries: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
_state = {"enabled": True, "bytes": 0, "hits": 0, "misses": 0}


def key(kind: str, d: NDArray[np.float64], resamples: int | None, seed: int | None) -> tuple[Any, ...]:
    """The cache key of a reference distribution (see the module doc)."""
    arr = np.ascontiguousarray(d)
    return (
        kind,
        arr.dtype.str,
        arr.shape,
        arr.tobytes(),
        None if resamples is None else int(resamples),
        None if seed is None else int(seed),
    )


def cached(k: tuple[Any, ...], build: Callable[[], T], nbytes: Callable[[T], int]) -> T:
    """The value stored under ``k``, or ``build()`` stored there (not when the seed is None or
    the cache is disabled). ``nbytes`` sizes a value for the byte bound."""
    seeded = k[0] == "signflip-exact" or k[0] == "walsh" or k[-1] is not None
    if not (_state["enabled"] and seeded):
        return build()
    with _lock:
        hit = _entries.get(k)
        if hit is not None:
            _entries.move_to_end(k)
            _state["hits"] += 1
            return hit[0]
        _state["misses"] += 1
    value = build()  # outside the lock: a concurrent duplicate build is harmless
    size = int(nbytes(value))
    if size > MAX_BYTES:
        return value
    with _lock:
        if k not in _entries:
            _entries[k] = (value, size)
            _state["bytes"] += size
        while len(_entries) > MAX_ENTRIES or _state["bytes"] > MAX_BYTES:
            _, (_, old) = _entries.popitem(last=False)
            _state["bytes"] -= old
    return value


def frozen(a: NDArray[Any]) -> NDArray[Any]:
    """``a`` made read-only (cached arrays are shared)."""
    a.flags.writeable = False
    return a


def clear() -> None:
    """Forget every cached distribution."""
    with _lock:
        _entries.clear()
        _state["bytes"] = 0


def stats() -> dict[str, int]:
    """Entries, bytes, hits and misses so far (for tests and benchmarks)."""
    with _lock:
        return {
            "entries": len(_entries),
            "bytes": int(_state["bytes"]),
            "hits": int(_state["hits"]),
            "misses": int(_state["misses"]),
        }


@contextmanager
def disabled() -> Iterator[None]:
    """Compute every reference distribution afresh inside the block (the pre-cache behaviour)."""
    with _lock:
        before = _state["enabled"]
        _state["enabled"] = False
    try:
        yield
    finally:
        with _lock:
            _state["enabled"] = before
