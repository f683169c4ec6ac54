"""The one error of the power-log converters (its own module so every converter module can raise it)."""

from __future__ import annotations

from prereg.errors import InputError


class LogError(InputError, ValueError):
    """A log that cannot be converted: the message names the file and, where it lies, the line (exit 2)."""


__all__ = ["LogError"]
