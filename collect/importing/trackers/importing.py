"""``collect import SOURCE`` for a tracker source: read its runs, match them to the plan, append their records;
and reading them again for ``gates verify --source``.

The rows go through the table import's row path (``collect.importing.importer``): the same cell rules,
duplicate rule, writer lock and atomic batch; each record also carries its ``source`` and ``provenance``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collect.importing.importer import ImportProblem, import_rows
from collect.importing.trackers.base import ReadOptions, Source, TrackerProblem, TrackerRun, wanted_of
from collect.importing.trackers.matching import match_runs, parse_match
from collect.importing.trackers.sources import read_source
from collect.ledger.store import RunRecord
from prereg.schema import Plan

_ROW = re.compile(r"\brow (\d+)\b")


@dataclass
class TrackerImport:
    """What one import did: the records appended, the runs read, those without a match (left out)."""

    records: list[RunRecord]
    read: int
    unmatched: list[TrackerRun] = field(default_factory=list)


def import_tracker(
    source: Source,
    plan: Plan,
    plan_sha256: str,
    runs_dir: Path,
    skipped: list[str] | None = None,
    chain: Collection[str] | None = None,
    *,
    options: ReadOptions | None = None,
    match: Sequence[str] = (),
    lock_seal: str | None = None,
    seals: Mapping[str, Collection[str]] | None = None,
) -> TrackerImport:
    """Read ``source``, match its runs to the plan and append them (nothing when anything does not fit)."""
    mapping = parse_match(match, plan)  # refused before the store is opened
    runs = read_source(source, wanted_of(plan), options or ReadOptions())
    matched = match_runs(runs, plan, plan_sha256, source.text(), mapping or None)
    try:
        records = import_rows(
            matched.rows,
            source.text(),
            plan,
            plan_sha256,
            runs_dir,
            skipped,
            chain,
            lock_seal=lock_seal,
            seals=seals,
            updates=matched.updates,
        )
    except ImportProblem as err:  # the row path's "row N" named as the tracker run it is
        labels = dict(enumerate(matched.labels, start=1))
        named = [_ROW.sub(lambda m: labels.get(int(m.group(1)), m.group(0)), line) for line in err.errors]
        raise TrackerProblem(
            f"{source.text()}: nothing imported; its runs do not fit the plan:\n" + "\n".join(named)
        ) from None
    return TrackerImport(records, len(runs), matched.unmatched)


def changed_runs(records: Sequence[RunRecord], source: Source, plan: Plan, options: ReadOptions) -> list[str]:
    """What differs between the records imported from ``source`` and the source read again now: one line
    per run whose data or files changed or that is gone (``gates verify --source``)."""
    mine = [r for r in records if r.provenance is not None and r.provenance.uri == source.text()]
    if not mine:
        raise TrackerProblem(f"{source.text()}: no record of this runs folder was imported from it")
    now = {run.run_id: run for run in read_source(source, wanted_of(plan), options)}
    found = []
    for record in mine:
        assert record.provenance is not None
        was = record.provenance
        run = now.get(was.run_id)
        if run is None:
            found.append(f"{record.run_id}: {was.tracker} run {was.run_id} is no longer in {source.text()}")
            continue
        edited = sorted(k for k in set(was.files) | set(run.files) if was.files.get(k) != run.files.get(k))
        if edited:
            found.append(
                f"{record.run_id}: {run.label()}: {', '.join(edited)} changed after the import "
                "(SHA-256 differs from the one recorded)"
            )
        elif run.content_sha256() != was.content_sha256:
            found.append(
                f"{record.run_id}: {run.label()}: its data changed after the import (tags, params, values, times "
                "or status: SHA-256 differs from the one recorded)"
            )
    return found


__all__ = ["TrackerImport", "changed_runs", "import_tracker"]
