"""The MLflow reader on real stores made by MLflow's own client (``MlflowClient``): a sqlite store and a file
store holding the same runs, read back with their ids, names, tags, params, times, status and the values the
plan wants; the file store's files hashed; stores that are missing or not MLflow's refused, untouched."""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from collect.importing.trackers import mlflow_store
from collect.importing.trackers.base import ReadOptions, TrackerProblem, TrackerRun, Wanted
from prereg.errors import EXIT_BAD_INPUT

RUN_ID_TAG = "run-0123456789abcdef0123"  # a planned run id, as `collect plan` prints it
GIT_COMMIT = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
WANTED = [
    Wanted("loss_last", "loss"),
    Wanted("loss_min", "loss", "min"),
    Wanted("loss_max", "loss", "max"),
    Wanted("loss_at_1", "loss", "step", 1),
    Wanted("loss_at_2", "loss", "step", 2),
    Wanted("loss_at_9", "loss", "step", 9),
    Wanted("acc", "acc"),
    Wanted("acc_min", "acc", "min"),
    Wanted("never", "never_logged"),
    Wanted("never_max", "never_logged", "max"),
]
NEVER = "metric 'never_logged' was never logged"
LOGGED_WANTED = {"r1": ["loss", "acc"], "r2": ["loss"], "r3": ["loss"], "b1": []}  # the wanted keys each run logged


@dataclass
class Store:
    """One store the fixture made: what ``read_runs`` is given, and what was logged to it."""

    kind: str  # "sqlite" or "file"
    location: str  # as `collect import mlflow:LOCATION` names it
    folder: Path | None  # the file store's folder
    run_ids: dict[str, str]  # run name -> MLflow run id
    experiment_ids: dict[str, str]  # experiment name -> id
    started: datetime  # the wall-clock window the runs were made in (ms, as MLflow keeps times)
    ended: datetime


def _ms_floor(seconds: float) -> datetime:
    return datetime.fromtimestamp(math.floor(seconds * 1000) / 1000, UTC)


def _ms_ceil(seconds: float) -> datetime:
    return datetime.fromtimestamp(math.ceil(seconds * 1000) / 1000, UTC)


def log_study(client: Any) -> tuple[dict[str, str], dict[str, str]]:
    """The same runs in any store, through MLflow's client; explicit metric timestamps fix the logging order.

    exp-a: r1 finishes (loss 3, 1, 2 at steps 0..2, then 1.5 at step 2 again, later; acc 0.5; an unwanted
    metric), r2 fails (loss 0.5 then NaN), r3 is left running, r4 is deleted. exp-b: b1 is killed."""
    now_ms = int(time.time() * 1000)
    exp_a = client.create_experiment("exp-a")
    exp_b = client.create_experiment("exp-b")
    ids: dict[str, str] = {}
    r1 = client.create_run(exp_a, run_name="r1").info.run_id
    client.set_tag(r1, "prereg.run_id", RUN_ID_TAG)
    client.set_tag(r1, "prereg.arm", "fast")
    client.set_tag(r1, "prereg.seed", "101")
    client.set_tag(r1, "mlflow.source.git.commit", GIT_COMMIT)
    client.log_param(r1, "lr", "0.1")
    client.log_param(r1, "layers", "2")
    for order, (step, loss) in enumerate([(0, 3.0), (1, 1.0), (2, 2.0), (2, 1.5)]):
        client.log_metric(r1, "loss", loss, timestamp=now_ms + order, step=step)
    client.log_metric(r1, "acc", 0.5, timestamp=now_ms, step=0)
    client.log_metric(r1, "unwanted", 9.0, timestamp=now_ms, step=0)
    client.set_terminated(r1, "FINISHED")
    r2 = client.create_run(exp_a, run_name="r2", tags={"prereg.run_id": "run-fffff00000fffff00000"}).info.run_id
    client.log_param(r2, "lr", "0.01")
    client.log_metric(r2, "loss", 0.5, timestamp=now_ms, step=0)
    client.log_metric(r2, "loss", math.nan, timestamp=now_ms + 1, step=1)
    client.set_terminated(r2, "FAILED")
    r3 = client.create_run(exp_a, run_name="r3").info.run_id
    client.log_metric(r3, "loss", 4.0, timestamp=now_ms, step=0)
    r4 = client.create_run(exp_a, run_name="r4").info.run_id
    client.set_terminated(r4, "FINISHED")
    client.delete_run(r4)
    b1 = client.create_run(exp_b, run_name="b1").info.run_id
    client.log_param(b1, "lr", "0.5")
    client.set_terminated(b1, "KILLED")
    ids.update(r1=r1, r2=r2, r3=r3, r4=r4, b1=b1)
    return ids, {"exp-a": exp_a, "exp-b": exp_b}


@pytest.fixture(scope="module")
def allow_file_store() -> Iterator[None]:
    """MLflow 3 writes a file store only when asked to (maintenance mode)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        yield


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, allow_file_store: None) -> dict[str, Store]:
    mlflow = pytest.importorskip("mlflow")  # lazy: seconds of import
    root = tmp_path_factory.mktemp("mlflow")
    made = {}
    for kind, location, folder in [
        ("sqlite", f"sqlite:///{root}/m.db", None),
        ("file", str(root / "mlruns"), root / "mlruns"),
    ]:
        started = time.time()
        run_ids, experiment_ids = log_study(mlflow.MlflowClient(tracking_uri=location))
        made[kind] = Store(kind, location, folder, run_ids, experiment_ids, _ms_floor(started), _ms_ceil(time.time()))
    return made


@pytest.fixture(scope="module", params=["sqlite", "file"])
def store(request: pytest.FixtureRequest, stores: dict[str, Store]) -> Store:
    return stores[request.param]


@pytest.fixture(scope="module")
def runs(store: Store) -> dict[str, TrackerRun]:
    """Every active run of the store, read with WANTED, by run name."""
    return {run.name: run for run in mlflow_store.read_runs(store.location, WANTED, ReadOptions())}


def read(location: str, wanted: list[Wanted] = WANTED, **options: str) -> dict[str, TrackerRun]:
    return {run.name: run for run in mlflow_store.read_runs(location, wanted, ReadOptions(**options))}


def copy_store(store: Store, tmp_path: Path) -> str:
    """A copy of the store at a new location (a store a test may change, opened afresh by MLflow)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if store.folder is None:
        shutil.copy(store.location.removeprefix("sqlite:///"), tmp_path / "copy.db")
        return f"sqlite:///{tmp_path}/copy.db"
    return str(shutil.copytree(store.folder, tmp_path / "mlruns"))


# -- what a run carries ----------------------------------------------------------------------------------------


def test_the_active_runs_of_every_experiment_are_read_with_their_ids_and_names(
    store: Store, runs: dict[str, TrackerRun]
) -> None:
    assert sorted(runs) == ["b1", "r1", "r2", "r3"]  # r4 was deleted
    for name, run in runs.items():
        assert (run.tracker, run.uri, run.run_id) == ("mlflow", f"mlflow:{store.location}", store.run_ids[name])
        assert run.label() == f"mlflow run {store.run_ids[name]} ({name!r})"


def test_tags_and_params_are_mlflows_including_the_prereg_tags(runs: dict[str, TrackerRun]) -> None:
    r1 = runs["r1"]
    assert {k: v for k, v in r1.tags.items() if k.startswith("prereg.")} == {
        "prereg.run_id": RUN_ID_TAG,
        "prereg.arm": "fast",
        "prereg.seed": "101",
    }
    assert r1.tags["mlflow.runName"] == "r1"
    assert r1.params == {"lr": "0.1", "layers": "2"}
    assert r1.git_commit == GIT_COMMIT
    assert runs["r2"].tags["prereg.run_id"] == "run-fffff00000fffff00000"
    assert runs["r2"].params == {"lr": "0.01"}
    assert runs["r2"].git_commit is None
    assert runs["b1"].params == {"lr": "0.5"}


def test_status_maps_finished_failed_killed_and_running(runs: dict[str, TrackerRun]) -> None:
    assert {name: run.status for name, run in runs.items()} == {
        "r1": "complete",
        "r2": "failed",
        "r3": "running",
        "b1": "failed",
    }


def test_times_are_mlflows_start_and_end_in_utc_within_the_logging_window(
    store: Store, runs: dict[str, TrackerRun]
) -> None:
    for name, run in runs.items():
        assert run.started_at is not None and run.started_at.utcoffset() == timedelta(0)
        assert store.started <= run.started_at <= store.ended, name
        if name == "r3":
            assert run.finished_at is None  # still running: no end time
        else:
            assert run.finished_at is not None and run.finished_at.utcoffset() == timedelta(0)
            assert run.started_at <= run.finished_at <= store.ended, name


def test_values_last_min_max_and_at_a_step(runs: dict[str, TrackerRun]) -> None:
    r1 = runs["r1"]
    # last: MLflow's latest (highest step; of the two values at step 2, the later); at step 2: the later too
    assert r1.values == {
        "loss_last": 1.5,
        "loss_min": 1.0,
        "loss_max": 3.0,
        "loss_at_1": 1.0,
        "loss_at_2": 1.5,
        "acc": 0.5,
        "acc_min": 0.5,
    }
    assert r1.missing == {
        "loss_at_9": "metric 'loss' has no value at step 9 (steps logged: 0, 1, 2)",
        "never": NEVER,
        "never_max": NEVER,
    }


def test_a_nan_logged_comes_back_as_nan_for_the_import_to_refuse(runs: dict[str, TrackerRun]) -> None:
    r2 = runs["r2"]
    for metric in ("loss_last", "loss_min", "loss_max"):
        assert math.isnan(r2.values[metric]), metric
    assert r2.missing["loss_at_2"] == "metric 'loss' has no value at step 2 (steps logged: 0, 1)"
    assert math.isnan(r2.values["loss_at_1"])


def test_a_running_run_has_its_values_and_a_run_without_the_metric_says_so(runs: dict[str, TrackerRun]) -> None:
    assert runs["r3"].values["loss_last"] == 4.0
    assert runs["b1"].missing["loss_last"] == "metric 'loss' was never logged"


def test_a_step_logged_twice_in_one_millisecond_gives_mlflows_latest_at_that_step(store: Store, tmp_path: Path) -> None:
    import mlflow  # lazy: the module fixture imported it

    location = copy_store(store, tmp_path)
    client = mlflow.MlflowClient(tracking_uri=location)
    run_id = client.create_run(store.experiment_ids["exp-b"], run_name="tie").info.run_id
    moment = int(time.time() * 1000)
    for key, values in (("loss", (7.0, 2.0)), ("acc", (2.0, 7.0))):
        for value in values:
            client.log_metric(run_id, key, value, timestamp=moment, step=5)
    wanted = [Wanted("loss", "loss"), Wanted("loss_at_5", "loss", "step", 5)]
    wanted += [Wanted("acc", "acc"), Wanted("acc_at_5", "acc", "step", 5)]
    tie = read(location, wanted, experiment="exp-b")["tie"]
    assert (tie.values["loss"], tie.values["acc"]) == (7.0, 7.0)  # MLflow's latest: the larger value on a tie
    assert (tie.values["loss_at_5"], tie.values["acc_at_5"]) == (7.0, 7.0)


# -- narrowing: experiment, filter, pages ----------------------------------------------------------------------


def test_an_experiment_is_chosen_by_name_or_by_id(store: Store) -> None:
    assert sorted(read(store.location, experiment="exp-a")) == ["r1", "r2", "r3"]
    assert sorted(read(store.location, experiment="exp-b")) == ["b1"]
    assert sorted(read(store.location, experiment=store.experiment_ids["exp-b"])) == ["b1"]


def test_an_unknown_experiment_is_refused_naming_the_experiments(store: Store) -> None:
    with pytest.raises(TrackerProblem) as caught:
        read(store.location, experiment="exp-c")
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert str(caught.value) == (
        f"mlflow:{store.location}: no experiment named 'exp-c' (experiments: Default, exp-a, exp-b)"
    )
    with pytest.raises(TrackerProblem, match="no experiment named '424242'"):
        read(store.location, experiment="424242")


def test_a_filter_in_mlflows_syntax_narrows_the_runs(store: Store) -> None:
    assert sorted(read(store.location, filter="params.lr = '0.1'")) == ["r1"]
    assert sorted(read(store.location, filter="params.lr != '0.1'")) == ["b1", "r2"]
    assert sorted(read(store.location, experiment="exp-b", filter="params.lr = '0.1'")) == []
    assert sorted(read(store.location, filter=f"tags.`prereg.run_id` = '{RUN_ID_TAG}'")) == ["r1"]


def test_a_filter_mlflow_cannot_parse_is_refused_in_one_line(store: Store) -> None:
    with pytest.raises(TrackerProblem) as caught:
        read(store.location, filter="params.lr ==== 1")
    assert str(caught.value).startswith(f"mlflow:{store.location}: the store cannot be read (")
    assert "\n" not in str(caught.value)


def test_runs_over_several_pages_are_all_read(
    store: Store, runs: dict[str, TrackerRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mlflow_store, "PAGE", 1)
    paged = read(store.location)
    assert {name: run.content_sha256() for name, run in paged.items()} == {
        name: run.content_sha256() for name, run in runs.items()
    }


# -- provenance: the files read and the content hash -----------------------------------------------------------


def test_the_file_stores_files_are_hashed(stores: dict[str, Store]) -> None:
    store = stores["file"]
    assert store.folder is not None
    runs = read(store.location)
    for name, run in runs.items():
        base = f"{store.experiment_ids['exp-b' if name == 'b1' else 'exp-a']}/{run.run_id}"
        expected = {f"{base}/meta.yaml"}
        expected |= {f"{base}/params/{k}" for k in run.params} | {f"{base}/tags/{k}" for k in run.tags}
        expected |= {f"{base}/metrics/{key}" for key in LOGGED_WANTED[name]}
        assert set(run.files) == expected, name
        for relative, digest in run.files.items():
            assert digest == hashlib.sha256((store.folder / relative).read_bytes()).hexdigest()
    assert not any(path.endswith("/metrics/unwanted") for path in runs["r1"].files)


def test_an_edited_metric_file_changes_its_hash_and_the_content_hash(stores: dict[str, Store], tmp_path: Path) -> None:
    store = stores["file"]
    location = copy_store(store, tmp_path)
    before = read(location)["r1"]
    metric_file = Path(location) / store.experiment_ids["exp-a"] / before.run_id / "metrics" / "loss"
    key = metric_file.relative_to(location).as_posix()
    with open(metric_file, "a") as fh:
        fh.write(f"{int(time.time() * 1000)} 0.25 3\n")  # MLflow's line: timestamp value step
    after = read(location)["r1"]
    assert after.files[key] != before.files[key]
    assert after.files[key] == hashlib.sha256(metric_file.read_bytes()).hexdigest()
    assert after.content_sha256() != before.content_sha256()
    assert (before.values["loss_last"], after.values["loss_last"]) == (1.5, 0.25)  # read through MLflow


def test_the_sqlite_store_has_no_files_and_a_tag_set_later_changes_the_content_hash(
    stores: dict[str, Store], tmp_path: Path
) -> None:
    import mlflow  # lazy: the module fixture imported it

    location = copy_store(stores["sqlite"], tmp_path)
    before = read(location)
    assert all(run.files == {} for run in before.values())
    mlflow.MlflowClient(tracking_uri=location).set_tag(before["r1"].run_id, "note", "edited")
    after = read(location)
    assert after["r1"].tags["note"] == "edited"
    assert after["r1"].content_sha256() != before["r1"].content_sha256()
    assert after["r2"].content_sha256() == before["r2"].content_sha256()


def test_the_same_run_read_twice_has_the_same_content_hash(store: Store, runs: dict[str, TrackerRun]) -> None:
    again = read(store.location)
    assert {n: r.content_sha256() for n, r in again.items()} == {n: r.content_sha256() for n, r in runs.items()}


def test_reading_prints_nothing(stores: dict[str, Store], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    sqlite_copy = copy_store(stores["sqlite"], tmp_path / "s")  # opened afresh: MLflow sets its engine up
    file_copy = copy_store(stores["file"], tmp_path / "f")
    capfd.readouterr()
    assert len(read(sqlite_copy)) == len(read(file_copy)) == 4
    assert capfd.readouterr() == ("", "")


def test_a_file_store_is_read_without_the_environment_variable(
    stores: dict[str, Store], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = copy_store(stores["file"], tmp_path)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    assert sorted(read(location)) == ["b1", "r1", "r2", "r3"]


def test_reading_a_file_store_leaves_the_environment_as_it_was(
    stores: dict[str, Store], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = copy_store(stores["file"], tmp_path)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    read(location)
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ


# -- stores refused ----------------------------------------------------------------------------------------------


def test_a_sqlite_path_that_does_not_exist_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(TrackerProblem) as caught:
        read(f"sqlite:///{path}")
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert str(caught.value).startswith(f"mlflow:sqlite:///{path}: no such sqlite store")
    assert not path.exists()
    with pytest.raises(TrackerProblem, match="no such sqlite store"):
        read(f"sqlite://host/{path}")


@pytest.mark.parametrize("tables", [[], ["CREATE TABLE notes (text TEXT)"]], ids=["no-tables", "other-tables"])
def test_a_sqlite_database_without_mlflows_tables_is_refused_untouched(tmp_path: Path, tables: list[str]) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        for statement in tables:
            db.execute(statement)
    db.close()
    before = path.read_bytes()
    with pytest.raises(TrackerProblem) as caught:
        read(f"sqlite:///{path}")
    assert str(caught.value) == (
        f"mlflow:sqlite:///{path}: a sqlite database without MLflow's tables (experiments, runs)"
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database, just some text that is long enough to hold a header\n" * 4)
    before = path.read_bytes()
    with pytest.raises(TrackerProblem, match=r"^mlflow:sqlite:///.*notes\.db: not a sqlite database \("):
        read(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_a_folder_that_does_not_exist_is_refused_and_not_created(tmp_path: Path) -> None:
    for location in (str(tmp_path / "mlruns"), (tmp_path / "mlruns").as_uri()):
        with pytest.raises(TrackerProblem) as caught:
            read(location)
        assert str(caught.value) == (
            f"mlflow:{location}: no such folder (an MLflow file store is a folder like mlruns/)"
        )
    assert not (tmp_path / "mlruns").exists()


def test_a_uri_of_another_kind_is_refused() -> None:
    with pytest.raises(TrackerProblem, match=r"not a tracking URI this import reads \(sqlite:///, a folder"):
        read("s3://bucket/mlruns")


def test_a_folder_that_is_not_an_mlflow_store_is_refused_untouched(tmp_path: Path, allow_file_store: None) -> None:
    # allow_file_store: whatever the reader sets in the environment is undone with the module's fixture
    pytest.importorskip("mlflow")  # lazy: seconds of import
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes.txt").write_text("a folder of something else\n")
    with pytest.raises(TrackerProblem, match="not an MLflow file store"):
        read(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "notes.txt"]


def test_an_unreachable_server_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")  # lazy: seconds of import
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(TrackerProblem) as caught:
        read("http://127.0.0.1:9")
    assert str(caught.value).startswith("mlflow:http://127.0.0.1:9: the store cannot be read (")
    assert "\n" not in str(caught.value)


def test_without_mlflow_installed_the_extra_is_named(stores: dict[str, Store], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    with pytest.raises(TrackerProblem, match=r"needs the mlflow package.*pip install 'prereg-toolkit\[mlflow\]'"):
        read(stores["sqlite"].location)
