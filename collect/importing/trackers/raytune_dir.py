"""Ray Tune experiment folders: one :class:`TrackerRun` per trial, from the plain-text files Tune writes.

The trials (id, folder, status, start and last-result times) come from the newest ``experiment_state-*.json``
read as plain JSON (the cloudpickle fields inside it are never decoded); a trial's config from its
``params.json``; its metrics from ``result.json`` (JSON lines; ``progress.csv`` where there is none), the step
being ``training_iteration``. Ray's own readers unpickle the folder's data, so none is used (docs/trackers.md).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
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
    string_map,
    take_value,
)
from prereg import jsoncodec
from prereg.jsoncodec import JSONFormatError

STATE_GLOB = "experiment_state-*.json"  # Tune's TuneController.CKPT_FILE_TMPL; the newest name wins, as in Tune
PARAMS_FILE = "params.json"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.csv"
STEP = "training_iteration"
TAG_PREFIX = "prereg."
STATUS = {"TERMINATED": "complete", "ERROR": "failed", "RUNNING": "running", "PENDING": "running", "PAUSED": "running"}


@dataclass(frozen=True)
class _Trial:
    """One entry of the experiment state: times in s since the epoch (None when Tune recorded none)."""

    trial_id: str
    dirname: str
    status: str
    started_s: float | None
    last_result_s: float | None


def read_runs(location: str, wanted: Sequence[Wanted], options: ReadOptions) -> list[TrackerRun]:
    """Every trial of the Ray Tune experiment folder ``location`` (``storage_path/name``), sorted by trial id."""
    root = folder(location, "raytune")
    state = _state_file(root, location)
    state_hash = hash_files(root, [state])  # read once, named in every trial's files
    return [_read_trial(root, state_hash, trial, location, wanted) for trial in _trials(state)]


def _state_file(root: Path, location: str) -> Path:
    found = sorted(root.glob(STATE_GLOB))
    if found:
        return found[-1]
    inner = sorted({p.parent.name for p in root.glob(f"*/{STATE_GLOB}")})
    where = f"raytune:{location}: no {STATE_GLOB} here, so not a Ray Tune experiment folder"
    if inner:
        shown = ", ".join(inner[:5]) + (f" and {len(inner) - 5} more" if len(inner) > 5 else "")
        raise TrackerProblem(f"{where}; experiments inside it: {shown} (name one: raytune:{root / inner[0]})")
    raise TrackerProblem(f"{where} (name the folder the Tuner wrote: its storage_path/name)")


def _trials(state: Path) -> list[_Trial]:
    data = _json_file(state)
    entries = data.get("trial_data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise TrackerProblem(f"{state}: no 'trial_data' list; not the experiment state Ray Tune 2.x writes")
    trials = []
    for number, entry in enumerate(entries, 1):
        where = f"{state}: trial_data entry {number}"
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)):
            raise TrackerProblem(f"{where}: not a [trial state, run metadata] pair of JSON texts (Ray 2.60's form)")
        trial, meta = (_json_text(text, where) for text in entry)
        if not isinstance(trial, dict) or not isinstance(meta, dict):
            raise TrackerProblem(f"{where}: the trial state and run metadata must be JSON objects")
        trial_id, dirname, status = (trial.get(k) for k in ("trial_id", "relative_logdir", "status"))
        if not (isinstance(trial_id, str) and trial_id and isinstance(status, str)):
            raise TrackerProblem(f"{where}: no trial_id or status")
        if status not in STATUS:
            raise TrackerProblem(f"{where}: trial {trial_id} has status {status!r}, which this reader does not know")
        if not (isinstance(dirname, str) and dirname not in ("", ".", "..") and Path(dirname).name == dirname):
            raise TrackerProblem(f"{where}: trial {trial_id}'s folder {dirname!r} is not a folder of the experiment")
        trials.append(
            _Trial(trial_id, dirname, status, _seconds(meta.get("start_time")), _seconds(meta.get("last_result_time")))
        )
    return sorted(trials, key=lambda t: t.trial_id)


def _read_trial(
    root: Path, state_hash: dict[str, str], trial: _Trial, location: str, wanted: Sequence[Wanted]
) -> TrackerRun:
    status = STATUS[trial.status]
    run = TrackerRun(
        tracker="raytune",
        uri=f"raytune:{location}",
        run_id=trial.trial_id,
        name=trial.dirname,
        started_at=from_epoch(trial.started_s),
        finished_at=from_epoch(trial.last_result_s),
        status=status,
    )
    trial_dir = root / trial.dirname
    read = []
    params_path = trial_dir / PARAMS_FILE
    if params_path.is_file():
        config = _json_file(params_path)
        if not isinstance(config, dict):
            raise TrackerProblem(f"{params_path}: a trial's config must be a JSON object")
        run.tags, run.params = _split_config(config)
        read.append(params_path)
    elif status == "complete":
        raise TrackerProblem(
            f"{params_path}: missing, for trial {trial.trial_id} that Tune marks TERMINATED "
            "(the reader takes the config from the params.json of Tune's default loggers)"
        )
    results = _results_file(trial_dir)
    if results is None:
        for want in wanted:
            run.missing[want.metric] = f"metric {want.key!r}: the trial folder has no {RESULT_FILE} or {PROGRESS_FILE}"
    else:
        read.append(results)
        try:
            _take_values(run, results, wanted)
        except TrackerProblem as err:
            if status != "running":
                raise
            # a trial still writing (never imported): a torn last line does not block reading the others
            run.values, run.missing = {}, {w.metric: f"unreadable while the trial runs ({err})" for w in wanted}
    run.files = {**state_hash, **hash_files(root, read)}
    return run


def _split_config(config: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """``(tags, params)``: the tags are the top-level ``prereg.*`` keys and the entries of a ``prereg`` dict
    (``param_space={"prereg": tune.grid_search([...])}``, as ``collect plan --tracker raytune`` prints them)."""
    nested = config.get("prereg")
    tags = {k: v for k, v in config.items() if k.startswith(TAG_PREFIX)}
    if isinstance(nested, Mapping):
        tags.update({f"{TAG_PREFIX}{k}": v for k, v in nested.items()})
    rest = {
        k: v
        for k, v in config.items()
        if not k.startswith(TAG_PREFIX) and not (k == "prereg" and isinstance(nested, Mapping))
    }
    return string_map(tags), dict(_flatten(rest))


def _take_values(run: TrackerRun, results: Path, wanted: Sequence[Wanted]) -> None:
    rows = list(_rows(results, run.run_id))
    for want in wanted:
        value, why = take_value(_series(rows, want.key, results), want)
        if value is None:
            run.missing[want.metric] = why or f"metric {want.key!r}: no value"
        else:
            run.values[want.metric] = value


def _results_file(trial_dir: Path) -> Path | None:
    """``result.json`` as Tune's own reader prefers it, else ``progress.csv``, else None."""
    for name in (RESULT_FILE, PROGRESS_FILE):
        if (trial_dir / name).is_file():
            return trial_dir / name
    return None


def _rows(path: Path, trial_id: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(line number, result)`` for each reported result, each checked to be this trial's."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            if path.name == PROGRESS_FILE:
                pairs: Iterator[tuple[int, Any]] = ((n, row) for n, row in enumerate(csv.DictReader(fh), 2))
            else:
                pairs = ((n, _json_text(line, f"{path}: line {n}")) for n, line in enumerate(fh, 1) if line.strip())
            for number, row in pairs:
                if not isinstance(row, dict):
                    raise TrackerProblem(f"{path}: line {number} is not a result object")
                if row.get("trial_id") not in (None, trial_id):
                    raise TrackerProblem(f"{path}: line {number} is trial {row['trial_id']}'s, not {trial_id}'s")
                yield number, row
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TrackerProblem(f"{path}: cannot be read ({err})") from err


def _series(rows: Sequence[tuple[int, Mapping[str, Any]]], key: str, path: Path) -> list[Point]:
    """The metric ``key`` (nested keys joined by '/', as Tune flattens) by ``training_iteration``."""
    points = []
    for number, row in rows:
        raw = _lookup(row, key)
        if raw is None or raw == "":
            continue  # not reported in this result
        where = f"{path}: line {number}"
        step = _integer(row.get(STEP), f"{where}: {STEP}")
        points.append(Point(step, _number(raw, f"{where}: metric {key!r}"), float(number)))
    return points


def _lookup(row: Mapping[str, Any], key: str) -> Any:
    if key in row:
        return row[key]
    here: Any = row
    for part in key.split("/"):
        if not isinstance(here, Mapping) or part not in here:
            return None
        here = here[part]
    return here


def _number(raw: Any, where: str) -> float:
    """A reported value as a float; NaN and infinities stay (refused upstream, naming the run)."""
    if raw == "null":
        return math.nan  # Tune's JSON logger writes a NumPy NaN that is no Python float as the string "null"
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise TrackerProblem(f"{where} is {raw!r}, not a number")
    try:
        return float(raw)
    except ValueError:
        raise TrackerProblem(f"{where} is {raw!r}, not a number (report plain floats)") from None


def _integer(raw: Any, where: str) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw)
    raise TrackerProblem(f"{where} is {raw!r}, not a whole number")


def _seconds(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw) else None


def _flatten(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested dicts as Tune's ``flatten_dict`` writes them: keys joined by '/', an empty dict dropped."""
    for key, value in config.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}{key}/")
        else:
            yield f"{prefix}{key}", value


def _json_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TrackerProblem(f"{path}: cannot be read ({err})") from err
    return _json_text(text, str(path))


def _json_text(text: str, where: str) -> Any:
    """JSON as Tune writes it (bare NaN/Infinity allowed); no object hook, so a cloudpickle blob stays text."""
    try:
        return jsoncodec.loads(text, allow_nonfinite=True)
    except JSONFormatError as err:
        raise TrackerProblem(f"{where}: not valid JSON ({err})") from err
