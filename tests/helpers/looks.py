"""Monitored plans for the interim-look tests: a small sim.multisite plan, frozen, run to chosen points."""

from __future__ import annotations

from pathlib import Path

from collect.api import planned_runs, run_plan
from gates.matching import stratum_key
from prereg.api import Lock, freeze
from prereg.monitoring import run_order

#: the head of every monitored test plan: the multi-site simulator, restart vs continue (a format string)
SIM_HEAD = """schema: prereg/v1
study: looks-test
title: Interim looks test
hypothesis: Continuing finishes sooner.
experiment:
  collector: sim.multisite
  params: {{sites: 3, target_steps: 400, checkpoint_every_steps: 50}}
arms:
  restart: {{policy: restart}}
  continue: {{policy: continue}}
"""

PLAN = (
    SIM_HEAD
    + """strata:
  factors:
    outage_site: [0, 1, 2]
    seed: [1, 2, 3, 4]
metrics:
  completion_time: {{unit: s, better: lower, evidence: modeled}}
  attempted_work: {{unit: site-step, better: lower, evidence: modeled}}
gates:
  - {{id: sooner, metric: completion_time, contrast: continue / restart, method: {method}, confidence: 0.9,
      pass_if: "upper < {margin}"}}
decision: {{claim: continuing is sooner, multiplicity: {multiplicity}}}
monitoring:
  looks: {looks}
  spending: {spending}
  futility: {futility}
  first_look_reason: "a test of the look mechanics, on simulated completion times"
"""
)


def plan_text(
    looks: str = "[4, 8, 12]",
    spending: str = "pocock",
    futility: str = "none",
    method: str = "t",
    margin: str = "1.0",
    multiplicity: str = "none",
) -> str:
    """The test plan: 2 arms x 12 strata of the multi-site simulator, with ``monitoring:``."""
    return PLAN.format(
        looks=looks, spending=spending, futility=futility, method=method, margin=margin, multiplicity=multiplicity
    )


def frozen(tmp: Path, text: str | None = None, name: str = "looks") -> Lock:
    """``text`` (default :func:`plan_text`) written to ``tmp/name.yaml`` and frozen beside it."""
    path = tmp / f"{name}.yaml"
    path.write_text(text if text is not None else plan_text())
    return freeze(path)


def run_strata(lock: Lock, runs: Path, count: int, partial: bool = False) -> None:
    """Run the first ``count`` strata of the frozen order into ``runs`` (``partial``: the last of them
    with only its first arm)."""
    plan = lock.plan
    order = run_order(plan)[:count]
    keys = [stratum_key(plan, s) for s in order]
    planned = planned_runs(lock)
    ids = [p.run_id for k in keys for p in planned if stratum_key(plan, p.stratum) == k]
    if partial:
        ids = ids[:-1]
    run_plan(lock, runs, only=ids)
