"""The output rule (``prereg.fileio.check_output``) applied to the outputs for runs made elsewhere.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

from prereg.fileio import check_output, file_head, write_text_atomically

TRACE_FILE_SUFFIXES = (".meta.json", ".polls.parquet", ".polls.csv.gz")


def is_plan_listing(path: Path) -> bool:
    """Whether ``path`` holds a listing ``collect plan`` wrote (CSV or JSON; safe to replace with a new one)."""
    head = file_head(path)
    first = head.split(b"\n", 1)[0]
    return (first.startswith(b"run_id,") and first.endswith(b",params")) or (
        head.startswith(b'{\n  "prereg_sha256": "') and b'"seed_column": ' in head
    )


def write_plan_listing(
    lock: str | os.PathLike[str], path: str | os.PathLike[str], fmt: str = "csv", force: bool = False
) -> None:
    """Write ``collect plan``'s listing of ``lock`` (``csv`` or ``json``) to ``path`` under the output rule."""
    from collect.importing.planned import plan_listing  # lazy: pydantic

    check_output(path, force, is_plan_listing)  # before the lock is read
    write_text_atomically(path, plan_listing(lock, fmt), force, is_plan_listing)


def trace_files(base: str | os.PathLike[str]) -> list[Path]:
    """The files a trace with base name ``base`` consists of (a file suffix on ``base`` is dropped)."""
    stem = Path(base)
    for suffix in TRACE_FILE_SUFFIXES:
        if stem.name.endswith(suffix):
            stem = stem.with_name(stem.name[: -len(suffix)])
    return [stem.with_name(stem.name + suffix) for suffix in TRACE_FILE_SUFFIXES]


def check_trace_outputs(base: str | os.PathLike[str]) -> None:
    """Refuse (``OutputRefused``, exit 2) a trace base any of whose files exists: a trace is never written
    over. ``collect.telemetry.logs.formats.convert_to_trace`` callers check before converting."""
    for path in trace_files(base):
        check_output(path)
