"""``collect plan``: every run a frozen plan asks for, for work done elsewhere.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

from collect.engine.runs import BLOCKING_FACTORS, PlannedRun, load_collector, run_params, stratum_seed
from collect.importing.trackers.base import TRACKERS
from collect.ledger.store import run_id
from prereg.api import Lock, load_lock
from prereg.arm_checks import arm_params
from prereg.errors import InputError
from prereg.jsoncodec import canonical_text, readable_bytes
from prereg.schema import Plan

PLAN_FORMATS = ("csv", "json")


def planned_runs(plan: Plan, plan_sha256: str) -> list[PlannedRun]:
    """Every run of the plan in ``collect run``'s order (see the module doc)."""
    collector = load_collector(plan.experiment.collector) if plan.experiment is not None else None
    defaults = dict(plan.experiment.params) if plan.experiment is not None else {}
    runs = []
    for stratum in plan.strata.enumerate():
        for replicate in range(plan.strata.replicates):
            for arm, settings in plan.arms.items():
                if collector is not None:  # checked and completed as collect run does (the command collector too)
                    params = run_params(plan, collector, stratum, arm)
                else:
                    params = {
                        **defaults,
                        **{k: v for k, v in stratum.items() if k not in BLOCKING_FACTORS},
                        **arm_params(settings),
                    }
                runs.append(
                    PlannedRun(
                        run_id(plan_sha256, stratum, arm, replicate),
                        dict(stratum),
                        arm,
                        replicate,
                        stratum_seed(stratum, replicate),
                        params,
                    )
                )
    return runs


def seed_column(plan: Plan) -> str:
    """The column that holds the derived seed: ``seed``, or ``run_seed`` when a factor is called ``seed``."""
    return "run_seed" if "seed" in plan.strata.factors else "seed"


def plan_columns(plan: Plan) -> list[str]:
    """The listing's columns: run_id, the factors, arm, replicate, the seed column, params."""
    return ["run_id", *plan.strata.factors, "arm", "replicate", seed_column(plan), "params"]


def level_text(value: Any) -> str:
    """A level as ``collect import`` matches it: its written form (``1``, ``true``, ``x``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def plan_csv(plan: Plan, plan_sha256: str) -> str:
    """The listing as CSV text (params as canonical JSON in one cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(plan_columns(plan))
    for run in planned_runs(plan, plan_sha256):
        writer.writerow(
            [
                run.run_id,
                *(level_text(run.stratum[f]) for f in plan.strata.factors),
                run.arm,
                run.replicate,
                run.seed,
                canonical_text(run.params),
            ]
        )
    return out.getvalue()


def plan_json(plan: Plan, plan_sha256: str) -> dict[str, Any]:
    """The listing as JSON data: ``{prereg_sha256, study, seed_column, runs: [...]}``, each run with
    ``run_id``, ``stratum``, ``arm``, ``replicate``, ``seed`` and ``params``."""
    return {
        "prereg_sha256": plan_sha256,
        "study": plan.study,
        "seed_column": seed_column(plan),
        "runs": [
            {
                "run_id": r.run_id,
                "stratum": r.stratum,
                "arm": r.arm,
                "replicate": r.replicate,
                "seed": r.seed,
                "params": r.params,
            }
            for r in planned_runs(plan, plan_sha256)
        ],
    }


#: the tag that names a tracker run's planned run (``collect import`` matches on it)
RUN_ID_TAG = "prereg.run_id"


def planned_tags(plan: Plan, run: PlannedRun) -> dict[str, str]:
    """The tags a tracker run of ``run`` carries: ``prereg.run_id``, ``prereg.arm``, ``prereg.replicate``,
    ``prereg.seed`` (the derived seed; not when a factor is called seed) and ``prereg.<factor>`` per level."""
    tags = {RUN_ID_TAG: run.run_id, "prereg.arm": run.arm, "prereg.replicate": str(run.replicate)}
    if "seed" not in plan.strata.factors:
        tags["prereg.seed"] = str(run.seed)
    tags.update({f"prereg.{factor}": level_text(level) for factor, level in run.stratum.items()})
    return tags


def _unprefixed(tags: dict[str, str]) -> dict[str, str]:
    return {k.removeprefix("prereg."): v for k, v in tags.items()}


def tracker_snippets(plan: Plan, plan_sha256: str, tracker: str) -> str:
    """``collect plan --tracker``: per planned run, a comment naming it and the one line that marks a
    tracker run as it (MLflow tags, W&B config, a TensorBoard run folder, a Ray Tune trial's config)."""
    if tracker not in TRACKERS:
        raise InputError(f"unknown tracker {tracker!r}; use one of {', '.join(TRACKERS)}")
    lines = []
    for run in planned_runs(plan, plan_sha256):
        tags = json.dumps(planned_tags(plan, run))
        levels = " ".join(f"{k}={level_text(v)}" for k, v in run.stratum.items())
        lines.append(f"# {run.run_id}: {levels} arm={run.arm} replicate={run.replicate} seed={run.seed}")
        lines.append(
            {
                "mlflow": f"mlflow.set_tags({tags})",
                "wandb": f"wandb.config.update({tags})",
                "tensorboard": f'SummaryWriter(log_dir=os.path.join(LOG_DIR, "{run.run_id}"))',
                "raytune": f"{json.dumps(_unprefixed(planned_tags(plan, run)))},  # in param_space="
                '{"prereg": tune.grid_search([...])}',
            }[tracker]
        )
    return "\n".join(lines) + "\n"


def plan_text(plan: Plan, plan_sha256: str, fmt: str) -> str:
    """The listing in ``fmt`` (``csv`` or ``json``)."""
    if fmt == "csv":
        return plan_csv(plan, plan_sha256)
    return readable_bytes(plan_json(plan, plan_sha256)).decode()


__all__ = [
    "PLAN_FORMATS",
    "RUN_ID_TAG",
    "level_text",
    "planned_tags",
    "tracker_snippets",
    "plan_columns",
    "plan_csv",
    "plan_json",
    "plan_text",
    "planned_runs",
    "seed_column",
]


def plan_listing(lock: Lock | str | os.PathLike[str], fmt: str = "csv") -> str:
    """``collect plan``'s listing of :func:`planned_runs` as ``csv`` or ``json`` text."""
    if fmt not in PLAN_FORMATS:
        raise InputError(f"unknown listing format {fmt!r}; use {' or '.join(PLAN_FORMATS)}")
    verified = load_lock(lock)
    return plan_text(verified.plan, verified.plan_sha256, fmt)
