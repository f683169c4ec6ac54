"""MLflow runs through MLflow's own client (``mlflow.MlflowClient``): a ``sqlite:///`` store, a local
``mlruns/`` folder (file store, opened with ``MLFLOW_ALLOW_FILE_STORE=true``) or a tracking server.

A store that does not exist is refused rather than created (MLflow would make an empty one). "last" is
MLflow's own latest value of the run (``run.data.metrics``), and so is "step" at the run's last step; min,
max and an earlier step read the metric's history (one query per run).
Times are MLflow's start and end times (ms since the epoch, UTC).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from collect.importing.trackers.base import (
    Point,
    ReadOptions,
    TrackerProblem,
    TrackerRun,
    Wanted,
    from_epoch,
    hash_files,
    needs_extra,
    string_map,
    take_value,
)

#: MLflow run status -> the record's (RUNNING and SCHEDULED runs are not imported)
STATUS = {"FINISHED": "complete", "FAILED": "failed", "KILLED": "failed", "RUNNING": "running", "SCHEDULED": "running"}
PAGE = 50_000  # search_runs' largest page


def tracking_uri(location: str) -> tuple[str, Path | None]:
    """``(uri for MlflowClient, the local file-store folder or None)``; a local store must exist."""
    parsed = urlparse(location)
    if parsed.scheme == "sqlite":
        path = Path(unquote(parsed.path[1:]))  # sqlite:///relative, sqlite:////absolute (SQLAlchemy's form)
        if parsed.netloc or not path.is_file():
            raise TrackerProblem(
                f"mlflow:{location}: no such sqlite store (a path after sqlite:/// -- four slashes for an "
                "absolute path; the file is not created)"
            )
        _check_sqlite(path, location)
        return location, None
    if parsed.scheme in ("http", "https"):
        return location, None
    if parsed.scheme in ("", "file"):
        path = Path(unquote(parsed.path) if parsed.scheme == "file" else location).expanduser()
        if not path.is_dir():
            raise TrackerProblem(f"mlflow:{location}: no such folder (an MLflow file store is a folder like mlruns/)")
        if not any((child / "meta.yaml").is_file() for child in path.iterdir() if child.is_dir()):
            raise TrackerProblem(
                f"mlflow:{location}: not an MLflow file store (no experiment folder holding a meta.yaml)"
            )
        return path.resolve().as_uri(), path.resolve()
    raise TrackerProblem(f"mlflow:{location}: not a tracking URI this import reads (sqlite:///, a folder, http(s)://)")


def _check_sqlite(path: Path, location: str) -> None:
    """Refuse a file that is not an MLflow sqlite store: MLflow would add its tables to an empty database."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as err:
        raise TrackerProblem(f"mlflow:{location}: not a sqlite database ({err})") from None
    if not {"experiments", "runs"} <= tables:
        raise TrackerProblem(f"mlflow:{location}: a sqlite database without MLflow's tables (experiments, runs)")


@contextmanager
def _file_store_allowed(allowed: bool) -> Iterator[None]:
    """``MLFLOW_ALLOW_FILE_STORE=true`` while a file store is read (MLflow 3 asks for it), unset again after."""
    setting = allowed and "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    if setting:
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if setting:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


@contextmanager
def _quiet() -> Iterator[None]:
    """MLflow's INFO lines (database set-up) kept off the terminal while reading."""
    logger = logging.getLogger("mlflow")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def read_runs(location: str, wanted: Sequence[Wanted], options: ReadOptions) -> list[TrackerRun]:
    """The active runs of the store (of ``options.experiment``, or of every experiment), as ``TrackerRun``."""
    uri, store_folder = tracking_uri(location)
    try:
        from mlflow import MlflowClient  # lazy: mlflow
        from mlflow.entities import ViewType  # lazy: mlflow
    except ImportError as err:
        raise needs_extra("mlflow", "mlflow", err) from None
    with _quiet(), _file_store_allowed(store_folder is not None):
        try:
            client = MlflowClient(tracking_uri=uri)
            experiments = _experiments(client, options.experiment, location)
            runs = _search(client, [e.experiment_id for e in experiments], options.filter, ViewType.ACTIVE_ONLY)
            return [_run(client, run, location, wanted, store_folder) for run in runs]
        except TrackerProblem:
            raise
        except Exception as err:  # noqa: BLE001 - MlflowException, SQLAlchemy and HTTP errors alike
            first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
            raise TrackerProblem(f"mlflow:{location}: the store cannot be read ({first})") from None


def _experiments(client: Any, experiment: str | None, location: str) -> list[Any]:
    if experiment is None:
        return list(client.search_experiments())
    found = client.get_experiment_by_name(experiment)
    if found is None and experiment.isdigit():
        try:
            found = client.get_experiment(experiment)
        except Exception:  # noqa: BLE001 - MLflow raises MlflowException for an unknown id
            found = None
    if found is None:
        names = ", ".join(sorted(e.name for e in client.search_experiments())[:10])
        raise TrackerProblem(f"mlflow:{location}: no experiment named {experiment!r} (experiments: {names})")
    return [found]


def _search(client: Any, ids: list[str], filter_string: str | None, view: Any) -> list[Any]:
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs(
            ids, filter_string or "", run_view_type=view, max_results=PAGE, order_by=None, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _run(client: Any, run: Any, location: str, wanted: Sequence[Wanted], store: Path | None) -> TrackerRun:
    info, data = run.info, run.data
    out = TrackerRun(
        tracker="mlflow",
        uri=f"mlflow:{location}",
        run_id=info.run_id,
        name=info.run_name or "",
        tags=string_map(data.tags),
        params=dict(data.params),
        started_at=from_epoch(info.start_time / 1000) if info.start_time is not None else None,
        finished_at=from_epoch(info.end_time / 1000) if info.end_time is not None else None,
        status=STATUS.get(str(info.status), "running"),
        git_commit=data.tags.get("mlflow.source.git.commit"),
    )
    latest: dict[str, tuple[int, float]] | None = None  # key -> (step, value) of MLflow's latest value
    for want in wanted:
        if want.take == "last":
            if want.key in data.metrics:
                out.values[want.metric] = float(data.metrics[want.key])
            else:
                out.missing[want.metric] = f"metric {want.key!r} was never logged"
            continue
        if want.take == "step":
            if latest is None:
                latest = {m.key: (int(m.step), float(m.value)) for m in data.to_proto().metrics}
            here = latest.get(want.key)
            if here is not None and here[0] == want.step:  # the last step logged: MLflow's latest value is
                out.values[want.metric] = here[1]  # the latest logged there (then the largest), as take_value
                continue
        history = client.get_metric_history(info.run_id, want.key)
        points = [Point(int(m.step), float(m.value), float(m.timestamp)) for m in history]
        value, why = take_value(points, want)
        if value is None:
            out.missing[want.metric] = str(why)
        else:
            out.values[want.metric] = value
    if store is not None:
        out.files = _run_files(store, info, wanted)
    return out


def _run_files(store: Path, info: Any, wanted: Sequence[Wanted]) -> dict[str, str]:
    """The file store's files of the run that MLflow read: meta.yaml, params, tags, the wanted metrics."""
    folder = store / str(info.experiment_id) / str(info.run_id)
    paths = [folder / "meta.yaml"]
    for part in ("params", "tags"):
        paths += [p for p in (folder / part).rglob("*") if p.is_file()]
    paths += [folder / "metrics" / w.key for w in wanted if (folder / "metrics" / w.key).is_file()]
    return hash_files(store, [p for p in paths if p.is_file()])


__all__ = ["read_runs", "tracking_uri"]
