"""The mark of a ``collect try`` scratch folder, and the refusal of one where a study's runs folder is expected.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

from prereg.errors import IntegrityError

TRY_MARKER = "TRY"  # the file that marks a try folder


class TryFolder(IntegrityError):
    """A ``collect try`` scratch folder given where a study's runs folder is expected (exit 3)."""


def is_try_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds the try marker (:data:`TRY_MARKER`, a link counts too)."""
    return os.path.lexists(Path(folder) / TRY_MARKER)


def refuse_try_folder(folder: str | os.PathLike[str], doing: str = "this command") -> None:
    """Raise ``TryFolder`` (exit 3) when ``folder`` is a try folder; ``doing`` names the refusing command
    (``"collect run"``, ``"gates"``)."""
    if is_try_folder(folder):
        raise TryFolder(
            f"{folder}: refused by {doing}: it is a 'collect try' scratch folder (it holds {TRY_MARKER}), a smoke "
            "run of one cell, never a study's runs folder. Collect the study into a runs folder of its own: "
            "collect run LOCK --out NEW_RUNS"
        )


__all__ = ["TRY_MARKER", "TryFolder", "is_try_folder", "refuse_try_folder"]
