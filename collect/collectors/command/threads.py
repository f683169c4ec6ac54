"""Thread counts of a ``command`` run's numeric libraries, from the CPUs the run holds.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

#: the variables set, in the order they are listed in a record
THREAD_VARIABLES: Final = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def run_threads(num_cpus: float) -> int:
    """Threads for a run holding ``num_cpus`` CPUs: rounded down, at least 1 (``ValueError`` for a
    negative or non-finite amount, which the plan's schema already refuses)."""
    if not math.isfinite(num_cpus) or num_cpus < 0:
        raise ValueError(f"num_cpus must be a finite amount >= 0, not {num_cpus!r}")
    return max(1, math.floor(num_cpus))


def thread_env(num_cpus: float, env: Mapping[str, str]) -> dict[str, str]:
    """The thread variables to add to a run's environment (``env``: the environment it inherits):
    each of :data:`THREAD_VARIABLES` not already set (non-empty) in ``env`` set to :func:`run_threads` ``(num_cpus)``.
    Returns only what it sets (the record says so); ``env`` is not changed."""
    threads = str(run_threads(num_cpus))
    return {name: threads for name in THREAD_VARIABLES if not env.get(name)}


def inherited_threads(env: Mapping[str, str]) -> dict[str, str]:
    """The thread variables the user set in ``env`` (kept as they are: the record names them too)."""
    return {name: env[name] for name in THREAD_VARIABLES if env.get(name)}


__all__ = ["THREAD_VARIABLES", "inherited_threads", "run_threads", "thread_env"]
