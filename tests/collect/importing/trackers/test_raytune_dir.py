"""The Ray Tune reader on a real experiment folder that Ray Tune 2.60 wrote (tests/fixtures/raytune/exp, made by
tests/fixtures/raytune/make_experiment.py): trials, tags and params, the reported values by training_iteration,
status, times, file hashes; junk refused naming the file; no pickle inside the folder ever decoded."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import shutil
from datetime import UTC
from pathlib import Path
from types import ModuleType

import pytest

from collect.importing.trackers import raytune_dir
from collect.importing.trackers.base import ReadOptions, TrackerProblem, TrackerRun, Wanted
from prereg.errors import EXIT_BAD_INPUT
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "raytune"
EXPERIMENT = FIXTURES / "exp"
LOSS = [Wanted("last", "loss"), Wanted("low", "loss", "min"), Wanted("high", "loss", "max")]


def _generator() -> ModuleType:
    """The fixture's generator (it imports Ray only when run): its trainable's arithmetic is the expectation."""
    spec = importlib.util.spec_from_file_location("raytune_make_experiment", FIXTURES / "make_experiment.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def reported(run_id: str) -> list[int]:
    """The training iterations trial ``run_id`` reported before it ended (or failed)."""
    last = GEN.FAIL_AT.get(run_id, GEN.ITERATIONS + 1) - 1
    return list(range(1, min(last, GEN.ITERATIONS) + 1))


def read(location: Path, wanted: list[Wanted] = LOSS) -> dict[str, TrackerRun]:
    """The runs by their ``prereg.run_id`` tag."""
    return {run.tags["prereg.run_id"]: run for run in raytune_dir.read_runs(str(location), wanted, ReadOptions())}


def copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXPERIMENT, tmp_path / "exp"))


def trial_dir(root: Path, run_id: str) -> Path:
    (found,) = root.glob(f"*_prereg_run_id={run_id}_*")
    return found


@pytest.fixture(scope="module")
def runs() -> dict[str, TrackerRun]:
    return read(EXPERIMENT)


def test_each_trial_is_one_run_named_by_its_id_and_folder(runs: dict[str, TrackerRun]) -> None:
    assert sorted(runs) == sorted(GEN.BASE)
    for run_id, run in runs.items():
        folder = trial_dir(EXPERIMENT, run_id)
        assert (run.tracker, run.uri, run.name, run.git_commit) == (
            "raytune",
            f"raytune:{EXPERIMENT}",
            folder.name,
            None,
        )
        assert json.loads((folder / "result.json").read_text().splitlines()[0])["trial_id"] == run.run_id
    assert {r: run.status for r, run in runs.items()} == {r: "failed" if r in GEN.FAIL_AT else "complete" for r in runs}


def test_prereg_keys_are_tags_and_the_rest_params_flattened_as_tune_does(runs: dict[str, TrackerRun]) -> None:
    for index, (run_id, run) in enumerate(sorted(runs.items())):
        assert run.tags == {"prereg.run_id": run_id, "prereg.arm": GEN.ARM[run_id], "prereg.replicate": "1"}
        assert run.params == {"seed": 100 + index, "optimizer/name": "sgd", "optimizer/lr": 0.1}


def test_a_prereg_dict_in_the_config_gives_the_tags_as_collect_plan_prints_them(tmp_path: Path) -> None:
    """``param_space={"prereg": tune.grid_search([{"run_id": ...}, ...])}`` (collect plan --tracker raytune)."""
    root = copy(tmp_path)
    params = trial_dir(root, "r1") / "params.json"
    config = json.loads(params.read_text())
    tags = {k.removeprefix("prereg."): config.pop(k) for k in list(config) if k.startswith("prereg.")}
    params.write_text(json.dumps({**config, "prereg": tags}))
    run = read(root)["r1"]
    assert run.tags == {"prereg.run_id": "r1", "prereg.arm": GEN.ARM["r1"], "prereg.replicate": "1"}
    assert run.params == {"seed": 100, "optimizer/name": "sgd", "optimizer/lr": 0.1}


def test_values_are_what_the_trainable_reported_by_training_iteration(runs: dict[str, TrackerRun]) -> None:
    for run_id, run in runs.items():
        series = [GEN.loss(run_id, i) for i in reported(run_id)]
        assert run.values == {"last": series[-1], "low": min(series), "high": max(series)}
        assert len(set(run.values.values())) == 3 or run_id in GEN.FAIL_AT  # last, min and max told apart
        assert not run.missing


def test_a_value_at_a_step_and_what_is_missing() -> None:
    wanted = [Wanted("at2", "loss", "step", 2), Wanted("at5", "loss", "step", 5), Wanted("acc", "accuracy")]
    for run_id, run in read(EXPERIMENT, wanted).items():
        assert run.values["at2"] == GEN.loss(run_id, 2)
        if run_id in GEN.FAIL_AT:
            assert run.missing["at5"] == "metric 'loss' has no value at step 5 (steps logged: 1, 2, 3)"
        else:
            assert run.values["at5"] == GEN.loss(run_id, 5)
        assert run.missing["acc"] == "metric 'accuracy' was never logged"


def test_times_are_utc_between_tunes_start_and_last_result(runs: dict[str, TrackerRun]) -> None:
    for run_id, run in runs.items():
        assert run.started_at is not None and run.finished_at is not None
        assert run.started_at.tzinfo == UTC and run.started_at <= run.finished_at
        lines = [json.loads(x) for x in (trial_dir(EXPERIMENT, run_id) / "result.json").read_text().splitlines()]
        # result.json's `timestamp` is whole seconds, taken in the trial before the driver records the result
        assert run.started_at.timestamp() <= lines[0]["timestamp"] + 1
        assert lines[-1]["timestamp"] <= run.finished_at.timestamp()


def test_every_file_read_is_hashed_and_a_changed_byte_changes_its_hash(tmp_path: Path) -> None:
    root = copy(tmp_path)
    before = read(root)
    (state,) = root.glob("experiment_state-*.json")
    for run_id, run in before.items():
        folder = trial_dir(root, run_id).name
        assert set(run.files) == {state.name, f"{folder}/params.json", f"{folder}/result.json"}
        for name, digest in run.files.items():
            assert digest == hashlib.sha256((root / name).read_bytes()).hexdigest()
    result = trial_dir(root, "r1") / "result.json"
    result.write_bytes(result.read_bytes().replace(b'"hostname": "vm"', b'"hostname": "vn"', 1))
    after = read(root)
    changed = {r for r in before if after[r].files != before[r].files}
    assert changed == {"r1"} and after["r1"].content_sha256() != before["r1"].content_sha256()
    assert after["r1"].values == before["r1"].values  # the byte is not a value: only the hash tells


def test_progress_csv_is_read_where_there_is_no_result_json(tmp_path: Path, runs: dict[str, TrackerRun]) -> None:
    root = copy(tmp_path)
    for path in root.glob("*/result.json"):
        path.unlink()
    for run_id, run in read(root).items():
        assert run.values == runs[run_id].values
        assert f"{trial_dir(root, run_id).name}/progress.csv" in run.files


def test_nan_and_infinite_values_come_back_as_floats(tmp_path: Path) -> None:
    root = copy(tmp_path)
    for run_id, text in (("r1", "NaN"), ("r2", "Infinity"), ("r4", '"null"')):  # "null": Tune's NumPy NaN
        path = trial_dir(root, run_id) / "result.json"
        lines = path.read_text().splitlines()
        last = json.loads(lines[-1])
        lines[-1] = json.dumps(last).replace(f'"loss": {last["loss"]}', f'"loss": {text}')
        path.write_text("\n".join(lines) + "\n")
    found = read(root, [Wanted("last", "loss")])
    assert math.isnan(found["r1"].values["last"]) and math.isnan(found["r4"].values["last"])
    assert found["r2"].values["last"] == math.inf


def test_no_pickle_in_the_folder_is_decoded(tmp_path: Path, runs: dict[str, TrackerRun]) -> None:
    """Every cloudpickled field of the experiment state replaced by bytes no unpickler takes, and a tuner.pkl
    and params.pkl of junk beside them: the runs read are the same."""
    root = copy(tmp_path)
    (state,) = root.glob("experiment_state-*.json")
    data = json.loads(state.read_text())
    spoilt = 0
    for entry in data["trial_data"]:
        trial = json.loads(entry[0])
        for key, value in trial.items():
            if isinstance(value, str) and value.startswith("8005"):  # a pickle's protocol-5 header, as hex
                trial[key], spoilt = "ff" * 8, spoilt + 1
            elif isinstance(value, dict) and value.get("_type") == "CLOUDPICKLE_FALLBACK":
                value["value"], spoilt = "ff" * 8, spoilt + 1
        entry[0] = json.dumps(trial)
    state.write_text(json.dumps(data))
    assert spoilt >= 6 * len(data["trial_data"])  # storage and the five fields Trial.__setstate__ unpickles
    for path in [root / "tuner.pkl", *(d / "params.pkl" for d in root.iterdir() if d.is_dir())]:
        path.write_bytes(b"\xff junk, not a pickle")
    for run_id, run in read(root).items():
        same = runs[run_id]
        assert (run.run_id, run.status, run.tags, run.params, run.values) == (
            same.run_id,
            same.status,
            same.tags,
            same.params,
            same.values,
        )


def _state(root: Path) -> Path:
    (state,) = root.glob("experiment_state-*.json")
    return state


def _edit_state(root: Path, run_id: str, **fields: str) -> None:
    """Sets ``fields`` in the experiment state's entry of trial ``run_id``."""
    state, folder = _state(root), trial_dir(root, run_id).name
    data = json.loads(state.read_text())
    for entry in data["trial_data"]:
        trial = json.loads(entry[0])
        if trial["relative_logdir"] == folder:
            entry[0] = json.dumps({**trial, **fields})
    state.write_text(json.dumps(data))


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


STATE = r"experiment_state-[-_0-9]+\.json: "
R1, R2, R4 = (rf"prereg_run_id={r}_[-_0-9]+/" for r in ("r1", "r2", "r4"))
JUNK = {  # what spoils a copy of the fixture, and the message (a regular expression) naming the file
    "no experiment state": (lambda root: _state(root).unlink(), r"exp: no experiment_state-\*\.json here"),
    "state not JSON": (lambda root: _state(root).write_text("{"), STATE + "not valid JSON"),
    "state of another form": (lambda root: _state(root).write_text('{"trials": []}'), STATE + "no 'trial_data' list"),
    "a folder outside": (
        lambda root: _edit_state(root, "r1", relative_logdir="../elsewhere"),
        STATE + r"trial_data entry \d: .* folder '\.\./elsewhere' is not a folder of the experiment",
    ),
    "an unknown status": (lambda root: _edit_state(root, "r1", status="LOST"), STATE + ".* has status 'LOST'"),
    "params not JSON": (
        lambda root: (trial_dir(root, "r1") / "params.json").write_text("{oops"),
        R1 + "params.json: not valid JSON",
    ),
    "a finished trial without params": (
        lambda root: (trial_dir(root, "r1") / "params.json").unlink(),
        R1 + "params.json: missing, for trial .* that Tune marks TERMINATED",
    ),
    "a broken result line": (
        lambda root: _append(trial_dir(root, "r1") / "result.json", '{"loss": 1'),
        R1 + "result.json: line 6: not valid JSON",
    ),
    "a value that is no number": (
        lambda root: _append(
            trial_dir(root, "r2") / "result.json", '{"loss": "tensor(1.0)", "training_iteration": 6}\n'
        ),
        R2 + r"result.json: line 6: metric 'loss' is 'tensor\(1\.0\)', not a number",
    ),
    "another trial's result": (
        lambda root: _append(
            trial_dir(root, "r2") / "result.json", '{"loss": 1.0, "trial_id": "x", "training_iteration": 6}\n'
        ),
        R2 + "result.json: line 6 is trial x's",
    ),
    "a result without its iteration": (
        lambda root: _append(trial_dir(root, "r4") / "result.json", '{"loss": 1.0}\n'),
        R4 + "result.json: line 6: training_iteration is None, not a whole number",
    ),
}


@pytest.mark.parametrize("case", sorted(JUNK))
def test_junk_is_refused_naming_the_file(tmp_path: Path, case: str) -> None:
    root = copy(tmp_path)
    spoil, message = JUNK[case]
    spoil(root)
    with pytest.raises(TrackerProblem, match=message) as caught:
        read(root)
    assert caught.value.exit_code == EXIT_BAD_INPUT


def test_a_failed_trial_without_params_is_read_without_tags(tmp_path: Path) -> None:
    """A trial that failed before Tune wrote its config (no params.json) is a run with no tags, not junk."""
    root = copy(tmp_path)
    (trial_dir(root, "r3") / "params.json").unlink()
    found = {run.name: run for run in raytune_dir.read_runs(str(root), LOSS, ReadOptions())}
    run = found[trial_dir(root, "r3").name]
    assert (run.status, run.tags, run.params, run.values["last"]) == ("failed", {}, {}, GEN.loss("r3", 3))


def test_a_running_trial_is_read_as_running_and_its_torn_line_blocks_no_other(tmp_path: Path) -> None:
    root = copy(tmp_path)
    _edit_state(root, "r1", status="RUNNING")
    _append(trial_dir(root, "r1") / "result.json", '{"loss": 1')
    found = read(root)
    assert found["r1"].status == "running" and not found["r1"].values
    assert found["r1"].missing["last"].startswith("unreadable while the trial runs (")
    assert found["r2"].values["last"] == GEN.loss("r2", GEN.ITERATIONS)


def test_a_storage_path_is_refused_naming_the_experiment_inside(tmp_path: Path) -> None:
    root = copy(tmp_path)
    with pytest.raises(
        TrackerProblem, match=f"experiments inside it: exp \\(name one: raytune:{re.escape(str(root))}\\)"
    ):
        read(tmp_path)
    with pytest.raises(TrackerProblem, match="absent: no such folder"):
        read(tmp_path / "absent")


def test_tunes_own_reader_sees_the_same_trials(tmp_path: Path, runs: dict[str, TrackerRun]) -> None:
    """Ray's ExperimentAnalysis (it unpickles the state: fine for this fixture, made here) on a copy: the same
    trial ids, statuses, configs and loss series."""
    tune = pytest.importorskip("ray.tune")
    analysis = tune.ExperimentAnalysis(str(copy(tmp_path)))
    ours = {run.run_id: run for run in runs.values()}
    assert sorted(t.trial_id for t in analysis.trials) == sorted(ours)
    for trial in analysis.trials:
        run = ours[trial.trial_id]
        assert {"TERMINATED": "complete", "ERROR": "failed"}[trial.status] == run.status
        assert {k: str(v) for k, v in trial.config.items() if k.startswith("prereg.")} == run.tags
        nested = {"name": run.params["optimizer/name"], "lr": run.params["optimizer/lr"]}
        assert (trial.config["seed"], trial.config["optimizer"]) == (run.params["seed"], nested)
        loss = list(analysis.trial_dataframes[trial.trial_id]["loss"])
        assert (loss[-1], min(loss), max(loss)) == (run.values["last"], run.values["low"], run.values["high"])
