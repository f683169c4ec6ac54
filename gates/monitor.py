"""``collect run`` for a monitored plan: run the strata look by look, evaluate at each look, stop when the plan says.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from collect.api import planned_runs, run_plan
from collect.ledger.looks import LookRecord, read_looks
from collect.ledger.store import read_ledger
from gates.api import evaluate
from gates.integrity import check_looks
from gates.matching import stratum_key
from prereg.api import Lock, load_lock
from prereg.errors import InputError
from prereg.monitoring import look_prefix
from prereg.schema import Plan

if TYPE_CHECKING:
    from gates.artifact import Evaluation

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class LookStep:
    """One look as ``run_monitored`` met it: the runs it ran and its decision (``recorded``: the look
    ledger already held it, so it was not evaluated again)."""

    look: int
    blocks: int
    completed: int = 0
    failed: int = 0
    skipped: int = 0
    decision: str | None = None
    action: str | None = None
    reason: str = ""
    seq: int | None = None
    recorded: bool = False
    looks_head: str | None = None  # the look ledger's head once this look was recorded (its record's SHA-256)


@dataclass
class MonitoredRun:
    """What ``run_monitored`` did: the looks it met, why it stopped, the runs the stop saved."""

    planned: int
    steps: list[LookStep] = field(default_factory=list)
    stopped: str | None = None  # "success", "futility", "failed" (runs failed at a look), "final", "already"
    stopped_at: int | None = None
    runs_saved: int = 0
    evaluation: Evaluation | None = None
    note: str | None = None

    @property
    def completed(self) -> int:
        return sum(s.completed for s in self.steps)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.steps)

    def sentence(self) -> str:
        """Why collection stopped, and the runs the stop saved, in words."""
        saved = f"; {self.runs_saved} of {self.planned} planned runs were not needed (saved)" if self.runs_saved else ""
        return {
            "success": f"stopped early for success at look {self.stopped_at}{saved}",
            "futility": f"stopped early for futility at look {self.stopped_at} (non-binding){saved}",
            "final": f"reached the final look ({self.stopped_at}): every planned run was needed",
            "failed": f"stopped at look {self.stopped_at}: {self.note}",
            "already": f"nothing to run: {self.note}",
        }.get(self.stopped or "", "collection ended without reaching a decision")

    def to_json(self) -> dict[str, Any]:
        """The ``monitoring`` object of ``collect run --json``."""
        return {
            "stopped": self.stopped,
            "stopped_at_look": self.stopped_at,
            "runs_saved": self.runs_saved,
            "note": self.note,
            "sentence": self.sentence(),
            "looks": [
                {
                    "look": s.look,
                    "blocks": s.blocks,
                    "completed": s.completed,
                    "failed": s.failed,
                    "decision": s.decision,
                    "action": s.action,
                    "look_record": s.seq,
                    "looks_head": s.looks_head,
                    "recorded_before": s.recorded,
                }
                for s in self.steps
            ],
        }


def _stop_of(record: LookRecord) -> str | None:
    return {"stop_success": "success", "stop_futility": "futility"}.get(record.action)


def run_monitored(
    lock: Lock | PathLike,
    out: PathLike,
    jobs: int = 1,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
    say: Callable[[str], None] | None = None,
    address: str | None = None,
) -> MonitoredRun:
    """Run a monitored plan look by look into ``out`` (module doc); ``say`` hears one line per look;
    ``address``: the Ray cluster to join (``executor="ray"``, as ``collect.run_plan``)."""
    verified = load_lock(lock)
    plan = verified.plan
    if plan.monitoring is None:
        raise InputError(f"{verified.path}: the plan has no monitoring section; use collect.run_plan")
    folder = Path(out)
    order = verified.data["run_order"]
    runs = planned_runs(verified)
    by_stratum: dict[Any, list[str]] = {}
    for r in runs:
        by_stratum.setdefault(stratum_key(plan, r.stratum), []).append(r.run_id)
    result = MonitoredRun(planned=len(runs))
    history = _history(folder, verified.plan_sha256)
    done = next((r for r in history if r.status == "decision" and _stop_of(r)), None)
    if done is not None:
        result.stopped, result.stopped_at = "already", done.look
        result.note = (
            f"the look ledger shows the study stopped for {_stop_of(done)} at look {done.look} (look record "
            f"{done.seq}, {done.evaluated_at}); nothing more is run"
        )
        return result
    looks = plan.monitoring.looks
    for k, blocks in enumerate(looks, start=1):
        prefix = look_prefix(plan, order, blocks)
        ids = [run_id for stratum in order[:prefix] for run_id in by_stratum[stratum_key(plan, stratum)]]
        step = LookStep(k, blocks)
        result.steps.append(step)
        summary = run_plan(verified, folder, jobs, executor, progress, only=ids, address=address)
        step.completed, step.failed, step.skipped = summary.completed, summary.failed, summary.skipped
        keys = {stratum_key(plan, stratum) for stratum in order[:prefix]}
        recorded = _recorded(folder, plan, verified.plan_sha256, k, keys)
        if recorded == "later":  # runs of a later look exist: this look was passed before a crash
            continue
        if isinstance(recorded, LookRecord):
            step.decision, step.action, step.seq, step.recorded = (
                recorded.decision,
                recorded.action,
                recorded.seq,
                True,
            )
            step.looks_head = recorded.record_sha256
            step.reason = "recorded before"
        else:
            ev = evaluate(verified, folder, out=folder / "evaluation.json", force=False)
            result.evaluation = ev
            assert ev.monitoring is not None
            step.decision, step.action, step.seq = ev.decision, ev.monitoring.action, ev.monitoring.sequence
            step.looks_head = ev.monitoring.looks_head
            step.reason = ev.monitoring.reason
        if say:
            say(
                f"look {k} of {len(looks)} ({blocks} blocks): {step.decision.replace('_', ' ')}, "
                f"{(step.action or 'none').replace('_', ' ')}"
                + (" (as recorded before)" if step.recorded else "")
                + (f"; look ledger head {step.looks_head}" if step.looks_head else "")
            )
        if step.failed:
            result.stopped, result.stopped_at = "failed", k
            result.note = (
                f"{step.failed} run(s) of look {k} failed, so the look is refused; collection stops here: "
                "re-run to retry them"
            )
            return result
        stop = {"stop_success": "success", "stop_futility": "futility", "final": "final"}.get(step.action or "")
        if stop:
            result.stopped, result.stopped_at = stop, k
            run_ids = {run_id for stratum in order[:prefix] for run_id in by_stratum[stratum_key(plan, stratum)]}
            result.runs_saved = 0 if stop == "final" else len(runs) - len(run_ids)
            return result
    return result


def _history(folder: Path, plan_sha256: str) -> list[LookRecord]:
    """The look ledger's records of this plan, checked against the run ledger (``LooksTampered``)."""
    if not (folder / "ledger.jsonl").exists():
        return []
    looks = read_looks(folder)
    check_looks(looks, read_ledger(folder))
    return [r for r in looks.records if r.prereg_sha256 == plan_sha256]


def _recorded(folder: Path, plan: Plan, plan_sha256: str, look: int, keys: set[Any]) -> LookRecord | str | None:
    """``later`` when runs of strata beyond this look's (``keys``) exist (it was passed before); the
    look's decision record when the look ledger already holds it for the ledger as it is now; None:
    evaluate it."""
    ledger = read_ledger(folder)
    reached = {stratum_key(plan, r.stratum) for r in ledger.records if r.prereg_sha256 == plan_sha256}
    if reached - keys - {None}:
        return "later"
    head = ledger.hashes[-1] if ledger.hashes else None
    for record in reversed(_history(folder, plan_sha256)):
        if record.look == look and record.status == "decision" and record.ledger_head == head:
            return record
    return None


__all__ = ["LookStep", "MonitoredRun", "run_monitored"]
