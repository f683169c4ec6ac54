"""What every tracker reader hands back: one :class:`TrackerRun` per run, its wanted values taken as the plan says.

A reader module (``mlflow_store``, ``tensorboard_dir``, ``wandb_offline``, ``raytune_dir``; chosen in
``sources``) has one function ``read_runs(location, wanted, options) -> list[TrackerRun]``; it imports its
tracker lazily and raises
:class:`TrackerProblem` (exit 2) for a store it cannot open. Times are UTC; values are floats in the
metric's unit as logged.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from collect.collectors.command.identity import file_sha256
from prereg.errors import InputError
from prereg.jsoncodec import canonical_bytes
from prereg.schema import Plan

TRACKERS = ("mlflow", "tensorboard", "wandb", "raytune")
Take = Literal["last", "min", "max", "step"]


class TrackerProblem(InputError, ValueError):
    """A tracker source that cannot be read, or runs in it that do not fit the plan (exit 2; nothing imported)."""


@dataclass(frozen=True)
class Wanted:
    """One plan metric as a tracker holds it: the logged ``key`` and which value to ``take``."""

    metric: str
    key: str
    take: Take = "last"
    step: int | None = None


def wanted_of(plan: Plan) -> list[Wanted]:
    """The plan's metrics as tracker keys (``Metric.tracker``; unset: the metric's name, last value)."""
    out = []
    for name, metric in plan.metrics.items():
        spec = metric.tracker
        if spec is None:
            out.append(Wanted(name, name))
        else:
            out.append(Wanted(name, spec.key or name, spec.take, spec.step))
    return out


@dataclass(frozen=True)
class Point:
    """One logged value: its ``step``, ``value`` and the order it was logged in (``order``: a wall time
    in s, or a sequence number; only compared)."""

    step: int
    value: float
    order: float = 0.0


def take_value(points: Sequence[Point], want: Wanted) -> tuple[float | None, str | None]:
    """``(value, None)`` as ``want`` says, or ``(None, why)`` when the series has no such value. Values logged
    at one step are ordered by ``order``, then value (MLflow's rule for its latest value)."""
    if not points:
        return None, f"metric {want.key!r} was never logged"
    if want.take == "step":
        here = [p for p in points if p.step == want.step]
        if not here:
            steps = sorted({p.step for p in points})
            shown = f"{steps[0]}..{steps[-1]}, {len(steps)} steps" if len(steps) > 3 else ", ".join(map(str, steps))
            return None, f"metric {want.key!r} has no value at step {want.step} (steps logged: {shown})"
        return max(here, key=lambda p: (p.order, p.value)).value, None
    if want.take == "last":
        return max(points, key=lambda p: (p.step, p.order, p.value)).value, None
    values = [p.value for p in points]
    if any(math.isnan(v) for v in values):
        return math.nan, None  # refused as non-finite upstream, naming the run
    return (min(values) if want.take == "min" else max(values)), None


@dataclass
class TrackerRun:
    """One tracker run as read: where it is, what it carries, the values the plan wants.

    ``values``: plan metric -> value; ``missing``: plan metric -> why it has none; ``files``: path (relative
    to the source) -> SHA-256 of every file read for this run; ``status``: ``complete``, ``failed`` or
    ``running`` (never imported).
    """

    tracker: str
    uri: str
    run_id: str
    name: str
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: str = "complete"
    git_commit: str | None = None
    files: dict[str, str] = field(default_factory=dict)

    def label(self) -> str:
        """How messages name the run: ``mlflow run 5bb2...4f ('r1')``."""
        shown = f" ({self.name!r})" if self.name and self.name != self.run_id else ""
        return f"{self.tracker} run {self.run_id}{shown}"

    def content_sha256(self) -> str:
        """SHA-256 of what was read (tags, params, the wanted values, times, status, files' hashes):
        ``gates verify --source`` reads the run again and compares."""
        data = {
            "tracker": self.tracker,
            "run_id": self.run_id,
            "tags": self.tags,
            "params": {k: _plain(v) for k, v in self.params.items()},
            "values": {k: repr(v) for k, v in self.values.items()},
            "missing": self.missing,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "status": self.status,
            "git_commit": self.git_commit,
            "files": self.files,
        }
        return hashlib.sha256(canonical_bytes(data)).hexdigest()


def _plain(value: Any) -> Any:
    """A parameter as canonical JSON takes it (non-finite floats and other objects as their text)."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return str(value)


def iso(moment: datetime | None) -> str | None:
    """A UTC time as the ledger writes it (``2026-12-07T22:24:11.130000Z``), or None."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_epoch(seconds: float | None) -> datetime | None:
    """A UTC time from seconds since the epoch (None stays None)."""
    if seconds is None or not math.isfinite(seconds):
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)


def hash_files(root: Path, paths: Iterable[Path]) -> dict[str, str]:
    """Relative path (posix) -> SHA-256 for each file."""
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in sorted(paths)}


@dataclass(frozen=True)
class Source:
    """``collect import``'s SOURCE when it names a tracker: ``mlflow:URI``, ``tensorboard:DIR``,
    ``wandb:DIR``, ``raytune:DIR``."""

    tracker: str
    location: str

    def text(self) -> str:
        return f"{self.tracker}:{self.location}"


def parse_source(text: str) -> Source | None:
    """The tracker source ``text`` names, or None (a table file). A Windows drive letter is not a tracker."""
    head, sep, rest = text.partition(":")
    if not sep or head not in TRACKERS:
        return None
    if not rest:
        raise TrackerProblem(f"{text}: name the {head} store after the colon (e.g. {head}:{_example(head)})")
    return Source(head, rest)


def tracker_source(text: str, said: str | None = None) -> Source:
    """The tracker source ``text`` names, or ``TrackerProblem`` (exit 2) opening with ``said`` (default: ``text``)."""
    source = parse_source(text)
    if source is None:
        raise TrackerProblem(
            f"{said or text}: not a tracker source (mlflow:URI, tensorboard:DIR, wandb:DIR, raytune:DIR)"
        )
    return source


def _example(tracker: str) -> str:
    return {"mlflow": "sqlite:///mlflow.db", "tensorboard": "runs/", "wandb": "wandb/", "raytune": "~/ray_results/exp"}[
        tracker
    ]


@dataclass(frozen=True)
class ReadOptions:
    """What narrows the runs read: an MLflow ``experiment`` (name or id) and ``filter`` (MLflow's search
    syntax); others ignore what does not apply to them and say so."""

    experiment: str | None = None
    filter: str | None = None


def needs_extra(tracker: str, package: str, err: ImportError) -> TrackerProblem:
    """The message for a tracker whose package is not installed."""
    return TrackerProblem(
        f"reading {tracker} runs needs the {package} package, which is not importable here ({err}); "
        f"install the extra: pip install 'prereg-toolkit[{tracker}]'"
    )


def folder(location: str, tracker: str) -> Path:
    """A folder source as a path that exists, or ``TrackerProblem``."""
    path = Path(location).expanduser()
    if not path.is_dir():
        raise TrackerProblem(f"{tracker}:{location}: no such folder")
    return path


def string_map(data: Mapping[str, Any]) -> dict[str, str]:
    """Tags as strings."""
    return {str(k): str(v) for k, v in data.items()}


__all__ = [
    "TRACKERS",
    "Point",
    "ReadOptions",
    "Source",
    "TrackerProblem",
    "TrackerRun",
    "Wanted",
    "folder",
    "from_epoch",
    "hash_files",
    "iso",
    "needs_extra",
    "parse_source",
    "string_map",
    "take_value",
    "tracker_source",
    "wanted_of",
]
