"""TensorBoard runs through TensorBoard's own reader (``plugin_event_accumulator.EventAccumulator``, which
reads the scalars of ``torch.utils.tensorboard.SummaryWriter``, ``tf.summary`` and TensorBoard's own writer
alike): a folder of run folders, each holding ``events.out.tfevents.*`` files.

The run's id is its folder's path under DIR; a folder named as a planned run id (``run-`` and 20 hex
digits: ``collect plan --tracker tensorboard``) carries it as its ``prereg.run_id`` tag. Scalars by tag;
a value's step is the step logged with it. Times: the first event's wall time and the last wanted
scalar's (UTC). Event files carry no tags, parameters or status.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collect.importing.trackers.base import (
    Point,
    ReadOptions,
    TrackerProblem,
    TrackerRun,
    Wanted,
    folder,
    from_epoch,
    hash_files,
    needs_extra,
    take_value,
)

EVENTS_GLOB = "events.out.tfevents.*"
RUN_FOLDER = re.compile(r"run-[0-9a-f]{20}")  # a planned run id (collect.ledger.records.run_id)


def run_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` (itself included) that holds event files, in path order."""
    found = {p.parent for p in root.rglob(EVENTS_GLOB) if p.is_file()}
    return sorted(found)


def read_runs(location: str, wanted: Sequence[Wanted], options: ReadOptions) -> list[TrackerRun]:
    """One ``TrackerRun`` per run folder under ``location``."""
    root = folder(location, "tensorboard")
    try:
        from tensorboard.backend.event_processing import plugin_event_accumulator  # lazy: tensorboard
        from tensorboard.util import tensor_util  # lazy: tensorboard
    except ImportError as err:
        raise needs_extra("tensorboard", "tensorboard", err) from None
    folders = run_folders(root)
    if not folders:
        raise TrackerProblem(f"tensorboard:{location}: no event files ({EVENTS_GLOB}) under this folder")
    return [_run(plugin_event_accumulator, tensor_util, root, path, location, wanted) for path in folders]


def _run(module: Any, tensor_util: Any, root: Path, path: Path, location: str, wanted: Sequence[Wanted]) -> TrackerRun:
    relative = path.relative_to(root).as_posix()
    name = path.name if relative == "." else relative
    files = [p for p in path.glob(EVENTS_GLOB) if p.is_file()]
    hashes = hash_files(root, files)  # before reading: a file changed while read shows as changed later
    accumulator = module.EventAccumulator(str(path), size_guidance={module.TENSORS: 0})
    try:
        accumulator.Reload()
        scalar_tags = {
            tag
            for tag in accumulator.Tags().get("tensors", [])
            if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"
        }
        first = accumulator.FirstEventTimestamp()
    except Exception as err:  # noqa: BLE001 - a truncated or foreign file raises the reader's own errors
        raise TrackerProblem(f"tensorboard:{location}: {name}: the event files cannot be read ({err})") from None
    run = TrackerRun(
        tracker="tensorboard",
        uri=f"tensorboard:{location}",
        run_id=name,
        name=name,
        tags={"prereg.run_id": path.name} if RUN_FOLDER.fullmatch(path.name) else {},
        started_at=from_epoch(first),
        files=hashes,
    )
    last_time = None
    for want in wanted:
        if want.key not in scalar_tags:
            run.missing[want.metric] = f"no scalar tag {want.key!r} (tags: {', '.join(sorted(scalar_tags)) or 'none'})"
            continue
        events = accumulator.Tensors(want.key)
        points = [
            Point(int(e.step), float(tensor_util.make_ndarray(e.tensor_proto).item()), float(e.wall_time))
            for e in events
        ]
        last_time = max([last_time or 0.0, *(p.order for p in points)])
        value, why = take_value(points, want)
        if value is None:
            run.missing[want.metric] = str(why)
        else:
            run.values[want.metric] = value
    run.finished_at = from_epoch(last_time) if last_time else None
    return run


__all__ = ["EVENTS_GLOB", "read_runs", "run_folders"]
