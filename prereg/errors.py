"""The toolkit's one exception base and its exit codes.

More in ``docs/internals.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any

EXIT_OK = 0
EXIT_NOT_SUPPORTED = 1
EXIT_BAD_INPUT = 2
EXIT_INTEGRITY = 3
EXIT_INTERNAL = 4


class ToolkitError(Exception):
    """Base of every deliberate toolkit error: a message for people, an exit code, optional details."""

    #: exit code of a console script that stops on this error (subclasses override)
    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str, *, exit_code: int | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code
        self.details = details

    def __str__(self) -> str:
        return self.message


class InputError(ToolkitError):
    """Bad input or usage: a malformed plan, junk data, a missing file or sensor (exit 2)."""

    exit_code = EXIT_BAD_INPUT


class RetiredFormat(InputError):
    """A file in a format version this toolkit no longer reads (exit 2): which version wrote it, what to re-run."""

    def __init__(self, path: object, found: str, current: str, rerun: str) -> None:
        super().__init__(
            f"{path}: written in {found} by prereg-toolkit 0.1.x; this toolkit reads {current} only "
            f"(no compatibility reader is kept): {rerun}"
        )


class IntegrityError(ToolkitError):
    """A broken promise: a lock or ledger that does not verify, a changed plan re-frozen (exit 3)."""

    exit_code = EXIT_INTEGRITY
