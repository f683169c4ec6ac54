"""A child process that dies with its parent: ``prctl(PR_SET_PDEATHSIG)`` on Linux, through ctypes.

Used by the sampler's polling child and the engine's pool workers; elsewhere it returns False and the
caller falls back on watching its parent's pid.
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies; whether it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
