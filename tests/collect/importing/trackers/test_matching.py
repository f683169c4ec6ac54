"""Tracker runs matched to planned runs: by the tag prereg.run_id (checked against the other prereg.* tags)
or by --match fields; every problem names the tracker run (collect.importing.trackers.matching)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collect.importing.planned import planned_runs, planned_tags, tracker_snippets
from collect.importing.trackers.base import TrackerProblem, TrackerRun
from collect.importing.trackers.matching import match_runs, parse_match
from prereg.plan import load_plan

ROOT = Path(__file__).resolve().parents[4]
LOADED = load_plan(ROOT / "examples" / "trackers.yaml")
PLAN, SHA = LOADED.plan, LOADED.plan_sha256
PLANNED = planned_runs(PLAN, SHA)
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
VALUES = {"final_nll": 0.75, "attempted_steps": 251.0, "lost_steps": 11.0}


def tracked(i: int, tags: dict[str, str] | None = None, **extra) -> TrackerRun:
    """Tracker run ``i`` carrying planned run ``i``'s tags (or ``tags``)."""
    run = TrackerRun(
        tracker="mlflow",
        uri="mlflow:sqlite:///m.db",
        run_id=f"t{i}",
        name=f"name{i}",
        tags=planned_tags(PLAN, PLANNED[i]) if tags is None else tags,
        values=dict(VALUES),
        started_at=T0 + timedelta(minutes=i),
        finished_at=T0 + timedelta(minutes=i, seconds=30),
    )
    for key, value in extra.items():
        setattr(run, key, value)
    return run


def problem(runs, match=None) -> str:
    with pytest.raises(TrackerProblem) as err:
        match_runs(runs, PLAN, SHA, "mlflow:sqlite:///m.db", match)
    return str(err.value)


def test_runs_tagged_with_their_planned_run_become_its_rows_with_provenance():
    runs = [tracked(i) for i in range(len(PLANNED))] + [tracked(99, tags={"other": "x"})]
    matched = match_runs(runs, PLAN, SHA, "mlflow:sqlite:///m.db")
    assert [r["run_id"] for r in matched.rows] == [p.run_id for p in PLANNED]
    first, plan0 = matched.rows[0], PLANNED[0]
    assert first["arm"] == plan0.arm and first["replicate"] == 0 and first["seed"] == plan0.seed
    assert {f: first[f] for f in PLAN.strata.factors} == plan0.stratum
    assert first["started_at"] == "2026-12-01T10:00:00.000000Z" and first["final_nll"] == 0.75
    update = matched.updates[plan0.run_id]
    assert update["source"] == "import:mlflow:sqlite:///m.db run t0"
    assert update["provenance"]["run_id"] == "t0" and update["provenance"]["content_sha256"] == runs[0].content_sha256()
    assert [r.run_id for r in matched.unmatched] == ["t99"]  # no prereg.run_id: left out, counted
    assert matched.labels[0] == "mlflow run t0 ('name0')"


def test_content_hash_changes_with_what_was_read():
    a, b = tracked(0), tracked(0)
    assert a.content_sha256() == b.content_sha256()
    b.values["final_nll"] = 0.7500001
    assert a.content_sha256() != b.content_sha256()
    b = tracked(0)
    b.tags["note"] = "edited"
    assert a.content_sha256() != b.content_sha256()


def test_a_run_id_that_is_not_of_this_plan_or_contradicting_tags_are_refused():
    text = problem([tracked(0, tags={"prereg.run_id": "run-00000000000000000000"})])
    assert "mlflow run t0 ('name0'): tag prereg.run_id = 'run-00000000000000000000' is not a run of this plan" in text
    tags = planned_tags(PLAN, PLANNED[0]) | {"prereg.arm": "other-arm"}
    text = problem([tracked(0, tags=tags)])
    assert f"tag prereg.arm = 'other-arm', but planned run {PLANNED[0].run_id} has '{PLANNED[0].arm}'" in text


def test_two_tracker_runs_for_one_planned_run_are_refused_naming_both():
    text = problem([tracked(0), tracked(1), tracked(2, tags=planned_tags(PLAN, PLANNED[0]))])
    assert "mlflow run t2 ('name2') and mlflow run t0 ('name0') are both planned run" in text
    assert text.startswith("mlflow:sqlite:///m.db: nothing imported")


def test_non_finite_missing_and_running_runs_are_refused_naming_the_run():
    nan, missing, running = tracked(0), tracked(1), tracked(2, status="running")
    nan.values["final_nll"] = math.nan
    del missing.values["lost_steps"]
    missing.missing["lost_steps"] = "metric 'lost_steps' was never logged"
    text = problem([nan, missing, running])
    assert "mlflow run t0 ('name0'): metric final_nll is nan; a run's value must be a finite number" in text
    assert "mlflow run t1 ('name1'): lost_steps: metric 'lost_steps' was never logged" in text
    assert "mlflow run t2 ('name2'): still running" in text


def test_a_failed_run_may_lack_metrics_and_says_why_it_failed():
    failed = tracked(0, status="failed")
    failed.values = {}
    matched = match_runs([failed], PLAN, SHA, "src")
    assert matched.rows[0]["status"] == "failed" and "final_nll" not in matched.rows[0]
    assert "recorded as failed" in matched.updates[PLANNED[0].run_id]["error"]


def test_no_run_matched_is_refused_saying_how_to_tag():
    text = problem([tracked(0, tags={}), tracked(1, tags={})])
    assert "none of its 2 runs is matched by the tag prereg.run_id" in text and "--tracker" in text


def pre_plan_run(i: int, **params) -> TrackerRun:
    p = PLANNED[i]
    base = {"policy": p.arm, "seed": str(p.seed), **{f: str(v) for f, v in p.stratum.items()}}
    return tracked(i, tags={}, params=base | params)


def test_runs_made_before_the_plan_are_matched_by_declared_fields():
    match = parse_match(
        ["arm=params.policy", "seed=params.seed", "fail_site=params.fail_site", "fail_step=params.fail_step"], PLAN
    )
    matched = match_runs([pre_plan_run(i) for i in range(4)], PLAN, SHA, "src", match)
    assert [r["run_id"] for r in matched.rows] == [p.run_id for p in PLANNED[:4]]
    text = problem([pre_plan_run(0, fail_site="9")], match)
    assert "mlflow run t0 ('name0'): arm=" in text and "fail_site=9" in text and "is no planned run" in text


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        (["seed"], "write COLUMN=FIELD"),
        (["lr=params.lr"], "'lr' is not arm, replicate, seed or a stratum factor"),
        (["arm=config.policy"], "the field is params.NAME, tags.NAME, name or run_id"),
        (["arm=params.a", "arm=params.b"], "'arm' is given twice"),
        (["arm=params.policy"], "say where each run's fail_site, fail_step is"),
    ],
)
def test_match_declarations_are_checked(pairs, words):
    with pytest.raises(TrackerProblem, match=words):
        parse_match(pairs, PLAN)


def test_plan_snippets_carry_every_planned_run_and_its_tags():
    text = tracker_snippets(PLAN, SHA, "mlflow")
    lines = text.splitlines()
    assert len(lines) == 2 * len(PLANNED)
    for planned, (comment, code) in zip(PLANNED, zip(lines[::2], lines[1::2], strict=True), strict=True):
        assert comment.startswith(f"# {planned.run_id}: ") and f"seed={planned.seed}" in comment
        assert code == f"mlflow.set_tags({__import__('json').dumps(planned_tags(PLAN, planned))})"
    assert f'"{PLANNED[0].run_id}"' in tracker_snippets(PLAN, SHA, "tensorboard").splitlines()[1]
    assert tracker_snippets(PLAN, SHA, "wandb").splitlines()[1].startswith("wandb.config.update({")
