"""The engine's error: a plan it cannot run (exit 2), shared by the runner and its executors."""

from __future__ import annotations

from prereg.errors import InputError


class EngineError(InputError, ValueError):
    """A plan the engine cannot run (unknown collector, bad parameters, metrics it cannot produce)."""


__all__ = ["EngineError"]
