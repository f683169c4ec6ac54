"""`collect import mlflow:URI` from the console script: import, import again, `collect plan --tracker`, and
each bad input refused with one message and exit 2, nothing written (prereg_toolkit_cli.collect_trackers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collect.ledger.store import read_ledger
from tests.helpers import run

pytestmark = pytest.mark.subprocess  # every test here launches a console script
mlflow = pytest.importorskip("mlflow")

ROOT = Path(__file__).resolve().parents[2]


def nll(planned: dict) -> float:
    """Known by construction: continue is 0.001 nats worse than restart, plus a per-block wobble."""
    site = planned["stratum"]["fail_site"]
    return 0.75 + 0.0001 * site + ((0.001 + 0.0002 * (site % 2)) if planned["arm"] == "continue" else 0.0)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A frozen examples/trackers.yaml and an MLflow sqlite store holding its 16 runs, logged with MLflow's client."""
    from mlflow import MlflowClient

    tmp = tmp_path_factory.mktemp("mlflow-cli")
    lock = tmp / "trk.lock.json"
    assert run("prereg", "freeze", str(ROOT / "examples" / "trackers.yaml"), "-o", str(lock)).returncode == 0
    planned = json.loads(run("collect", "plan", str(lock), "--format", "json").stdout)["runs"]
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("trk")
    for p in planned:
        tags = {"prereg.run_id": p["run_id"], "prereg.arm": p["arm"], "prereg.seed": str(p["seed"])}
        made = client.create_run(exp, tags=tags, run_name=f"{p['arm']}-{p['stratum']['fail_site']}")
        site = p["stratum"]["fail_site"]
        steps = 240.0 + (site % 2) + (11.0 if p["arm"] == "restart" else 0.0)
        client.log_metric(made.info.run_id, "eval/nll", nll(p), step=240)
        client.log_metric(made.info.run_id, "attempted_steps", steps, step=240)
        client.log_metric(made.info.run_id, "lost_steps", 11.0, step=240)
        client.set_terminated(made.info.run_id, "FINISHED")
    return {"tmp": tmp, "lock": lock, "uri": uri, "planned": planned, "client": client, "exp": exp}


def test_import_then_again_skips_what_is_in(study, tmp_path):
    """The runs and their provenance; a second import appends nothing (docs/trackers.md's example, checked by
    tests/test_trackers_example.py, evaluates and verifies against the store)."""
    runs, source = tmp_path / "runs", f"mlflow:{study['uri']}"
    proc = run("collect", "import", source, "--lock", str(study["lock"]), "--out", str(runs), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["read"] == 16 and out["imported"] == 16 and out["not_matched"] == []
    records = {r.run_id: r for r in read_ledger(runs).records}
    for p in study["planned"]:
        record = records[p["run_id"]]
        assert record.metric("final_nll") == nll(p) and record.seed == p["seed"]
        assert record.provenance is not None and record.provenance.uri == source
    again = run("collect", "import", source, "--lock", str(study["lock"]), "--out", str(runs), "--json")
    assert json.loads(again.stdout)["already_present"] == 16  # the same runs, identically: nothing appended
    assert len(read_ledger(runs).records) == 16


def test_plan_prints_each_runs_tags_for_a_tracker(study):
    proc = run("collect", "plan", str(study["lock"]), "--tracker", "mlflow")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 32 and all(f'"prereg.run_id": "{p["run_id"]}"' in proc.stdout for p in study["planned"])
    assert lines[1].startswith("mlflow.set_tags({")
    assert run("collect", "plan", str(study["lock"]), "--tracker", "mlflow", "--format", "json").returncode == 2


@pytest.mark.parametrize(
    ("source", "extra", "words"),
    [
        ("mlflow:sqlite:///{tmp}/absent.db", (), "no such sqlite store"),
        ("mlflow:{tmp}/absent-folder", (), "no such folder"),
        ("mlflow:{uri}", ("--experiment", "nope"), "no experiment named 'nope' (experiments: Default, trk)"),
        ("mlflow:{uri}", ("--telemetry", "logs"), "the power logs go with a table of runs"),
        ("tensorboard:{tmp}", ("--filter", "x"), "--experiment and --filter narrow an MLflow store"),
        ("mlflow:{uri}", ("--match", "seed"), "write COLUMN=FIELD"),
        ("{tmp}/runs.csv", ("--match", "seed=params.seed"), "--match: options of a tracker source"),
    ],
)
def test_bad_input_is_one_message_and_exit_2_with_nothing_written(study, tmp_path, source, extra, words):
    runs = tmp_path / "runs"
    source = source.format(tmp=study["tmp"], uri=study["uri"])
    proc = run("collect", "import", source, "--lock", str(study["lock"]), "--out", str(runs), *extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not runs.exists()
    assert not (study["tmp"] / "absent.db").exists()  # MLflow would have made an empty store


def test_a_run_that_does_not_fit_refuses_the_whole_import_naming_it(study, tmp_path):
    client = study["client"]
    p = study["planned"][0]
    extra = client.create_run(study["exp"], tags={"prereg.run_id": p["run_id"]}, run_name="duplicate")
    client.log_metric(extra.info.run_id, "eval/nll", 0.7, step=100)  # and not at step 240
    client.set_terminated(extra.info.run_id, "FINISHED")
    try:
        runs = tmp_path / "runs"
        proc = run("collect", "import", f"mlflow:{study['uri']}", "--lock", str(study["lock"]), "--out", str(runs))
    finally:
        client.delete_run(extra.info.run_id)  # deleted runs are not read (MLflow's ACTIVE_ONLY)
    assert proc.returncode == 2 and not runs.exists()
    both = [line for line in proc.stderr.splitlines() if "are both planned run " + p["run_id"] in line]
    assert len(both) == 1 and f"mlflow run {extra.info.run_id} ('duplicate')" in both[0]
    assert "final_nll: metric 'eval/nll' has no value at step 240 (steps logged: 100)" in proc.stderr
