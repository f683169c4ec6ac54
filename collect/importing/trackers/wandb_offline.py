"""Weights & Biases runs from offline run folders (``wandb/offline-run-*``, ``wandb/run-*``), no network.

Each run's ``run-<id>.wandb`` log is read through W&B's own reader, the ``wandb leet inspect --json`` command
(wandb 0.31; one child process per run, a few at a time), never decoded here. Values are the history rows'
numbers as logged, ``step`` is W&B's ``_step``; times are UTC. docs/trackers.md says what W&B records.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    string_map,
    take_value,
)
from prereg import jsoncodec

RUN_FOLDER = re.compile(r"(?:offline-)?run-.+")  # what wandb.init names a run's folder
LOG_NAME = re.compile(r"run-(?P<run_id>.+)\.wandb")  # and its log
TAG_PREFIX = "prereg."  # config entries under this prefix are the plan's tags (`collect plan` hands them out)
READ_TIMEOUT_S = 300.0  # one run's log through W&B's reader; only a hang gets near it
INCOMPLETE = "incomplete .wandb file"  # W&B's reader's words for a log that ends mid-run (killed or running)
UNFLUSHED = (
    "the run's log holds no records yet: W&B writes an offline run's log every 15 s and at wandb.finish(), "
    "so the run is still running or was killed before its first write"
)


def read_runs(location: str, wanted: Sequence[Wanted], options: ReadOptions) -> list[TrackerRun]:
    """One :class:`TrackerRun` per run folder under ``location`` (a ``wandb/`` folder, the folder holding it,
    or one run folder), in folder-name order. ``options`` do not apply to a folder (``read_source`` refuses them)."""
    root = folder(location, "wandb").resolve()
    logs = _run_logs(root, location)
    command = _reader_command()
    workers = max(1, min(len(logs), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda log: _read_run(command, root, log, location, wanted), logs))


def _run_logs(root: Path, location: str) -> list[Path]:
    """The ``run-<id>.wandb`` log of each run folder ``root`` holds (or of ``root`` itself)."""
    if any(LOG_NAME.fullmatch(p.name) for p in root.iterdir()):
        return [_log_of(root, location)]
    base = root / "wandb" if (root / "wandb").is_dir() and not _run_folders(root) else root
    runs = _run_folders(base)
    if not runs:
        raise TrackerProblem(
            f"wandb:{location}: no W&B run here (expected offline-run-* or run-* folders, each holding a "
            "run-<id>.wandb log, as wandb.init(mode='offline') writes under its dir's wandb/ folder)"
        )
    return [_log_of(run, location) for run in runs]


def _run_folders(path: Path) -> list[Path]:
    """Run folders directly in ``path``; links (W&B's ``latest-run``) are skipped, their target is listed."""
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink() and RUN_FOLDER.fullmatch(p.name))


def _log_of(run_folder: Path, location: str) -> Path:
    logs = sorted(p for p in run_folder.iterdir() if p.is_file() and LOG_NAME.fullmatch(p.name))
    if len(logs) != 1:
        found = "none" if not logs else ", ".join(p.name for p in logs)
        raise TrackerProblem(
            f"wandb:{location}: run folder {run_folder} must hold exactly one run-<id>.wandb log (found {found})"
        )
    return logs[0]


def _reader_command() -> list[str]:
    """``python -m wandb leet inspect --json`` in this interpreter, or the extra to install."""
    try:
        spec = importlib.util.find_spec("wandb")
    except (ImportError, ValueError) as err:
        raise needs_extra("wandb", "wandb", ImportError(str(err))) from err
    if spec is None:
        raise needs_extra("wandb", "wandb", ImportError("No module named 'wandb'"))
    return [sys.executable, "-m", "wandb", "leet", "inspect", "--json"]


def _inspect(command: list[str], log: Path, location: str) -> tuple[list[dict[str, Any]], bool]:
    """The log's records as W&B's reader prints them, and whether it found the log incomplete."""
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_ERROR_REPORTING": "false", "WANDB_SILENT": "true"}
    try:
        done = subprocess.run(
            [*command, str(log)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            timeout=READ_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise TrackerProblem(f"wandb:{location}: W&B's reader did not finish {log} in {READ_TIMEOUT_S:.0f} s") from err
    said = " ".join(done.stderr.split())
    if done.returncode != 0:
        hint = (
            "; this reader needs `wandb leet inspect --json` (wandb 0.31): pip install -U 'wandb>=0.31'"
            if "No such command" in said or "No such option" in said
            else ""
        )
        raise TrackerProblem(
            f"wandb:{location}: W&B could not read {log} (exit {done.returncode}): {said[-400:] or 'no message'}{hint}"
        )
    incomplete = INCOMPLETE in said
    if said and not incomplete:  # e.g. "skipped corrupt data": some records are lost, so no value can be trusted
        raise TrackerProblem(f"wandb:{location}: W&B's reader found {log} damaged: {said[-400:]}; nothing imported")
    records = []
    for number, line in enumerate(done.stdout.splitlines(), 1):
        try:
            record = jsoncodec.loads(line, allow_nonfinite=True)
        except jsoncodec.JSONFormatError as err:
            raise TrackerProblem(
                f"wandb:{location}: W&B's reader printed line {number} for {log} that is not JSON ({err})"
            ) from err
        if isinstance(record, dict):
            records.append(record)
    return records, incomplete


@dataclass
class _Run:
    """What a run's records say, gathered in log order."""

    run_id: str
    name: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
    last_logged_s: float | None = None  # `_timestamp` of the last history row (s since the epoch)
    exit_code: int | None = None
    git_commit: str | None = None
    series: dict[str, list[Point]] = field(default_factory=dict)
    not_numbers: dict[str, str] = field(default_factory=dict)  # key -> the type of a non-numeric value logged
    in_summary: set[str] = field(default_factory=set)


def _read_run(command: list[str], root: Path, log: Path, location: str, wanted: Sequence[Wanted]) -> TrackerRun:
    records, incomplete = _inspect(command, log, location)
    named = LOG_NAME.fullmatch(log.name)
    run = _Run(run_id=named["run_id"] if named else log.stem)
    keys = {w.key for w in wanted}
    for record in records:
        _take(run, record, keys)
    status = "running" if run.exit_code is None else "complete" if run.exit_code == 0 else "failed"
    out = TrackerRun(
        tracker="wandb",
        uri=f"wandb:{location}",
        run_id=run.run_id,
        name=run.name or run.run_id,
        tags=string_map({k: v for k, v in run.config.items() if k.startswith(TAG_PREFIX)}),
        params={k: v for k, v in run.config.items() if not k.startswith(TAG_PREFIX)},
        started_at=run.started_at,
        finished_at=from_epoch(run.last_logged_s),
        status=status,
        git_commit=run.git_commit,
        files=hash_files(root, [log]),
    )
    for want in wanted:
        value, why = take_value(run.series.get(want.key, []), want)
        if why is None and value is not None:
            out.values[want.metric] = value
        else:
            out.missing[want.metric] = _why_missing(run, want, why or "", records, incomplete)
    return out


def _take(run: _Run, record: dict[str, Any], keys: set[str]) -> None:
    """Fold one printed record into ``run`` (only the record types this reader uses)."""
    kind = record.get("type")
    body = record.get(kind) if isinstance(kind, str) else None
    if not isinstance(body, dict):
        return
    if kind == "run":
        run.run_id = str(body.get("run_id") or run.run_id)
        run.name = str(body.get("display_name") or run.name)
        run.started_at = _utc(body.get("start_time")) or run.started_at
        _configure(run, body.get("config"))
    elif kind == "config":
        _configure(run, body)
    elif kind == "environment":
        git = body.get("git")
        if isinstance(git, dict) and git.get("commit"):
            run.git_commit = str(git["commit"])
    elif kind == "history":
        number = record.get("num")
        _history(run, body, keys, float(number) if isinstance(number, int) else 0.0)
    elif kind == "summary" and isinstance(body.get("update"), dict):
        run.in_summary.update(k for k in body["update"] if k in keys)
    elif kind == "exit":
        code = body.get("exit_code", 0)  # protobuf's JSON may leave a zero out
        run.exit_code = code if isinstance(code, int) else 1


def _configure(run: _Run, body: Any) -> None:
    """A config record: ``update`` sets top-level keys, ``remove`` drops them; W&B's own ``_wandb`` is left out."""
    if not isinstance(body, dict):
        return
    update = body.get("update")
    if isinstance(update, dict):
        run.config.update({str(k): v for k, v in update.items() if k != "_wandb"})
    removed = body.get("remove")
    if isinstance(removed, list):
        for key in removed:
            run.config.pop(str(key), None)


def _history(run: _Run, body: dict[str, Any], keys: set[str], order: float) -> None:
    """One history row (``order``: its record number): its step, its wall time and the wanted keys' numbers."""
    item = body.get("item")
    if not isinstance(item, dict):
        return
    step_body = body.get("step")
    step = step_body.get("num") if isinstance(step_body, dict) else None
    if not isinstance(step, int):
        fallback = item.get("_step")
        step = int(fallback) if isinstance(fallback, int | float) and math.isfinite(fallback) else 0
    stamp = item.get("_timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        run.last_logged_s = float(stamp) if run.last_logged_s is None else max(run.last_logged_s, float(stamp))
    for key in keys & item.keys():
        number = _number(item[key])
        if number is None:
            run.not_numbers[key] = type(item[key]).__name__
        else:
            run.series.setdefault(key, []).append(Point(step, number, order))


def _number(value: Any) -> float | None:
    """A logged value as a float (W&B's JSON spells NaN and the infinities as the project's formats do), or
    None if it is no number."""
    if not isinstance(value, int | float | str):
        return None
    try:
        return jsoncodec.decode_float(value)
    except ValueError:
        return None


def _why_missing(run: _Run, want: Wanted, why: str, records: list[dict[str, Any]], incomplete: bool) -> str:
    """``take_value``'s reason, with what W&B's records tell about it."""
    if not any(r.get("type") == "run" for r in records):
        return f"metric {want.key!r}: {UNFLUSHED}"
    if want.key not in run.series and want.key in run.not_numbers:
        return f"metric {want.key!r} was logged, but not as a number ({run.not_numbers[want.key]})"
    if want.key not in run.series and want.key in run.in_summary:
        why += (
            "; it is only in the run's summary (run.summary[...]), which this reader does not take: log it with run.log"
        )
    if incomplete or run.exit_code is None:
        why += " (the run's log is incomplete: the run is still running or was killed)"
    return why


def _utc(text: Any) -> datetime | None:
    """An ISO 8601 time as W&B writes it (``2026-12-07T22:26:45.493019Z``) as UTC, or None."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


__all__ = ["read_runs"]
